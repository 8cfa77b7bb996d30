#include "src/refit/frame_stage.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "src/core/files.h"

namespace dcr {

namespace {

std::string mb(uint64_t bytes) { return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MB"; }

}  // namespace

FrameStage::~FrameStage() { clear(); }

void FrameStage::start(uint64_t memory_bytes, std::string spill_path) {
  clear();
  bound_ = memory_bytes;
  spill_path_ = std::move(spill_path);
}

Status FrameStage::add(std::vector<uint8_t> frame) {
  if (!spills(frame.capacity())) {
    memory_bytes_ += frame.capacity();  // what the frame holds of memory (an opened frame is shorter)
    held_.push_back(std::move(frame));
    return Status::ok();
  }
  DCR_REQUIRE(!spill_path_.empty(), Code::invalid_argument,
              "staging: this rollout's frames of the version exceed --stage-mb " + mb(bound_) +
                  " and there is no --state-dir to spill the rest to; the version is refused, nothing applied "
                  "(raise --stage-mb or give a --state-dir)");
  if (spill_fd_ < 0) spill_fd_ = ::open(spill_path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  DCR_REQUIRE(spill_fd_ >= 0, Code::io_error,
              "staging: creating the spill file '" + spill_path_ + "' failed: " + std::strerror(errno) +
                  "; the version is refused, nothing applied");
  DCR_TRY(files::write_all(spill_fd_, {frame.data(), frame.size()}, spill_path_)
              .with_context("staging: spilling a frame (the version is refused, nothing applied)"));
  spilled_.push_back({spilled_bytes_, frame.size()});
  spilled_bytes_ += frame.size();
  return Status::ok();
}

Status FrameStage::get(size_t i, std::vector<uint8_t>* scratch, std::vector<uint8_t>** frame) {
  if (i < held_.size()) {
    *frame = &held_[i];
    return Status::ok();
  }
  const Spilled& s = spilled_.at(i - held_.size());
  scratch->resize(s.size);
  for (uint64_t done = 0; done < s.size;) {
    const ssize_t n = ::pread(spill_fd_, scratch->data() + done, s.size - done, static_cast<off_t>(s.offset + done));
    if (n < 0 && errno == EINTR) continue;
    DCR_REQUIRE(n > 0, Code::io_error,
                "staging: reading frame " + std::to_string(i + 1) + " back from the spill file '" + spill_path_ +
                    "' failed: " + (n < 0 ? std::strerror(errno) : "it is shorter than what was written"));
    done += static_cast<uint64_t>(n);
  }
  *frame = scratch;
  return Status::ok();
}

void FrameStage::clear() {
  held_.clear();
  held_.shrink_to_fit();
  spilled_.clear();
  if (spill_fd_ >= 0) {
    ::close(spill_fd_);
    spill_fd_ = -1;
  }
  if (!spill_path_.empty()) ::unlink(spill_path_.c_str());
  memory_bytes_ = spilled_bytes_ = 0;
}

}  // namespace dcr
