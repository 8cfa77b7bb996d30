// Decoding and safe in-place apply of frames.
//
// apply_frame is the only way dcr changes receiver bits. It hashes the destination range first:
//   equal to the target hash -> already applied, nothing is written (a retry never applies twice);
//   equal to the base hash (or the frame is full) -> decode, apply, then verify the target hash;
//   anything else -> refused with Code::base_mismatch, nothing written (repair with a full frame).
// If the verification after apply fails, the old bits are put back before returning
// Code::target_mismatch, so a failed apply never leaves a range half-changed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "dcr/codec/frame.h"
#include "dcr/codec/stream.h"
#include "dcr/core/status.h"

namespace dcr {

constexpr uint64_t kAnyVersion = UINT64_MAX;

// The destination: one whole canonical tensor (or the part of it a receiver holds contiguously).
struct TensorView {
  uint32_t tensor_id = 0;
  void* data = nullptr;
  uint64_t first = 0;     // canonical index of data[0]
  uint64_t elements = 0;  // elements at data
  unsigned width = 2;
};

enum class ApplyOutcome { applied, already_applied };

struct DecodedFrame {
  FrameHeader header;
  std::vector<uint32_t> positions;  // ascending offsets within the range
  std::vector<uint64_t> words;      // one per position, meaning given by header.value_mode
};

class FrameDecoder {
 public:
  // Parses, validates and decodes a frame whose range has at most `max_elements` elements.
  Status decode(const uint8_t* frame, size_t size, uint64_t max_elements, DecodedFrame* out);

  // Safe in-place apply (see above). `expected_base_version` is the receiver's committed version;
  // a delta frame built on another base is refused with Code::base_mismatch. kAnyVersion skips it.
  Status apply(const uint8_t* frame, size_t size, const TensorView& dst, uint64_t expected_base_version,
               ApplyOutcome* outcome);

 private:
  Status decode_payload(const uint8_t* frame, DecodedFrame* out);
  StreamCodec codec_;
  DecodedFrame scratch_;
  std::vector<uint64_t> gaps_;
};

}  // namespace dcr
