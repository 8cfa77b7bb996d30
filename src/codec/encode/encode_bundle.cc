// FrameEncoder's bundles: several boxes coded as one box of their elements, concatenated.
#include <chrono>
#include <string>

#include "dcr/codec/encoder.h"
#include "dcr/codec/scan.h"
#include "src/codec/encode/frame_encoder.h"
#include "src/codec/format/bundle.h"

namespace dcr {

// Checks a bundle's boxes (each list of regions holds the same ones) and writes its box list stream
// into s.bundle; *all is the bundle's box.
Status FrameEncoder::start_bundle(const std::vector<const std::vector<Region>*>& lists, uint64_t id, Box* all) {
  const std::vector<Region>& first = *lists[0];
  DCR_REQUIRE(!first.empty() && first.size() <= kMaxBundleBoxes, Code::invalid_argument,
              "a bundle takes 1 to " + std::to_string(kMaxBundleBoxes) + " boxes; asked for " +
                  std::to_string(first.size()));
  Scratch& s = *scratch_;
  const unsigned width = first[0].width;
  std::vector<Box> boxes;
  for (size_t i = 0; i < first.size(); ++i) {
    DCR_TRY(check_frame_region(first[i]));
    for (const std::vector<Region>* list : lists) {
      DCR_REQUIRE(list->size() == first.size() && (*list)[i].box == first[i].box && (*list)[i].width == width,
                  Code::invalid_argument, "a bundle's base and target hold the same boxes, of one element width");
    }
    boxes.push_back(first[i].box);
  }
  uint64_t total = 0;
  for (const Box& b : boxes) total += b.elements();
  DCR_REQUIRE(total <= kMaxFrameElements, Code::invalid_argument, "a bundle covers at most 2^32-1 elements");
  const Status disjoint = check_bundle_boxes(boxes, total);
  DCR_REQUIRE(disjoint.is_ok(), Code::invalid_argument, disjoint.message());
  DCR_REQUIRE(id <= UINT64_MAX - 1, Code::invalid_argument, "bundle id out of range");
  s.bundle.clear();
  write_box_list(boxes, &s.codec, &s.box_list, &s.bundle);
  *all = Box{kBundleTensor, id, 1, 0, total};
  return Status::ok();
}

// Gathers each list of regions into one dense buffer (s.bundle_base, then s.bundle_target).
void FrameEncoder::gather_bundle(const std::vector<const std::vector<Region>*>& lists, const Box& all) {
  Scratch& s = *scratch_;
  const unsigned width = (*lists[0])[0].width;
  std::vector<uint8_t>* buffers[] = {&s.bundle_base, &s.bundle_target};
  for (size_t l = 0; l < lists.size(); ++l) {
    buffers[l]->resize(all.elements() * width);
    uint64_t at = 0;
    for (const Region& r : *lists[l]) {
      copy_out(r, buffers[l]->data() + at);
      at += r.box.elements() * width;
    }
  }
}

namespace {

// A bundle's boxes as the runs of elements they lie in (a contiguous box is one run, else each
// row is), when the fused scan can take them as they lie: 2-byte elements on a CPU with the fused
// scan, every run but the last a whole number of 64-byte stripes, and at least XXH3's long input in
// all (scan_and_hash). Otherwise the boxes are gathered into one copy.
template <class Run>
bool scan_runs(const std::vector<Region>& bases, const std::vector<Region>& targets, std::vector<Run>* runs) {
  if (bases[0].width != 2 || !scan_and_hash_available(2)) return false;
  uint64_t total = 0;
  for (size_t i = 0; i < bases.size(); ++i) {
    const Region &b = bases[i], &t = targets[i];
    const bool whole = b.contiguous() && t.contiguous();
    const uint64_t rows = whole ? 1 : b.box.rows, elements = whole ? b.box.elements() : b.box.cols;
    for (uint64_t r = 0; r < rows; ++r) runs->push_back(Run{b.row(r), t.row(r), elements});
    total += b.box.elements();
  }
  for (size_t k = 0; k + 1 < runs->size(); ++k) {
    if ((*runs)[k].elements % 32 != 0) return false;
  }
  return total * 2 >= StripeHash::kLongInput;
}

}  // namespace

// The bundle's changes are found in its boxes as they lie; the frame is coded from the words the
// scan copied out, so no copy of the boxes is made.
Status FrameEncoder::encode_bundle_runs(const std::vector<Run>& runs, const Box& all, Versions versions,
                                        std::vector<uint8_t>* frame, EncodeStats* stats) {
  Scratch& s = *scratch_;
  const uint64_t count = all.elements();
  s.positions.reserve(count + kScanSlack);
  s.collector.start(2, delta_mode(), count, count);
  s.words_copied = true;
  Hashes hashes;
  const uint64_t changed = collect_fused(runs.data(), runs.size(), count, &hashes);
  s.collector.finish();
  const Region words_only = dense_region(all, 2, nullptr);  // encode reads the copied-out words alone
  return encode(words_only, words_only, s.positions.data(), changed, hashes, versions, frame, stats);
}

Status FrameEncoder::encode_bundle(const std::vector<Region>& bases, const std::vector<Region>& targets,
                                   Versions versions, std::vector<uint8_t>* frame, EncodeStats* stats, uint64_t id) {
  Scratch& s = *scratch_;
  s.started = std::chrono::steady_clock::now();
  Box all;
  DCR_TRY(start_bundle({&bases, &targets}, id, &all));
  Status status;
  s.runs.clear();
  if (scan_runs(bases, targets, &s.runs)) {
    status = encode_bundle_runs(s.runs, all, versions, frame, stats);
  } else {
    gather_bundle({&bases, &targets}, all);
    const unsigned width = bases[0].width;
    status = encode_delta(dense_region(all, width, s.bundle_base.data()),
                          dense_region(all, width, s.bundle_target.data()), versions, frame, stats);
  }
  s.bundle.clear();
  return status;
}

Status FrameEncoder::encode_full_bundle(const std::vector<Region>& targets, uint64_t target_version,
                                        std::vector<uint8_t>* frame, EncodeStats* stats, uint64_t id) {
  Scratch& s = *scratch_;
  Box all;
  DCR_TRY(start_bundle({&targets}, id, &all));
  gather_bundle({&targets}, all);
  const Status status =
      encode_full(dense_region(all, targets[0].width, s.bundle_base.data()), target_version, frame, stats);
  s.bundle.clear();
  return status;
}

}  // namespace dcr
