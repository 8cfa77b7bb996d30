#include "dcr/bench/codec_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "dcr/bench/reference_encodings.h"
#include "dcr/codec/decoder.h"
#include "dcr/codec/encoder.h"
#include "dcr/codec/scan.h"
#include "dcr/core/hash.h"
#include "dcr/core/log.h"
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

// Frames: whole rows of a tensor, up to `frame_elements` per frame; rows longer than that are cut
// into column chunks.
std::vector<Box> cut_frames(const Manifest& manifest, uint64_t frame_elements) {
  std::vector<Box> frames;
  for (uint32_t t = 0; t < manifest.tensors.size(); ++t) {
    const uint64_t rows = tensor_rows(manifest.tensors[t]), cols = tensor_cols(manifest.tensors[t]);
    if (cols >= frame_elements) {
      for (uint64_t r = 0; r < rows; ++r) {
        for (uint64_t c = 0; c < cols; c += frame_elements) frames.push_back({t, r, 1, c, std::min(frame_elements, cols - c)});
      }
      continue;
    }
    const uint64_t rows_per_frame = frame_elements / cols;
    for (uint64_t r = 0; r < rows; r += rows_per_frame) frames.push_back({t, r, std::min(rows_per_frame, rows - r), 0, cols});
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

// Everything measured for one change case, from the same base and target bits.
class CaseRunner {
 public:
  CaseRunner(const Manifest& manifest, const CodecBenchOptions& options)
      : manifest_(manifest), options_(options), slots_(cut_frames(manifest, options.frame_elements)),
        wire_(slots_.size()) {
    EncodeOptions encode_options;
    encode_options.exhaustive = options.exhaustive;
    encoder_.set_options(encode_options);
  }

  // Encode, apply and memcpy take turns within each repetition, so a machine that speeds up or
  // slows down mid-run moves all three together; the fastest repetition of each counts. Each timed
  // pass starts with the model out of the caches (as it is for a trainer or rollout between steps).
  Status run(const std::string& name, const Bits& base, const Bits& target, CodecBenchRecord* r) {
    r->name = name;
    r->frames = slots_.size();
    r->model_bytes = manifest_.total_bytes();
    std::map<std::string, int> modes;
    DCR_TRY(encode_once(base, target, &modes));  // warm-up: buffers allocated and touched
    record_wire(modes, r);
    Bits dst, copy;
    copy_bits(base, &copy);
    double encode = 1e30, apply = 1e30, memcpy = 1e30, hash = 1e30;
    for (int rep = 0; rep < options_.repetitions; ++rep) {
      evict_caches();
      auto start = Clock::now();
      copy_bits(base, &copy);
      memcpy = std::min(memcpy, seconds_since(start));
      evict_caches();
      start = Clock::now();
      hash_sink_ += hash_frames(base, target);
      hash = std::min(hash, seconds_since(start));
      evict_caches();
      start = Clock::now();
      DCR_TRY(encode_once(base, target, nullptr));
      encode = std::min(encode, seconds_since(start));
      copy_bits(base, &dst);
      evict_caches();
      start = Clock::now();
      DCR_TRY(apply_once(&dst));
      apply = std::min(apply, seconds_since(start));
    }
    r->encode_gbps = r->model_bytes / encode / 1e9;
    r->apply_gbps = r->model_bytes / apply / 1e9;
    r->memcpy_gbps = r->model_bytes / memcpy / 1e9;
    r->hash_gbps = r->model_bytes / hash / 1e9;
    r->bitexact = true;
    for (size_t t = 0; t < dst.size(); ++t) {
      r->bitexact = r->bitexact && hash64(dst[t].data(), dst[t].size()) == hash64(target[t].data(), target[t].size()) &&
                    dst[t] == target[t];
    }
    analyse(base, target, r);
    return Status::ok();
  }

 private:
  Status encode_once(const Bits& base, const Bits& target, std::map<std::string, int>* modes) {
    for (size_t i = 0; i < slots_.size(); ++i) {
      const Box& box = slots_[i];
      EncodeOptions o = encoder_.options();
      o.sign_magnitude = dtype_is_float(manifest_.tensors[box.tensor].dtype);
      encoder_.set_options(o);
      EncodeStats stats;
      DCR_TRY(encoder_.encode_delta(tensor_region(manifest_, base, box), tensor_region(manifest_, target, box), {0, 1},
                                    &wire_[i], &stats));
      if (modes != nullptr) ++(*modes)[value_mode_name(stats.value_mode)];
    }
    return Status::ok();
  }

  // The XXH3 hashes of every frame's base and target bits, which each delta frame's header carries:
  // encode cannot read less than this.
  uint64_t hash_frames(const Bits& base, const Bits& target) const {
    uint64_t sum = 0;
    for (const Box& box : slots_) {
      sum += region_hash(tensor_region(manifest_, base, box)) ^ region_hash(tensor_region(manifest_, target, box));
    }
    return sum;
  }

  void record_wire(const std::map<std::string, int>& modes, CodecBenchRecord* r) const {
    r->wire_bytes = 0;
    for (const auto& frame : wire_) r->wire_bytes += frame.size();
    r->choices.clear();
    for (const auto& m : modes) r->choices += (r->choices.empty() ? "" : " ") + m.first + ":" + std::to_string(m.second);
  }

  Status apply_once(Bits* dst) {
    for (size_t i = 0; i < slots_.size(); ++i) {
      const uint32_t t = slots_[i].tensor;
      const TensorDesc& desc = manifest_.tensors[t];
      const Region whole = dense_region(whole_tensor(t, desc), static_cast<unsigned>(desc.width()), (*dst)[t].data());
      ApplyOutcome outcome;
      DCR_TRY(decoder_.apply(wire_[i].data(), wire_[i].size(), whole, 0, &outcome));
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

  static void copy_bits(const Bits& from, Bits* to) {
    to->resize(from.size());
    for (size_t t = 0; t < from.size(); ++t) {
      (*to)[t].resize(from[t].size());
      std::memcpy((*to)[t].data(), from[t].data(), from[t].size());
    }
  }

  void analyse(const Bits& base, const Bits& target, CodecBenchRecord* r) {
    EntropyBound bound;
    ReferenceEncodings reference;
    std::vector<uint32_t> positions(options_.frame_elements + kScanSlack);
    r->nemo_style_bytes = r->pulse_style_bytes = 0;
    std::vector<uint8_t> base_copy, target_copy;
    for (const Box& box : slots_) {
      const Region br = tensor_region(manifest_, base, box), tr = tensor_region(manifest_, target, box);
      const uint8_t* b = dense_bytes(br, &base_copy);
      const uint8_t* t = dense_bytes(tr, &target_copy);
      const unsigned w = br.width;
      const uint64_t k = scan_changes(b, t, box.elements(), w, positions.data());
      bound.add(b, t, w, box.elements(), positions.data(), k, dtype_is_float(manifest_.tensors[box.tensor].dtype));
      r->nemo_style_bytes += reference.nemo_style_bytes(b, t, w, positions.data(), k);
      r->pulse_style_bytes += reference.pulse_style_bytes(t, w, positions.data(), k);
    }
    r->elements = bound.elements();
    r->changed = bound.changed();
    r->change_rate = static_cast<double>(r->changed) / r->elements;
    r->entropy_bound_bytes = bound.xor_bound_bytes();
    r->entropy_bound_delta_bytes = bound.delta_bound_bytes();
  }

  const Manifest& manifest_;
  const CodecBenchOptions& options_;
  std::vector<Box> slots_;
  std::vector<std::vector<uint8_t>> wire_;
  FrameEncoder encoder_;
  FrameDecoder decoder_;
  std::vector<uint8_t> evict_;
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

}  // namespace

Status run_codec_bench(const CodecBenchOptions& options, CodecBenchReport* report) {
  DCR_REQUIRE(options.frame_elements > 0 && options.frame_elements <= kMaxFrameElements, Code::invalid_argument,
              "--frame-elements must be in [1, 2^32-1]");
  DCR_REQUIRE(options.repetitions >= 1, Code::invalid_argument, "--reps must be at least 1");
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

void print_codec_bench(const CodecBenchReport& report) {
  std::printf("model %s, master weights: %s, frames of up to %llu elements\n", report.model.c_str(),
              report.weights.c_str(), static_cast<unsigned long long>(report.frame_elements));
  std::printf("%-12s %7s %10s %7s %10s %6s %10s %6s %10s %6s %7s %7s %7s %7s %5s %5s %5s %s\n", "case",
              "changed", "wire MB", "B/chg", "bound MB", "ratio", "nemo MB", "x", "pulse MB", "x", "enc GB/s",
              "app GB/s", "cpy GB/s", "hsh GB/s", "enc/c", "app/c", "enc/h", "bitexact");
  for (const CodecBenchRecord& r : report.records) {
    std::printf("%-12s %6.2f%% %10.3f %7.3f %10.3f %6.3f %10.3f %6.2f %10.3f %6.2f %7.2f %7.2f %7.2f %7.2f %5.2f %5.2f "
                "%5.2f %s\n",
                r.name.c_str(), 100 * r.change_rate, r.wire_bytes / 1e6,
                r.changed ? double(r.wire_bytes) / r.changed : 0.0, r.entropy_bound_bytes / 1e6,
                r.wire_bytes / r.entropy_bound_bytes, r.nemo_style_bytes / 1e6,
                double(r.nemo_style_bytes) / r.wire_bytes, r.pulse_style_bytes / 1e6,
                double(r.pulse_style_bytes) / r.wire_bytes, r.encode_gbps, r.apply_gbps, r.memcpy_gbps, r.hash_gbps,
                r.encode_gbps / r.memcpy_gbps, r.apply_gbps / r.memcpy_gbps, r.encode_gbps / r.hash_gbps,
                r.bitexact ? "yes" : "NO");
  }
  std::printf("bound: positions H(p) bits per element + values at the empirical entropy of their XOR masks;\n"
              "ratio = wire / bound; x = reference bytes / dcr bytes; GB/s = model bytes per second, one thread;\n"
              "hsh = XXH3 of each frame's base and target bits (the header's two hashes: what encode must read).\n");
}

Status write_codec_bench_json(const CodecBenchReport& report, const std::string& path) {
  nlohmann::json records = nlohmann::json::array();
  for (const CodecBenchRecord& r : report.records) {
    records.push_back({{"case", r.name}, {"change_rate", r.change_rate}, {"changed_elements", r.changed},
                       {"elements", r.elements}, {"model_bytes", r.model_bytes}, {"frames", r.frames},
                       {"wire_bytes", r.wire_bytes}, {"entropy_bound_bytes", r.entropy_bound_bytes},
                       {"entropy_bound_delta_bytes", r.entropy_bound_delta_bytes},
                       {"ratio_to_bound", r.wire_bytes / r.entropy_bound_bytes},
                       {"bytes_per_changed_element", r.changed ? double(r.wire_bytes) / r.changed : 0.0},
                       {"nemo_style_bytes", r.nemo_style_bytes}, {"pulse_style_bytes", r.pulse_style_bytes},
                       {"encode_gbps", r.encode_gbps}, {"apply_gbps", r.apply_gbps},
                       {"memcpy_gbps", r.memcpy_gbps}, {"hash_gbps", r.hash_gbps}, {"bitexact", r.bitexact},
                       {"value_modes", r.choices}});
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
