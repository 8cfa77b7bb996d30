// Internal to the codec: the encoder's token pairs, each change's value (a gap or a word) as a token
// symbol and its raw extra bits, appended to the two streams of a section.
#pragma once

#include <algorithm>
#include <cstdint>

#include "dcr/codec/bit_io.h"
#include "dcr/codec/rans.h"
#include "dcr/codec/tokens.h"
#include "src/codec/common/buffer.h"
#include "src/codec/encode/section.h"

namespace dcr {

// Appends tokens of successive values to a token-pair section. Hot loops take a Cursor (plain
// locals the compiler keeps in registers) and hand it back.
class TokenWriter {
 public:
  struct Cursor {
    uint8_t* symbols;
    uint64_t count;
    BitPacker bits;
    uint8_t max_symbol;  // the histogram is sampled at the end; this keeps every symbol codable
    void add(uint64_t value) {
      const Token t = make_token(value);
      max_symbol = std::max(max_symbol, t.symbol);
      symbols[count++] = t.symbol;
      bits.put(t.extra, t.extra_bits);
    }
  };

  // Room for `capacity` values of at most `max_extra_bits` extra bits each.
  void start(Section* section, uint64_t capacity, unsigned max_extra_bits);
  Cursor cursor() const { return cursor_; }
  void commit(const Cursor& c) { cursor_ = c; }
  void finish();  // hands the section views of the symbols and bits, with their histogram (sampled)
  double cost() const;  // after finish

 private:
  Section* section_ = nullptr;
  Buffer<uint8_t> symbols_;
  Buffer<uint8_t> bits_;
  Cursor cursor_{nullptr, 0, BitPacker(), 0};
};

// Coded size of a token pair: the token stream (raw or rANS) plus the raw extra bits stream.
double token_pair_cost(const Histogram& hist, uint64_t count, uint64_t extra_bits);

}  // namespace dcr
