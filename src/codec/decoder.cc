#include "dcr/codec/decoder.h"

#include <algorithm>
#include <string>

#include "dcr/codec/scan.h"
#include "dcr/core/hash.h"
#include "src/codec/sections.h"

namespace dcr {

Status FrameDecoder::decode(const uint8_t* frame, size_t size, uint64_t max_elements, DecodedFrame* out) {
  DCR_TRY(parse_frame_header(frame, size, &out->header));
  DCR_REQUIRE(out->header.count() <= max_elements, Code::corrupt,
              "frame " + out->header.describe() + " is longer than the " + std::to_string(max_elements) +
                  " elements allowed");
  return decode_payload(frame, out);
}

Status FrameDecoder::decode_payload(const uint8_t* frame, DecodedFrame* out) {
  const FrameHeader& h = out->header;
  out->positions.resize(h.changed);
  out->words.resize(h.changed);
  ByteReader reader(frame + kFrameHeaderBytes, h.payload_bytes, "frame payload");
  Status status = read_positions(h.pos_coding, &reader, &codec_, h.changed, h.count(), out->positions.data());
  if (status.is_ok()) {
    status = read_values(h.value_packing, &reader, &codec_, h.changed, h.elem_width, out->words.data());
  }
  if (status.is_ok() && reader.remaining() != 0) {
    status = Status(Code::corrupt, std::to_string(reader.remaining()) + " trailing payload bytes");
  }
  return status.with_context("frame " + h.describe());
}

namespace {

Status check_destination(const FrameHeader& h, const Region& dst, uint64_t expected_base_version, Region* box) {
  const std::string what = "frame " + h.describe();
  DCR_REQUIRE(h.elem_width == dst.width, Code::invalid_argument,
              what + " has " + std::to_string(h.elem_width) + "-byte elements, destination has " +
                  std::to_string(dst.width));
  DCR_TRY(sub_region(dst, h.box, box).with_context(what));
  DCR_REQUIRE(h.is_full() || expected_base_version == kAnyVersion || h.base_version == expected_base_version,
              Code::base_mismatch,
              what + " is a delta on version " + std::to_string(h.base_version) +
                  " but this receiver is at version " + std::to_string(expected_base_version));
  return Status::ok();
}

// scatter_swap over a region, one contiguous run of elements at a time (the whole box when its rows
// are adjacent in memory, else each row; long runs in cache-sized blocks), returning hash64 of the
// region after the scatter, computed on each block while it is still in cache.
uint64_t scatter_swap_and_hash(const Region& r, ValueMode mode, const uint32_t* positions, uint64_t changed,
                               uint64_t* words, Hasher* hasher, std::vector<uint32_t>* local) {
  constexpr uint64_t kBlockElements = 1 << 14;
  const uint64_t run = r.contiguous() ? r.box.elements() : r.box.cols;
  const uint64_t runs = r.contiguous() ? 1 : r.box.rows;
  hasher->reset();
  uint64_t j = 0;
  for (uint64_t k = 0; k < runs; ++k) {
    uint8_t* data = r.row(k);
    const uint64_t run_start = k * run;
    for (uint64_t begin = 0; begin < run; begin += kBlockElements) {
      const uint64_t end = std::min(run, begin + kBlockElements);
      const uint64_t first = j;
      local->clear();
      for (; j < changed && positions[j] < run_start + end; ++j) {
        local->push_back(static_cast<uint32_t>(positions[j] - run_start));
      }
      scatter_swap(data, r.width, mode, local->data(), local->size(), words + first);
      hasher->update(data + begin * r.width, (end - begin) * r.width);
    }
  }
  return hasher->digest();
}

}  // namespace

Status FrameDecoder::apply(const uint8_t* frame, size_t size, const Region& dst, uint64_t expected_base_version,
                           ApplyOutcome* outcome) {
  DecodedFrame& d = scratch_;
  DCR_TRY(parse_frame_header(frame, size, &d.header));
  const FrameHeader& h = d.header;
  Region box;
  DCR_TRY(check_destination(h, dst, expected_base_version, &box));

  const uint64_t before = region_hash(box);
  if (before == h.target_hash) {
    *outcome = ApplyOutcome::already_applied;
    return Status::ok();
  }
  DCR_REQUIRE(h.is_full() || before == h.base_hash, Code::base_mismatch,
              "frame " + h.describe() + ": destination holds neither its base nor its target bits "
              "(repair the box with a full frame)");
  if (h.is_full()) {
    DCR_TRY(apply_full(frame, box));
    *outcome = ApplyOutcome::applied;
    return Status::ok();
  }
  DCR_TRY(decode_payload(frame, &d));

  if (scatter_swap_and_hash(box, h.value_mode, d.positions.data(), h.changed, d.words.data(), &hasher_, &local_) !=
      h.target_hash) {
    scatter_swap_and_hash(box, ValueMode::overwrite, d.positions.data(), h.changed, d.words.data(), &hasher_, &local_);
    return Status(Code::target_mismatch,
                  "frame " + h.describe() + ": bits after apply do not match the target hash; the box was restored");
  }
  *outcome = ApplyOutcome::applied;
  return Status::ok();
}

// A full frame carries the box's bits as they are: copy them in (keeping the old bits to put back
// should the result miss the target hash).
Status FrameDecoder::apply_full(const uint8_t* frame, const Region& box) {
  const FrameHeader& h = scratch_.header;
  const uint64_t bytes = h.count() * h.elem_width;
  ByteReader reader(frame + kFrameHeaderBytes, h.payload_bytes, "full frame payload");
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
    return Status(Code::target_mismatch,
                  "frame " + h.describe() + ": bits after apply do not match the target hash; the box was restored");
  }
  return Status::ok();
}

}  // namespace dcr
