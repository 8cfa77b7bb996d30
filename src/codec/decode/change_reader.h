// Internal to the codec: reading a frame's two payload sections (positions, then values) back into
// its changes, validating every count, order and bound as they are decoded.
#pragma once

#include <cstdint>
#include <vector>

#include "dcr/codec/byte_io.h"
#include "dcr/codec/frame.h"
#include "dcr/codec/stream.h"
#include "dcr/core/status.h"
#include "src/codec/contexts/context_reader.h"
#include "src/codec/decode/element_run.h"
#include "src/codec/tokens/token_reader.h"

namespace dcr {

// A frame's changes, read in order a slice at a time: positions and words [0, done()) are decoded.
// Token-coded sections (the encoder's usual choice) decode as far as asked, so a receiver can apply
// one block of changes while it is in cache; other codings decode in full at open (plain_sections.h).
class ChangeReader {
 public:
  // Takes both sections of the payload of `header` from `payload`, which must then be consumed.
  // `base` is the frame's box as runs of elements holding its base bits (unchanged until their
  // changes are decoded), which value packing contexts needs; nullptr refuses such a frame.
  Status open(const FrameHeader& header, ByteReader* payload, StreamCodec* codec, uint32_t* positions,
              uint64_t* words, const std::vector<ElementRun>* base = nullptr);
  // Decodes the changes [done(), upto); `upto` is a multiple of kSlice or the frame's change count.
  Status decode(uint64_t upto);
  uint64_t done() const { return done_; }
  static constexpr uint64_t kSlice = 32;
  // Leaves the words of value packing contexts to values_through, so that a receiver decodes them
  // once their base bits are in cache (every other packing decodes them in decode).
  void defer_values() { defer_ = contexts_; }
  // Decodes the deferred words of changes up to `upto` (<= done()); nothing to do when none are.
  Status values_through(uint64_t upto) {
    return defer_ && upto > context_values_.done() ? decode_contexts(upto) : Status::ok();
  }

 private:
  Status open_positions(ByteReader* payload);
  Status open_joint(ByteReader* payload);
  Status open_values(ByteReader* payload);
  Status decode_joint(uint64_t upto);
  Status decode_contexts(uint64_t upto);
  FrameHeader h_;
  const std::vector<ElementRun>* base_ = nullptr;
  StreamCodec* codec_ = nullptr;
  uint32_t* positions_ = nullptr;
  uint64_t* words_ = nullptr;
  TokenReader gaps_, values_;
  bool lazy_gaps_ = false, lazy_values_ = false, joint_ = false;
  uint64_t next_ = 0;  // the position after the last decoded change
  uint64_t done_ = 0;
  // gaps-joint: the joint bytes, the escapes' gap tokens and words (values_ holds their tokens)
  // decoded ahead in batches, and the gap tokens the two merge into for gaps_.
  const uint8_t* joint_bytes_ = nullptr;
  const uint8_t* escape_gaps_ = nullptr;
  uint64_t escapes_ = 0, escapes_ready_ = 0, escapes_used_ = 0;
  std::vector<uint64_t> escape_words_;
  std::vector<uint8_t> gap_tokens_;
  // contexts: each value token decoded by the table of the bucket of its base bits.
  bool contexts_ = false;
  bool defer_ = false;
  ContextReader context_values_;
};

}  // namespace dcr
