#include "src/codec/entropy/rans_avx512.h"

#include <algorithm>
#include <vector>

#include "src/codec/common/simd_x86.h"

namespace dcr {

#if defined(__x86_64__)

namespace {

// What the encoder needs of a symbol, in one word: freq (bits 0-12), cum (13-24) and
// l = ceil(log2 freq) (25-28), with the reciprocal alongside: x / freq == (x * rcp) >> (31 + l).
struct EncodeTables {
  alignas(64) uint32_t packed[256];
  alignas(64) uint32_t reciprocal[256];
  unsigned range = 32;  // every coded symbol lies below it; up to 128, lookups are register permutes
};

void build(const RansTable& table, EncodeTables* t) {
  for (int s = 0; s < 256; ++s) {
    const uint8_t sym = static_cast<uint8_t>(s);
    const uint32_t f = table.freq(sym);
    t->packed[s] = f | (table.cum(sym) << 13) | ((table.reciprocal_shift(sym) - 31) << 25);
    t->reciprocal[s] = static_cast<uint32_t>(table.reciprocal(sym));
    while (f != 0 && s >= static_cast<int>(t->range)) t->range *= 2;
  }
}

// table[s] for sixteen symbols below Range (32, 64 or 128), from the first Range / 16 registers of
// the table; other ranges gather from memory.
template <unsigned Range>
DCR_AVX512 inline __m512i lookup(const __m512i* t, const uint32_t* table, __m512i s) {
  if (Range > 128) return _mm512_i32gather_epi32(s, table, 4);
  const __m512i r0 = _mm512_permutex2var_epi32(t[0], s, t[1]);
  if (Range == 32) return r0;
  const __mmask16 bit5 = _mm512_test_epi32_mask(s, _mm512_set1_epi32(32));
  const __m512i r01 = _mm512_mask_blend_epi32(bit5, r0, _mm512_permutex2var_epi32(t[2], s, t[3]));
  if (Range == 64) return r01;
  const __m512i r2 = _mm512_permutex2var_epi32(t[4], s, t[5]), r3 = _mm512_permutex2var_epi32(t[6], s, t[7]);
  const __mmask16 bit6 = _mm512_test_epi32_mask(s, _mm512_set1_epi32(64));
  return _mm512_mask_blend_epi32(bit6, r01, _mm512_mask_blend_epi32(bit5, r2, r3));
}

// floor(x * rcp / 2^shift) per lane, from the 64-bit products of the even and the odd lanes.
DCR_AVX512 inline __m512i mul_shift(__m512i x, __m512i rcp, __m512i shift) {
  const __m512i low32 = _mm512_set1_epi64(0xffffffff);
  const __m512i even = _mm512_srlv_epi64(_mm512_mul_epu32(x, rcp), _mm512_and_si512(shift, low32));
  const __m512i odd = _mm512_srlv_epi64(_mm512_mul_epu32(_mm512_srli_epi64(x, 32), _mm512_srli_epi64(rcp, 32)),
                                        _mm512_srli_epi64(shift, 32));
  return _mm512_mask_blend_epi32(0xaaaa, even, _mm512_slli_epi64(odd, 32));
}

// Encodes sixteen symbols, given their packed words and reciprocals, with the states in `x`: the
// lanes at or above freq << 19 emit their low 16 bits first (compressed into lane order, below
// `ptr`), then x' = x + cum + q (2^12 - freq).
DCR_AVX512 inline void encode16_with(__m512i word, __m512i rcp, __m512i& x, uint8_t*& ptr) {
  const __m512i f = _mm512_and_si512(word, _mm512_set1_epi32(0x1fff));
  const __mmask16 emit = _mm512_cmpge_epu32_mask(x, _mm512_slli_epi32(f, 31 - kRansProbBits));
  const unsigned emitted = static_cast<unsigned>(__builtin_popcount(emit));
  ptr -= 2 * emitted;
  _mm256_mask_storeu_epi16(ptr, static_cast<__mmask16>((1u << emitted) - 1),
                           _mm512_cvtepi32_epi16(_mm512_maskz_compress_epi32(emit, x)));
  x = _mm512_mask_srli_epi32(x, emit, x, 16);
  const __m512i shift = _mm512_add_epi32(_mm512_srli_epi32(word, 25), _mm512_set1_epi32(31));
  const __m512i q = mul_shift(x, rcp, shift);
  const __m512i cum = _mm512_and_si512(_mm512_srli_epi32(word, 13), _mm512_set1_epi32(0xfff));
  x = _mm512_add_epi32(_mm512_add_epi32(x, cum),
                       _mm512_mullo_epi32(q, _mm512_sub_epi32(_mm512_set1_epi32(kRansProbScale), f)));
}

template <unsigned Range>
DCR_AVX512 inline void encode16(__m512i s, const __m512i* packed, const __m512i* reciprocal, const EncodeTables& t,
                                __m512i& x, uint8_t*& ptr) {
  encode16_with(lookup<Range>(packed, t.packed, s), lookup<Range>(reciprocal, t.reciprocal, s), x, ptr);
}

DCR_AVX512 inline __m512i load_symbols16(const uint8_t* symbols) {
  return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(symbols)));
}

