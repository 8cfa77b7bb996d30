// A rollout's frames of one version, held from their arrival to the pause (--apply staged): as they
// arrived (compressed), in memory up to a bound, then appended to a spill file beside the rank's
// journal. The caller keeps a spilled frame sealed where the job seals frames (spilled(): it is
// opened again, authenticated, when read back), so a spill file holds no plaintext and a file
// altered meanwhile is refused. Nothing here touches the serving buffers.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "dcr/core/status.h"

namespace dcr {

class FrameStage {
 public:
  FrameStage() = default;
  FrameStage(const FrameStage&) = delete;
  FrameStage& operator=(const FrameStage&) = delete;
  ~FrameStage();

  // Empties the stage for a new version: at most `memory_bytes` held in memory, the rest spilled to
  // `spill_path` (empty: none; a version that needs more is refused).
  void start(uint64_t memory_bytes, std::string spill_path);
  // Whether a frame of `bytes` would be spilled rather than held in memory.
  bool spills(uint64_t bytes) const { return spill_ != nullptr || memory_bytes_ + bytes > bound_; }
  // Holds one frame. invalid_argument when it fits neither in memory nor in a spill file;
  // io_error naming the file when the spill cannot be written (a full disk).
  Status add(std::vector<uint8_t> frame);
  // Calls `apply` with every frame in arrival order and whether it was spilled (read back one at a
  // time); stops at the first error.
  Status for_each(const std::function<Status(std::vector<uint8_t>& frame, bool spilled)>& apply);
  // Frees the memory and removes the spill file.
  void clear();

  uint64_t frames() const { return frames_; }
  uint64_t bytes() const { return memory_bytes_ + spilled_bytes_; }  // frame bytes held
  uint64_t memory_bytes() const { return memory_bytes_; }            // of them in memory
  uint64_t spilled_bytes() const { return spilled_bytes_; }          // of them in the spill file

 private:
  Status spill(const std::vector<uint8_t>& frame);

  uint64_t bound_ = 0;
  std::string spill_path_;
  std::vector<std::vector<uint8_t>> held_;
  std::FILE* spill_ = nullptr;
  uint64_t frames_ = 0, memory_bytes_ = 0, spilled_bytes_ = 0;
};

}  // namespace dcr
