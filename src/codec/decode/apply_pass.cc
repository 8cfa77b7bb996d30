#include "src/codec/decode/apply_pass.h"

#include <algorithm>
#include <utility>

#include "dcr/codec/scan.h"
#include "src/codec/scan/scan_hash.h"

namespace dcr {

namespace {

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

}  // namespace

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

uint64_t runs_hash(const std::vector<ElementRun>& runs, unsigned width, Hasher* hasher) {
  hasher->reset();
  for (const ElementRun& run : runs) hasher->update(run.data, run.elements * width);
  return hasher->digest();
}

}  // namespace dcr