// Sixteen symbols with a table each, by their buckets: gathered from every table's entries in
// turn (bucket b's symbol s at b * 256 + s).
DCR_AVX512 inline void encode16_buckets(const uint8_t* symbols, const uint8_t* buckets, const uint32_t* packed,
                                        const uint32_t* reciprocal, __m512i& x, uint8_t*& ptr) {
  const __m512i index = _mm512_or_si512(_mm512_slli_epi32(load_symbols16(buckets), 8), load_symbols16(symbols));
  encode16_with(_mm512_i32gather_epi32(index, packed, 4), _mm512_i32gather_epi32(index, reciprocal, 4), x, ptr);
}

// States 16-31 go first in each group: the scalar loop encodes state 31 down to 0, so their words
// lie above those of states 0-15.
template <unsigned Range>
DCR_AVX512 void encode_loop(const uint8_t* symbols, size_t groups, const EncodeTables& t, __m512i& low,
                            __m512i& high, uint8_t*& ptr) {
  __m512i packed[8], reciprocal[8];
  for (unsigned k = 0; k < 8 && k < Range / 16; ++k) {
    packed[k] = _mm512_load_si512(t.packed + 16 * k);
    reciprocal[k] = _mm512_load_si512(t.reciprocal + 16 * k);
  }
  for (size_t g = groups; g-- > 0;) {
    encode16<Range>(load_symbols16(symbols + 32 * g + 16), packed, reciprocal, t, high, ptr);
    encode16<Range>(load_symbols16(symbols + 32 * g), packed, reciprocal, t, low, ptr);
  }
}

}  // namespace

DCR_AVX512 void rans_encode_groups_avx512(const uint8_t* symbols, size_t groups, const RansTable& table, uint32_t* states,
                                          uint8_t*& ptr) {
  EncodeTables t;
  build(table, &t);
  __m512i low = _mm512_loadu_si512(states), high = _mm512_loadu_si512(states + 16);
  switch (t.range) {
    case 32: encode_loop<32>(symbols, groups, t, low, high, ptr); break;
    case 64: encode_loop<64>(symbols, groups, t, low, high, ptr); break;
    case 128: encode_loop<128>(symbols, groups, t, low, high, ptr); break;
    default: encode_loop<256>(symbols, groups, t, low, high, ptr); break;
  }
  _mm512_storeu_si512(states, low);
  _mm512_storeu_si512(states + 16, high);
}

DCR_AVX512 void rans_encode_bucket_groups_avx512(const uint8_t* symbols, const uint8_t* buckets, size_t groups,
                                                 const RansTable* tables, unsigned table_count, uint32_t* states,
                                                 uint8_t*& ptr) {
  std::vector<uint32_t> packed(256 * size_t{table_count}), reciprocal(packed.size());
  for (unsigned b = 0; b < table_count; ++b) {
    EncodeTables t;
    build(tables[b], &t);
    std::copy(t.packed, t.packed + 256, packed.data() + 256 * b);
    std::copy(t.reciprocal, t.reciprocal + 256, reciprocal.data() + 256 * b);
  }
  __m512i low = _mm512_loadu_si512(states), high = _mm512_loadu_si512(states + 16);
  for (size_t g = groups; g-- > 0;) {  // states 16-31 first, as in encode_loop
    encode16_buckets(symbols + 32 * g + 16, buckets + 32 * g + 16, packed.data(), reciprocal.data(), high, ptr);
    encode16_buckets(symbols + 32 * g, buckets + 32 * g, packed.data(), reciprocal.data(), low, ptr);
  }
  _mm512_storeu_si512(states, low);
  _mm512_storeu_si512(states + 16, high);
}

