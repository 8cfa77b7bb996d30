// Decoding and safe in-place apply of frames.
//
// apply is the only way dcr changes receiver bits. It hashes the destination box first:
//   equal to the target hash -> already applied, nothing is written (a retry never applies twice);
//   equal to the base hash (or the frame is full) -> decode, apply, then verify the target hash;
//   anything else -> refused with Code::base_mismatch, nothing written (repair with a full frame).
// If the verification after apply fails, the old bits are put back before returning
// Code::target_mismatch, so a failed apply never leaves a box half-changed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "dcr/codec/frame.h"
#include "dcr/codec/region.h"
#include "dcr/codec/stream.h"
#include "dcr/core/hash.h"
#include "dcr/core/status.h"

namespace dcr {

constexpr uint64_t kAnyVersion = UINT64_MAX;

enum class ApplyOutcome { applied, already_applied };

struct DecodedFrame {
  FrameHeader header;
  std::vector<uint32_t> positions;  // ascending offsets in the box's row-major order
  std::vector<uint64_t> words;      // one per position, meaning given by header.value_mode
};

class FrameDecoder {
 public:
  // Parses, validates and decodes a frame whose box has at most `max_elements` elements.
  Status decode(const uint8_t* frame, size_t size, uint64_t max_elements, DecodedFrame* out);

  // Safe in-place apply (see above) into `dst`, which must hold the frame's box (it may hold
  // more). `expected_base_version` is the receiver's committed version; a delta frame built on
  // another base is refused with Code::base_mismatch. kAnyVersion skips that check.
  Status apply(const uint8_t* frame, size_t size, const Region& dst, uint64_t expected_base_version,
               ApplyOutcome* outcome);

 private:
  Status decode_payload(const uint8_t* frame, DecodedFrame* out);
  Status apply_full(const uint8_t* frame, const Region& box);
  StreamCodec codec_;
  DecodedFrame scratch_;
  Hasher hasher_;
  std::vector<uint32_t> local_;  // positions of one block, relative to its run
  std::vector<uint8_t> old_bits_;  // a full frame's destination before it was applied
};

}  // namespace dcr
