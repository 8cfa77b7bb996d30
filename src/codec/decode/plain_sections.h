// Internal to the codec: the position and value codings a receiver decodes in full when it opens a
// frame (the token codings decode a slice at a time: change_reader.h), every count, order and bound
// checked as it is read.
#pragma once

#include <cstdint>

#include "dcr/codec/byte_io.h"
#include "dcr/codec/frame.h"
#include "dcr/codec/stream.h"
#include "dcr/core/status.h"

namespace dcr {

// Positions as a bitmap of `count` bits, exactly `changed` of them set.
Status read_bitmap(ByteReader* reader, StreamCodec* codec, uint64_t changed, uint64_t count, uint32_t* positions);

// Positions as LEB128 gaps, each inside the box of `count` elements.
Status read_varint_gaps(ByteReader* reader, StreamCodec* codec, uint64_t changed, uint64_t count,
                        uint32_t* positions);

// Values packed as whole words or byte planes (not tokens).
Status read_value_bytes(ValuePacking packing, ByteReader* reader, StreamCodec* codec, uint64_t changed,
                        unsigned width, uint64_t* words);

}  // namespace dcr
