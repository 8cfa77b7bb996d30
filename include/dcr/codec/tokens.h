// Bucketed tokens for unsigned words: values below 16 are their own token; larger ones are coded as
// (bit length, two bits below the leading one) in the token plus the remaining low bits raw.
// Every 64-bit word maps to a token in [0, 255], so tokens fit a byte alphabet for the rANS stage.
#pragma once

#include <cstdint>

namespace dcr {

constexpr unsigned kDirectTokens = 16;

struct Token {
  uint8_t symbol;
  uint8_t extra_bits;  // how many low bits follow raw
  uint64_t extra;      // their value
};

inline Token make_token(uint64_t value) {
  if (value < kDirectTokens) return Token{static_cast<uint8_t>(value), 0, 0};
  const unsigned top = 63 - static_cast<unsigned>(__builtin_clzll(value));  // >= 4
  const unsigned extra_bits = top - 2;
  const unsigned mantissa = static_cast<unsigned>(value >> extra_bits) & 3u;
  const uint64_t extra = value & ((1ull << extra_bits) - 1);
  return Token{static_cast<uint8_t>(kDirectTokens + (top - 4) * 4 + mantissa),
               static_cast<uint8_t>(extra_bits), extra};
}

// Branch-free: token streams mix direct and bucketed tokens unpredictably.
inline unsigned token_extra_bits(uint8_t symbol) { return symbol < kDirectTokens ? 0 : (symbol >> 2) - 2; }

inline uint64_t token_value(uint8_t symbol, uint64_t extra) {
  const uint64_t lead = 4u | (symbol & 3u);
  const uint64_t bucketed = (lead << token_extra_bits(symbol)) | extra;
  return symbol < kDirectTokens ? symbol : bucketed;
}

}  // namespace dcr
