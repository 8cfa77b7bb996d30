#include "dcr/codec/decoder.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "dcr/codec/scan.h"
#include "dcr/core/hash.h"
#include "src/codec/scan_hash.h"
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

struct BoxHashes {
  uint64_t before;
  uint64_t after;
};

constexpr uint64_t kBlockElements = 1 << 14;

// scatter_swap over a contiguous box of at least a few stripes, on AVX-512, in cache-sized blocks:
// each block is hashed (XXH3 with its accumulators in registers) just before and just after its
// scatter while it is in cache, so the box is read from memory once. The last stripe XXH3 reads
// of the box before is copied first, since an earlier block's scatter may reach into it.
BoxHashes scatter_swap_and_hash_stripes(const Region& r, ValueMode mode, const uint32_t* positions,
                                        uint64_t changed, uint64_t* words) {
  const uint64_t count = r.box.elements(), bytes = count * r.width;
  uint8_t* data = r.row(0);
  alignas(64) uint8_t last_before[64];
  std::memcpy(last_before, data + bytes - 64, 64);
  StripeHash before, after;
  before.start(bytes);
  after.start(bytes);
  uint64_t j = 0;
  for (uint64_t begin = 0; begin < count; begin += kBlockElements) {
    const uint64_t end = std::min(count, begin + kBlockElements);
    const uint64_t first = j;
    j = std::lower_bound(positions + first, positions + changed, end) - positions;
    before.feed(data, begin * r.width, end * r.width);
    scatter_swap(data, count, r.width, mode, positions + first, j - first, words + first);
    after.feed(data, begin * r.width, end * r.width);
  }
  return BoxHashes{before.finish_long(last_before), after.finish(data)};
}

// The same over any region, one contiguous run of elements at a time (the whole box when its rows
// are adjacent in memory, else each row; long runs in blocks), hashed through the streaming Hasher.
BoxHashes scatter_swap_and_hash(const Region& r, ValueMode mode, const uint32_t* positions, uint64_t changed,
                                uint64_t* words, Hasher* before, Hasher* after, std::vector<uint32_t>* local) {
  if (r.contiguous() && r.box.elements() * r.width >= 1024 && feed_available()) {
    return scatter_swap_and_hash_stripes(r, mode, positions, changed, words);
  }
  const uint64_t run = r.contiguous() ? r.box.elements() : r.box.cols;
  const uint64_t runs = r.contiguous() ? 1 : r.box.rows;
  before->reset();
  after->reset();
  uint64_t j = 0;
  for (uint64_t k = 0; k < runs; ++k) {
    uint8_t* data = r.row(k);
    const uint64_t run_start = k * run;
    for (uint64_t begin = 0; begin < run; begin += kBlockElements) {
      const uint64_t end = std::min(run, begin + kBlockElements);
      const uint64_t first = j;
      j = std::lower_bound(positions + first, positions + changed, run_start + end) - positions;
      const uint32_t* in_run = positions + first;  // offsets in the run: the box's own when k == 0
      if (k > 0) {
        local->resize(j - first);
        for (uint64_t i = first; i < j; ++i) (*local)[i - first] = static_cast<uint32_t>(positions[i] - run_start);
        in_run = local->data();
      }
      before->update(data + begin * r.width, (end - begin) * r.width);
      scatter_swap(data, run, r.width, mode, in_run, j - first, words + first);
      after->update(data + begin * r.width, (end - begin) * r.width);
    }
  }
  return BoxHashes{before->digest(), after->digest()};
}

std::string neither_message(const FrameHeader& h) {
  return "frame " + h.describe() + ": destination holds neither its base nor its target bits "
         "(repair the box with a full frame)";
}

}  // namespace

// A delta frame is decoded in full first (a malformed one is refused before the box is touched),
// then scattered in one pass that also hashes the box before and after. The old bits come back in
// the words, so any outcome but "base bits in, target bits out" puts the box back exactly: a box
// already at the target (a retry: an XOR must not count twice), a box at neither hash, or a result
// that misses the target hash.
Status FrameDecoder::apply(const uint8_t* frame, size_t size, const Region& dst, uint64_t expected_base_version,
                           ApplyOutcome* outcome) {
  DecodedFrame& d = scratch_;
  DCR_TRY(parse_frame_header(frame, size, &d.header));
  const FrameHeader& h = d.header;
  Region box;
  DCR_TRY(check_destination(h, dst, expected_base_version, &box));
  if (h.is_full() || h.changed == 0) return apply_copy(frame, box, outcome);
  DCR_TRY(decode_payload(frame, &d));
  const BoxHashes hashes = scatter_swap_and_hash(box, h.value_mode, d.positions.data(), h.changed, d.words.data(),
                                                 &hasher_, &after_, &local_);
  if (hashes.before == h.base_hash && hashes.after == h.target_hash) {
    *outcome = ApplyOutcome::applied;
    return Status::ok();
  }
  scatter_swap_and_hash(box, ValueMode::overwrite, d.positions.data(), h.changed, d.words.data(), &hasher_, &after_,
                        &local_);
  if (hashes.before == h.target_hash) {
    *outcome = ApplyOutcome::already_applied;
    return Status::ok();
  }
  DCR_REQUIRE(hashes.before == h.base_hash, Code::base_mismatch, neither_message(h));
  return Status(Code::target_mismatch,
                "frame " + h.describe() + ": bits after apply do not match the target hash; the box was restored");
}

// A full frame carries the box's bits as they are: copy them in (keeping the old bits to put back
// should the result miss the target hash). A delta frame with no change has nothing to copy.
Status FrameDecoder::apply_copy(const uint8_t* frame, const Region& box, ApplyOutcome* outcome) {
  const FrameHeader& h = scratch_.header;
  if (region_hash(box) == h.target_hash) {
    *outcome = ApplyOutcome::already_applied;
    return Status::ok();
  }
  DCR_REQUIRE(h.is_full(), Code::base_mismatch, neither_message(h));
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
  *outcome = ApplyOutcome::applied;
  return Status::ok();
}

}  // namespace dcr
