// AVX-512 tokenising of 2-byte elements, sixteen changes at a time: gaps from the positions,
// ordered deltas from gathered base and target words, tokens with lzcnt. The scalar loop in
// change_collector.cc is the reference; tests compare the frames both write, byte for byte.
#include "src/codec/change_collector.h"

#include "src/codec/value_mode_avx512.h"

namespace dcr {

#if defined(__x86_64__)

namespace {

struct Tokens {
  __m512i symbol, extra, extra_bits;
};

// make_token on sixteen words below 2^32.
DCR_AVX512 inline Tokens make_tokens(__m512i v) {
  const __m512i top = _mm512_sub_epi32(_mm512_set1_epi32(31), _mm512_lzcnt_epi32(v));
  const __m512i extra_bits = _mm512_sub_epi32(top, _mm512_set1_epi32(2));
  const __m512i mantissa = _mm512_and_si512(_mm512_srlv_epi32(v, extra_bits), _mm512_set1_epi32(3));
  const __m512i big_symbol = _mm512_add_epi32(_mm512_slli_epi32(top, 2), mantissa);  // 16 + 4(top-4) + m
  const __m512i low = _mm512_sub_epi32(_mm512_sllv_epi32(_mm512_set1_epi32(1), extra_bits), _mm512_set1_epi32(1));
  const __mmask16 big = _mm512_cmpge_epu32_mask(v, _mm512_set1_epi32(kDirectTokens));
  return Tokens{_mm512_mask_blend_epi32(big, v, big_symbol), _mm512_maskz_and_epi32(big, v, low),
                _mm512_maskz_mov_epi32(big, extra_bits)};
}

DCR_AVX512 inline void store_symbols(const Tokens& t, TokenWriter::Cursor* c) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(c->symbols + c->count), _mm512_cvtepi32_epi8(t.symbol));
  c->count += 16;
}

// Bit fields (value, length) in 64-bit lanes.
struct Fields {
  __m512i value, bits;
};

// Sixteen 32-bit fields into eight 64-bit ones: field 2i, then field 2i+1 above it.
DCR_AVX512 inline Fields merge_pairs(__m512i value, __m512i bits) {
  const __m512i low32 = _mm512_set1_epi64(0xffffffff);
  const __m512i even_bits = _mm512_and_si512(bits, low32);
  return Fields{_mm512_or_si512(_mm512_and_si512(value, low32),
                                _mm512_sllv_epi64(_mm512_srli_epi64(value, 32), even_bits)),
                _mm512_add_epi64(even_bits, _mm512_srli_epi64(bits, 32))};
}

// Eight 64-bit fields into four (lanes 0, 2, 4, 6): field 2i, then field 2i+1 above it. Right only
// where each four's bits add up to 64 at most.
DCR_AVX512 inline Fields merge_even_odd(const Fields& pairs) {
  const __m512i odd_value = _mm512_bsrli_epi128(pairs.value, 8), odd_bits = _mm512_bsrli_epi128(pairs.bits, 8);
  return Fields{_mm512_or_si512(pairs.value, _mm512_sllv_epi64(odd_value, pairs.bits)),
                _mm512_add_epi64(pairs.bits, odd_bits)};
}

// Whether every four of merge_even_odd fits 64 bits.
DCR_AVX512 inline bool fours_fit(const Fields& fours) {
  return _mm512_mask_cmpgt_epu64_mask(0x55, fours.bits, _mm512_set1_epi64(64)) == 0;
}

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
  TokenWriter::Cursor gaps = *gap_cursor, deltas = *delta_cursor;
  __m512i carry = _mm512_set1_epi32(static_cast<int>(*next));  // lane 15: the position after the last change
  __m512i gap_max = _mm512_setzero_si512(), delta_max = _mm512_setzero_si512();
  // Extra bits leave in merged fields, fewer puts (each put is a serial step): delta fields (at
  // most 13 bits) in fours, gap fields (at most 29) in fours where they fit, else in pairs. A
  // group's fields go through memory and are put one group later, when their stores have landed
  // (a scalar load waiting on a wide store would stall every put).
  alignas(64) uint64_t fields[2][4][8];  // [group parity][gap value, gap bits, delta value, delta bits]
  bool gap_fours[2], delta_bits[2];
  auto put_group = [&](const uint64_t (&f)[4][8], bool fours, bool with_deltas) {
    for (int i = 0; i < 8; i += 2) {
      gaps.bits.put(f[0][i], static_cast<unsigned>(f[1][i]));
      if (!fours) gaps.bits.put(f[0][i + 1], static_cast<unsigned>(f[1][i + 1]));
    }
    if (!with_deltas) return;  // most groups at a few % changed: deltas of one or two steps
    for (int i = 0; i < 8; i += 2) deltas.bits.put(f[2][i], static_cast<unsigned>(f[3][i]));
  };
  for (uint64_t g = 0; g < groups; ++g) {
    const __m512i pos = _mm512_loadu_si512(positions + 16 * g);
    const __m512i after = _mm512_add_epi32(pos, _mm512_set1_epi32(1));
    const Tokens gap = make_tokens(_mm512_sub_epi32(pos, _mm512_alignr_epi32(after, carry, 15)));
    carry = after;
    const Tokens delta = make_tokens(ordered_deltas<Staged>(sign_magnitude, words, base, target, 16 * g, pos));
    store_symbols(gap, &gaps);
    store_symbols(delta, &deltas);
    gap_max = _mm512_max_epu32(gap_max, gap.symbol);
    delta_max = _mm512_max_epu32(delta_max, delta.symbol);
    const Fields gap_pairs = merge_pairs(gap.extra, gap.extra_bits);
    const Fields gap_quads = merge_even_odd(gap_pairs);
    const bool fours = fours_fit(gap_quads);
    const Fields gap_fields = fours ? gap_quads : gap_pairs;
    const Fields delta_quads = merge_even_odd(merge_pairs(delta.extra, delta.extra_bits));
    uint64_t (&f)[4][8] = fields[g & 1];
    gap_fours[g & 1] = fours;
    delta_bits[g & 1] = _mm512_test_epi32_mask(delta.extra_bits, delta.extra_bits) != 0;
    _mm512_store_si512(f[0], gap_fields.value);
    _mm512_store_si512(f[1], gap_fields.bits);
    _mm512_store_si512(f[2], delta_quads.value);
    _mm512_store_si512(f[3], delta_quads.bits);
    if (g > 0) put_group(fields[(g - 1) & 1], gap_fours[(g - 1) & 1], delta_bits[(g - 1) & 1]);
  }
  if (groups > 0) {
    put_group(fields[(groups - 1) & 1], gap_fours[(groups - 1) & 1], delta_bits[(groups - 1) & 1]);
    gaps.max_symbol = std::max<uint8_t>(gaps.max_symbol, _mm512_reduce_max_epu32(gap_max));
    deltas.max_symbol = std::max<uint8_t>(deltas.max_symbol, _mm512_reduce_max_epu32(delta_max));
    *next = positions[16 * groups - 1] + 1ull;
  }
  *gap_cursor = gaps;
  *delta_cursor = deltas;
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
