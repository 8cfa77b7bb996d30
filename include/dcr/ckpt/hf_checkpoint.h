// HuggingFace checkpoint directories, memory-mapped: config.json plus model.safetensors, or
// model.safetensors.index.json and the shard files it names. Opening reads only the headers; a
// tensor's bytes come from the mapping when touched, so a trainer that copies its shard reads only
// its shard's pages (no gather of the model).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dcr/core/status.h"
#include "dcr/core/tensor.h"

namespace dcr {

class HfCheckpoint {
 public:
  // invalid_argument for a malformed config.json or index, not_found for a missing file, corrupt
  // for a safetensors header that fails its checks or an index that places a tensor in a shard
  // that does not hold it; each message names the file and the tensor.
  static Status open(const std::string& dir, std::unique_ptr<HfCheckpoint>* out);
  ~HfCheckpoint();

  const std::string& dir() const { return dir_; }
  const Manifest& manifest() const { return manifest_; }
  const nlohmann::json& config() const { return config_; }
  // The tensor's bytes inside the mapping (canonical row-major, little-endian).
  const uint8_t* tensor(uint32_t id) const { return bytes_[id]; }
  // Bytes of the checkpoint's files that this process has touched (resident pages of its mappings).
  uint64_t resident_bytes() const;

 private:
  struct Mapping {
    std::string path;
    uint8_t* data = nullptr;
    uint64_t size = 0;
  };
  HfCheckpoint() = default;
  Status map_file(const std::string& name, size_t* index);  // maps a file once (names come from a set)

  std::string dir_;
  nlohmann::json config_;
  Manifest manifest_;
  std::vector<const uint8_t*> bytes_;
  std::vector<Mapping> mappings_;
};

// Whether `dir` holds a complete checkpoint: config.json and model.safetensors.index.json (written
// last by sharded savers) or model.safetensors.
bool hf_checkpoint_complete(const std::string& dir);

// Directories matching a glob pattern, in natural order ("step-9" before "step-10").
// not_found when none matches.
Status list_checkpoints(const std::string& pattern, std::vector<std::string>* dirs);

// Natural order of names: digit runs compare as numbers.
bool natural_less(const std::string& a, const std::string& b);

// What differs between two checkpoints' manifests (tensor set, shapes, dtypes; not their order), or
// "" when they are the same model.
std::string manifest_difference(const Manifest& before, const Manifest& after);

}  // namespace dcr
