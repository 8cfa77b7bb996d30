// AVX-512 tokenising of 2-byte elements, sixteen changes at a time (tokenize_avx512.h), the
// ordered deltas from the words the scan copied out or gathered from the buffers. The scalar loop
// in tokenize.h is the reference; tests compare the frames both write, byte for byte.
#include "src/codec/tokens/tokenize_avx512.h"

#include "src/codec/tokens/tokenize.h"
#include "src/codec/values/value_mode_avx512.h"

namespace dcr {

#if defined(__x86_64__)

namespace {

// The ordered deltas of sixteen changes: from staged words in the 16-bit lanes they come in (one
// widening instead of two), else from gathered words.
template <bool Staged>
DCR_AVX512 inline __m512i ordered_deltas(bool sign_magnitude, ChangedWords words, const uint8_t* base,
                                         const uint8_t* target, uint64_t j, __m512i positions) {
  if (!Staged) {
    const __m512i a = avx512::gather_elements16(base, positions), b = avx512::gather_elements16(target, positions);
    return sign_magnitude ? avx512::encode16<ValueMode::delta_sm>(a, b) : avx512::encode16<ValueMode::delta_tc>(a, b);
  }
  const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words.base + j));
  const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words.target + j));
  return _mm512_cvtepu16_epi32(sign_magnitude ? avx512::encode16_packed<ValueMode::delta_sm>(a, b)
                                              : avx512::encode16_packed<ValueMode::delta_tc>(a, b));
}

template <bool Staged>
DCR_AVX512 uint64_t tokenize(bool sign_magnitude, const uint8_t* base, const uint8_t* target,
                             const uint32_t* positions, uint64_t n, ChangedWords words, uint64_t elements,
                             uint64_t* next, TokenWriter::Cursor* gap_cursor, TokenWriter::Cursor* delta_cursor) {
  // Each gather reads 4 bytes at the element, so the box's last element stays scalar.
  uint64_t groups = n / 16;
  if (groups > 0 && positions[16 * groups - 1] + 1 >= elements) --groups;
  avx512::GroupTokenizer t;
  t.start(*gap_cursor, *delta_cursor, *next);
  for (uint64_t g = 0; g < groups; ++g) {
    const __m512i pos = _mm512_loadu_si512(positions + 16 * g);
    t.group(positions + 16 * g, ordered_deltas<Staged>(sign_magnitude, words, base, target, 16 * g, pos));
  }
  t.finish(gap_cursor, delta_cursor, next);
  return 16 * groups;
}
}  // namespace
#endif

uint64_t tokenize_avx512_w2(ValueMode delta_mode, const uint8_t* base, const uint8_t* target,
                            const uint32_t* positions, uint64_t n, ChangedWords words, uint64_t elements,
                            uint64_t* next, TokenWriter::Cursor* gaps, TokenWriter::Cursor* deltas) {
#if defined(__x86_64__)
  const bool sign_magnitude = delta_mode == ValueMode::delta_sm;
  if (words.base != nullptr && words.target != nullptr) {
    return tokenize<true>(sign_magnitude, base, target, positions, n, words, elements, next, gaps, deltas);
  }
  if (elements <= (1ull << 31)) {  // gather indices are signed 32-bit
    return tokenize<false>(sign_magnitude, base, target, positions, n, words, elements, next, gaps, deltas);
  }
#endif
  return 0;
}

}  // namespace dcr
