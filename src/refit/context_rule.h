// Internal to the refit: --contexts auto, the choice of value packing contexts by time (README,
// "The codec"). Contexts take bytes off the wire at the price of a slower encode and apply. The
// frames of a version move through a pipeline (encoders work ahead of the sends, relays forward as
// frames arrive, rollouts apply as they come), so a version takes about as long as its slowest
// stage. Bytes saved shorten the version only where the link is that stage; elsewhere contexts'
// extra encode and apply time would lengthen it. So, per frame: contexts are tried (and taken
// where smaller) when the frame's bytes at the link rate take longer than kSlowdown times the
// larger of its encode time (on this trainer's encode threads) and its share of the slowest
// rollout's apply time.
#pragma once

#include <cstdint>
#include <string>

#include "dcr/codec/encoder.h"
#include "dcr/refit/options.h"
#include "dcr/core/status.h"

namespace dcr {

class ContextRule {
 public:
  // How much slower contexts encode and apply than the faster coding, with margin: 1.3x and 1.2x
  // in `dcr bench codec` on real training deltas (README, "The codec").
  static constexpr double kSlowdown = 1.5;

  // given_gbps: the trainer's link as --link-gbps gives it (0: measure it from the sends).
  void start(ContextMode mode, double given_gbps, int encode_threads);
  // After each pass of this trainer's frames: the bytes it sent and the seconds its sends were
  // held up (by the window or the last sends): the link rate when none was given.
  void observe_sends(uint64_t bytes, double send_s);
  // After each delta version: the slowest rollout's apply seconds for the changes every trainer sent.
  void observe_apply(double apply_s, uint64_t changed, int trainers);
  // Sets the encoder's contexts switch and rule for the next frames.
  void prepare(EncodeOptions* options) const;
  bool take(const ContextQuestion& q) const;

  ContextMode mode() const { return mode_; }
  double link_gbps() const { return link_bytes_per_s_ * 8 / 1e9; }  // 0: unknown
  const char* link_source() const;  // "given", "measured" or "unknown"

 private:
  ContextMode mode_ = ContextMode::automatic;
  bool given_ = false;
  double link_bytes_per_s_ = 0;
  int encode_threads_ = 1;
  double apply_s_per_change_ = 0;  // the slowest rollout's apply time per change of one trainer
};

}  // namespace dcr
