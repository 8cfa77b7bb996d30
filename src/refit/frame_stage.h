// A rollout's frames of one version, held from their arrival to the pause (--apply staged): as they
// arrived (compressed), in memory up to a bound, then appended to a spill file beside the rank's
// journal. The caller keeps a spilled frame sealed where the job seals frames (it is opened
// again, authenticated, when read back), so a spill file holds no plaintext and a file altered
// meanwhile is refused. Nothing here touches the serving buffers.
#pragma once

#include <cstdint>
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
  bool spills(uint64_t bytes) const { return spill_fd_ >= 0 || memory_bytes_ + bytes > bound_; }
  // Holds one frame. invalid_argument when it fits neither in memory nor in a spill file;
  // io_error naming the file when the spill cannot be written (a full disk).
  Status add(std::vector<uint8_t> frame);
  // Frame i in arrival order: the one held in memory, or read back from the spill file into
  // *scratch; *frame points at it. Several threads may get distinct frames at once.
  Status get(size_t i, std::vector<uint8_t>* scratch, std::vector<uint8_t>** frame);
  // Frees the memory and removes the spill file.
  void clear();

  uint64_t frames() const { return held_.size() + spilled_.size(); }
  bool spilled(size_t i) const { return i >= held_.size(); }
  uint64_t memory_bytes() const { return memory_bytes_; }            // frame bytes held in memory
  uint64_t spilled_bytes() const { return spilled_bytes_; }          // and in the spill file

 private:
  struct Spilled {
    uint64_t offset, size;
  };

  uint64_t bound_ = 0;
  std::string spill_path_;
  std::vector<std::vector<uint8_t>> held_;  // the first frames, in memory
  std::vector<Spilled> spilled_;            // the rest, where they lie in the spill file
  int spill_fd_ = -1;
  uint64_t memory_bytes_ = 0, spilled_bytes_ = 0;
};

}  // namespace dcr
