// Internal to the codec: the two payload sections of a frame (positions, then values), each a list
// of byte streams. Builders turn positions or words into raw streams; readers parse them back,
// validating every count, order and bound.
#pragma once

#include <cstdint>
#include <vector>

#include "dcr/codec/frame.h"
#include "dcr/codec/stream.h"
#include "dcr/codec/tokens.h"

namespace dcr {

struct RawStream {
  std::vector<uint8_t> bytes;
  bool try_zstd = false;
  bool raw_only = false;  // stored as is (no entropy stage) unless the encoder tries every coder
  bool counted = false;  // `hist` already holds the byte histogram
  Histogram hist;
};

struct Section {
  std::vector<RawStream> streams;
  void reset(size_t count);
  double estimate() const;  // coded size if each stream takes the better of raw and rANS
  size_t write(StreamCodec* codec, int zstd_level, bool zstd_everywhere, std::vector<uint8_t>* out) const;
};

void build_positions(PosCoding coding, const uint32_t* positions, uint64_t changed, uint64_t count,
                     Section* section);
void build_values(ValuePacking packing, const uint64_t* words, uint64_t changed, unsigned width,
                  Section* section);

Status read_positions(PosCoding coding, ByteReader* reader, StreamCodec* codec, uint64_t changed,
                      uint64_t count, uint32_t* positions);
Status read_values(ValuePacking packing, ByteReader* reader, StreamCodec* codec, uint64_t changed,
                   unsigned width, uint64_t* words);

}  // namespace dcr
