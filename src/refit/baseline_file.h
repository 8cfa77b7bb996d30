// Internal to the library: a trainer's baseline kept in a file-backed shared mapping
// (RefitOptions::baseline_dir) for hosts short of RAM: its pages belong to the page cache, which
// the kernel writes back and evicts, so the process holds no anonymous copy of its shard. The file
// is unlinked as soon as it is mapped: nothing is left behind, however the process ends.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dcr/core/status.h"
#include "dcr/layout/shard.h"

namespace dcr {

class BaselineFile {
 public:
  BaselineFile(const BaselineFile&) = delete;
  BaselineFile& operator=(const BaselineFile&) = delete;
  ~BaselineFile();

  // Maps a new file of the holdings' buffer bytes in `dir` (made if missing), named after `rank`,
  // and attaches `out` to it. io_error naming the file when it cannot be made, sized or mapped.
  static Status create(const std::string& dir, const std::string& rank, const Manifest& manifest,
                       const Holdings& holdings, std::unique_ptr<BaselineFile>* file, Shard* out);

 private:
  BaselineFile() = default;
  uint8_t* data_ = nullptr;
  uint64_t bytes_ = 0;
};

}  // namespace dcr
