// Internal to the codec: the element arithmetic of value_mode.h for 2-byte elements held in the
// sixteen 32-bit lanes of an AVX-512 register (low 16 bits; the high bits are zero on return).
#pragma once

#include "dcr/codec/value_mode.h"
#include "src/codec/common/simd_x86.h"

#if defined(__x86_64__)

namespace dcr::avx512 {

DCR_AVX512 inline __m512i low16() { return _mm512_set1_epi32(0xffff); }

// All-ones in the low 16 bits of lanes whose bit 15 is set.
DCR_AVX512 inline __m512i top_bit16(__m512i x) {
  return _mm512_and_si512(_mm512_srai_epi32(_mm512_slli_epi32(x, 16), 31), low16());
}

DCR_AVX512 inline __m512i sm_key16(__m512i x) {
  return _mm512_xor_si512(x, _mm512_or_si512(top_bit16(x), _mm512_set1_epi32(0x8000)));
}

DCR_AVX512 inline __m512i sm_unkey16(__m512i key) {
  return _mm512_and_si512(_mm512_xor_si512(key, _mm512_or_si512(_mm512_xor_si512(top_bit16(key), low16()),
                                                                 _mm512_set1_epi32(0x8000))),
                          low16());
}

DCR_AVX512 inline __m512i zigzag16(__m512i diff) {
  const __m512i d = _mm512_and_si512(diff, low16());
  return _mm512_and_si512(_mm512_xor_si512(_mm512_slli_epi32(d, 1), top_bit16(d)), low16());
}

DCR_AVX512 inline __m512i unzigzag16(__m512i word) {
  const __m512i odd = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_and_si512(word, _mm512_set1_epi32(1)));
  return _mm512_and_si512(_mm512_xor_si512(_mm512_srli_epi32(word, 1), odd), low16());
}

// The sixteen 2-byte elements of `data` at `positions` (each read as a 32-bit word with the next
// element, so none may be the last one).
DCR_AVX512 inline __m512i gather_elements16(const uint8_t* data, __m512i positions) {
  return _mm512_and_si512(gather32<2>(data, positions), low16());
}

// Sixteen words of a words array (one uint64_t per change, as encoder and decoder keep them), below
// 2^32, to and from the lanes.
DCR_AVX512 inline __m512i load_words16(const uint64_t* words) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi64_epi32(_mm512_loadu_si512(words))),
                            _mm512_cvtepi64_epi32(_mm512_loadu_si512(words + 8)), 1);
}

DCR_AVX512 inline void store_words16(uint64_t* words, __m512i v) {
  _mm512_storeu_si512(words, _mm512_cvtepu32_epi64(_mm512_castsi512_si256(v)));
  _mm512_storeu_si512(words + 8, _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(v, 1)));
}

// encode_word for M, width 2.
template <ValueMode M>
DCR_AVX512 inline __m512i encode16(__m512i old_bits, __m512i new_bits) {
  if (M == ValueMode::xor_mask) return _mm512_xor_si512(old_bits, new_bits);
  if (M == ValueMode::overwrite) return new_bits;
  if (M == ValueMode::delta_sm) return zigzag16(_mm512_sub_epi32(sm_key16(new_bits), sm_key16(old_bits)));
  return zigzag16(_mm512_sub_epi32(new_bits, old_bits));
}

// encode_word for M, width 2, on sixteen elements packed in the 16-bit lanes of a 256-bit register
// (as the scan stages them: half the width of the lanes above, and no widening before the sum).
template <ValueMode M>
DCR_AVX512 inline __m256i encode16_packed(__m256i old_bits, __m256i new_bits) {
  if (M == ValueMode::xor_mask) return _mm256_xor_si256(old_bits, new_bits);
  if (M == ValueMode::overwrite) return new_bits;
  if (M == ValueMode::delta_sm) {  // sm_key: flip the sign bit of positives, every bit of negatives
    const __m256i sign = _mm256_set1_epi16(static_cast<int16_t>(0x8000));
    old_bits = _mm256_xor_si256(old_bits, _mm256_or_si256(_mm256_srai_epi16(old_bits, 15), sign));
    new_bits = _mm256_xor_si256(new_bits, _mm256_or_si256(_mm256_srai_epi16(new_bits, 15), sign));
  }
  const __m256i d = _mm256_sub_epi16(new_bits, old_bits);
  return _mm256_xor_si256(_mm256_slli_epi16(d, 1), _mm256_srai_epi16(d, 15));  // zigzag
}

// apply_word for M, width 2.
template <ValueMode M>
DCR_AVX512 inline __m512i apply16(__m512i old_bits, __m512i word) {
  if (M == ValueMode::xor_mask) return _mm512_xor_si512(old_bits, word);
  if (M == ValueMode::overwrite) return word;
  if (M == ValueMode::delta_sm) {
    return sm_unkey16(_mm512_and_si512(_mm512_add_epi32(sm_key16(old_bits), unzigzag16(word)), low16()));
  }
  return _mm512_and_si512(_mm512_add_epi32(old_bits, unzigzag16(word)), low16());
}

}  // namespace dcr::avx512

#endif
