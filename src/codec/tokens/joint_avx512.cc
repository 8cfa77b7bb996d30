// AVX-512 joint-byte loops: 64 changes a step when splitting, 16 when merging, the escapes
// compressed out of (or expanded into) the lanes with AVX512-VBMI2. joint.cc is the reference.
#include "src/codec/tokens/joint.h"

#include <algorithm>

#include "dcr/codec/simd.h"
#include "src/codec/common/simd_x86.h"

namespace dcr {

#if defined(__x86_64__)

namespace {

DCR_AVX512 uint8_t max_byte(__m512i v) {
  alignas(64) uint8_t bytes[64];
  _mm512_store_si512(bytes, v);
  return *std::max_element(bytes, bytes + 64);
}

DCR_AVX512_VBMI uint64_t split(const uint8_t* gap_tokens, const uint8_t* value_tokens, uint64_t n,
                               uint8_t max_gap_token, uint8_t* joint, uint8_t* escape_gaps, uint8_t* escape_values,
                               JointMax* max, uint64_t* escapes) {
  __m512i joint_max = _mm512_setzero_si512(), gap_max = joint_max, value_max = joint_max;
  uint64_t e = 0, j = 0;
  for (; j + 64 <= n; j += 64) {
    const __m512i g = _mm512_loadu_si512(gap_tokens + j), v = _mm512_loadu_si512(value_tokens + j);
    const __mmask64 step = _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(1)) | _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(2));
    const __mmask64 joined = step & _mm512_cmple_epu8_mask(g, _mm512_set1_epi8(static_cast<char>(max_gap_token)));
    const __m512i bytes = _mm512_maskz_add_epi8(joined, _mm512_add_epi8(g, g), v);
    _mm512_storeu_si512(joint + j, bytes);
    joint_max = _mm512_max_epu8(joint_max, bytes);
    const __mmask64 escaped = ~joined;
    _mm512_storeu_si512(escape_gaps + e, _mm512_maskz_compress_epi8(escaped, g));
    _mm512_storeu_si512(escape_values + e, _mm512_maskz_compress_epi8(escaped, v));
    gap_max = _mm512_mask_max_epu8(gap_max, escaped, gap_max, g);
    value_max = _mm512_mask_max_epu8(value_max, escaped, value_max, v);
    e += static_cast<uint64_t>(__builtin_popcountll(escaped));
  }
  *max = JointMax{max_byte(joint_max), max_byte(gap_max), max_byte(value_max)};
  *escapes = e;
  return j;
}

DCR_AVX512 uint64_t count(const uint8_t* joint, uint64_t n, uint64_t* escapes) {
  uint64_t e = 0, j = 0;
  for (; j + 64 <= n; j += 64) {
    e += static_cast<uint64_t>(__builtin_popcountll(_mm512_testn_epi8_mask(_mm512_loadu_si512(joint + j),
                                                                           _mm512_set1_epi8(-1))));
  }
  *escapes = e;
  return j;
}

DCR_AVX512_VBMI uint64_t merge(const uint8_t* joint, uint64_t n, const uint8_t* escape_gaps,
                               const uint64_t* escape_words, uint8_t* gap_tokens, uint64_t* words, uint64_t* escapes) {
  uint64_t e = 0, j = 0;
  for (; j + 16 <= n; j += 16) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(joint + j));
    const __mmask16 escaped = _mm_testn_epi8_mask(b, _mm_set1_epi8(-1));
    // (b - 1) >> 1 per byte: a 16-bit shift, then the bit shifted in from the byte above cleared.
    const __m128i g = _mm_and_si128(_mm_srli_epi16(_mm_sub_epi8(b, _mm_set1_epi8(1)), 1), _mm_set1_epi8(0x7f));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(gap_tokens + j), _mm_mask_expandloadu_epi8(g, escaped, escape_gaps + e));
    const __m128i w = _mm_sub_epi8(_mm_set1_epi8(2), _mm_and_si128(b, _mm_set1_epi8(1)));
    const __mmask8 low = static_cast<__mmask8>(escaped), high = static_cast<__mmask8>(escaped >> 8);
    const uint64_t low_escapes = static_cast<uint64_t>(__builtin_popcount(low));
    _mm512_storeu_si512(words + j, _mm512_mask_expandloadu_epi64(_mm512_cvtepu8_epi64(w), low, escape_words + e));
    _mm512_storeu_si512(words + j + 8, _mm512_mask_expandloadu_epi64(_mm512_cvtepu8_epi64(_mm_srli_si128(w, 8)), high,
                                                                       escape_words + e + low_escapes));
    e += low_escapes + static_cast<uint64_t>(__builtin_popcount(high));
  }
  *escapes = e;
  return j;
}

}  // namespace

uint64_t split_joint_avx512(const uint8_t* gap_tokens, const uint8_t* value_tokens, uint64_t n,
                            uint8_t max_gap_token, uint8_t* joint, uint8_t* escape_gaps, uint8_t* escape_values,
                            JointMax* max, uint64_t* escapes) {
  if (simd_level() < SimdLevel::avx512_vbmi) return 0;
  return split(gap_tokens, value_tokens, n, max_gap_token, joint, escape_gaps, escape_values, max, escapes);
}

uint64_t count_escapes_avx512(const uint8_t* joint, uint64_t n, uint64_t* escapes) {
  return simd_level() < SimdLevel::avx512 ? 0 : count(joint, n, escapes);
}

uint64_t merge_joint_avx512(const uint8_t* joint, uint64_t n, const uint8_t* escape_gaps, const uint64_t* escape_words,
                            uint8_t* gap_tokens, uint64_t* words, uint64_t* escapes) {
  if (simd_level() < SimdLevel::avx512_vbmi) return 0;
  return merge(joint, n, escape_gaps, escape_words, gap_tokens, words, escapes);
}

#else

uint64_t split_joint_avx512(const uint8_t*, const uint8_t*, uint64_t, uint8_t, uint8_t*, uint8_t*, uint8_t*,
                            JointMax*, uint64_t*) {
  return 0;
}
uint64_t count_escapes_avx512(const uint8_t*, uint64_t, uint64_t*) { return 0; }
uint64_t merge_joint_avx512(const uint8_t*, uint64_t, const uint8_t*, const uint64_t*, uint8_t*, uint64_t*, uint64_t*) {
  return 0;
}

#endif

}  // namespace dcr
