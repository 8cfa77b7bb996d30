#include "dcr/codec/decoder.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "dcr/codec/scan.h"
#include "dcr/core/hash.h"
#include "src/codec/buffer.h"
#include "src/codec/scan_hash.h"
#include "src/codec/sections.h"

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
  if (out->header.is_bundle()) DCR_TRY(read_bundle(frame, &out->header, &payload));
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

// A bundle's box list (into boxes_), the first stream of its payload: *payload and the header's
// payload bytes then describe the sections after it.
Status FrameDecoder::read_bundle(const uint8_t* frame, FrameHeader* h, const uint8_t** payload) {
  ByteReader reader(frame + kFrameHeaderBytes, h->payload_bytes, "bundle box list");
  const uint8_t* bytes;
  size_t size;
  const std::string what = "frame " + h->describe();
  DCR_TRY(codec_.read(&reader, 1 + 5 * 10 * kMaxBundleBoxes, 0, &bytes, &size).with_context(what));
  ByteReader list(bytes, size, "bundle box list");
  uint64_t n = 0;
  DCR_TRY(list.read_varint(&n).with_context(what));
  DCR_REQUIRE(n >= 1 && n <= kMaxBundleBoxes, Code::corrupt, what + ": bundle lists " + std::to_string(n) + " boxes");
  boxes_.resize(n);
  for (Box& b : boxes_) {
    uint64_t tensor = 0;
    DCR_TRY(list.read_varint(&tensor).with_context(what));
    for (uint64_t* field : {&b.row0, &b.rows, &b.col0, &b.cols}) DCR_TRY(list.read_varint(field).with_context(what));
    DCR_REQUIRE(tensor < kBundleTensor, Code::corrupt, what + ": bundle box names tensor " + std::to_string(tensor));
    b.tensor = static_cast<uint32_t>(tensor);
  }
  DCR_REQUIRE(list.remaining() == 0, Code::corrupt, what + ": bundle box list has trailing bytes");
  DCR_TRY(check_bundle_boxes(boxes_, h->count()).with_context(what));
  *payload = frame + kFrameHeaderBytes + reader.position();
  h->payload_bytes -= reader.position();
  return Status::ok();
}

