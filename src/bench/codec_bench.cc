#include "dcr/bench/codec_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <thread>

#include <nlohmann/json.hpp>

#include "dcr/bench/reference_encodings.h"
#include "dcr/ckpt/hf_checkpoint.h"
#include "dcr/codec/decoder.h"
#include "dcr/codec/encoder.h"
#include "dcr/codec/scan.h"
#include "dcr/core/hash.h"
#include "dcr/core/log.h"
#include "dcr/core/ordered_pool.h"
#include "dcr/layout/serve_quant.h"
#include "dcr/model/change_model.h"
#include "dcr/model/presets.h"
#include "dcr/model/real_weights.h"

namespace dcr {

namespace {

using Clock = std::chrono::steady_clock;
using Bits = std::vector<std::vector<uint8_t>>;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A frame: one box, or a bundle of several.
using Slot = std::vector<Box>;

// Frames: whole rows of a tensor, up to `frame_elements` per frame; rows longer than that are cut
// into column chunks. Tensors under `bundle_below` elements share bundle frames (one per element
// width, up to `frame_elements` each) instead.
std::vector<Slot> cut_frames(const Manifest& manifest, uint64_t frame_elements, uint64_t bundle_below) {
  std::vector<Slot> frames;
  std::map<size_t, Slot> open;  // the bundle being filled, by element width
  std::map<size_t, uint64_t> filled;
  for (uint32_t t = 0; t < manifest.tensors.size(); ++t) {
    const TensorDesc& desc = manifest.tensors[t];
    const uint64_t rows = tensor_rows(desc), cols = tensor_cols(desc), width = desc.width();
    if (rows * cols < bundle_below) {
      if (filled[width] + rows * cols > frame_elements && !open[width].empty()) {
        frames.push_back(std::move(open[width]));
        open[width].clear();
        filled[width] = 0;
      }
      open[width].push_back({t, 0, rows, 0, cols});
      filled[width] += rows * cols;
      continue;
    }
    if (cols >= frame_elements) {
      for (uint64_t r = 0; r < rows; ++r) {
        for (uint64_t c = 0; c < cols; c += frame_elements) frames.push_back({{t, r, 1, c, std::min(frame_elements, cols - c)}});
      }
      continue;
    }
    const uint64_t rows_per_frame = frame_elements / cols;
    for (uint64_t r = 0; r < rows; r += rows_per_frame) frames.push_back({{t, r, std::min(rows_per_frame, rows - r), 0, cols}});
  }
  for (auto& bundle : open) {
    if (!bundle.second.empty()) frames.push_back(std::move(bundle.second));
  }
  return frames;
}

Region tensor_region(const Manifest& manifest, const Bits& bits, const Box& frame) {
  const TensorDesc& desc = manifest.tensors[frame.tensor];
  const Region whole = dense_region(whole_tensor(frame.tensor, desc), static_cast<unsigned>(desc.width()),
                                    bits[frame.tensor].data());
  Region part;
  sub_region(whole, frame, &part);  // frames are cut inside their tensor
  return part;
}

// The times of one repetition's passes, in the order they ran.
struct RepTimes {
  double probe;  // cpu_probe: this core's speed, apart from memory
  double memcpy, encode, reset, apply, hash;    // reset: the memcpy that gives apply its base
  double memcpy_beside = 0, threaded_encode = 0, threaded_memcpy = 0;  // with encode threads
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Speed of pass `a` over speed of pass `b` (time b / time a), one ratio per repetition.
Spread spread_of(const std::vector<RepTimes>& reps, double RepTimes::*a, double RepTimes::*b) {
  std::vector<double> ratios;
  for (const RepTimes& t : reps) ratios.push_back(t.*b / t.*a);
  return {median(ratios), *std::min_element(ratios.begin(), ratios.end()),
          *std::max_element(ratios.begin(), ratios.end())};
}

double median_gbps(uint64_t bytes, const std::vector<RepTimes>& reps, double RepTimes::*pass) {
  std::vector<double> times;
  for (const RepTimes& t : reps) times.push_back(t.*pass);
  return bytes / median(times) / 1e9;
}

// Everything measured for one change case, from the same base and target bits.
class CaseRunner {
 public:
  // groups: a label per tensor, under which the record counts its elements and changes (empty: none).
  CaseRunner(const Manifest& manifest, const CodecBenchOptions& options, std::vector<std::string> groups = {})
      : manifest_(manifest), options_(options), groups_(std::move(groups)),
        slots_(cut_frames(manifest, options.frame_elements, options.bundle_below)),
        wire_(slots_.size()), threaded_wire_(slots_.size()) {
    EncodeOptions encode_options;
    encode_options.exhaustive = options.exhaustive;
    encode_options.contexts = options.contexts;
    for (int i = 0; i < std::max(options.encode_threads, 1); ++i) {
      encoders_.push_back(std::make_unique<FrameEncoder>(encode_options));
    }
  }

