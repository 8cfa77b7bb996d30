#include "src/codec/tokens/detokenize_avx512.h"

#include "dcr/codec/simd.h"
#include "dcr/codec/tokens.h"
#include "src/codec/common/simd_x86.h"
#include "src/codec/values/value_mode_avx512.h"

namespace dcr {

#if defined(__x86_64__)

namespace {

DCR_AVX512 inline __m512i prefix_sum(__m512i x) {  // inclusive, over the 16 lanes
  const __m512i zero = _mm512_setzero_si512();
  x = _mm512_add_epi32(x, _mm512_alignr_epi32(x, zero, 15));
  x = _mm512_add_epi32(x, _mm512_alignr_epi32(x, zero, 14));
  x = _mm512_add_epi32(x, _mm512_alignr_epi32(x, zero, 12));
  return _mm512_add_epi32(x, _mm512_alignr_epi32(x, zero, 8));
}

DCR_AVX512 inline uint32_t last_lane(__m512i x) {
  return static_cast<uint32_t>(_mm_extract_epi32(_mm512_extracti32x4_epi32(x, 3), 3));
}

// The low `bits` (< 64) bits of the 8-byte windows at byte offsets `at` (8 lanes), shifted by `shift`.
DCR_AVX512 inline __m256i fields(const uint8_t* base, __m256i at, __m256i shift, __m256i bits) {
  const __m512i window = _mm512_i32gather_epi64(at, base, 1);
  const __m512i mask =
      _mm512_sub_epi64(_mm512_sllv_epi64(_mm512_set1_epi64(1), _mm512_cvtepu32_epi64(bits)), _mm512_set1_epi64(1));
  return _mm512_cvtepi64_epi32(_mm512_and_si512(_mm512_srlv_epi64(window, _mm512_cvtepu32_epi64(shift)), mask));
}

// The same for sixteen fields of at most 24 bits that all lie in the 64 bytes at `base` (every
// 4-byte window starts below byte 60): one load and one byte permute (AVX512-VBMI) instead of four
// gathers. Called, not inlined, from the loops compiled without VBMI.
DCR_AVX512_VBMI __attribute__((noinline)) __m512i short_fields(
    const uint8_t* base, __m512i at, __m512i shift, __m512i bits) {
  const __m512i index = _mm512_add_epi32(_mm512_mullo_epi32(at, _mm512_set1_epi32(0x01010101)),
                                         _mm512_set1_epi32(0x03020100));
  const __m512i window = _mm512_permutexvar_epi8(index, _mm512_loadu_si512(base));
  const __m512i mask = _mm512_sub_epi32(_mm512_sllv_epi32(_mm512_set1_epi32(1), bits), _mm512_set1_epi32(1));
  return _mm512_and_si512(_mm512_srlv_epi32(window, shift), mask);
}

// The values of the 16 tokens at `symbols`, whose extra bits start `bit_pos` bits into the stream;
// false (nothing read) when a symbol is 128 or more or the extra bits come within 8 bytes of the end.
DCR_AVX512 bool token_values(const uint8_t* symbols, const TokenPair& t, bool vbmi, uint64_t bit_pos,
                             __m512i* values, uint32_t* bits_used) {
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(symbols));
  if (_mm_movemask_epi8(raw) != 0) return false;
  const __m512i s = _mm512_cvtepu8_epi32(raw);
  const __mmask16 big = _mm512_cmpge_epu32_mask(s, _mm512_set1_epi32(kDirectTokens));
  const __m512i extra_bits = _mm512_maskz_sub_epi32(big, _mm512_srli_epi32(s, 2), _mm512_set1_epi32(2));
  const __m512i ends = prefix_sum(extra_bits);
  const uint32_t total = last_lane(ends);
  const uint64_t first_byte = bit_pos >> 3;
  if (first_byte + ((bit_pos & 7) + total) / 8 + 8 > t.extra_bytes) return false;
  const __m512i start = _mm512_add_epi32(_mm512_sub_epi32(ends, extra_bits), _mm512_set1_epi32(bit_pos & 7));
  const __m512i at = _mm512_srli_epi32(start, 3), shift = _mm512_and_si512(start, _mm512_set1_epi32(7));
  const uint8_t* base = t.extras + first_byte;
  __m512i extra;
  if (vbmi && (bit_pos & 7) + total <= 480 && first_byte + 64 <= t.extra_bytes &&
      _mm512_cmpgt_epu32_mask(extra_bits, _mm512_set1_epi32(24)) == 0) {
    extra = short_fields(base, at, shift, extra_bits);
  } else {
    const __m256i low = fields(base, _mm512_castsi512_si256(at), _mm512_castsi512_si256(shift),
                               _mm512_castsi512_si256(extra_bits));
    const __m256i high = fields(base, _mm512_extracti64x4_epi64(at, 1), _mm512_extracti64x4_epi64(shift, 1),
                                _mm512_extracti64x4_epi64(extra_bits, 1));
    extra = _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1);
  }
  const __m512i lead = _mm512_or_si512(_mm512_set1_epi32(4), _mm512_and_si512(s, _mm512_set1_epi32(3)));
  *values = _mm512_mask_blend_epi32(big, s, _mm512_or_si512(_mm512_sllv_epi32(lead, extra_bits), extra));
  *bits_used = total;
  return true;
}

