// Internal to the codec: the AVX-512 tokeniser of 2-byte elements, sixteen changes (a group) at a
// time: gap and ordered-delta tokens with lzcnt, their extra bits merged into few puts. Shared by
// the tokenising loop (tokenize_avx512.cc) and the fused scan, which tokenises groups while its
// reads are in flight (scan_hash.cc). The scalar loop in tokenize.h is the reference.
#pragma once

#include <algorithm>

#include "src/codec/common/simd_x86.h"
#include "src/codec/tokens/token_writer.h"

#if defined(__x86_64__)

namespace dcr::avx512 {

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

// Fields in lanes 0, d, 2d, ... merged with the lane d above each (d = 2 or 4: fours into eights in
// lanes 0 and 4, eights into one in lane 0): the lower field, then the upper one above it. Right
// only where each merged pair's bits add up to 64 at most.
template <int D>
DCR_AVX512 inline Fields merge_up(const Fields& f) {
  const __m512i upper_value = _mm512_alignr_epi64(f.value, f.value, D);
  const __m512i upper_bits = _mm512_alignr_epi64(f.bits, f.bits, D);
  return Fields{_mm512_or_si512(f.value, _mm512_sllv_epi64(upper_value, f.bits)),
                _mm512_add_epi64(f.bits, upper_bits)};
}

// Whether the fields in the lanes of `lanes` each fit 64 bits.
DCR_AVX512 inline bool fit(const Fields& f, __mmask8 lanes) {
  return _mm512_mask_cmpgt_epu64_mask(lanes, f.bits, _mm512_set1_epi64(64)) == 0;
}

// A group's sixteen fields as few as fit 64 bits each: one, two (eights), four (fours) or eight
// (pairs). Stores the fields' values and bits and returns the lane step between them (8, 4, 2 or 1).
DCR_AVX512 inline unsigned fewest_fields(__m512i value, __m512i bits, uint64_t* values, uint64_t* counts) {
  const Fields pairs = merge_pairs(value, bits);
  const Fields fours = merge_even_odd(pairs);
  Fields chosen = pairs;
  unsigned step = 1;
  if (fit(fours, 0x55)) {
    const Fields eights = merge_up<2>(fours);
    const Fields sixteen = merge_up<4>(eights);
    const bool one = fit(sixteen, 0x01), two = fit(eights, 0x11);
    chosen = one ? sixteen : two ? eights : fours;
    step = one ? 8 : two ? 4 : 2;
  }
  _mm512_store_si512(values, chosen.value);
  _mm512_store_si512(counts, chosen.bits);
  return step;
}

// The tokeniser's state between groups: the cursors of both token streams, the gap carried from
// the last group, and the largest symbols so far.
struct GroupTokenizer {
  TokenWriter::Cursor gaps, deltas;
  __m512i carry;  // lane 15: the position after the last change
  __m512i gap_max, delta_max;
  uint64_t next = 0;  // the position after the last change
  uint64_t groups = 0;
  // Extra bits leave in merged fields, fewer puts (each put is a serial step): each stream's
  // sixteen fields in as few as fit 64 bits each (fewest_fields). A group's fields go through
  // memory and are put one group later, when their stores have landed (a scalar load waiting on a
  // wide store would stall every put).
  alignas(64) uint64_t fields[2][4][8];  // [group parity][gap value, gap bits, delta value, delta bits]
  uint8_t gap_step[2], delta_step[2];  // lanes between two fields; delta 0: no extra bits

  DCR_AVX512 void start(const TokenWriter::Cursor& gap_cursor, const TokenWriter::Cursor& delta_cursor,
                        uint64_t after_last) {
    gaps = gap_cursor;
    deltas = delta_cursor;
    next = after_last;
    carry = _mm512_set1_epi32(static_cast<int>(after_last));
    gap_max = delta_max = _mm512_setzero_si512();
    groups = 0;
  }

  // The sixteen changes at `positions` (+ `offset`), their ordered deltas in `delta_words` (low 16
  // bits).
  DCR_AVX512 void group(const uint32_t* positions, __m512i delta_words, uint32_t offset = 0) {
    const __m512i pos = _mm512_add_epi32(_mm512_loadu_si512(positions), _mm512_set1_epi32(static_cast<int>(offset)));
    const __m512i after = _mm512_add_epi32(pos, _mm512_set1_epi32(1));
    const Tokens gap = make_tokens(_mm512_sub_epi32(pos, _mm512_alignr_epi32(after, carry, 15)));
    carry = after;
    next = positions[15] + uint64_t{offset} + 1;
    const Tokens delta = make_tokens(delta_words);
    store_symbols(gap, &gaps);
    store_symbols(delta, &deltas);
    gap_max = _mm512_max_epu32(gap_max, gap.symbol);
    delta_max = _mm512_max_epu32(delta_max, delta.symbol);
    const unsigned parity = groups & 1;
    uint64_t (&f)[4][8] = fields[parity];
    gap_step[parity] = static_cast<uint8_t>(fewest_fields(gap.extra, gap.extra_bits, f[0], f[1]));
    const bool delta_extra = _mm512_test_epi32_mask(delta.extra_bits, delta.extra_bits) != 0;
    const unsigned delta_lane_step = delta_extra ? fewest_fields(delta.extra, delta.extra_bits, f[2], f[3]) : 0;
    delta_step[parity] = static_cast<uint8_t>(delta_lane_step);
    if (groups > 0) put_group(parity ^ 1);
    ++groups;
  }

  // Puts the last group's fields and hands back the cursors and the position after the last
  // change (unchanged when no group was tokenised).
  DCR_AVX512 void finish(TokenWriter::Cursor* gap_cursor, TokenWriter::Cursor* delta_cursor, uint64_t* after_last) {
    if (groups > 0) {
      put_group((groups - 1) & 1);
      gaps.max_symbol = std::max<uint8_t>(gaps.max_symbol, _mm512_reduce_max_epu32(gap_max));
      deltas.max_symbol = std::max<uint8_t>(deltas.max_symbol, _mm512_reduce_max_epu32(delta_max));
    }
    *gap_cursor = gaps;
    *delta_cursor = deltas;
    *after_last = next;
  }

 private:
  void put_group(unsigned parity) {
    const uint64_t (&f)[4][8] = fields[parity];
    for (unsigned i = 0; i < 8; i += gap_step[parity]) gaps.bits.put(f[0][i], static_cast<unsigned>(f[1][i]));
    if (delta_step[parity] == 0) return;  // many groups at a few % changed: deltas of one or two steps
    for (unsigned i = 0; i < 8; i += delta_step[parity]) deltas.bits.put(f[2][i], static_cast<unsigned>(f[3][i]));
  }
};

}  // namespace dcr::avx512

#endif