  // Encode, apply and memcpy take turns within each repetition, and each speed is taken as a ratio
  // to the memcpy timed just before it, so a machine that speeds up or slows down mid-run moves
  // both sides of a ratio together. Each timed pass starts with the model out of the caches (as it
  // is for a trainer or rollout between steps). A first repetition runs and is dropped: it pays
  // what a long-running sender or receiver pays once.
  Status run(const std::string& name, const Bits& base, const Bits& target, CodecBenchRecord* r) {
    r->name = name;
    r->frames = slots_.size();
    r->model_bytes = manifest_.total_bytes();
    r->encode_threads = threads();
    std::map<std::string, int> modes;
    position_bytes_ = value_bytes_ = 0;
    DCR_TRY(encode_with_stats(base, target, &modes));  // warm-up: buffers allocated and touched
    record_wire(modes, r);
    if (threads() > 1) DCR_TRY(encode_all(base, target, threads(), &threaded_wire_));
    Bits dst, copy;
    copy_bits(base, &copy, 1);
    copy_bits(base, &dst, 1);
    std::vector<RepTimes> reps(options_.repetitions + 1);
    for (RepTimes& t : reps) DCR_TRY(time_repetition(base, target, &copy, &dst, &t));
    reps.erase(reps.begin());  // the decoder's scratch first touched: apply ran at half speed
    record_speed(reps, r);
    r->bitexact = threaded_wire_ == wire_ || threads() == 1;  // threads change no frame's bytes
    for (size_t t = 0; t < dst.size(); ++t) {
      r->bitexact = r->bitexact && hash64(dst[t].data(), dst[t].size()) == hash64(target[t].data(), target[t].size()) &&
                    dst[t] == target[t];
    }
    analyse(base, target, r);
    return Status::ok();
  }

 private:
  int threads() const { return static_cast<int>(encoders_.size()); }

  template <class Pass>
  double timed(Pass&& pass) {
    evict_caches();
    const auto start = Clock::now();
    pass();
    return seconds_since(start);
  }

  Status time_repetition(const Bits& base, const Bits& target, Bits* copy, Bits* dst, RepTimes* t) {
    Status status;
    const auto probe_start = Clock::now();  // from the caches: no eviction before it
    cpu_probe();
    t->probe = seconds_since(probe_start);
    t->memcpy = timed([&] { copy_bits(base, copy, 1); });
    t->encode = timed([&] { status = encode_all(base, target, 1, &wire_); });
    DCR_TRY(status);
    t->reset = timed([&] { copy_bits(base, dst, 1); });
    t->apply = timed([&] { status = apply_once(dst); });
    DCR_TRY(status);
    t->hash = timed([&] { hash_sink_ += hash_frames(base, target); });
    if (threads() == 1) return Status::ok();
    t->memcpy_beside = timed([&] { copy_bits(base, copy, 1); });
    t->threaded_encode = timed([&] { status = encode_all(base, target, threads(), &threaded_wire_); });
    DCR_TRY(status);
    t->threaded_memcpy = timed([&] { copy_bits(base, copy, threads()); });
    return Status::ok();
  }

  void record_speed(const std::vector<RepTimes>& reps, CodecBenchRecord* r) const {
    const uint64_t bytes = r->model_bytes;
    r->encode_gbps = median_gbps(bytes, reps, &RepTimes::encode);
    r->apply_gbps = median_gbps(bytes, reps, &RepTimes::apply);
    r->memcpy_gbps = median_gbps(bytes, reps, &RepTimes::memcpy);
    r->hash_gbps = median_gbps(bytes, reps, &RepTimes::hash);
    r->encode_ratio = spread_of(reps, &RepTimes::encode, &RepTimes::memcpy);
    r->apply_ratio = spread_of(reps, &RepTimes::apply, &RepTimes::reset);
    std::vector<double> copies;
    for (const RepTimes& t : reps) {
      copies.insert(copies.end(), {t.memcpy, t.reset});
      if (t.memcpy_beside > 0) copies.push_back(t.memcpy_beside);
    }
    const auto [fastest, slowest] = std::minmax_element(copies.begin(), copies.end());
    r->memcpy_variation = *slowest / *fastest - 1;
    const auto [quickest, slowest_probe] = std::minmax_element(
        reps.begin(), reps.end(), [](const RepTimes& a, const RepTimes& b) { return a.probe < b.probe; });
    r->cpu_variation = slowest_probe->probe / quickest->probe - 1;
    if (threads() == 1) return;
    r->threaded_encode_gbps = median_gbps(bytes, reps, &RepTimes::threaded_encode);
    r->threaded_memcpy_gbps = median_gbps(bytes, reps, &RepTimes::threaded_memcpy);
    r->threaded_encode_ratio = spread_of(reps, &RepTimes::threaded_encode, &RepTimes::memcpy_beside);
    r->threaded_encode_to_threaded_memcpy = spread_of(reps, &RepTimes::threaded_encode, &RepTimes::threaded_memcpy);
  }

