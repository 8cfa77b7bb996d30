// Internal to the codec: a token pair read back into values (gaps or words) in order, as far as
// asked. The loops here are the scalar detokeniser; its AVX-512 twins (detokenize_avx512.h) decode
// a prefix of whole groups first wherever they can prove it valid, and the scalar loop goes on from
// there and reports any error, so both paths accept and refuse the same frames.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "dcr/codec/bit_io.h"
#include "dcr/codec/byte_io.h"
#include "dcr/codec/stream.h"
#include "dcr/codec/tokens.h"
#include "dcr/codec/value_mode.h"
#include "dcr/core/status.h"
#include "src/codec/tokens/detokenize_avx512.h"

namespace dcr {

// One stream pair of tokens (symbols, then their extra bits), decoded in order.
struct TokenReader {
  StreamCodec* codec = nullptr;
  int slot = 0;
  const char* what = "";
  const uint8_t* symbols = nullptr;
  const uint8_t* extras = nullptr;
  size_t extra_bytes = 0;
  uint64_t n = 0;
  uint64_t done = 0;
  uint64_t bit_pos = 0;
  Status open(ByteReader* reader, StreamCodec* codec, uint64_t n, int slot, const char* what);
  // The extra bits stream alone, for symbols that come from elsewhere (gaps-joint).
  Status open_extras(ByteReader* reader, StreamCodec* codec, uint64_t n, const uint8_t* symbols, int slot,
                     const char* what);
  template <typename Prefix, typename Emit>
  Status decode(uint64_t upto, Prefix prefix, Emit emit);  // the symbols, then detokenize
  template <typename Prefix, typename Emit>
  Status detokenize(uint64_t upto, Prefix prefix, Emit emit);
};

// Tokens [done, upto). `prefix(tokens from done, done, upto, &bit_pos)` may decode a first part
// itself (the vectorised decoders) and returns how many tokens it took; emit(j, value) is then
// called for each of the others and returns false for a value the caller cannot accept.
template <typename Prefix, typename Emit>
Status TokenReader::decode(uint64_t upto, Prefix prefix, Emit emit) {
  DCR_TRY(codec->decode(slot, upto));
  return detokenize(upto, prefix, emit);
}

template <typename Prefix, typename Emit>
Status TokenReader::detokenize(uint64_t upto, Prefix prefix, Emit emit) {
  uint64_t j = done + prefix(TokenPair{symbols + done, extras, extra_bytes}, done, upto, &bit_pos);
  BitReader bits(extras, extra_bytes);
  bits.seek(bit_pos);
  for (; j < upto && bits.has_window(); ++j) {  // the usual case, without bounds checks
    const uint8_t symbol = symbols[j];
    const unsigned extra_bits = token_extra_bits(symbol);
    if (extra_bits > 56) break;
    if (!emit(j, token_value(symbol, bits.get_unchecked(extra_bits)))) {
      return Status(Code::corrupt, std::string(what) + " out of range");
    }
  }
  for (; j < upto; ++j) {
    const uint8_t symbol = symbols[j];
    uint64_t value = symbol;
    if (symbol >= kDirectTokens) {
      uint64_t extra = 0;
      if (!bits.get(token_extra_bits(symbol), &extra)) {
        return Status(Code::corrupt, std::string(what) + " extra-bit stream is too short");
      }
      value = token_value(symbol, extra);
    }
    if (!emit(j, value)) return Status(Code::corrupt, std::string(what) + " out of range");
  }
  bit_pos = bits.position();
  done = upto;
  DCR_REQUIRE(done < n || bits.at_end(), Code::corrupt, std::string(what) + " extra-bit stream is too long");
  return Status::ok();
}

// Gap tokens [tokens->done, upto) into positions below `count`; *next is the position after the
// previous change. `symbols` false when the symbols are there already (not decoded from a stream
// of their own).
inline Status decode_token_gaps(TokenReader* tokens, uint64_t upto, uint64_t count, uint64_t* next,
                                uint32_t* positions, bool symbols) {
  const auto vectorised = [&](const TokenPair& pair, uint64_t from, uint64_t to, uint64_t* bit_pos) {
    return decode_gaps_avx512(pair, to - from, count, next, bit_pos, positions + from);
  };
  const auto emit = [&](uint64_t j, uint64_t gap) {
    if (gap >= count - *next) return false;  // past the end of the box
    positions[j] = static_cast<uint32_t>(*next + gap);
    *next += gap + 1;
    return true;
  };
  return symbols ? tokens->decode(upto, vectorised, emit) : tokens->detokenize(upto, vectorised, emit);
}

// Words of `width` bytes [tokens->done, upto) into out; `symbols` as above.
inline Status decode_token_words(TokenReader* tokens, uint64_t upto, unsigned width, uint64_t* out,
                                 bool symbols = true) {
  const uint64_t mask = width_mask(width);
  const auto vectorised = [&](const TokenPair& pair, uint64_t from, uint64_t to, uint64_t* bit_pos) {
    return decode_words_avx512(pair, to - from, width, bit_pos, out + from);
  };
  const auto emit = [&](uint64_t j, uint64_t word) {
    out[j] = word;
    return (word & ~mask) == 0;  // no wider than the element
  };
  return symbols ? tokens->decode(upto, vectorised, emit) : tokens->detokenize(upto, vectorised, emit);
}

}  // namespace dcr
