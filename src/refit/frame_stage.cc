#include "src/refit/frame_stage.h"

#include <cerrno>
#include <cstring>
#include <unistd.h>

namespace dcr {

namespace {

std::string mb(uint64_t bytes) { return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MB"; }

Status spill_failed(const std::string& path, const char* what) {
  return Status(Code::io_error, "staging: " + std::string(what) + " spill file '" + path + "' failed: " +
                                    std::strerror(errno) + "; the version is refused, nothing applied");
}

}  // namespace

FrameStage::~FrameStage() { clear(); }

void FrameStage::start(uint64_t memory_bytes, std::string spill_path) {
  clear();
  bound_ = memory_bytes;
  spill_path_ = std::move(spill_path);
}

Status FrameStage::add(std::vector<uint8_t> frame) {
  frames_ += 1;
  if (!spills(frame.capacity())) {
    memory_bytes_ += frame.capacity();  // what the frame holds of memory (an opened frame is shorter)
    held_.push_back(std::move(frame));
    return Status::ok();
  }
  DCR_REQUIRE(!spill_path_.empty(), Code::invalid_argument,
              "staging: this rollout's frames of the version exceed --stage-mb " + mb(bound_) +
                  " and there is no --state-dir to spill the rest to; the version is refused, nothing applied "
                  "(raise --stage-mb or give a --state-dir)");
  return spill(frame);
}

Status FrameStage::spill(const std::vector<uint8_t>& frame) {
  if (spill_ == nullptr) {
    spill_ = std::fopen(spill_path_.c_str(), "w+b");
    if (spill_ == nullptr) return spill_failed(spill_path_, "creating the");
  }
  const uint64_t size = frame.size();
  const bool written = std::fwrite(&size, sizeof size, 1, spill_) == 1 &&
                       (size == 0 || std::fwrite(frame.data(), 1, size, spill_) == size);
  if (!written) return spill_failed(spill_path_, "writing the");
  spilled_bytes_ += size;
  return Status::ok();
}

Status FrameStage::for_each(const std::function<Status(std::vector<uint8_t>& frame, bool spilled)>& apply) {
  for (std::vector<uint8_t>& frame : held_) DCR_TRY(apply(frame, false));
  if (spill_ == nullptr) return Status::ok();
  if (std::fflush(spill_) != 0 || std::fseek(spill_, 0, SEEK_SET) != 0) return spill_failed(spill_path_, "flushing the");
  std::vector<uint8_t> frame;
  for (uint64_t read = 0; read < spilled_bytes_;) {
    uint64_t size = 0;
    const bool whole = std::fread(&size, sizeof size, 1, spill_) == 1 && size <= spilled_bytes_ - read &&
                       (frame.resize(size), std::fread(frame.data(), 1, size, spill_) == size);
    DCR_REQUIRE(whole, Code::io_error, "staging: spill file '" + spill_path_ + "' is shorter than what was written");
    read += size;
    DCR_TRY(apply(frame, true));
  }
  return Status::ok();
}

void FrameStage::clear() {
  held_.clear();
  held_.shrink_to_fit();
  if (spill_ != nullptr) {
    std::fclose(spill_);
    spill_ = nullptr;
  }
  if (!spill_path_.empty()) ::unlink(spill_path_.c_str());
  frames_ = memory_bytes_ = spilled_bytes_ = 0;
}

}  // namespace dcr
