// Real trained weights for tests and benchmarks, read from TensorFlow.js packages as npm ships them:
// a model.json whose "weightsManifest" lists groups {paths: [bin files], weights: [{name, shape,
// dtype, quantization?}]}; each group's bin files, concatenated, hold its weights back to back as raw
// little-endian values. No LLM weights are packaged on npm, so these small vision nets stand in as a
// source of realistic fp32 master values (scripts/fetch_weights.sh fetches them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dcr/core/status.h"

namespace dcr {

struct RealTensor {
  std::string name;
  std::vector<int64_t> shape;
  uint64_t offset = 0;  // first element in RealWeights::values
  uint64_t count = 0;
};

struct RealWeights {
  std::vector<RealTensor> tensors;  // float tensors, in manifest order
  std::vector<float> values;        // all of their values, in the same order
  std::vector<std::string> skipped;  // int32 graph constants (e.g. reduction axes), not weights
};

// Loads every float tensor of the package. Stored float32 values are taken as they are, float16
// ones (dtype "float16", or quantization dtype "float16") are widened exactly. int32 tensors are
// skipped and listed in `skipped`; any other stored dtype (uint8/uint16 quantization, bool, string)
// is rejected. Errors name the file: not_found for a missing file, corrupt for bad JSON, a bad
// manifest or bin files shorter than the manifest says.
Status load_tfjs_weights(const std::string& model_json_path, RealWeights* out);

// $DCR_WEIGHTS_DIR if set, else "<source dir>/.weights" (DCR_SOURCE_DIR compile definition),
// else ".weights".
std::string default_weights_dir();

// Path of a fetched package's model.json under default_weights_dir(): "esrgan-medium" (x4, f32),
// "faceres-deep" (f32) or "faceres" (the same net stored as f16). unavailable (with a hint to run
// scripts/fetch_weights.sh) when it has not been fetched; invalid_argument for an unknown package.
Status find_real_weights(const std::string& package, std::string* model_json);

}  // namespace dcr