Status FrameDecoder::bundle_boxes(const uint8_t* frame, size_t size, std::vector<Box>* boxes) {
  FrameHeader h;
  DCR_TRY(parse_frame_header(frame, size, &h));
  DCR_REQUIRE(h.is_bundle(), Code::invalid_argument, "frame " + h.describe() + " is not a bundle");
  const uint8_t* payload;
  DCR_TRY(read_bundle(frame, &h, &payload));
  *boxes = boxes_;
  return Status::ok();
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

// The box's hash after the scatter, and before it when asked for (see FrameDecoder::apply).
struct BoxHashes {
  bool with_before = false;
  uint64_t before = 0;
  uint64_t after = 0;
};

constexpr uint64_t kBlockElements = 1 << 14;
constexpr uint64_t kApplySlice = 2 * ChangeReader::kSlice;  // changes decoded between two asks

// Brings a box's lines into cache ahead of the pass over it, in order. While changes are decoded it
// asks for at most kLinesPerAsk lines after each slice, as far as the decoded changes reach: the
// decoding hides the fetch (about 40 lines a slice at 5% changed; longer bursts of prefetches
// measured slower, many of them seemingly dropped). Whatever a block still lacks when its pass
// begins is read in one sequential sweep, which the hardware prefetcher streams; that is all of a
// block whose few changes took little decoding.
class BoxFetch {
 public:
  // `changed` changes over `bytes`: asking pays where a slice's changes span few enough lines that
  // decoding them takes about as long as fetching them (from about 1.5% changed on 2-byte
  // elements); sparser boxes only sweep, as the hardware streams those best.
  BoxFetch(const uint8_t* data, uint64_t bytes, uint64_t changed)
      : data_(data), bytes_(bytes), asking_(bytes / 64 * kApplySlice <= 2 * kLinesPerAsk * changed) {}

  // After a slice: the changes decoded reach byte `reach`; the pass is at byte `pass`.
  void ask(uint64_t reach, uint64_t pass) {
    if (!asking_) return;
    const uint64_t until = std::min({bytes_, reach + kAhead, pass + kWindow, next_ + kLinesPerAsk * 64});
    // Into the outer caches: fetched into L1 they would push out the decoders' tables.
    for (; next_ < until; next_ += 64) __builtin_prefetch(data_ + next_, 0, 1);
  }

  // Reads the lines up to byte `end` not asked for yet.
  void sweep(uint64_t end) {
    uint8_t sum = 0;
    for (; next_ < end; next_ += 64) sum |= data_[next_];
    sink_ = sum;
  }

 private:
  static constexpr uint64_t kLinesPerAsk = 64;
  static constexpr uint64_t kAhead = 4096;      // bytes asked for past the last decoded change
  static constexpr uint64_t kWindow = 1 << 17;  // and at most this far past the pass
  const uint8_t* data_;
  uint64_t bytes_;
  bool asking_;
  uint64_t next_ = 0;  // the next byte to ask for
  volatile uint8_t sink_ = 0;  // keeps the sweep's reads
};

// Decodes changes until those of box elements below `end` are all in (or the frame's are), asking
// for the run's lines meanwhile, then reads in what the block [begin, end) still lacks. The run
// (the fetch's) starts at box element `run_start`.
Status decode_through(ChangeReader* changes, const uint32_t* positions, uint64_t changed, uint64_t begin,
                      uint64_t end, uint64_t run_start, unsigned width, BoxFetch* fetch) {
  while (changes->done() < changed && (changes->done() == 0 || positions[changes->done() - 1] < end)) {
    const uint64_t upto = std::min(changed, changes->done() + kApplySlice);
    DCR_TRY(changes->decode(upto));
    const uint64_t reach = std::max<uint64_t>(positions[upto - 1] + uint64_t{1}, run_start);
    fetch->ask((reach - run_start) * width, (begin - run_start) * width);
  }
  fetch->sweep((end - run_start) * width);
  return Status::ok();
}

// Whether the runs go the striped way: on AVX-512, at least a few stripes in all, every run but
// the last a whole number of stripes (XXH3 then takes each run's stripes as they lie).
bool stripes_fit(const std::vector<ElementRun>& runs, unsigned width) {
  uint64_t bytes = 0;
  for (size_t k = 0; k < runs.size(); ++k) {
    if (k + 1 < runs.size() && runs[k].elements * width % 64 != 0) return false;
    bytes += runs[k].elements * width;
  }
  return bytes >= 1024 && feed_available();
}

// The runs of `width`-byte elements, concatenated: the last 64 bytes.
void last_bytes(const std::vector<ElementRun>& runs, unsigned width, uint8_t* out) {
  auto run_bytes = [&](size_t k) {
    return std::pair<const uint8_t*, uint64_t>(runs[k].data, runs[k].elements * width);
  };
  last_stripe(runs.size(), run_bytes, out);
}

// The offsets of changes [first, last) in the run of elements that starts at box element
// `run_start`: the box's own positions when it is 0, else copied into `local`.
const uint32_t* offsets_in_run(const uint32_t* positions, uint64_t first, uint64_t last, uint64_t run_start,
                               std::vector<uint32_t>* local) {
  if (run_start == 0) return positions + first;
  local->resize(last - first);
  for (uint64_t i = first; i < last; ++i) (*local)[i - first] = static_cast<uint32_t>(positions[i] - run_start);
  return local->data();
}

// On the striped way, in cache-sized blocks: each block's changes are decoded (decode_through), then
// the block is scattered and hashed (XXH3 with its accumulators in registers) while it is in cache,
// so each run is read from memory once; so is its hash before the scatter, when asked for. XXH3's
// last stripe before is copied first, since an earlier block's scatter may reach into it. *applied
// counts the changes scattered, also on failure.
Status scatter_swap_and_hash_stripes(const std::vector<ElementRun>& runs, unsigned width, ValueMode mode,
                                     ChangeReader* changes, uint32_t* positions, uint64_t changed, uint64_t* words,
                                     BoxHashes* hashes, uint64_t* applied, std::vector<uint32_t>* local) {
  uint64_t count = 0;
  for (const ElementRun& run : runs) count += run.elements;
  alignas(64) uint8_t last_before[64];
  last_bytes(runs, width, last_before);
  StripeHash before, after;
  before.start(count * width);
  after.start(count * width);
  uint64_t& j = *applied;
  changes->defer_values();  // words that go by the base bits are decoded with the block in cache
  uint64_t at = 0;  // the run's first element in the box
  for (const ElementRun& run : runs) {
    BoxFetch fetch(run.data, run.elements * width, changed * run.elements / count);
    for (uint64_t begin = 0; begin < run.elements; begin += kBlockElements) {
      const uint64_t end = std::min(run.elements, begin + kBlockElements);
      DCR_TRY(decode_through(changes, positions, changed, at + begin, at + end, at, width, &fetch));
      const uint64_t first = j;
      const uint64_t last = std::lower_bound(positions + first, positions + changes->done(), at + end) - positions;
      DCR_TRY(changes->values_through(last));
      j = last;
      if (hashes->with_before) before.feed(run.data, begin * width, end * width, at * width);
      scatter_swap(run.data, run.elements, width, mode, offsets_in_run(positions, first, last, at, local), last - first,
                   words + first);
      after.feed(run.data, begin * width, end * width, at * width);
    }
    at += run.elements;
  }
  if (hashes->with_before) hashes->before = before.finish_long(last_before);
  alignas(64) uint8_t last_after[64];
  last_bytes(runs, width, last_after);
  hashes->after = after.finish_long(last_after);  // stripes_fit: at least XXH3's long input
  return Status::ok();
}

// Decodes and scatters the changes into the runs of the box (a region's, or a bundle's boxes'), all
// of them hashed as one concatenation: the striped way where the runs fit it, else once every
// change is decoded, one run at a time (long runs in blocks), through the streaming Hasher.
Status scatter_swap_and_hash(const std::vector<ElementRun>& runs, unsigned width, ValueMode mode,
                             ChangeReader* changes, uint32_t* positions, uint64_t changed, uint64_t* words,
                             BoxHashes* hashes, uint64_t* applied, Hasher* before, Hasher* after,
                             std::vector<uint32_t>* local) {
  *applied = 0;
  if (stripes_fit(runs, width)) {
    return scatter_swap_and_hash_stripes(runs, width, mode, changes, positions, changed, words, hashes, applied, local);
  }
  DCR_TRY(changes->decode(changed));
  before->reset();
  after->reset();
  uint64_t j = 0, at = 0;
  for (const ElementRun& run : runs) {
    for (uint64_t begin = 0; begin < run.elements; begin += kBlockElements) {
      const uint64_t end = std::min(run.elements, begin + kBlockElements);
      const uint64_t first = j;
      j = std::lower_bound(positions + first, positions + changed, at + end) - positions;
      if (hashes->with_before) before->update(run.data + begin * width, (end - begin) * width);
      scatter_swap(run.data, run.elements, width, mode, offsets_in_run(positions, first, j, at, local), j - first,
                   words + first);
      after->update(run.data + begin * width, (end - begin) * width);
    }
    at += run.elements;
  }
  *applied = changed;
  if (hashes->with_before) hashes->before = before->digest();
  hashes->after = after->digest();
  return Status::ok();
}

// Puts the first n changes' old bits (in the words, after a scatter_swap) back.
void scatter_back(const std::vector<ElementRun>& runs, unsigned width, const uint32_t* positions, uint64_t n,
                  uint64_t* words, std::vector<uint32_t>* local) {
  uint64_t j = 0, at = 0;
  for (size_t k = 0; k < runs.size() && j < n; at += runs[k].elements, ++k) {
    const uint64_t first = j;
    j = std::lower_bound(positions + first, positions + n, at + runs[k].elements) - positions;
    scatter_swap(runs[k].data, runs[k].elements, width, ValueMode::overwrite,
                 offsets_in_run(positions, first, j, at, local), j - first, words + first);
  }
}

// XXH3 of the runs' bits, concatenated.
uint64_t runs_hash(const std::vector<ElementRun>& runs, unsigned width, Hasher* hasher) {
  hasher->reset();
  for (const ElementRun& run : runs) hasher->update(run.data, run.elements * width);
  return hasher->digest();
}

std::string missed_target_message(const FrameHeader& h) {
  return "frame " + h.describe() + ": bits after apply do not match the target hash; the box was restored";
}

std::string neither_message(const FrameHeader& h) {
  return "frame " + h.describe() + ": destination holds neither its base nor its target bits "
         "(repair the box with a full frame)";
}

}  // namespace

