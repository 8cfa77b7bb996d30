#include "dcr/codec/scan.h"

#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace dcr {

uint64_t load_word(const void* data, uint64_t index, unsigned width) {
  const uint8_t* p = static_cast<const uint8_t*>(data) + index * width;
  switch (width) {
    case 1: return *p;
    case 2: { uint16_t v; std::memcpy(&v, p, 2); return v; }
    case 4: { uint32_t v; std::memcpy(&v, p, 4); return v; }
    default: { uint64_t v; std::memcpy(&v, p, 8); return v; }
  }
}

void store_word(void* data, uint64_t index, unsigned width, uint64_t word) {
  uint8_t* p = static_cast<uint8_t*>(data) + index * width;
  switch (width) {
    case 1: *p = static_cast<uint8_t>(word); break;
    case 2: { const uint16_t v = static_cast<uint16_t>(word); std::memcpy(p, &v, 2); break; }
    case 4: { const uint32_t v = static_cast<uint32_t>(word); std::memcpy(p, &v, 4); break; }
    default: std::memcpy(p, &word, 8); break;
  }
}

namespace {

uint64_t scan_scalar(const uint8_t* base, const uint8_t* target, uint64_t first, uint64_t count,
                     unsigned width, uint32_t* positions, uint64_t changed) {
  for (uint64_t i = first; i < count; ++i) {
    if (std::memcmp(base + i * width, target + i * width, width) != 0) {
      positions[changed++] = static_cast<uint32_t>(i);
    }
  }
  return changed;
}

#if defined(__x86_64__)
// Compares 64 bytes at a time; a 64-bit byte mask of differences is folded into one bit per
// element and its set bits become positions. Most blocks of a sparse delta have no change at all.
__attribute__((target("avx2,bmi,bmi2"))) uint64_t element_bits(uint64_t byte_diff, unsigned width) {
  switch (width) {
    case 1: return byte_diff;
    case 2: return _pext_u64(byte_diff | (byte_diff >> 1), 0x5555555555555555ull);
    case 4: {
      const uint64_t any = byte_diff | (byte_diff >> 1) | (byte_diff >> 2) | (byte_diff >> 3);
      return _pext_u64(any, 0x1111111111111111ull);
    }
    default: {
      uint64_t any = byte_diff | (byte_diff >> 1) | (byte_diff >> 2) | (byte_diff >> 3);
      any |= any >> 4;
      return _pext_u64(any, 0x0101010101010101ull);
    }
  }
}

__attribute__((target("avx2,bmi,bmi2"))) uint64_t scan_avx2(const uint8_t* base,
                                                           const uint8_t* target, uint64_t count,
                                                           unsigned width, uint32_t* positions) {
  const uint64_t per_block = 64 / width;
  const uint64_t blocks = count / per_block;
  uint64_t changed = 0;
  for (uint64_t b = 0; b < blocks; ++b) {
    const uint8_t* pb = base + b * 64;
    const uint8_t* pt = target + b * 64;
    const __m256i eq0 = _mm256_cmpeq_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb)),
                                          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pt)));
    const __m256i eq1 =
        _mm256_cmpeq_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb + 32)),
                          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pt + 32)));
    const uint64_t equal = static_cast<uint32_t>(_mm256_movemask_epi8(eq0)) |
                           (static_cast<uint64_t>(static_cast<uint32_t>(_mm256_movemask_epi8(eq1))) << 32);
    if (equal == ~0ull) continue;
    uint64_t bits = element_bits(~equal, width);
    const uint32_t first = static_cast<uint32_t>(b * per_block);
    while (bits != 0) {
      positions[changed++] = first + static_cast<uint32_t>(__builtin_ctzll(bits));
      bits &= bits - 1;
    }
  }
  return scan_scalar(base, target, blocks * per_block, count, width, positions, changed);
}

bool have_avx2() {
  static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2");
  return ok;
}
#endif

}  // namespace

uint64_t scan_changes(const void* base, const void* target, uint64_t count, unsigned width,
                      uint32_t* positions) {
  const uint8_t* b = static_cast<const uint8_t*>(base);
  const uint8_t* t = static_cast<const uint8_t*>(target);
#if defined(__x86_64__)
  if (have_avx2()) return scan_avx2(b, t, count, width, positions);
#endif
  return scan_scalar(b, t, 0, count, width, positions, 0);
}

void gather_words(const void* base, const void* target, unsigned width, ValueMode mode,
                  const uint32_t* positions, uint64_t changed, uint64_t* words) {
  for (uint64_t j = 0; j < changed; ++j) {
    const uint64_t p = positions[j];
    words[j] = encode_word(mode, load_word(base, p, width), load_word(target, p, width), width);
  }
}

void scatter_swap(void* dst, unsigned width, ValueMode mode, const uint32_t* positions,
                  uint64_t changed, uint64_t* words) {
  for (uint64_t j = 0; j < changed; ++j) {
    const uint64_t p = positions[j];
    const uint64_t old_bits = load_word(dst, p, width);
    store_word(dst, p, width, apply_word(mode, old_bits, words[j], width));
    words[j] = old_bits;
  }
}

}  // namespace dcr
