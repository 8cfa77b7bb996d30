// Internal to the codec: the joint bytes of position coding gaps-joint (docs/frame-format.md). At a
// few % changed most changes move their element by one step (value word 1 or 2) after a short gap,
// so one byte per change, 2 * gap token + word, carries both and the entropy stage codes one
// symbol per change instead of two. Any other change is an escape, byte 0, whose gap token and
// word follow in streams of their own.
#pragma once

#include <cstdint>

namespace dcr {

// The joint byte of a change with this gap token and value token (tokens 1 and 2 are words 1 and
// 2), when its gap token is at most `max_gap_token` (at most 126); else 0. Decoders accept any byte:
// the encoder picks the bound (joint_gap_bound).
inline uint8_t joint_byte(uint8_t gap_token, uint8_t value_token, uint8_t max_gap_token) {
  const bool joint = (value_token == 1 || value_token == 2) && gap_token <= max_gap_token;
  return joint ? static_cast<uint8_t>(2 * gap_token + value_token) : 0;
}

// The gap token and word of a joint byte other than 0.
inline uint8_t joint_gap_token(uint8_t byte) { return static_cast<uint8_t>((byte - 1) >> 1); }
inline uint64_t joint_word(uint8_t byte) { return 2 - (byte & 1u); }

// The largest byte of each stream split_joint writes.
struct JointMax {
  uint8_t joint = 0, escape_gap = 0, escape_value = 0;
};

// The largest gap token to join, from the histogram of a frame's gap tokens: 30 keeps the joint
// bytes below 64, where the encoder's rANS tables are looked up in registers, and suits the short
// gaps of a few % changed; sparser changes take 62 (bytes below 128), so that few long gaps
// escape: an escaped long gap's step-sized word would code apart from its gap, in the escape words.
uint8_t joint_gap_bound(const uint64_t* gap_token_histogram);

// The joint bytes of n changes from their gap and value tokens, with the escapes' gap and value
// tokens appended in order to escape_gaps and escape_values (each with room for n + 64 bytes).
// Returns the escapes.
uint64_t split_joint(const uint8_t* gap_tokens, const uint8_t* value_tokens, uint64_t n, uint8_t max_gap_token,
                     uint8_t* joint, uint8_t* escape_gaps, uint8_t* escape_values, JointMax* max);

// The escapes among n joint bytes.
uint64_t count_escapes(const uint8_t* joint, uint64_t n);

// The reverse: the gap tokens and words of n changes from their joint bytes, the escapes' taken in
// order from escape_gaps and escape_words, which must hold count_escapes(joint, n). Returns that count.
uint64_t merge_joint(const uint8_t* joint, uint64_t n, const uint8_t* escape_gaps, const uint64_t* escape_words,
                     uint8_t* gap_tokens, uint64_t* words);

// The AVX-512 twins (AVX512-VBMI2): each handles a prefix of whole groups and returns its length (0
// below that level), the scalar loops finishing the rest; they write the same bytes.
uint64_t split_joint_avx512(const uint8_t* gap_tokens, const uint8_t* value_tokens, uint64_t n,
                            uint8_t max_gap_token, uint8_t* joint, uint8_t* escape_gaps, uint8_t* escape_values,
                            JointMax* max, uint64_t* escapes);
uint64_t count_escapes_avx512(const uint8_t* joint, uint64_t n, uint64_t* escapes);
uint64_t merge_joint_avx512(const uint8_t* joint, uint64_t n, const uint8_t* escape_gaps, const uint64_t* escape_words,
                            uint8_t* gap_tokens, uint64_t* words, uint64_t* escapes);

}  // namespace dcr
