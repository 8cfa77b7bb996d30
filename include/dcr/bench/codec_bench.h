// The codec benchmark: for each change case (changed fractions of the realistic change model, a
// dense step, the synthetic uniform injection) it encodes every frame of the model, applies them to
// a copy of the base, and reports wire bytes against the entropy bound and two reference encodings,
// encode/apply speed beside memcpy measured in the same run, and a bit-exactness verdict.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "dcr/core/status.h"

namespace dcr {

struct CodecBenchOptions {
  std::string model = "medium";          // preset name
  std::string weights = "auto";          // auto | none | esrgan-medium | faceres-deep
  std::vector<double> rates = {0.5, 1, 3, 5};  // percent of parameter elements changed
  bool dense = true;                     // also a dense step (most values change)
  bool uniform = true;                   // also the synthetic uniform injection at 3% and 5%
  uint64_t frame_elements = 1ull << 22;
  uint64_t bundle_below = 1ull << 18;    // tensors with fewer elements share bundle frames (0: none)
  int repetitions = 3;                   // timed passes per case (GB/s: their median)
  int encode_threads = 1;                // >1: also encode on this many threads (frames in flight)
  uint64_t seed = 1;
  bool exhaustive = false;
  bool contexts = true;     // value packing contexts wherever smaller (--contexts auto with no link: slow-link choice)
  std::string checkpoints;  // a glob of HF checkpoint directories: their consecutive pairs are the cases
  // With checkpoints: "fp8-block" also benches each pair as rollouts serving block FP8 receive it
  // (layout/serve_quant.h), beside the checkpoint's own bf16 delta.
  std::string serve_quant = "none";
};

// A per-repetition ratio over the repetitions: its median and range.
struct Spread {
  double median = 0, min = 0, max = 0;
};

// Elements of one group of tensors (fp8 bytes, scales, ...) and how many of them changed.
struct GroupCount {
  uint64_t elements = 0, changed = 0;
};

struct CodecBenchRecord {
  std::string name;            // "adam 3%", "dense", "uniform 5%"
  double change_rate = 0;      // measured changed fraction of all elements
  uint64_t changed = 0;
  uint64_t elements = 0;
  uint64_t model_bytes = 0;
  uint64_t frames = 0;
  uint64_t wire_bytes = 0;
  uint64_t header_bytes = 0, position_bytes = 0, value_bytes = 0;  // the wire by part
  double entropy_bound_bytes = 0;        // N·H(p)/8 + K·H(XOR words)/8
  double entropy_bound_delta_bytes = 0;  // same with the entropy of ordered-delta (ulp) words
  double entropy_bound_exponent_bytes = 0;  // same with that entropy given the base's exponent
  uint64_t nemo_style_bytes = 0;
  uint64_t pulse_style_bytes = 0;
  double encode_gbps = 0;
  double apply_gbps = 0;
  double memcpy_gbps = 0;
  double hash_gbps = 0;  // XXH3 of every frame's base and target bits (the header's hashes)
  // Each repetition's encode (apply) speed over the memcpy timed just before it, in the same pass.
  Spread encode_ratio, apply_ratio;
  double memcpy_variation = 0;  // (slowest - fastest) / fastest over every single-thread memcpy
  double cpu_variation = 0;     // the same over an in-cache hash timed in each repetition
  // With encode_threads > 1: encode on that many threads, memcpy split over as many, and encode
  // against one thread's memcpy and against the threaded memcpy, each paired per repetition.
  int encode_threads = 1;
  double threaded_encode_gbps = 0, threaded_memcpy_gbps = 0;
  Spread threaded_encode_ratio, threaded_encode_to_threaded_memcpy;
  bool bitexact = false;
  std::string choices;  // how many frames took each value mode
  // A served (quantized) case: its elements by what they are ("fp8", "scales", "as is"), and the wire
  // bytes of the checkpoint's own delta of the same pair.
  std::map<std::string, GroupCount> groups;
  uint64_t checkpoint_wire_bytes = 0;
};

struct CodecBenchReport {
  std::string model;
  std::string weights;  // what the master weights came from
  uint64_t frame_elements = 0;
  std::vector<CodecBenchRecord> records;
};

// Runs the benchmark; progress lines go to stderr.
Status run_codec_bench(const CodecBenchOptions& options, CodecBenchReport* report);

void print_codec_bench(const CodecBenchReport& report);
Status write_codec_bench_json(const CodecBenchReport& report, const std::string& path);

}  // namespace dcr
