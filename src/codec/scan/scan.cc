#include "dcr/codec/scan.h"

#include "dcr/codec/simd.h"
#include "src/codec/scan/scan_kernels.h"
#include "src/codec/common/simd_x86.h"

namespace dcr {

namespace {

#if defined(__x86_64__)
// Compares 64 bytes at a time; a 64-bit byte mask of differences is folded into one bit per
// element and its set bits become positions. Most blocks of a sparse delta have no change at all.
DCR_AVX2 uint64_t element_bits(uint64_t byte_diff, unsigned width) {
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

DCR_AVX2 uint64_t scan_avx2(const uint8_t* base, const uint8_t* target, uint64_t begin, uint64_t end,
                            unsigned width, uint32_t* positions) {
  const uint64_t per_block = 64 / width;
  const uint64_t first_block = (begin + per_block - 1) / per_block;
  const uint64_t blocks = end / per_block;
  if (first_block >= blocks) return scan_scalar(base, target, begin, end, width, positions, 0);
  uint64_t changed = scan_scalar(base, target, begin, first_block * per_block, width, positions, 0);
  for (uint64_t b = first_block; b < blocks; ++b) {
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
  return scan_scalar(base, target, blocks * per_block, end, width, positions, changed);
}

// AVX-512: each group of 16 mask bits (change_mask) becomes up to 16 positions with a register
// compress and one full-width store (the output keeps kScanSlack spare entries for it). Branch-free,
// so the cost does not depend on where changes fall.
template <unsigned W>
DCR_AVX512 uint64_t scan_avx512(const uint8_t* base, const uint8_t* target, uint64_t begin, uint64_t end,
                                uint32_t* positions) {
  constexpr uint64_t kPerChunk = 64 / W;
  constexpr unsigned kLanes = kPerChunk < 16 ? kPerChunk : 16;
  const uint64_t first_chunk = (begin + kPerChunk - 1) / kPerChunk, chunks = end / kPerChunk;
  if (first_chunk >= chunks) return scan_scalar(base, target, begin, end, W, positions, 0);
  uint64_t changed = scan_scalar(base, target, begin, first_chunk * kPerChunk, W, positions, 0);
  const __m512i iota = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  for (uint64_t c = first_chunk; c < chunks; ++c) {
    const uint64_t mask = change_mask<W>(base + c * 64, target + c * 64);
    for (unsigned g = 0; g < kPerChunk / kLanes; ++g) {
      const uint32_t lanes = static_cast<uint32_t>(mask >> (g * kLanes)) & ((1u << kLanes) - 1);
      const __m512i index = _mm512_add_epi32(iota, _mm512_set1_epi32(static_cast<int>(c * kPerChunk + g * kLanes)));
      _mm512_storeu_si512(positions + changed, _mm512_maskz_compress_epi32(static_cast<__mmask16>(lanes), index));
      changed += static_cast<uint64_t>(__builtin_popcount(lanes));
    }
  }
  return scan_scalar(base, target, chunks * kPerChunk, end, W, positions, changed);
}

#endif

}  // namespace

uint64_t scan_changes_in(const void* base, const void* target, uint64_t begin, uint64_t end,
                         unsigned width, uint32_t* positions) {
  const uint8_t* b = static_cast<const uint8_t*>(base);
  const uint8_t* t = static_cast<const uint8_t*>(target);
#if defined(__x86_64__)
  const SimdLevel level = simd_level();
  if (level >= SimdLevel::avx512) {
    switch (width) {
      case 1: return scan_avx512<1>(b, t, begin, end, positions);
      case 2: {
        if (level < SimdLevel::avx512_vbmi) return scan_avx512<2>(b, t, begin, end, positions);
        NoChunkHook no_hook;
        return scan_w2_vbmi2(b, t, begin, end, positions, no_hook);
      }
      case 4: return scan_avx512<4>(b, t, begin, end, positions);
      default: return scan_avx512<8>(b, t, begin, end, positions);
    }
  }
  if (level == SimdLevel::avx2) return scan_avx2(b, t, begin, end, width, positions);
#endif
  return scan_scalar(b, t, begin, end, width, positions, 0);
}

uint64_t scan_changes(const void* base, const void* target, uint64_t count, unsigned width,
                      uint32_t* positions) {
  return scan_changes_in(base, target, 0, count, width, positions);
}

}  // namespace dcr
