// Progress of a long version on world rank 0 (a trainer, a publisher's trainer or a follower's
// root relay: never a rollout): while a step runs longer than --progress-s, a thread samples this
// rank's step counters (StepProgress: the phase, frames and bytes it moved)
// every --progress-s and hands the caller an event: the phase, frames and bytes done of the
// total, the rate and an estimate of the time left. The last event of a step says how it ended.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "dcr/refit/roles.h"

namespace dcr {

struct ProgressEvent {
  uint64_t version = 0;
  std::string phase;            // sending, staging, applying, committing; then committed or failed
  uint64_t frames = 0, frames_total = 0;  // this rank's frames of the version's pass (its share of the job)
  uint64_t bytes = 0;           // their frame bytes
  double seconds = 0;           // since the step began
  double rate_mb_s = 0;         // bytes / seconds
  double eta_s = -1;            // time left at this rate (-1: not yet known)
  double percent = 0;           // frames / frames_total (100 once committed)
  bool last = false;            // the step's end
};

class ProgressMeter {
 public:
  using Sink = std::function<void(const ProgressEvent&)>;
  // Samples `progress` every `interval_s` after the first interval_s of the step (nothing for a
  // step that ends sooner) until stop(); interval_s <= 0 or a null sink: nothing at all.
  ProgressMeter(const StepProgress* progress, uint64_t version, double interval_s, Sink sink);
  ~ProgressMeter();
  // Ends the sampling; where any event was given, a last one (committed: 100%, or failed).
  void stop(bool committed);

 private:
  ProgressEvent sample();
  void run();

  const StepProgress* progress_;
  uint64_t version_;
  double interval_s_;
  Sink sink_;
  std::chrono::steady_clock::time_point start_;
  bool reported_ = false;
  bool stopping_ = false;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::thread thread_;
};

}  // namespace dcr
