#include "src/codec/rans_avx512.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace dcr {

#if defined(__x86_64__)
#define DCR_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))

namespace {

// What the encoder needs of a symbol, in one word: freq (bits 0-12), cum (13-24) and
// l = ceil(log2 freq) (25-28), with the reciprocal alongside: x / freq == (x * rcp) >> (31 + l).
struct EncodeTables {
  alignas(64) uint32_t packed[256];
  alignas(64) uint32_t reciprocal[256];
  bool small = true;  // every coded symbol below 128: lookups are register permutes, not gathers
};

void build(const RansTable& table, EncodeTables* t) {
  for (int s = 0; s < 256; ++s) {
    const uint8_t sym = static_cast<uint8_t>(s);
    const uint32_t f = table.freq(sym);
    t->packed[s] = f | (table.cum(sym) << 13) | ((table.reciprocal_shift(sym) - 31) << 25);
    t->reciprocal[s] = static_cast<uint32_t>(table.reciprocal(sym));
    if (s >= 128 && f != 0) t->small = false;
  }
}

// table[s] for sixteen symbols below 128, from eight registers of the table.
DCR_AVX512 inline __m512i lookup128(const __m512i* t, __m512i s) {
  const __m512i r0 = _mm512_permutex2var_epi32(t[0], s, t[1]), r1 = _mm512_permutex2var_epi32(t[2], s, t[3]);
  const __m512i r2 = _mm512_permutex2var_epi32(t[4], s, t[5]), r3 = _mm512_permutex2var_epi32(t[6], s, t[7]);
  const __mmask16 bit5 = _mm512_test_epi32_mask(s, _mm512_set1_epi32(32));
  const __mmask16 bit6 = _mm512_test_epi32_mask(s, _mm512_set1_epi32(64));
  return _mm512_mask_blend_epi32(bit6, _mm512_mask_blend_epi32(bit5, r0, r1), _mm512_mask_blend_epi32(bit5, r2, r3));
}

// floor(x * rcp / 2^shift) per lane, from the 64-bit products of the even and the odd lanes.
DCR_AVX512 inline __m512i mul_shift(__m512i x, __m512i rcp, __m512i shift) {
  const __m512i low32 = _mm512_set1_epi64(0xffffffff);
  const __m512i even = _mm512_srlv_epi64(_mm512_mul_epu32(x, rcp), _mm512_and_si512(shift, low32));
  const __m512i odd = _mm512_srlv_epi64(_mm512_mul_epu32(_mm512_srli_epi64(x, 32), _mm512_srli_epi64(rcp, 32)),
                                        _mm512_srli_epi64(shift, 32));
  return _mm512_mask_blend_epi32(0xaaaa, even, _mm512_slli_epi64(odd, 32));
}

template <bool Small>
DCR_AVX512 void encode_loop(const uint8_t* symbols, size_t groups, const EncodeTables& t, __m512i& x, uint8_t*& ptr) {
  __m512i packed[8], reciprocal[8];
  for (int k = 0; k < 8 && Small; ++k) {
    packed[k] = _mm512_load_si512(t.packed + 16 * k);
    reciprocal[k] = _mm512_load_si512(t.reciprocal + 16 * k);
  }
  const __m512i low13 = _mm512_set1_epi32(0x1fff), low12 = _mm512_set1_epi32(0xfff);
  for (size_t g = groups; g-- > 0;) {
    const __m512i s = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(symbols + 16 * g)));
    const __m512i word = Small ? lookup128(packed, s) : _mm512_i32gather_epi32(s, t.packed, 4);
    const __m512i rcp = Small ? lookup128(reciprocal, s) : _mm512_i32gather_epi32(s, t.reciprocal, 4);
    const __m512i f = _mm512_and_si512(word, low13);
    // Renormalise: the lanes at or above freq << 19 emit their low 16 bits, in lane order.
    const __mmask16 emit = _mm512_cmpge_epu32_mask(x, _mm512_slli_epi32(f, 31 - kRansProbBits));
    const unsigned emitted = static_cast<unsigned>(__builtin_popcount(emit));
    ptr -= 2 * emitted;
    _mm256_mask_storeu_epi16(ptr, static_cast<__mmask16>((1u << emitted) - 1),
                             _mm512_cvtepi32_epi16(_mm512_maskz_compress_epi32(emit, x)));
    x = _mm512_mask_srli_epi32(x, emit, x, 16);
    // x' = (q << 12) + (x - q f) + cum = x + cum + q (2^12 - f), with q = x / f.
    const __m512i shift = _mm512_add_epi32(_mm512_srli_epi32(word, 25), _mm512_set1_epi32(31));
    const __m512i q = mul_shift(x, rcp, shift);
    const __m512i cum = _mm512_and_si512(_mm512_srli_epi32(word, 13), low12);
    x = _mm512_add_epi32(_mm512_add_epi32(x, cum),
                         _mm512_mullo_epi32(q, _mm512_sub_epi32(_mm512_set1_epi32(kRansProbScale), f)));
  }
}

}  // namespace

DCR_AVX512 void rans_encode_groups_avx512(const uint8_t* symbols, size_t groups, const RansTable& table, uint32_t* states,
                                          uint8_t*& ptr) {
  EncodeTables t;
  build(table, &t);
  __m512i x = _mm512_loadu_si512(states);
  if (t.small) {
    encode_loop<true>(symbols, groups, t, x, ptr);
  } else {
    encode_loop<false>(symbols, groups, t, x, ptr);
  }
  _mm512_storeu_si512(states, x);
}

// The slots are gathered; the lanes that need a word take the next ones in lane order (an expand),
// as the scalar loop refills states 0 to 15 in turn.
DCR_AVX512 size_t rans_decode_groups_avx512(const uint8_t* code, size_t code_bytes, const RansSlot* lookup,
                                            size_t count, uint32_t* states, size_t& pos, uint8_t* symbols) {
  __m512i x = _mm512_loadu_si512(states);
  const __m512i low12 = _mm512_set1_epi32(kRansProbScale - 1);
  size_t i = 0;
  for (; i + 16 <= count && code_bytes - pos >= 32; i += 16) {
    const __m512i slot = _mm512_i32gather_epi32(_mm512_and_si512(x, low12), lookup, 4);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(symbols + i), _mm512_cvtepi32_epi8(slot));
    const __m512i freq = _mm512_add_epi32(_mm512_srli_epi32(slot, 20), _mm512_set1_epi32(1));
    const __m512i offset = _mm512_and_si512(_mm512_srli_epi32(slot, 8), low12);
    x = _mm512_add_epi32(_mm512_mullo_epi32(freq, _mm512_srli_epi32(x, kRansProbBits)), offset);
    const __mmask16 need = _mm512_cmplt_epu32_mask(x, _mm512_set1_epi32(kRansLow));
    const __m512i words =
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(code + pos)));
    x = _mm512_mask_or_epi32(x, need, _mm512_slli_epi32(x, 16), _mm512_maskz_expand_epi32(need, words));
    pos += 2 * static_cast<size_t>(__builtin_popcount(need));
  }
  _mm512_storeu_si512(states, x);
  return i;
}

#else

void rans_encode_groups_avx512(const uint8_t*, size_t, const RansTable&, uint32_t*, uint8_t*&) {}
size_t rans_decode_groups_avx512(const uint8_t*, size_t, const RansSlot*, size_t, uint32_t*, size_t&, uint8_t*) {
  return 0;
}

#endif

}  // namespace dcr