  Status encode_slot(const Bits& base, const Bits& target, size_t i, FrameEncoder* encoder,
                     std::vector<uint8_t>* frame, EncodeStats* stats) {
    const Slot& slot = slots_[i];
    EncodeOptions o = encoder->options();
    set_dtype(manifest_.tensors[slot[0].tensor].dtype, &o);
    encoder->set_options(o);
    if (slot.size() == 1) {
      return encoder->encode_delta(tensor_region(manifest_, base, slot[0]), tensor_region(manifest_, target, slot[0]),
                                   {0, 1}, frame, stats);
    }
    return encoder->encode_bundle(regions(base, slot), regions(target, slot), {0, 1}, frame, stats);
  }

  // Every frame, on `threads` encoders (frames in flight, run_ordered).
  Status encode_all(const Bits& base, const Bits& target, int threads, Bits* wire) {
    return run_ordered(
        slots_.size(), threads, slots_.size(),
        [&](size_t i, int w) { return encode_slot(base, target, i, encoders_[w].get(), &(*wire)[i], nullptr); },
        [](size_t) { return Status::ok(); });
  }

  Status encode_with_stats(const Bits& base, const Bits& target, std::map<std::string, int>* modes) {
    for (size_t i = 0; i < slots_.size(); ++i) {
      EncodeStats stats;
      DCR_TRY(encode_slot(base, target, i, encoders_[0].get(), &wire_[i], &stats));
      ++(*modes)[std::string(value_mode_name(stats.value_mode)) + "/" + value_packing_name(stats.value_packing)];
      position_bytes_ += stats.position_bytes;
      value_bytes_ += stats.value_bytes;
    }
    return Status::ok();
  }

  std::vector<Region> regions(const Bits& bits, const Slot& slot) const {
    std::vector<Region> out;
    for (const Box& box : slot) out.push_back(tensor_region(manifest_, bits, box));
    return out;
  }

  // Work that runs from the core's own caches: XXH3 of 64 KiB, 512 times (about 1 ms, so that an
  // interrupt does not count for much). Where another tenant shares the core (a VM's vCPU, an SMT
  // sibling) its time swings while memcpy's barely does, and the ratios of encode and apply to
  // memcpy swing with it.
  void cpu_probe() {
    probe_.resize(64 << 10, 1);
    for (int k = 0; k < 512; ++k) {
      probe_[0] = static_cast<uint8_t>(k);
      hash_sink_ += hash64(probe_.data(), probe_.size());
    }
  }

  // The XXH3 hashes of every frame's base and target bits, which each delta frame's header carries:
  // encode cannot read less than this.
  uint64_t hash_frames(const Bits& base, const Bits& target) const {
    uint64_t sum = 0;
    for (const Slot& slot : slots_) {
      for (const Box& box : slot) {
        sum += region_hash(tensor_region(manifest_, base, box)) ^ region_hash(tensor_region(manifest_, target, box));
      }
    }
    return sum;
  }

  void record_wire(const std::map<std::string, int>& modes, CodecBenchRecord* r) const {
    r->wire_bytes = 0;
    for (const auto& frame : wire_) r->wire_bytes += frame.size();
    r->header_bytes = wire_.size() * kFrameHeaderBytes;
    r->position_bytes = position_bytes_;
    r->value_bytes = value_bytes_;
    r->choices.clear();
    for (const auto& m : modes) r->choices += (r->choices.empty() ? "" : " ") + m.first + ":" + std::to_string(m.second);
  }

  Status apply_once(Bits* dst) {
    for (size_t i = 0; i < slots_.size(); ++i) {
      ApplyOutcome outcome;
      if (slots_[i].size() == 1) {
        DCR_TRY(decoder_.apply(wire_[i].data(), wire_[i].size(), tensor_region(manifest_, *dst, slots_[i][0]), 0,
                               &outcome));
      } else {
        DCR_TRY(decoder_.apply_bundle(wire_[i].data(), wire_[i].size(), regions(*dst, slots_[i]), 0, &outcome));
      }
    }
    return Status::ok();
  }

