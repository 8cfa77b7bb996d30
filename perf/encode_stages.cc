// Where encode and apply time go, stage by stage, on a bf16 pair shaped like a training step
// (issue 16's measurement: of the changed values, 84% move 1 ulp, 6% 2 ulps, 10% more; positions
// i.i.d.). Each repetition times, in turn and each from cold caches (with --warm, all but memcpy
// from warm ones), over the same frames:
//   memcpy  one copy of the model;
//   hash    XXH3 of both copies (the header's two hashes: what encode cannot read less than);
//   scan    encode's first stage: the fused scan that hashes both copies and copies the changed
//           words out (scan_and_hash);
//   tokens  the scan, then the gap and ordered-delta tokens (ChangeCollector) apart from it;
//   encode  FrameEncoder::encode_delta, the whole frame (which tokenises during the scan);
//   encodeN the same on --encode-threads threads, one encoder each, frames in flight (run_ordered,
//           as a trainer and `dcr bench codec` run them), still over one core's memcpy;
//   decode  FrameDecoder::decode of those frames: positions and values into arrays, the entropy
//           decoding that apply does (there in slices, between its passes over the box);
//   apply   FrameDecoder::apply of those frames to a copy of the base (reset untimed before), the
//           whole apply: decode, scatter, and the hash of the box after.
// Each stage's speed is taken over the memcpy of its own repetition (median [min-max]), and the
// differences between stages give per change what tokenising costs apart from the scan, what encode
// spends beyond the scan (what is left of tokenising where it overlaps the scan's reads, then the
// choices, entropy coding and the frame), and what apply spends beyond decoding (reading the box
// in, the scatter and the hash after). Every apply is checked bit for bit against the target. With --huge-pages the
// model's copies (base, target and memcpy's destination) are advised onto transparent huge pages
// before they are first touched. With --warm and a model small enough for the caches (say
// --elements 1048576), both copies are read into cache after memcpy and every later stage works
// from cache: the core's own speed, with no wait on memory, over a memcpy still timed from DRAM.
// With --contexts the frames take value packing contexts wherever smaller (run with and without
// it to see what contexts cost stage by stage).
// Usage: build/dcr_encode_stages [--rates 1,3,5] [--reps 7] [--huge-pages] [--warm] [--contexts] ...
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include <sys/mman.h>

#include <boost/program_options.hpp>

#include "dcr/codec/decoder.h"
#include "dcr/codec/encoder.h"
#include "dcr/codec/scan.h"
#include "dcr/core/hash.h"
#include "dcr/core/ordered_pool.h"
#include "src/codec/encode/change_collector.h"
#include "src/codec/scan/scan_hash.h"

