// HuggingFace checkpoint directories, memory-mapped: config.json plus model.safetensors, or
// model.safetensors.index.json and the shard files it names. Opening reads only the headers; a
// tensor's bytes come from the mapping when touched, so a trainer that copies its shard reads only
// its shard's pages (no gather of the model). A trainer may save the same step again while it is
// read: reads of a file truncated under them do not crash (src/core/mapped_file.h), and
// check_unchanged() says whether what was read is what was opened.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dcr/core/status.h"
#include "dcr/core/tensor.h"

namespace dcr {

class MappedFile;

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
  // After reading tensors: io_error naming the first shard file that changed since open() (pages
  // gone under a read, or its size, mtime, ctime or inode differ): the bytes read may mix two
  // saves, or hold zeros where the file was cut short, and must not be used.
  Status check_unchanged() const;

 private:
  HfCheckpoint() = default;
  Status map_file(const std::string& name, size_t* index);  // maps a file once (names come from a set)

  std::string dir_;
  nlohmann::json config_;
  Manifest manifest_;
  std::vector<const uint8_t*> bytes_;
  std::vector<std::unique_ptr<MappedFile>> files_;
};

// Whether `dir` holds a complete checkpoint: config.json and model.safetensors.index.json (written
// last by sharded savers) or model.safetensors.
bool hf_checkpoint_complete(const std::string& dir);

// Directories matching a glob pattern (symlinks to directories count), in natural order ("step-9"
// before "step-10"). Other files that match are skipped: a watched directory holds a STOP file. A
// match that leads nowhere, a dangling symlink or a symlink loop, is refused naming it
// (invalid_argument; io_error when it cannot be looked at): dropping it would shift every later
// checkpoint's version by one. not_found when no directory matches.
Status list_checkpoints(const std::string& pattern, std::vector<std::string>* dirs);

// Natural order of names: digit runs compare as numbers.
bool natural_less(const std::string& a, const std::string& b);

// What differs between two checkpoints' manifests (tensor set, shapes, dtypes; not their order), or
// "" when they are the same model.
std::string manifest_difference(const Manifest& before, const Manifest& after);

}  // namespace dcr