  // Reads a buffer larger than any last-level cache here, so what was touched before is gone.
  void evict_caches() {
    constexpr size_t kBytes = size_t{128} << 20;
    if (evict_.size() != kBytes) evict_.assign(kBytes, 1);
    uint64_t sum = 0;
    for (size_t i = 0; i < kBytes; i += 64) sum += evict_[i];
    evict_sink_ += sum;
  }

  // A plain copy of every tensor; on several threads, each copies an equal run of the model's bytes.
  static void copy_bits(const Bits& from, Bits* to, int threads) {
    to->resize(from.size());
    uint64_t total = 0;
    for (size_t t = 0; t < from.size(); ++t) {
      (*to)[t].resize(from[t].size());
      total += from[t].size();
    }
    auto copy_run = [&](uint64_t lo, uint64_t hi) {  // model bytes [lo, hi)
      uint64_t at = 0;
      for (size_t t = 0; t < from.size() && at < hi; at += from[t].size(), ++t) {
        const uint64_t begin = std::max(lo, at), end = std::min(hi, at + from[t].size());
        if (begin < end) std::memcpy((*to)[t].data() + (begin - at), from[t].data() + (begin - at), end - begin);
      }
    };
    std::vector<std::thread> helpers;
    for (int k = 1; k < threads; ++k) helpers.emplace_back(copy_run, total * k / threads, total * (k + 1) / threads);
    copy_run(0, total / std::max(threads, 1));
    for (std::thread& h : helpers) h.join();
  }

  void analyse(const Bits& base, const Bits& target, CodecBenchRecord* r) {
    EntropyBound bound;
    ReferenceEncodings reference;
    r->nemo_style_bytes = r->pulse_style_bytes = 0;
    for (const Slot& slot : slots_) {
      for (const Box& box : slot) analyse_box(box, base, target, &bound, &reference, r);
    }
    r->elements = bound.elements();
    r->changed = bound.changed();
    r->change_rate = static_cast<double>(r->changed) / r->elements;
    r->entropy_bound_bytes = bound.xor_bound_bytes();
    r->entropy_bound_delta_bytes = bound.delta_bound_bytes();
    r->entropy_bound_exponent_bytes = bound.exponent_bound_bytes();
  }

  void analyse_box(const Box& box, const Bits& base, const Bits& target, EntropyBound* bound,
                   ReferenceEncodings* reference, CodecBenchRecord* r) {
    std::vector<uint32_t> positions(box.elements() + kScanSlack);
    std::vector<uint8_t> base_copy, target_copy;
    const Region br = tensor_region(manifest_, base, box), tr = tensor_region(manifest_, target, box);
    const uint8_t* b = dense_bytes(br, &base_copy);
    const uint8_t* t = dense_bytes(tr, &target_copy);
    const unsigned w = br.width;
    const uint64_t k = scan_changes(b, t, box.elements(), w, positions.data());
    const DType dtype = manifest_.tensors[box.tensor].dtype;
    bound->add(b, t, w, box.elements(), positions.data(), k, dtype_is_float(dtype), exponent_shift(dtype));
    r->nemo_style_bytes += reference->nemo_style_bytes(b, t, w, positions.data(), k);
    r->pulse_style_bytes += reference->pulse_style_bytes(t, w, positions.data(), k);
    if (groups_.empty()) return;
    GroupCount& g = r->groups[groups_[box.tensor]];
    g.elements += box.elements();
    g.changed += k;
  }