DCR_AVX512 uint64_t gaps(const TokenPair& t, uint64_t n, uint64_t count, uint64_t* next, uint64_t* bit_pos,
                         uint32_t* positions) {
  const bool vbmi = simd_level() >= SimdLevel::avx512_vbmi;
  uint64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    __m512i gap;
    uint32_t used;
    if (!token_values(t.symbols + j, t, vbmi, *bit_pos, &gap, &used)) break;
    // Gaps below 2^27 keep the sixteen sums of gap + 1 below 2^31.
    if (_mm512_cmpge_epu32_mask(gap, _mm512_set1_epi32(1 << 27)) != 0) break;
    const __m512i steps = prefix_sum(_mm512_add_epi32(gap, _mm512_set1_epi32(1)));
    const uint32_t advance = last_lane(steps);
    if (advance > count - *next) break;  // a position at or past the end of the box
    _mm512_storeu_si512(positions + j, _mm512_add_epi32(steps, _mm512_set1_epi32(static_cast<int>(*next - 1))));
    *next += advance;
    *bit_pos += used;
  }
  return j;
}

DCR_AVX512 uint64_t words(const TokenPair& t, uint64_t n, unsigned width, uint64_t* bit_pos, uint64_t* out) {
  const __m512i limit = _mm512_set1_epi32(width >= 4 ? -1 : static_cast<int>((1u << (8 * width)) - 1));
  const bool vbmi = simd_level() >= SimdLevel::avx512_vbmi;
  uint64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    __m512i word;
    uint32_t used;
    if (!token_values(t.symbols + j, t, vbmi, *bit_pos, &word, &used)) break;
    if (_mm512_cmpgt_epu32_mask(word, limit) != 0) break;  // wider than the element
    avx512::store_words16(out + j, word);
    *bit_pos += used;
  }
  return j;
}

bool usable(const TokenPair& t) { return simd_level() >= SimdLevel::avx512 && t.extra_bytes < (1ull << 31); }

}  // namespace

uint64_t decode_gaps_avx512(const TokenPair& tokens, uint64_t n, uint64_t count, uint64_t* next, uint64_t* bit_pos,
                            uint32_t* positions) {
  return usable(tokens) ? gaps(tokens, n, count, next, bit_pos, positions) : 0;
}

uint64_t decode_words_avx512(const TokenPair& tokens, uint64_t n, unsigned width, uint64_t* bit_pos, uint64_t* words_out) {
  return usable(tokens) && width <= 4 ? words(tokens, n, width, bit_pos, words_out) : 0;
}

#else

uint64_t decode_gaps_avx512(const TokenPair&, uint64_t, uint64_t, uint64_t*, uint64_t*, uint32_t*) { return 0; }
uint64_t decode_words_avx512(const TokenPair&, uint64_t, unsigned, uint64_t*, uint64_t*) { return 0; }

#endif

}  // namespace dcr
