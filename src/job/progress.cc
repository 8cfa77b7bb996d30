#include "src/job/progress.h"

namespace dcr {

ProgressMeter::ProgressMeter(const StepProgress* progress, uint64_t version, double interval_s, Sink sink)
    : progress_(progress), version_(version), interval_s_(interval_s), sink_(std::move(sink)),
      start_(std::chrono::steady_clock::now()) {
  if (interval_s_ > 0 && sink_) thread_ = std::thread([this] { run(); });
}

ProgressMeter::~ProgressMeter() { stop(false); }

ProgressEvent ProgressMeter::sample() {
  ProgressEvent e;
  e.version = version_;
  e.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const StepStage stage = progress_->stage;
  e.phase = step_stage_name(stage);
  // Counts of this rank's pass; they stay as they are while it waits for the apply and the commit.
  e.frames = progress_->frames, e.frames_total = progress_->expected, e.bytes = progress_->bytes;
  e.rate_mb_s = e.seconds > 0 ? e.bytes / 1e6 / e.seconds : 0;
  e.percent = e.frames_total ? 100.0 * e.frames / e.frames_total : 0;
  if (e.frames > 0 && e.frames_total >= e.frames) e.eta_s = e.seconds * double(e.frames_total - e.frames) / e.frames;
  return e;
}

void ProgressMeter::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto interval = std::chrono::duration<double>(interval_s_);
  for (auto next = start_ + interval; !wake_.wait_until(lock, next, [this] { return stopping_; }); next += interval) {
    sink_(sample());
    reported_ = true;
  }
}

void ProgressMeter::stop(bool committed) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (!reported_) return;
  ProgressEvent e = sample();
  e.phase = committed ? "committed" : "failed";
  if (committed) e.frames = e.frames_total, e.percent = 100, e.eta_s = 0;
  e.last = true;
  sink_(e);
}

}  // namespace dcr
