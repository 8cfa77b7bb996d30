// Internal to the codec: a bundle's box list, the stream that opens its payload
// (docs/frame-format.md): the count of boxes, then each box's tensor, row0, rows, col0 and cols, as
// varints. check_bundle_boxes (dcr/codec/frame.h) is the rule both ends hold the list to.
#pragma once

#include <cstdint>
#include <vector>

#include "dcr/codec/frame.h"
#include "dcr/codec/stream.h"
#include "dcr/core/box.h"
#include "dcr/core/status.h"

namespace dcr {

// Appends the list of `boxes` as one stream to `out` (zstd where it pays); `scratch` holds its bytes
// before they are coded.
void write_box_list(const std::vector<Box>& boxes, StreamCodec* codec, std::vector<uint8_t>* scratch,
                    std::vector<uint8_t>* out);

// Reads the box list of the bundle frame `frame`, whose header `h` is parsed, into *boxes and checks
// them; *payload and h->payload_bytes then describe the sections after it.
Status read_box_list(const uint8_t* frame, FrameHeader* h, StreamCodec* codec, std::vector<Box>* boxes,
                     const uint8_t** payload);

}  // namespace dcr
