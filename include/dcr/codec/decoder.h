// Decoding and safe in-place apply of frames.
//
// apply is the only way dcr changes receiver bits. The outcome depends on the destination box's
// bits before the call:
//   the target bits -> already applied, the box is left as it was (a retry never applies twice);
//   the base bits (or any bits, for a full frame) -> applied, and the result verified against the
//     target hash;
//   anything else -> refused with Code::base_mismatch, the box left as it was (repair it with a
//     full frame).
// A frame whose header or payload checksum fails is refused before the box is touched. A delta
// frame is decoded and scattered in one pass over the box, a block at a time: the changes of a
// block are decoded while its bytes are fetched, then the block is scattered (keeping the old bits)
// and hashed. For xor and delta frames the result is the target exactly when the box held the base
// (their apply is one-to-one in the old bits), so the hash after decides; overwrite frames also
// hash each block before its scatter. Every outcome but "applied" puts the old bits back before
// returning (a payload that passes its checksum yet fails to decode midway too), and a result that
// misses the target hash returns Code::target_mismatch, so a failed apply never leaves a box
// half-changed.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "dcr/codec/frame.h"
#include "dcr/core/region.h"
#include "dcr/codec/stream.h"
#include "dcr/core/hash.h"
#include "dcr/core/status.h"
#include "dcr/core/version.h"

namespace dcr {

enum class ApplyOutcome { applied, already_applied };

class ChangeReader;

struct DecodedFrame {
  FrameHeader header;
  std::vector<uint32_t> positions;  // ascending offsets in the box's row-major order
  std::vector<uint64_t> words;      // one per position, meaning given by header.value_mode
};

struct ElementRun;

class FrameDecoder {
 public:
  FrameDecoder();
  ~FrameDecoder();

  // Parses, validates and decodes a frame whose box has at most `max_elements` elements. A frame
  // whose values go by the base bits (value packing contexts) needs `base`, its box's base bits.
  Status decode(const uint8_t* frame, size_t size, uint64_t max_elements, DecodedFrame* out,
                const Region* base = nullptr);

  // Safe in-place apply (see above) into `dst`, which must hold the frame's box (it may hold
  // more). `expected_base_version` is the receiver's committed version; a delta frame built on
  // another base is refused with Code::base_mismatch. kAnyVersion skips that check.
  // A frame viewed once on its way (frame.h: its header parsed, its payload checked where a seal
  // has not already covered it).
  Status apply(const FrameView& frame, const Region& dst, uint64_t expected_base_version, ApplyOutcome* outcome);
  Status apply(const uint8_t* frame, size_t size, const Region& dst, uint64_t expected_base_version,
               ApplyOutcome* outcome);

  // The boxes of a bundle frame (kFrameFlagBundle), in its order, checked with the whole frame;
  // apply_bundle of the same view right after reads them no second time.
  Status bundle_boxes(const FrameView& frame, std::vector<Box>* boxes);
  Status bundle_boxes(const uint8_t* frame, size_t size, std::vector<Box>* boxes);
  // The same safe apply for a bundle: dsts[i] holds exactly box i of bundle_boxes. All of its boxes
  // change together, or none does.
  Status apply_bundle(const FrameView& frame, const std::vector<Region>& dsts, uint64_t expected_base_version,
                      ApplyOutcome* outcome);
  Status apply_bundle(const uint8_t* frame, size_t size, const std::vector<Region>& dsts,
                      uint64_t expected_base_version, ApplyOutcome* outcome);

 private:
  Status open_changes(const uint8_t* payload, DecodedFrame* out, const std::vector<ElementRun>* base);
  Status apply_payload(const uint8_t* payload, const Region& box, ApplyOutcome* outcome);
  Status apply_changes(const uint8_t* payload, const std::vector<ElementRun>& runs, ApplyOutcome* outcome);
  Status apply_copy(const uint8_t* payload, const Region& box, ApplyOutcome* outcome);
  StreamCodec codec_;
  std::unique_ptr<ChangeReader> changes_;
  DecodedFrame scratch_;
  Hasher hasher_;  // the box before a scatter
  Hasher after_;   // and after it
  std::vector<uint32_t> local_;  // positions of one block, relative to its run
  std::vector<ElementRun> runs_;  // the box applied to, as runs of elements (scratch)
  std::vector<uint8_t> old_bits_;  // a full frame's destination before it was applied
  Status read_bundle(const FrameView& frame);  // boxes_, bundle_ and bundle_payload_, unless read already
  std::vector<Box> boxes_;            // the last bundle's boxes
  FrameHeader bundle_;                // its header, payload_bytes after the box list
  const uint8_t* bundle_payload_ = nullptr;
  // Which frame they are of: its address and its whole header as given (versions and hashes too: a
  // bundle without changes has the same payload every version, and may arrive at the same address).
  const uint8_t* bundle_data_ = nullptr;
  std::array<uint8_t, kFrameHeaderBytes> bundle_head_{};
  std::vector<uint8_t> bundle_bits_;  // and their bits, gathered
};

}  // namespace dcr
