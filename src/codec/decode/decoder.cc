#include "dcr/codec/decoder.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "dcr/core/hash.h"
#include "src/codec/common/buffer.h"
#include "src/codec/decode/apply_pass.h"
#include "src/codec/decode/change_reader.h"
#include "src/codec/format/bundle.h"

namespace dcr {

FrameDecoder::FrameDecoder() : changes_(new ChangeReader) {}
FrameDecoder::~FrameDecoder() = default;

Status FrameDecoder::decode(const uint8_t* frame, size_t size, uint64_t max_elements, DecodedFrame* out,
                            const Region* base) {
  DCR_TRY(parse_frame_header(frame, size, &out->header));
  DCR_REQUIRE(out->header.count() <= max_elements, Code::corrupt,
              "frame " + out->header.describe() + " is longer than the " + std::to_string(max_elements) +
                  " elements allowed");
  out->positions.resize(out->header.changed);
  out->words.resize(out->header.changed);
  if (base != nullptr) {
    DCR_REQUIRE(base->box.elements() == out->header.count() && base->width == out->header.elem_width,
                Code::invalid_argument, "the base given to decode frame " + out->header.describe() + " is " +
                                            base->box.describe());
  }
  const uint8_t* payload = frame + kFrameHeaderBytes;
  if (out->header.is_bundle()) DCR_TRY(read_box_list(frame, &out->header, &codec_, &boxes_, &payload));
  std::vector<ElementRun> base_runs;
  if (base != nullptr) append_runs(*base, &base_runs);
  DCR_TRY(open_changes(payload, out, base != nullptr ? &base_runs : nullptr));
  return changes_->decode(out->header.changed).with_context("frame " + out->header.describe());
}

// Opens the payload's sections for changes_ to decode into the change arrays (sized by the caller).
Status FrameDecoder::open_changes(const uint8_t* payload, DecodedFrame* out, const std::vector<ElementRun>* base) {
  const FrameHeader& h = out->header;
  ByteReader reader(payload, h.payload_bytes, "frame payload");
  Status status = changes_->open(h, &reader, &codec_, out->positions.data(), out->words.data(), base);
  if (status.is_ok() && reader.remaining() != 0) {
    status = Status(Code::corrupt, std::to_string(reader.remaining()) + " trailing payload bytes");
  }
  return status.with_context("frame " + h.describe());
}

Status FrameDecoder::read_bundle(const FrameView& frame) {
  const FrameHeader& h = frame.header;
  DCR_REQUIRE(h.is_bundle(), Code::invalid_argument, "frame " + h.describe() + " is not a bundle: apply it with apply");
  std::array<uint8_t, kFrameHeaderBytes> head;
  write_frame_header(h, head.data());
  if (bundle_data_ == frame.data && head == bundle_head_) return Status::ok();
  bundle_data_ = nullptr;
  bundle_ = h;
  DCR_TRY(read_box_list(frame.data, &bundle_, &codec_, &boxes_, &bundle_payload_));
  bundle_data_ = frame.data;
  bundle_head_ = head;
  return Status::ok();
}

Status FrameDecoder::bundle_boxes(const FrameView& frame, std::vector<Box>* boxes) {
  FrameView checked = frame;
  DCR_TRY(check_payload(&checked));
  DCR_TRY(read_bundle(checked));
  *boxes = boxes_;
  return Status::ok();
}

Status FrameDecoder::bundle_boxes(const uint8_t* frame, size_t size, std::vector<Box>* boxes) {
  FrameView view;
  DCR_TRY(view_frame(frame, size, &view));
  return bundle_boxes(view, boxes);
}

namespace {

Status check_base_version(const FrameHeader& h, uint64_t expected_base_version) {
  DCR_REQUIRE(h.is_full() || expected_base_version == kAnyVersion || h.base_version == expected_base_version,
              Code::base_mismatch,
              "frame " + h.describe() + " is a delta on version " + std::to_string(h.base_version) +
                  " but this receiver is at version " + std::to_string(expected_base_version));
  return Status::ok();
}

Status check_destination(const FrameHeader& h, const Region& dst, uint64_t expected_base_version, Region* box) {
  const std::string what = "frame " + h.describe();
  DCR_REQUIRE(h.elem_width == dst.width, Code::invalid_argument,
              what + " has " + std::to_string(h.elem_width) + "-byte elements, destination has " +
                  std::to_string(dst.width));
  DCR_TRY(sub_region(dst, h.box, box).with_context(what));
  return check_base_version(h, expected_base_version);
}

std::string missed_target_message(const FrameHeader& h) {
  return "frame " + h.describe() + ": bits after apply do not match the target hash; the box was restored";
}

std::string neither_message(const FrameHeader& h) {
  return "frame " + h.describe() + ": destination holds neither its base nor its target bits "
         "(repair the box with a full frame)";
}

}  // namespace

Status FrameDecoder::apply(const FrameView& frame, const Region& dst, uint64_t expected_base_version,
                           ApplyOutcome* outcome) {
  FrameView checked = frame;
  DCR_TRY(check_payload(&checked));
  scratch_.header = frame.header;
  const FrameHeader& h = scratch_.header;
  DCR_REQUIRE(!h.is_bundle(), Code::invalid_argument,
              "frame " + h.describe() + " is a bundle of several boxes: apply it with apply_bundle");
  Region box;
  DCR_TRY(check_destination(h, dst, expected_base_version, &box));
  return apply_payload(frame.payload(), box, outcome);
}

Status FrameDecoder::apply(const uint8_t* frame, size_t size, const Region& dst, uint64_t expected_base_version,
                           ApplyOutcome* outcome) {
  FrameView view;
  DCR_TRY(view_frame(frame, size, &view));
  return apply(view, dst, expected_base_version, outcome);
}

Status FrameDecoder::apply_bundle(const uint8_t* frame, size_t size, const std::vector<Region>& dsts,
                                  uint64_t expected_base_version, ApplyOutcome* outcome) {
  FrameView view;
  DCR_TRY(view_frame(frame, size, &view));
  return apply_bundle(view, dsts, expected_base_version, outcome);
}

// A delta bundle is applied where its boxes lie, as one box of their runs: a failure puts every
// box back (apply_changes). A full bundle, or one without changes, is applied to a gathered copy of
// its boxes, which is copied back only when applied. Either way all of its boxes change, or none
// does.
Status FrameDecoder::apply_bundle(const FrameView& frame, const std::vector<Region>& dsts,
                                  uint64_t expected_base_version, ApplyOutcome* outcome) {
  FrameView checked = frame;
  DCR_TRY(check_payload(&checked));
  DCR_TRY(read_bundle(checked));
  scratch_.header = bundle_;
  const FrameHeader& h = scratch_.header;
  const uint8_t* payload = bundle_payload_;
  DCR_REQUIRE(dsts.size() == boxes_.size(), Code::invalid_argument,
              "frame " + h.describe() + " holds " + std::to_string(boxes_.size()) + " boxes, given " +
                  std::to_string(dsts.size()) + " destinations");
  for (size_t i = 0; i < dsts.size(); ++i) {  // before anything is sized by the frame's counts
    DCR_REQUIRE(dsts[i].box == boxes_[i] && dsts[i].width == h.elem_width, Code::invalid_argument,
                "frame " + h.describe() + ": box " + std::to_string(i) + " is " + boxes_[i].describe() +
                    ", its destination " + dsts[i].box.describe());
  }
  if (!h.is_full() && h.changed > 0) {
    DCR_TRY(check_base_version(h, expected_base_version));
    runs_.clear();
    for (const Region& dst : dsts) append_runs(dst, &runs_);
    return apply_changes(payload, runs_, outcome);
  }
  bundle_bits_.resize(h.count() * h.elem_width);
  uint64_t at = 0;
  for (size_t i = 0; i < dsts.size(); ++i) {
    copy_out(dsts[i], bundle_bits_.data() + at);
    at += boxes_[i].elements() * h.elem_width;
  }
  Region box;
  DCR_TRY(check_destination(h, dense_region(h.box, h.elem_width, bundle_bits_.data()), expected_base_version, &box));
  DCR_TRY(apply_payload(payload, box, outcome));
  if (*outcome != ApplyOutcome::applied) return Status::ok();
  at = 0;
  for (size_t i = 0; i < dsts.size(); ++i) {
    copy_in(dsts[i], bundle_bits_.data() + at);
    at += boxes_[i].elements() * h.elem_width;
  }
  return Status::ok();
}

Status FrameDecoder::apply_payload(const uint8_t* payload, const Region& box, ApplyOutcome* outcome) {
  const FrameHeader& h = scratch_.header;
  if (h.is_full() || h.changed == 0) return apply_copy(payload, box, outcome);
  runs_.clear();
  append_runs(box, &runs_);
  return apply_changes(payload, runs_, outcome);
}

// A delta frame is decoded and scattered in one pass that hashes the box (its runs) after the
// scatter. The old bits come back in the words, so any outcome but "target bits out" puts the box
// back exactly: a box already at the target (a retry: an XOR must not count twice), a box at
// neither hash, a result that misses the target hash, or a payload that fails to decode midway (one
// that passed its checksum, so built to do so). For every mode but overwrite, apply_word is
// one-to-one in the old bits, so the result is the target exactly when the box held the base: the
// hash after settles it, and the box is hashed again only to tell the failures apart. An overwrite
// reaches the target from bits other than the base too, so its pass also hashes the box before.
Status FrameDecoder::apply_changes(const uint8_t* payload, const std::vector<ElementRun>& runs,
                                   ApplyOutcome* outcome) {
  DecodedFrame& d = scratch_;
  const FrameHeader& h = d.header;
  grow_to(&d.positions, h.changed);  // scratch: never shrunk, so never zero-filled again
  grow_to(&d.words, h.changed);
  DCR_TRY(open_changes(payload, &d, &runs));  // the runs hold the base bits for values that go by them
  BoxHashes hashes;
  hashes.with_before = h.value_mode == ValueMode::overwrite;
  uint64_t applied = 0;
  const Status status = scatter_swap_and_hash(runs, h.elem_width, h.value_mode, changes_.get(), d.positions.data(),
                                              h.changed, d.words.data(), &hashes, &applied, &hasher_, &after_, &local_);
  if (status.is_ok() && hashes.after == h.target_hash && (!hashes.with_before || hashes.before == h.base_hash)) {
    *outcome = ApplyOutcome::applied;
    return Status::ok();
  }
  scatter_back(runs, h.elem_width, d.positions.data(), applied, d.words.data(), &local_);
  if (!status.is_ok()) return status.with_context("frame " + h.describe() + " (the box was restored)");
  const uint64_t before = hashes.with_before ? hashes.before : runs_hash(runs, h.elem_width, &hasher_);
  if (before == h.target_hash) {
    *outcome = ApplyOutcome::already_applied;
    return Status::ok();
  }
  DCR_REQUIRE(before == h.base_hash, Code::base_mismatch, neither_message(h));
  return Status(Code::target_mismatch, missed_target_message(h));
}

// A full frame carries the box's bits as they are: copy them in (keeping the old bits to put back
// should the result miss the target hash). A delta frame with no change has nothing to copy.
Status FrameDecoder::apply_copy(const uint8_t* payload, const Region& box, ApplyOutcome* outcome) {
  const FrameHeader& h = scratch_.header;
  if (region_hash(box) == h.target_hash) {
    *outcome = ApplyOutcome::already_applied;
    return Status::ok();
  }
  DCR_REQUIRE(h.is_full(), Code::base_mismatch, neither_message(h));
  const uint64_t bytes = h.count() * h.elem_width;
  ByteReader reader(payload, h.payload_bytes, "full frame payload");
  const uint8_t* values;
  size_t size;
  DCR_TRY(codec_.read(&reader, bytes, 0, &values, &size).with_context("frame " + h.describe()));
  DCR_REQUIRE(size == bytes && reader.remaining() == 0, Code::corrupt,
              "frame " + h.describe() + ": full payload does not hold exactly the box");
  old_bits_.resize(bytes);
  copy_out(box, old_bits_.data());
  copy_in(box, values);
  if (region_hash(box) != h.target_hash) {
    copy_in(box, old_bits_.data());
    return Status(Code::target_mismatch, missed_target_message(h));
  }
  *outcome = ApplyOutcome::applied;
  return Status::ok();
}

}  // namespace dcr
