#include "dcr/codec/decoder.h"

#include <string>

#include "dcr/codec/scan.h"
#include "dcr/core/hash.h"
#include "src/codec/sections.h"

namespace dcr {

Status FrameDecoder::decode(const uint8_t* frame, size_t size, uint64_t max_elements, DecodedFrame* out) {
  DCR_TRY(parse_frame_header(frame, size, &out->header));
  DCR_REQUIRE(out->header.count <= max_elements, Code::corrupt,
              "frame " + out->header.describe() + " is longer than the " + std::to_string(max_elements) +
                  " elements allowed");
  return decode_payload(frame, out);
}

Status FrameDecoder::decode_payload(const uint8_t* frame, DecodedFrame* out) {
  const FrameHeader& h = out->header;
  out->positions.resize(h.changed);
  out->words.resize(h.changed);
  ByteReader reader(frame + kFrameHeaderBytes, h.payload_bytes, "frame payload");
  Status status = read_positions(h.pos_coding, &reader, &codec_, h.changed, h.count, out->positions.data(),
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
Status check_destination(const FrameHeader& h, const TensorView& dst, uint64_t expected_base_version) {
  const std::string what = "frame " + h.describe();
  DCR_REQUIRE(h.tensor_id == dst.tensor_id, Code::invalid_argument,
              what + " is for tensor " + std::to_string(h.tensor_id) + ", destination is tensor " +
                  std::to_string(dst.tensor_id));
  DCR_REQUIRE(h.elem_width == dst.width, Code::invalid_argument,
              what + " has " + std::to_string(h.elem_width) + "-byte elements, destination has " +
                  std::to_string(dst.width));
  DCR_REQUIRE(h.first >= dst.first && h.count <= dst.elements && h.first - dst.first <= dst.elements - h.count,
              Code::invalid_argument,
              what + " lies outside the destination [" + std::to_string(dst.first) + ", +" +
                  std::to_string(dst.elements) + ")");
  DCR_REQUIRE(h.is_full() || expected_base_version == kAnyVersion || h.base_version == expected_base_version,
              Code::base_mismatch,
              what + " is a delta on version " + std::to_string(h.base_version) +
                  " but this receiver is at version " + std::to_string(expected_base_version));
  return Status::ok();
}
}  // namespace

Status FrameDecoder::apply(const uint8_t* frame, size_t size, const TensorView& dst,
                           uint64_t expected_base_version, ApplyOutcome* outcome) {
  DecodedFrame& d = scratch_;
  DCR_TRY(parse_frame_header(frame, size, &d.header));
  const FrameHeader& h = d.header;
  DCR_TRY(check_destination(h, dst, expected_base_version));
  uint8_t* range = static_cast<uint8_t*>(dst.data) + (h.first - dst.first) * h.elem_width;
  const size_t bytes = h.count * h.elem_width;

  const uint64_t before = hash64(range, bytes);
  if (before == h.target_hash) {
    *outcome = ApplyOutcome::already_applied;
    return Status::ok();
  }
  DCR_REQUIRE(h.is_full() || before == h.base_hash, Code::base_mismatch,
              "frame " + h.describe() + ": destination holds neither its base nor its target bits "
              "(repair the range with a full frame)");
  DCR_TRY(decode_payload(frame, &d));

  scatter_swap(range, h.elem_width, h.value_mode, d.positions.data(), h.changed, d.words.data());
  if (hash64(range, bytes) != h.target_hash) {
    scatter_swap(range, h.elem_width, ValueMode::overwrite, d.positions.data(), h.changed, d.words.data());
    return Status(Code::target_mismatch,
                  "frame " + h.describe() + ": bits after apply do not match the target hash; the range was restored");
  }
  *outcome = ApplyOutcome::applied;
  return Status::ok();
}

}  // namespace dcr