DCR_AVX512 void rans_fill_slots_avx512(const RansTable& table, RansSlot* lookup) {
  const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  for (int s = 0; s < 256; ++s) {
    const uint32_t f = table.freq(static_cast<uint8_t>(s)), c = table.cum(static_cast<uint8_t>(s));
    if (f == 0) continue;
    const __m512i first = _mm512_set1_epi32(static_cast<int>(rans_slot(f, 0, static_cast<uint8_t>(s))));
    for (uint32_t k = 0; k < f; k += 16) {
      const __mmask16 live = static_cast<__mmask16>(f - k >= 16 ? 0xffff : (1u << (f - k)) - 1);
      const __m512i slot = _mm512_add_epi32(first, _mm512_slli_epi32(_mm512_add_epi32(lane, _mm512_set1_epi32(k)), 8));
      _mm512_mask_storeu_epi32(lookup + c + k, live, slot);
    }
  }
}

namespace {

// Decodes sixteen symbols with the states in `x`, then refills the lanes that fell below kRansLow
// from the next words in lane order (an expand), as the scalar loop refills states in turn. With
// Buckets, each symbol's slot comes from the table of its bucket.
template <bool Buckets>
DCR_AVX512 inline void decode16(const uint8_t* code, const RansSlot* lookup, const uint8_t* buckets, __m512i& x,
                                size_t& pos, uint8_t* symbols) {
  const __m512i low12 = _mm512_set1_epi32(kRansProbScale - 1);
  __m512i index = _mm512_and_si512(x, low12);
  if (Buckets) index = _mm512_or_si512(index, _mm512_slli_epi32(load_symbols16(buckets), kRansProbBits));
  const __m512i slot = avx512::gather32<4>(lookup, index);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(symbols), _mm512_cvtepi32_epi8(slot));
  const __m512i freq = _mm512_add_epi32(_mm512_srli_epi32(slot, 20), _mm512_set1_epi32(1));
  const __m512i offset = _mm512_and_si512(_mm512_srli_epi32(slot, 8), low12);
  x = _mm512_add_epi32(_mm512_mullo_epi32(freq, _mm512_srli_epi32(x, kRansProbBits)), offset);
  const __mmask16 need = _mm512_cmplt_epu32_mask(x, _mm512_set1_epi32(kRansLow));
  const __m512i words = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(code + pos)));
  x = _mm512_mask_or_epi32(x, need, _mm512_slli_epi32(x, 16), _mm512_maskz_expand_epi32(need, words));
  pos += 2 * static_cast<size_t>(__builtin_popcount(need));
}

// The two registers of states decode independently; their refills take words in state order.
template <bool Buckets>
DCR_AVX512 size_t decode_groups(const uint8_t* code, size_t code_bytes, const RansSlot* lookup,
                                const uint8_t* buckets, size_t count, uint32_t* states, size_t& pos,
                                uint8_t* symbols) {
  __m512i low = _mm512_loadu_si512(states), high = _mm512_loadu_si512(states + 16);
  size_t i = 0;
  for (; i + 32 <= count && code_bytes - pos >= 64; i += 32) {
    decode16<Buckets>(code, lookup, Buckets ? buckets + i : nullptr, low, pos, symbols + i);
    decode16<Buckets>(code, lookup, Buckets ? buckets + i + 16 : nullptr, high, pos, symbols + i + 16);
  }
  _mm512_storeu_si512(states, low);
  _mm512_storeu_si512(states + 16, high);
  return i;
}

}  // namespace

DCR_AVX512 size_t rans_decode_groups_avx512(const uint8_t* code, size_t code_bytes, const RansSlot* lookup,
                                            const uint8_t* buckets, size_t count, uint32_t* states, size_t& pos,
                                            uint8_t* symbols) {
  if (buckets != nullptr) return decode_groups<true>(code, code_bytes, lookup, buckets, count, states, pos, symbols);
  return decode_groups<false>(code, code_bytes, lookup, buckets, count, states, pos, symbols);
}

#else

void rans_fill_slots_avx512(const RansTable&, RansSlot*) {}
void rans_encode_groups_avx512(const uint8_t*, size_t, const RansTable&, uint32_t*, uint8_t*&) {}
void rans_encode_bucket_groups_avx512(const uint8_t*, const uint8_t*, size_t, const RansTable*, unsigned, uint32_t*,
                                      uint8_t*&) {}
size_t rans_decode_groups_avx512(const uint8_t*, size_t, const RansSlot*, const uint8_t*, size_t, uint32_t*, size_t&,
                                 uint8_t*) {
  return 0;
}

#endif

}  // namespace dcr