  const Manifest& manifest_;
  const CodecBenchOptions& options_;
  std::vector<std::string> groups_;
  std::vector<Slot> slots_;
  Bits wire_;
  uint64_t position_bytes_ = 0, value_bytes_ = 0;  // of the wire, by section
  std::vector<std::unique_ptr<FrameEncoder>> encoders_;  // one per encode thread
  Bits threaded_wire_;  // the frames the threaded encode wrote: the same bytes as wire_
  FrameDecoder decoder_;
  std::vector<uint8_t> evict_;
  std::vector<uint8_t> probe_;
  volatile uint64_t evict_sink_ = 0;
  volatile uint64_t hash_sink_ = 0;
};

Status load_pool(const CodecBenchOptions& options, RealWeights* pool, std::string* described) {
  if (options.weights == "none") {
    *described = "seeded (no real weights asked for)";
    return Status::ok();
  }
  const std::string package = options.weights == "auto" ? "esrgan-medium" : options.weights;
  std::string model_json;
  const Status found = find_real_weights(package, &model_json);
  if (!found.is_ok()) {
    if (options.weights != "auto") return found;
    DCR_LOG(warn, "bench", "%s; using seeded master weights", found.message().c_str());
    *described = "seeded (real weights not fetched)";
    return Status::ok();
  }
  DCR_TRY(load_tfjs_weights(model_json, pool));
  *described = package + " (real f32 values, " + std::to_string(pool->values.size()) + " of them, tiled over the preset)";
  return Status::ok();
}

Status load_checkpoint_bits(const std::string& dir, Manifest* manifest, Bits* bits, nlohmann::json* config = nullptr) {
  std::unique_ptr<HfCheckpoint> checkpoint;
  DCR_TRY(HfCheckpoint::open(dir, &checkpoint));
  *manifest = checkpoint->manifest();
  if (config) *config = checkpoint->config();
  bits->resize(manifest->tensors.size());
  for (uint32_t t = 0; t < manifest->tensors.size(); ++t) {
    const uint8_t* bytes = checkpoint->tensor(t);
    (*bits)[t].assign(bytes, bytes + manifest->tensors[t].nbytes());
  }
  return Status::ok();
}

std::string base_name(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

// The served form of a checkpoint (serve_quant.h): its manifest, where each tensor comes from, and
// the bits of every served tensor.
class ServedCheckpoints {
 public:
  Status open(const Manifest& model, const nlohmann::json& config, ServeQuant quant) {
    model_ = model;
    ModelRules rules;
    DCR_TRY(rules_for_model("", config, model_, &rules));
    return serve_model(model_, rules, quant, &served_);
  }
  const Manifest& manifest() const { return served_.manifest; }
  std::vector<std::string> groups() const {
    std::vector<std::string> labels;
    for (const ServedTensor& t : served_.tensors) {
      labels.push_back(t.from == ServedFrom::fp8 ? "fp8" : t.from == ServedFrom::scales ? "scales" : "as is");
    }
    return labels;
  }
  Status bits(const Bits& model_bits, Bits* out) const {
    return served_tensors(served_.manifest,
                          served_bytes(model_, served_.manifest, served_.tensors,
                                       [&model_bits](uint32_t id) { return model_bits[id].data(); }),
                          out);
  }

 private:
  Manifest model_;
  ServedModel served_;
};

// Each pair of consecutive checkpoints is a case: the first's bits are the base, the second's the
// target. With --serve-quant, each pair is also a case in its served form, after the checkpoint's.
Status run_checkpoint_cases(const CodecBenchOptions& options, CodecBenchReport* report) {
  std::vector<std::string> dirs;
  DCR_TRY(list_checkpoints(options.checkpoints, &dirs));
  DCR_REQUIRE(dirs.size() >= 2, Code::invalid_argument,
              "--checkpoints '" + options.checkpoints + "' matches " + std::to_string(dirs.size()) +
                  " checkpoint; a delta needs two");
  ServeQuant quant = ServeQuant::none;
  DCR_TRY(parse_serve_quant(options.serve_quant, &quant).with_context("--serve-quant"));
  Manifest manifest, next_manifest;
  Bits base, target, served_base, served_target;
  nlohmann::json config;
  DCR_TRY(load_checkpoint_bits(dirs[0], &manifest, &base, &config));
  ServedCheckpoints served;
  if (quant != ServeQuant::none) {
    DCR_TRY(served.open(manifest, config, quant).with_context(dirs[0]));
    DCR_TRY(served.bits(base, &served_base).with_context(dirs[0]));
  }
  report->model = options.checkpoints;
  report->weights = "real checkpoints (" + std::to_string(dirs.size()) + " of them)";
  report->frame_elements = options.frame_elements;
  CaseRunner runner(manifest, options);
  std::unique_ptr<CaseRunner> served_runner;
  if (quant != ServeQuant::none) served_runner = std::make_unique<CaseRunner>(served.manifest(), options, served.groups());
  for (size_t i = 1; i < dirs.size(); ++i) {
    const auto start = Clock::now();
    DCR_TRY(load_checkpoint_bits(dirs[i], &next_manifest, &target));
    const std::string difference = manifest_difference(manifest, next_manifest);
    DCR_REQUIRE(difference.empty(), Code::invalid_argument,
                dirs[i] + " is not the same model as " + dirs[0] + ": " + difference);
    CodecBenchRecord record;
    const std::string name = base_name(dirs[i - 1]) + ">" + base_name(dirs[i]);
    DCR_TRY(runner.run(name, base, target, &record));
    report->records.push_back(record);
    if (served_runner) {
      CodecBenchRecord quantized;
      DCR_TRY(served.bits(target, &served_target).with_context(dirs[i]));
      DCR_TRY(served_runner->run(name + " " + serve_quant_name(quant), served_base, served_target, &quantized));
      quantized.checkpoint_wire_bytes = record.wire_bytes;
      report->records.push_back(quantized);
      served_base.swap(served_target);
    }
    DCR_LOG(info, "bench", "%-12s done in %.1f s", name.c_str(), seconds_since(start));
    base.swap(target);
  }
  return Status::ok();
}

}  // namespace

Status run_codec_bench(const CodecBenchOptions& options, CodecBenchReport* report) {
  DCR_REQUIRE(options.frame_elements > 0 && options.frame_elements <= kMaxFrameElements, Code::invalid_argument,
              "--frame-elements must be in [1, 2^32-1]");
  DCR_REQUIRE(options.repetitions >= 1, Code::invalid_argument, "--reps must be at least 1");
  DCR_REQUIRE(options.encode_threads >= 1 && options.encode_threads <= 64, Code::invalid_argument,
              "--encode-threads must be in [1, 64]");
  DCR_REQUIRE(options.serve_quant == "none" || !options.checkpoints.empty(), Code::invalid_argument,
              "--serve-quant " + options.serve_quant + " benches real checkpoints in their served form: give --checkpoints");
  if (!options.checkpoints.empty()) return run_checkpoint_cases(options, report);
  Manifest manifest;
  DCR_TRY(make_preset(options.model, &manifest));
  RealWeights pool;
  DCR_TRY(load_pool(options, &pool, &report->weights));
  report->model = options.model;
  report->frame_elements = options.frame_elements;

  ChangeModelOptions model_options;
  model_options.seed = options.seed;
  model_options.pool = pool.values.empty() ? nullptr : &pool;
  std::unique_ptr<ChangeModel> model;
  DCR_TRY(ChangeModel::create(manifest, model_options, &model));
  CaseRunner runner(manifest, options);

  struct Case {
    std::string name;
    double fraction;
    bool uniform;
  };
  std::vector<Case> cases;
  for (double rate : options.rates) cases.push_back({"adam " + std::to_string(rate).substr(0, 4) + "%", rate / 100, false});
  if (options.dense) cases.push_back({"dense step", 0.9, false});
  if (options.uniform) {
    for (double rate : {3.0, 5.0}) cases.push_back({"uniform " + std::to_string(int(rate)) + "%", rate / 100, true});
  }
  for (const Case& c : cases) {
    DCR_REQUIRE(c.fraction > 0 && c.fraction < 1, Code::invalid_argument, "change rates must lie in (0, 100) percent");
  }
  for (const Case& c : cases) {
    const auto start = Clock::now();
    const Bits base = model->snapshot();
    if (c.uniform) {
      DCR_TRY(model->inject_uniform(c.fraction));
    } else {
      DCR_TRY(model->step(model->tune_lr(c.fraction)));
    }
    CodecBenchRecord record;
    DCR_TRY(runner.run(c.name, base, model->snapshot(), &record));
    DCR_LOG(info, "bench", "%-12s done in %.1f s", c.name.c_str(), seconds_since(start));
    report->records.push_back(record);
  }
  return Status::ok();
}

namespace {

// Above this spread of memcpy times (of cpu_probe times) the machine (the core) was not quiet
// enough to trust a single figure.
constexpr double kMemcpyVariationWarning = 0.2;
constexpr double kCpuVariationWarning = 0.2;

std::string spread_text(const Spread& s) {
  char text[48];
  std::snprintf(text, sizeof text, "%.2f [%.2f-%.2f]", s.median, s.min, s.max);
  return text;
}

// The width of the case column: the longest case name (at least 12).
int name_width(const CodecBenchReport& report) {
  size_t width = 12;
  for (const CodecBenchRecord& r : report.records) width = std::max(width, r.name.size());
  return static_cast<int>(width);
}

void print_bytes_table(const CodecBenchReport& report) {
  const int w = name_width(report);
  std::printf("%-*s %7s %10s %7s %10s %6s %9s %9s %6s %10s %6s %10s %6s %s\n", w, "case", "changed", "wire MB", "B/chg",
              "bound MB", "ratio", "ulp MB", "exp MB", "w/exp", "nemo MB", "x", "pulse MB", "x", "bitexact");
  for (const CodecBenchRecord& r : report.records) {
    std::printf("%-*s %6.2f%% %10.3f %7.3f %10.3f %6.3f %9.3f %9.3f %6.3f %10.3f %6.2f %10.3f %6.2f %s\n", w,
                r.name.c_str(), 100 * r.change_rate, r.wire_bytes / 1e6,
                r.changed ? double(r.wire_bytes) / r.changed : 0.0, r.entropy_bound_bytes / 1e6,
                r.wire_bytes / r.entropy_bound_bytes, r.entropy_bound_delta_bytes / 1e6,
                r.entropy_bound_exponent_bytes / 1e6, r.wire_bytes / r.entropy_bound_exponent_bytes,
                r.nemo_style_bytes / 1e6, double(r.nemo_style_bytes) / r.wire_bytes, r.pulse_style_bytes / 1e6,
                double(r.pulse_style_bytes) / r.wire_bytes, r.bitexact ? "yes" : "NO");
  }
  for (const CodecBenchRecord& r : report.records) {
    std::printf("%-*s wire: headers %.1f%%, positions %.1f%%, values %.1f%% (%.2f bits a change); frames %s\n",
                w, r.name.c_str(), 100.0 * r.header_bytes / r.wire_bytes, 100.0 * r.position_bytes / r.wire_bytes,
                100.0 * r.value_bytes / r.wire_bytes, r.changed ? 8.0 * r.value_bytes / r.changed : 0.0,
                r.choices.c_str());
  }
}

// Served (quantized) cases: what changed of each group, and the wire against the checkpoint's own
// delta of the same pair and against the whole served model (a full refit).
void print_served_table(const CodecBenchReport& report) {
  bool any = false;
  for (const CodecBenchRecord& r : report.records) any = any || !r.groups.empty();
  if (!any) return;
  const int w = name_width(report);
  std::printf("\n%-*s %8s %9s %8s %10s %12s %8s %12s %9s\n", w, "served case", "fp8 chg", "scale chg", "as-is chg",
              "wire MB", "ckpt wire MB", "x ckpt", "full MB", "of full");
  const auto percent = [](const CodecBenchRecord& r, const char* group) {
    const auto it = r.groups.find(group);
    return it == r.groups.end() || it->second.elements == 0 ? 0.0 : 100.0 * it->second.changed / it->second.elements;
  };
  for (const CodecBenchRecord& r : report.records) {
    if (r.groups.empty()) continue;
    std::printf("%-*s %7.3f%% %8.3f%% %7.3f%% %10.4f %12.4f %8.3f %12.3f %8.3f%%\n", w, r.name.c_str(), percent(r, "fp8"),
                percent(r, "scales"), percent(r, "as is"), r.wire_bytes / 1e6, r.checkpoint_wire_bytes / 1e6,
                double(r.wire_bytes) / r.checkpoint_wire_bytes, r.model_bytes / 1e6, 100.0 * r.wire_bytes / r.model_bytes);
  }
  std::printf("chg: changed elements of the served model's E4M3 bytes, block scales and tensors served as they are;\n"
              "x ckpt = wire / the checkpoint's own delta of the same pair; of full = wire / the whole served model.\n");
}

void print_speed_table(const CodecBenchReport& report) {
  const int w = name_width(report);
  const int threads = report.records.empty() ? 1 : report.records[0].encode_threads;
  std::printf("\n%-*s %8s %8s %8s %8s %-18s %-18s %6s", w, "case", "enc GB/s", "app GB/s", "cpy GB/s", "hsh GB/s",
              "enc/cpy", "app/cpy", "enc/h");
  if (threads > 1) {
    std::printf(" %8s %8s %-18s %-18s", ("enc" + std::to_string(threads) + " GB/s").c_str(),
                ("cpy" + std::to_string(threads) + " GB/s").c_str(), ("enc" + std::to_string(threads) + "/cpy").c_str(),
                ("enc" + std::to_string(threads) + "/cpy" + std::to_string(threads)).c_str());
  }
  std::printf("\n");
  for (const CodecBenchRecord& r : report.records) {
    std::printf("%-*s %8.2f %8.2f %8.2f %8.2f %-18s %-18s %6.2f", w, r.name.c_str(), r.encode_gbps, r.apply_gbps,
                r.memcpy_gbps, r.hash_gbps, spread_text(r.encode_ratio).c_str(), spread_text(r.apply_ratio).c_str(),
                r.encode_gbps / r.hash_gbps);
    if (threads > 1) {
      std::printf(" %8.2f %8.2f %-18s %-18s", r.threaded_encode_gbps, r.threaded_memcpy_gbps,
                  spread_text(r.threaded_encode_ratio).c_str(),
                  spread_text(r.threaded_encode_to_threaded_memcpy).c_str());
    }
    std::printf("\n");
  }
  for (const CodecBenchRecord& r : report.records) {
    if (r.memcpy_variation > kMemcpyVariationWarning) {
      std::printf("%-*s warning: memcpy varied %.0f%% across repetitions; the machine is not quiet, so read its "
                  "ratios with care\n", w, r.name.c_str(), 100 * r.memcpy_variation);
    }
    if (r.cpu_variation > kCpuVariationWarning) {
      std::printf("%-*s warning: this core's speed varied %.0f%% across repetitions (an in-cache hash timed in "
                  "each): something else runs on it, and encode and apply over memcpy swing with it\n",
                  w, r.name.c_str(), 100 * r.cpu_variation);
    }
  }
}

}  // namespace

void print_codec_bench(const CodecBenchReport& report) {
  std::printf("model %s, master weights: %s, frames of up to %llu elements\n", report.model.c_str(),
              report.weights.c_str(), static_cast<unsigned long long>(report.frame_elements));
  print_bytes_table(report);
  print_served_table(report);
  print_speed_table(report);
  std::printf("bound: positions H(p) bits per element + values at the empirical entropy of their XOR masks;\n"
              "ulp: the same with ordered (ulp) deltas; exp: ulp deltas given the base value's exponent; w/exp = wire / exp;\n"
              "ratio = wire / bound; x = reference bytes / dcr bytes;\n"
              "GB/s = model bytes per second, one thread, median over repetitions; enc/cpy, app/cpy: each\n"
              "repetition's encode (apply) speed over the memcpy timed just before it, median [min-max];\n"
              "hsh = XXH3 of each frame's base and target bits (the header's two hashes: what encode must read).\n");
  if (!report.records.empty() && report.records[0].encode_threads > 1) {
    std::printf("encN: encode on N threads (frames in flight); cpyN: memcpy split over N threads; encN/cpy against\n"
                "one thread's memcpy timed beside it; encN/cpyN against the N-thread memcpy.\n");
  }
}

namespace {

nlohmann::json spread_json(const Spread& s) { return {{"median", s.median}, {"min", s.min}, {"max", s.max}}; }

}  // namespace

Status write_codec_bench_json(const CodecBenchReport& report, const std::string& path) {
  nlohmann::json records = nlohmann::json::array();
  for (const CodecBenchRecord& r : report.records) {
    records.push_back({{"case", r.name}, {"change_rate", r.change_rate}, {"changed_elements", r.changed},
                       {"elements", r.elements}, {"model_bytes", r.model_bytes}, {"frames", r.frames},
                       {"wire_bytes", r.wire_bytes}, {"entropy_bound_bytes", r.entropy_bound_bytes},
                       {"entropy_bound_delta_bytes", r.entropy_bound_delta_bytes},
                       {"entropy_bound_exponent_bytes", r.entropy_bound_exponent_bytes},
                       {"ratio_to_exponent_bound", r.wire_bytes / r.entropy_bound_exponent_bytes},
                       {"ratio_to_bound", r.wire_bytes / r.entropy_bound_bytes},
                       {"bytes_per_changed_element", r.changed ? double(r.wire_bytes) / r.changed : 0.0},
                       {"nemo_style_bytes", r.nemo_style_bytes}, {"pulse_style_bytes", r.pulse_style_bytes},
                       {"encode_gbps", r.encode_gbps}, {"apply_gbps", r.apply_gbps},
                       {"memcpy_gbps", r.memcpy_gbps}, {"hash_gbps", r.hash_gbps}, {"bitexact", r.bitexact},
                       {"header_bytes", r.header_bytes}, {"position_bytes", r.position_bytes},
                       {"value_bytes", r.value_bytes}, {"value_modes", r.choices},
                       {"encode_to_memcpy", spread_json(r.encode_ratio)},
                       {"apply_to_memcpy", spread_json(r.apply_ratio)}, {"memcpy_variation", r.memcpy_variation},
                       {"cpu_variation", r.cpu_variation},
                       {"encode_threads", r.encode_threads}});
    if (!r.groups.empty()) {
      nlohmann::json groups = nlohmann::json::object();
      for (const auto& [label, g] : r.groups) groups[label] = {{"elements", g.elements}, {"changed", g.changed}};
      records.back().update({{"groups", groups}, {"checkpoint_wire_bytes", r.checkpoint_wire_bytes}});
    }
    if (r.encode_threads > 1) {
      records.back().update({{"threaded_encode_gbps", r.threaded_encode_gbps},
                             {"threaded_memcpy_gbps", r.threaded_memcpy_gbps},
                             {"threaded_encode_to_memcpy", spread_json(r.threaded_encode_ratio)},
                             {"threaded_encode_to_threaded_memcpy", spread_json(r.threaded_encode_to_threaded_memcpy)}});
    }
  }
  const nlohmann::json doc = {{"benchmark", "codec"}, {"model", report.model}, {"weights", report.weights},
                              {"frame_elements", report.frame_elements}, {"records", records}};
  std::ofstream out(path);
  DCR_REQUIRE(out.good(), Code::io_error, "cannot write benchmark results to '" + path + "'");
  out << doc.dump(2) << "\n";
  DCR_REQUIRE(out.good(), Code::io_error, "writing '" + path + "' failed");
  return Status::ok();
}

}  // namespace dcr