namespace {

using namespace dcr;
using Clock = std::chrono::steady_clock;

struct Options {
  std::vector<double> rates{1, 3, 5};  // percent
  uint64_t elements = uint64_t{1} << 27;
  uint64_t frame_elements = uint64_t{1} << 22;
  int reps = 7;
  int threads = 2;  // encodeN's
  uint64_t seed = 1;
  bool huge_pages = false;
  bool warm = false;  // no eviction before a stage but memcpy
  bool contexts = false;  // value packing contexts wherever smaller (`dcr bench codec --contexts true`)
};

// `elements` bf16 values, not yet touched: on transparent huge pages where asked (and the kernel
// allows; `madvise` mode, as on Debian, gives them only to advised ranges).
struct Model {
  struct Free {
    void operator()(uint16_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint16_t[], Free> bits;
  Model(uint64_t elements, bool huge_pages) {
    constexpr size_t kHuge = size_t{2} << 20;
    const size_t bytes = (2 * elements + kHuge - 1) / kHuge * kHuge;
    bits.reset(static_cast<uint16_t*>(std::aligned_alloc(kHuge, bytes)));
    if (bits == nullptr) throw std::bad_alloc();
    if (huge_pages) madvise(bits.get(), bytes, MADV_HUGEPAGE);
  }
  uint16_t* data() const { return bits.get(); }
  uint8_t* bytes() const { return reinterpret_cast<uint8_t*>(bits.get()); }
};

enum Stage { kMemcpy, kHash, kScan, kTokens, kEncode, kThreaded, kDecode, kApply, kStages };
const char* const kStageNames[kStages] = {"memcpy", "hash", "scan", "tokens", "encode", "encodeN", "decode", "apply"};

uint64_t splitmix(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// bf16 weights of magnitude 2^-8 to 2^-4, either sign; the target moves `percent` of them (i.i.d.)
// by whole ulps. Returns how many changed.
uint64_t make_pair(const Options& o, double percent, uint16_t* base, uint16_t* target) {
  uint64_t state = o.seed;
  const uint64_t threshold = static_cast<uint64_t>(percent / 100 * 18446744073709551615.0);
  uint64_t changed = 0;
  for (uint64_t i = 0; i < o.elements; ++i) {
    const uint64_t r = splitmix(&state);
    const uint16_t magnitude = static_cast<uint16_t>(((119 + r % 4) << 7) | ((r >> 8) & 0x7f));
    base[i] = static_cast<uint16_t>(magnitude | ((r >> 16) & 1) << 15);
    target[i] = base[i];
    const uint64_t c = splitmix(&state);
    if (c >= threshold) continue;
    const unsigned kind = (c >> 32) % 100;
    const uint16_t step = kind < 84 ? 1 : kind < 90 ? 2 : static_cast<uint16_t>(3 + (c >> 40) % 38);
    const uint16_t moved = (c & 1) ? magnitude + step : magnitude - step;
    target[i] = static_cast<uint16_t>(moved | (base[i] & 0x8000));
    ++changed;
  }
  return changed;
}

class StageRunner {
 public:
  StageRunner(const Options& o, const uint16_t* base, const uint16_t* target)
      : o_(o), base_(reinterpret_cast<const uint8_t*>(base)), target_(reinterpret_cast<const uint8_t*>(target)),
        copy_(o.elements, o.huge_pages), positions_(o.frame_elements + kScanSlack), base_words_(o.frame_elements + 32),
        target_words_(o.frame_elements + 32), evict_(size_t{128} << 20, 1),
        frames_((o.elements + o.frame_elements - 1) / o.frame_elements), threaded_(frames_.size()) {
    EncodeOptions options;
    set_dtype(DType::bf16, &options);
    options.contexts = o.contexts;
    encoder_.set_options(options);
    for (int w = 0; w < o.threads; ++w) encoders_.push_back(std::make_unique<FrameEncoder>(options));
  }

  // One repetition: every stage's seconds; `changed` is what the scan found.
  void run(double* seconds, uint64_t* changed) {
    seconds[kMemcpy] = timed([&] { std::memcpy(copy_.data(), base_, o_.elements * 2); }, true);
    if (o_.warm) read_model();
    seconds[kHash] = timed([&] { each_frame([&](uint64_t at, uint64_t n) { hash_frame(at, n); }); });
    seconds[kScan] = timed([&] { each_frame([&](uint64_t at, uint64_t n) { *changed += scan_frame(at, n); }); });
    seconds[kTokens] = timed([&] { each_frame([&](uint64_t at, uint64_t n) { tokenise_frame(at, n); }); });
    seconds[kEncode] = timed([&] { each_frame([&](uint64_t at, uint64_t n) { encode_frame(at, n); }); });
    seconds[kThreaded] = timed([&] { encode_threaded(); });
    if (status_.is_ok() && threaded_ != frames_) status_ = Status(Code::internal, "threads encoded other bytes");
    seconds[kDecode] = timed([&] { each_frame([&](uint64_t at, uint64_t n) { decode_frame(at, n); }); });
    std::memcpy(copy_.data(), base_, o_.elements * 2);
    seconds[kApply] = timed([&] { each_frame([&](uint64_t at, uint64_t n) { apply_frame(at, n); }); });
    if (status_.is_ok() && std::memcmp(copy_.data(), target_, o_.elements * 2) != 0) {
      status_ = Status(Code::internal, "the applied copy differs from the target");
    }
  }

  const Status& status() const { return status_; }  // the first failure, if any

 private:
  // The pass's seconds, from cold caches unless --warm (memcpy's always: `cold`).
  template <class Pass>
  double timed(Pass&& pass, bool cold = false) {
    if (cold || !o_.warm) sink_ += read_all(evict_.data(), evict_.size());
    const auto start = Clock::now();
    pass();
    return std::chrono::duration<double>(Clock::now() - start).count();
  }

  static uint64_t read_all(const uint8_t* bytes, size_t size) {
    uint64_t sum = 0;
    for (size_t i = 0; i < size; i += 64) sum += bytes[i];
    return sum;
  }

  // Both copies into cache (--warm), as far as they fit.
  void read_model() { sink_ += read_all(base_, o_.elements * 2) + read_all(target_, o_.elements * 2); }

  template <class Frame>
  void each_frame(Frame&& frame) {
    for (uint64_t at = 0; at < o_.elements; at += o_.frame_elements) frame(at, std::min(o_.frame_elements, o_.elements - at));
  }

  void hash_frame(uint64_t at, uint64_t n) { sink_ += hash64(base_ + 2 * at, 2 * n) ^ hash64(target_ + 2 * at, 2 * n); }

  uint64_t scan_frame(uint64_t at, uint64_t n) {
    if (!scan_and_hash_available(2)) {  // no fused scan on this CPU: encode scans and hashes apart
      hash_frame(at, n);
      return scan_changes(base_ + 2 * at, target_ + 2 * at, n, 2, positions_.data());
    }
    StripeHash base_hash, target_hash;
    base_hash.start(2 * n);
    target_hash.start(2 * n);
    const uint64_t found = scan_and_hash(base_ + 2 * at, target_ + 2 * at, 0, n, positions_.data(), &base_hash,
                                         &target_hash, ChangedWords{base_words_.data(), target_words_.data()});
    sink_ += base_hash.finish(base_ + 2 * at) ^ target_hash.finish(target_ + 2 * at);
    return found;
  }

  void tokenise_frame(uint64_t at, uint64_t n) {
    const uint64_t found = scan_frame(at, n);
    const bool fused = scan_and_hash_available(2);
    collector_.start(2, ValueMode::delta_sm, n, found);
    collector_.add(base_ + 2 * at, target_ + 2 * at, positions_.data(), found,
                   fused ? ChangedWords{base_words_.data(), target_words_.data()} : ChangedWords{nullptr, nullptr});
    collector_.finish();
    sink_ += collector_.delta_tokens().streams[0].size();
  }

  void encode_frame(uint64_t at, uint64_t n) {
    std::vector<uint8_t>& frame = frames_[at / o_.frame_elements];
    keep(encoder_.encode_delta(box_region(base_, at, n), box_region(target_, at, n), {0, 1}, &frame, nullptr));
    sink_ += frame.size();
  }

  // Every frame on the threads' encoders, into threaded_ (run() checks them against frames_).
  void encode_threaded() {
    keep(run_ordered(
        frames_.size(), o_.threads, frames_.size(),
        [&](size_t i, int w) {
          const uint64_t at = i * o_.frame_elements, n = std::min(o_.frame_elements, o_.elements - at);
          return encoders_[w]->encode_delta(box_region(base_, at, n), box_region(target_, at, n), {0, 1},
                                            &threaded_[i], nullptr);
        },
        [](size_t) { return Status::ok(); }));
  }

  void decode_frame(uint64_t at, uint64_t n) {
    const std::vector<uint8_t>& frame = frames_[at / o_.frame_elements];
    const Region base = box_region(base_, at, n);
    keep(decoder_.decode(frame.data(), frame.size(), n, &decoded_, &base));
    sink_ += decoded_.positions.size();
  }

  void apply_frame(uint64_t at, uint64_t n) {
    const std::vector<uint8_t>& frame = frames_[at / o_.frame_elements];
    ApplyOutcome outcome = ApplyOutcome::applied;
    keep(decoder_.apply(frame.data(), frame.size(), box_region(copy_.bytes(), at, n), 0, &outcome));
    if (status_.is_ok() && outcome != ApplyOutcome::applied) status_ = Status(Code::internal, "a frame was not applied");
  }

  // The box of the n elements from element `at` of a model's bits.
  static Region box_region(const uint8_t* bits, uint64_t at, uint64_t n) {
    return dense_region(Box{0, 0, 1, 0, n}, 2, const_cast<uint8_t*>(bits) + 2 * at);
  }

  void keep(const Status& status) {
    if (status_.is_ok()) status_ = status;
  }

  const Options& o_;
  const uint8_t* base_;
  const uint8_t* target_;
  Model copy_;
  std::vector<uint32_t> positions_;
  std::vector<uint16_t> base_words_, target_words_;
  std::vector<uint8_t> evict_;  // larger than any last-level cache here
  ChangeCollector collector_;
  FrameEncoder encoder_;
  std::vector<std::vector<uint8_t>> frames_;  // the last encode's, one per frame
  std::vector<std::unique_ptr<FrameEncoder>> encoders_;  // encodeN's, one per thread
  std::vector<std::vector<uint8_t>> threaded_;           // encodeN's frames
  FrameDecoder decoder_;
  DecodedFrame decoded_;
  Status status_;
  volatile uint64_t sink_ = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// One rate: the table rows of every stage, then what tokenising and the rest cost per change.
bool run_rate(const Options& o, double percent) {
  const Model base(o.elements, o.huge_pages), target(o.elements, o.huge_pages);
  const uint64_t expected = make_pair(o, percent, base.data(), target.data());
  StageRunner runner(o, base.data(), target.data());
  std::vector<double> times[kStages], ratios[kStages];
  for (int rep = -1; rep < o.reps; ++rep) {  // -1: a warm-up, so that scratch is allocated and touched
    double seconds[kStages];
    uint64_t changed = 0;
    runner.run(seconds, &changed);
    if (!runner.status().is_ok()) {
      std::fprintf(stderr, "encode_stages: at %.2f%%: %s\n", percent, runner.status().to_string().c_str());
      return false;
    }
    if (changed != expected) {
      std::fprintf(stderr, "encode_stages: at %.2f%% the scan found %llu changes, the step made %llu\n", percent,
                   static_cast<unsigned long long>(changed), static_cast<unsigned long long>(expected));
      return false;
    }
    for (int s = 0; s < kStages && rep >= 0; ++s) {
      times[s].push_back(seconds[s]);
      ratios[s].push_back(seconds[kMemcpy] / seconds[s]);
    }
  }
  const double bytes = 2.0 * o.elements;
  for (int s = 0; s < kStages; ++s) {
    const std::string name = s == kThreaded ? "encode" + std::to_string(o.threads) : kStageNames[s];
    std::printf("%6.2f%%  %-7s %8.2f ms %7.2f GB/s   /cpy %.2f [%.2f-%.2f]\n", percent, name.c_str(),
                1e3 * median(times[s]), bytes / median(times[s]) / 1e9, median(ratios[s]),
                *std::min_element(ratios[s].begin(), ratios[s].end()),
                *std::max_element(ratios[s].begin(), ratios[s].end()));
  }
  const double per_change = 1e9 / static_cast<double>(std::max<uint64_t>(expected, 1));
  const double scan = median(times[kScan]), tokens = median(times[kTokens]), encode = median(times[kEncode]);
  const double at_target = median(times[kMemcpy]) / 0.6;  // encode at 0.6x memcpy
  std::printf("%6.2f%%  %llu changes; ns a change: scan over hash %.2f, tokenise apart %.2f, encode beyond the scan "
              "%.2f; encode at 0.6x memcpy leaves %.2f after the scan\n",
              percent, static_cast<unsigned long long>(expected), (scan - median(times[kHash])) * per_change,
              (tokens - scan) * per_change, (encode - scan) * per_change, (at_target - scan) * per_change);
  const double decode = median(times[kDecode]), apply = median(times[kApply]);
  std::printf("%6.2f%%  ns a change: decode %.2f, apply beyond decoding %.2f; apply at 0.7x memcpy leaves %.2f in all\n",
              percent, decode * per_change, (apply - decode) * per_change,
              median(times[kMemcpy]) / 0.7 * per_change);
  return true;
}

std::vector<double> parse_rates(const std::string& text) {
  std::vector<double> rates;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    size_t used = 0;
    try {
      rates.push_back(std::stod(item, &used));
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size()) throw std::invalid_argument("--rates: '" + item + "' is not a number");
    start = comma + 1;
  }
  return rates;
}

}  // namespace

int main(int argc, char** argv) {
  namespace po = boost::program_options;
  Options o;
  std::string rates = "1,3,5";
  po::options_description desc("dcr_encode_stages: encode and apply time, stage by stage");
  desc.add_options()("help", "this help")("rates", po::value(&rates)->default_value(rates),
                                          "changed fractions in percent, comma-separated")(
      "elements", po::value(&o.elements)->default_value(o.elements), "bf16 elements in the model")(
      "frame-elements", po::value(&o.frame_elements)->default_value(o.frame_elements), "elements per frame")(
      "reps", po::value(&o.reps)->default_value(o.reps), "timed repetitions")(
      "encode-threads", po::value(&o.threads)->default_value(o.threads), "threads of the encodeN stage")(
      "seed", po::value(&o.seed)->default_value(o.seed), "seed of the model and its step")(
      "huge-pages", po::bool_switch(&o.huge_pages), "advise the model's copies onto transparent huge pages")(
      "warm", po::bool_switch(&o.warm),
      "every stage but memcpy from warm caches (on a small model: the core's speed over memcpy from DRAM)")(
      "contexts", po::bool_switch(&o.contexts), "encode with value packing contexts wherever they are smaller");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, desc), vm);
    po::notify(vm);
    o.rates = parse_rates(rates);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dcr_encode_stages: %s\n", e.what());
    return 2;
  }
  if (vm.count("help")) {
    std::cout << desc;
    return 0;
  }
  const bool rates_ok = std::all_of(o.rates.begin(), o.rates.end(), [](double r) { return r > 0 && r <= 50; });
  if (!rates_ok || o.reps < 1 || o.threads < 1 || o.threads > 64 || o.elements < 1024 || o.frame_elements < 1024 || o.frame_elements > kMaxFrameElements) {
    std::fprintf(stderr, "dcr_encode_stages: need rates in (0, 50], --reps >= 1, --encode-threads in [1, 64], --elements >= 1024, 1024 <= --frame-elements < 2^32\n");
    return 2;
  }
  std::printf("%llu bf16 elements%s%s%s, frames of %llu, %d repetitions; /cpy: speed over the memcpy of the same "
              "repetition, median [min-max]\n",
              static_cast<unsigned long long>(o.elements), o.huge_pages ? " on huge pages" : "",
              o.warm ? ", caches warm but for memcpy" : "", o.contexts ? ", value packing contexts" : "",
              static_cast<unsigned long long>(o.frame_elements), o.reps);
  for (double percent : o.rates) {
    if (!run_rate(o, percent)) return 1;
  }
  return 0;
}
