// Internal to the codec: what FrameEncoder's files share (encoder.cc: a box and the choice of its
// codings; encode_bundle.cc: bundles of boxes): its scratch, reused frame after frame, and the check
// of a region it is asked to encode.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "dcr/codec/encoder.h"
#include "dcr/codec/stream.h"
#include "dcr/core/hash.h"
#include "dcr/core/region.h"
#include "dcr/core/status.h"
#include "src/codec/common/buffer.h"
#include "src/codec/contexts/context_coder.h"
#include "src/codec/encode/change_collector.h"
#include "src/codec/encode/section.h"
#include "src/codec/scan/scan_hash.h"

namespace dcr {

struct FrameEncoder::Scratch {
  StreamCodec codec;
  Hasher base_hash;
  Hasher target_hash;
  StripeHash base_stripes;  // the same hashes, fed by the scan where it can (scan_hash.h)
  StripeHash target_stripes;
  Buffer<uint32_t> positions;
  Buffer<uint16_t> base_words;  // the changes' words, copied out by the fused scan
  bool words_copied = false;    // whether base_words holds this frame's
  Buffer<uint16_t> target_words;
  Buffer<uint64_t> words;
  ChangeCollector collector;
  std::vector<uint8_t> base_copy;  // dense copies of strided boxes
  std::vector<uint8_t> target_copy;
  Section candidate;
  Section best;
  Section joint_positions;
  Section joint_values;
  Section context_values;
  ContextCoder contexts;
  std::vector<uint8_t> bundle_base, bundle_target;  // a bundle's boxes, concatenated
  std::vector<Run> runs;                            // or the runs they lie in
  std::vector<uint8_t> box_list;
  std::vector<uint8_t> bundle;  // while encoding a bundle: its box list stream
  Buffer<uint8_t> base_contexts;  // each change's context from its base bits
  std::vector<uint8_t> trial;
  std::chrono::steady_clock::time_point started;  // this frame's encode began
  bool declined = false;                          // the context rule declined this frame
};

// An element width of 1, 2, 4 or 8, at most 2^32-1 elements, and rows no longer than the pitch.
Status check_frame_region(const Region& r);

}  // namespace dcr