Status FrameDecoder::apply(const uint8_t* frame, size_t size, const Region& dst, uint64_t expected_base_version,
                           ApplyOutcome* outcome) {
  DCR_TRY(parse_frame_header(frame, size, &scratch_.header));
  const FrameHeader& h = scratch_.header;
  DCR_REQUIRE(!h.is_bundle(), Code::invalid_argument,
              "frame " + h.describe() + " is a bundle of several boxes: apply it with apply_bundle");
  Region box;
  DCR_TRY(check_destination(h, dst, expected_base_version, &box));
  return apply_payload(frame + kFrameHeaderBytes, box, outcome);
}

// A delta bundle is applied where its boxes lie, as one box of their runs: a failure puts every
// box back (apply_changes). A full bundle, or one without changes, is applied to a gathered copy of
// its boxes, which is copied back only when applied. Either way all of its boxes change, or none
// does.
Status FrameDecoder::apply_bundle(const uint8_t* frame, size_t size, const std::vector<Region>& dsts,
                                  uint64_t expected_base_version, ApplyOutcome* outcome) {
  DCR_TRY(parse_frame_header(frame, size, &scratch_.header));
  FrameHeader& h = scratch_.header;
  DCR_REQUIRE(h.is_bundle(), Code::invalid_argument, "frame " + h.describe() + " is not a bundle: apply it with apply");
  const uint8_t* payload;
  DCR_TRY(read_bundle(frame, &h, &payload));
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
