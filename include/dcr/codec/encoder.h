// Encodes the change of one canonical box into a frame. Position coding, value mode and value
// packing are chosen per frame by the bytes they give after the entropy stage, unless forced (and
// with a stated preference for gaps-joint: EncodeOptions::joint_slack).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "dcr/codec/frame.h"
#include "dcr/core/dtype.h"
#include "dcr/core/region.h"
#include "dcr/core/status.h"
#include "dcr/core/version.h"

namespace dcr {

// What a context rule is told about a frame: its changes, its bytes without contexts (estimated),
// and the seconds its encoder has spent on it so far.
struct ContextQuestion {
  uint64_t changed = 0;
  double plain_bytes = 0;
  double encode_s = 0;
};

struct EncodeOptions {
  bool sign_magnitude = true;  // ordered deltas in float order (true) or integer order (false)
  int zstd_level = 1;
  bool exhaustive = false;  // write every candidate and keep the smallest (slower, for studies)
  // Take position coding gaps-joint (with value packing joint) over separate gap and value tokens
  // when its bytes come within this fraction of theirs: it codes the same tokens, with a few
  // hundred bytes more of tables a frame, and receivers decode one rANS symbol per change instead
  // of two. 0 picks by bytes alone.
  double joint_slack = 0.01;
  // Where the exponent starts in an element's bits (bf16 7, f16 10, f32 23, f64 52: exponent_shift
  // in dcr/core/dtype.h; set_dtype sets it).
  std::optional<uint8_t> context_shift;
  // Let value tokens go by the base value's exponent (value packing contexts, given a context
  // shift) where that is smaller. Off by default here: it takes 4-15% off the wire at 1-5% changed,
  // but encode and apply run 20-30% slower (README "The codec"); the refit chooses by time.
  bool contexts = false;
  // With contexts: asked for each frame they could apply to, before their tables are chosen;
  // false keeps the frame's faster coding. Unset: contexts go wherever they are smaller (the choice
  // for a slow link). The refit's --contexts auto sets it (src/refit/context_rule.h).
  std::function<bool(const ContextQuestion&)> context_rule;
  std::optional<PosCoding> pos_coding;  // forced choices; unset = smallest
  std::optional<ValueMode> value_mode;
  std::optional<ValuePacking> value_packing;
};

// The options' dtype-given parts: ordered deltas in the dtype's order, and the context shift of a
// float's exponent.
void set_dtype(DType dtype, EncodeOptions* options);

struct EncodeStats {
  uint64_t changed = 0;
  uint64_t frame_bytes = 0;
  uint64_t position_bytes = 0;
  uint64_t value_bytes = 0;
  PosCoding pos_coding = PosCoding::all;
  ValueMode value_mode = ValueMode::overwrite;
  ValuePacking value_packing = ValuePacking::planes;
  bool contexts_declined = false;  // the context rule kept the faster coding
};

struct Section;

struct ValueChoice {
  ValueMode mode;
  ValuePacking packing;
};

class FrameEncoder {
 public:
  explicit FrameEncoder(EncodeOptions options = {});
  ~FrameEncoder();
  FrameEncoder(const FrameEncoder&) = delete;
  FrameEncoder& operator=(const FrameEncoder&) = delete;

  const EncodeOptions& options() const { return options_; }
  void set_options(const EncodeOptions& options) { options_ = options; }

  // `base` and `target` hold the same box (the frame's). The frame replaces *frame.
  Status encode_delta(const Region& base, const Region& target, Versions versions,
                      std::vector<uint8_t>* frame, EncodeStats* stats = nullptr);

  // Same, with the changed positions already known (from the CUDA diff kernel, say): positions
  // must be exactly the ascending box offsets where base and target differ.
  Status encode_delta_at(const Region& base, const Region& target, const uint32_t* positions,
                         uint64_t changed, Versions versions, std::vector<uint8_t>* frame,
                         EncodeStats* stats = nullptr);

  // A bundle frame of several boxes (bases[i] and targets[i] hold box i; one element width, at most
  // kMaxBundleBoxes disjoint boxes, 2^32-1 elements in all): their elements concatenated in order,
  // coded as one box under one header and one set of tables. `id` goes in the header's row0, for
  // receivers to route it by without its payload.
  Status encode_bundle(const std::vector<Region>& bases, const std::vector<Region>& targets, Versions versions,
                       std::vector<uint8_t>* frame, EncodeStats* stats = nullptr, uint64_t id = 0);
  // The same boxes' every value, as one full frame.
  Status encode_full_bundle(const std::vector<Region>& targets, uint64_t target_version, std::vector<uint8_t>* frame,
                            EncodeStats* stats = nullptr, uint64_t id = 0);

  // A full frame: every value, applied over whatever the destination holds (first sync, repair).
  Status encode_full(const Region& target, uint64_t target_version, std::vector<uint8_t>* frame,
                     EncodeStats* stats = nullptr);

 private:
  struct Hashes {
    uint64_t base, target;
  };
  // Base and target bits of `elements` consecutive elements: a box's, or one of a bundle's.
  struct Run {
    const uint8_t* base;
    const uint8_t* target;
    uint64_t elements;
  };
  ValueMode delta_mode() const;
  // Find the changed positions (and hand the changes to the collector) with both hashes.
  uint64_t collect_fused(const Run* runs, size_t n, uint64_t count, Hashes* hashes);
  uint64_t collect_by_block(const Region& base, const Region& target, Hashes* hashes);
  PosCoding choose_positions(uint64_t count, const uint32_t* positions, uint64_t changed);
  ValueChoice choose_values(const Region& base, const Region& target, const uint32_t* positions,
                            uint64_t changed);
  const Section& position_section(PosCoding coding, uint64_t count, const uint32_t* positions,
                                         uint64_t changed);
  const Section& value_section(ValueChoice choice, const Region& base, const Region& target,
                                      const uint32_t* positions, uint64_t changed);
  void build_joint_sections(ValueMode mode, const Region& base, const Region& target, const uint32_t* positions,
                            uint64_t changed);
  bool joint_pays(PosCoding pos, ValueChoice values, const Region& base, const Region& target,
                  const uint32_t* positions, uint64_t changed);
  void mode_words(ValueMode mode, const Region& base, const Region& target, const uint32_t* positions,
                  uint64_t changed, uint64_t* words);
  Status start_bundle(const std::vector<const std::vector<Region>*>& lists, uint64_t id, Box* all);
  void gather_bundle(const std::vector<const std::vector<Region>*>& lists, const Box& all);
  Status encode_bundle_runs(const std::vector<Run>& runs, const Box& all, Versions versions,
                            std::vector<uint8_t>* frame, EncodeStats* stats);
  double choose_contexts(const Region& base, const uint32_t* positions, uint64_t changed);
  bool contexts_pay(PosCoding pos, ValueChoice values, const Region& base, const uint32_t* positions,
                    uint64_t changed);
  Status encode(const Region& base, const Region& target, const uint32_t* positions, uint64_t changed,
                const Hashes& hashes, Versions versions, std::vector<uint8_t>* frame, EncodeStats* stats);

  struct Scratch;
  EncodeOptions options_;
  Scratch* scratch_;
};

}  // namespace dcr
