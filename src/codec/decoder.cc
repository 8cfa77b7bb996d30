#include "dcr/codec/decoder.h"

#include <string>

#include "dcr/codec/scan.h"
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
  Status status = read_positions(h.pos_coding, &reader, &codec_, h.changed, h.count(), out->positions.data(),
                                 &gaps_);
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

// scatter_swap over a region whose rows may not be adjacent in memory.
void scatter_swap_region(const Region& r, ValueMode mode, const uint32_t* positions, uint64_t changed,
                         uint64_t* words) {
  if (r.contiguous()) {
    scatter_swap(r.data, r.width, mode, positions, changed, words);
    return;
  }
  std::vector<uint32_t> in_row;
  uint64_t j = 0;
  for (uint64_t row = 0; row < r.box.rows && j < changed; ++row) {
    const uint64_t row_start = row * r.box.cols, row_end = row_start + r.box.cols;
    const uint64_t first = j;
    in_row.clear();
    for (; j < changed && positions[j] < row_end; ++j) in_row.push_back(static_cast<uint32_t>(positions[j] - row_start));
    scatter_swap(r.row(row), r.width, mode, in_row.data(), in_row.size(), words + first);
  }
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
  DCR_TRY(decode_payload(frame, &d));

  scatter_swap_region(box, h.value_mode, d.positions.data(), h.changed, d.words.data());
  if (region_hash(box) != h.target_hash) {
    scatter_swap_region(box, ValueMode::overwrite, d.positions.data(), h.changed, d.words.data());
    return Status(Code::target_mismatch,
                  "frame " + h.describe() + ": bits after apply do not match the target hash; the box was restored");
  }
  *outcome = ApplyOutcome::applied;
  return Status::ok();
}

}  // namespace dcr
