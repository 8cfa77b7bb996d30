// Internal to the codec: the encoder's tokenising of changes into their gap and ordered-delta
// tokens. The scalar loop here is the reference; for 2-byte elements its AVX-512 twin
// (tokenize_avx512.cc) takes whole groups of sixteen first, writing the same bytes (tests compare
// the frames both write, byte for byte).
#pragma once

#include <cstdint>

#include "dcr/codec/scan.h"
#include "dcr/codec/simd.h"
#include "dcr/codec/value_mode.h"
#include "src/codec/scan/scan_hash.h"
#include "src/codec/tokens/token_writer.h"

namespace dcr {

// The AVX-512 twin of the scalar gap and ordered-delta tokenising for 2-byte elements (the same
// bytes): tokenises a prefix of the n changes, a whole number of groups of 16 that all lie below the
// box's last element, and returns its length. `next` is the position after the previous change.
// The changes' words come from `words` where the scan copied them out (both non-null), else from
// the buffers.
uint64_t tokenize_avx512_w2(ValueMode delta_mode, const uint8_t* base, const uint8_t* target,
                            const uint32_t* positions, uint64_t n, ChangedWords words, uint64_t elements,
                            uint64_t* next, TokenWriter::Cursor* gaps, TokenWriter::Cursor* deltas);

// Tokenises changes [j, n) at `positions` of a box of `elements` W-byte elements: each gap (after
// *next, the position after the previous change) into `gaps`, each ordered delta of mode Delta
// into `deltas`. The words come from `words` where the scan copied them out (W == 2, non-null),
// else from the buffers.
template <unsigned W, ValueMode Delta>
inline void tokenize_changes(const uint8_t* base, const uint8_t* target, const uint32_t* positions, uint64_t j,
                             uint64_t n, ChangedWords words, uint64_t elements, uint64_t* next_position,
                             TokenWriter::Cursor* gap_cursor, TokenWriter::Cursor* delta_cursor) {
  TokenWriter::Cursor gaps = *gap_cursor, deltas = *delta_cursor;  // locals, kept in registers
  uint64_t next = *next_position;
  const bool staged = W == 2 && words.base != nullptr;
  if (W == 2 && simd_level() >= SimdLevel::avx512) {
    const ChangedWords rest = staged ? ChangedWords{words.base + j, words.target + j} : words;
    j += tokenize_avx512_w2(Delta, base, target, positions + j, n - j, rest, elements, &next, &gaps, &deltas);
  }
  for (; j < n; ++j) {
    const uint64_t p = positions[j];
    gaps.add(p - next);
    next = p + 1;
    deltas.add(encode_word(Delta, staged ? words.base[j] : load_word(base, p, W),
                           staged ? words.target[j] : load_word(target, p, W), W));
  }
  *gap_cursor = gaps;
  *delta_cursor = deltas;
  *next_position = next;
}

}  // namespace dcr
