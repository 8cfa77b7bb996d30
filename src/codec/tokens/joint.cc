// The scalar joint-byte loops: the reference the AVX-512 twins (joint_avx512.cc) must match.
#include "src/codec/tokens/joint.h"

#include <algorithm>

namespace dcr {

uint8_t joint_gap_bound(const uint64_t* gap_token_histogram) {
  constexpr uint8_t kShort = 30, kLong = 62;
  uint64_t total = 0, beyond = 0;
  for (int s = 0; s < 256; ++s) {
    total += gap_token_histogram[s];
    if (s > kShort) beyond += gap_token_histogram[s];
  }
  return beyond * 200 <= total ? kShort : kLong;  // at most 0.5% of the gaps escape for their length
}

uint64_t split_joint(const uint8_t* gap_tokens, const uint8_t* value_tokens, uint64_t n, uint8_t max_gap_token,
                     uint8_t* joint, uint8_t* escape_gaps, uint8_t* escape_values, JointMax* max) {
  *max = JointMax{};
  uint64_t escapes = 0;
  uint64_t j = split_joint_avx512(gap_tokens, value_tokens, n, max_gap_token, joint, escape_gaps, escape_values, max,
                                  &escapes);
  for (; j < n; ++j) {
    const uint8_t g = gap_tokens[j], v = value_tokens[j];
    joint[j] = joint_byte(g, v, max_gap_token);
    max->joint = std::max(max->joint, joint[j]);
    if (joint[j] != 0) continue;
    escape_gaps[escapes] = g;
    escape_values[escapes] = v;
    max->escape_gap = std::max(max->escape_gap, g);
    max->escape_value = std::max(max->escape_value, v);
    ++escapes;
  }
  return escapes;
}

uint64_t count_escapes(const uint8_t* joint, uint64_t n) {
  uint64_t escapes = 0;
  for (uint64_t j = count_escapes_avx512(joint, n, &escapes); j < n; ++j) escapes += joint[j] == 0;
  return escapes;
}

uint64_t merge_joint(const uint8_t* joint, uint64_t n, const uint8_t* escape_gaps, const uint64_t* escape_words,
                     uint8_t* gap_tokens, uint64_t* words) {
  uint64_t escapes = 0;
  for (uint64_t j = merge_joint_avx512(joint, n, escape_gaps, escape_words, gap_tokens, words, &escapes); j < n; ++j) {
    const uint8_t b = joint[j];
    if (b != 0) {
      gap_tokens[j] = joint_gap_token(b);
      words[j] = joint_word(b);
    } else {
      gap_tokens[j] = escape_gaps[escapes];
      words[j] = escape_words[escapes];
      ++escapes;
    }
  }
  return escapes;
}

}  // namespace dcr
