// The version vocabulary of the codec and the refit. A version numbers one state of the model's
// weights, counting up from the first sync; a frame takes a box from its base version's bits to its
// target version's, and the refit commits one version after another.
//
// Both words for "not a version" below are UINT64_MAX, the one value no version takes (a trainer
// proposes versions below it). They are two names because they answer different questions, and
// neither is passed where the other is meant: the refit applies a full frame with kAnyVersion and a
// delta with its committed version, which a delta step always has. Were a kNoVersion ever passed
// to apply, it would skip the version check, no more: the frame's base hash still refuses a box that
// does not hold its base bits.
#pragma once

#include <cstdint>

namespace dcr {

// The base and target version of a frame; a full frame carries its target as both.
struct Versions {
  uint64_t base = 0, target = 0;
};

// No version: nothing committed yet (a fresh endpoint, journals that prove none), and, as the
// version trainer 0 proposes for a step, the end of the job (Trainer::close).
constexpr uint64_t kNoVersion = UINT64_MAX;

// As the base version a receiver expects (FrameDecoder::apply, apply_bundle): any base. A delta
// frame is applied on whatever version it names, guarded by its base hash alone; full frames skip
// the check whatever is passed.
constexpr uint64_t kAnyVersion = UINT64_MAX;

}  // namespace dcr
