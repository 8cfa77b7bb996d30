// One refit step as each role runs it. Trainers encode their frames and stream them to the root
// relay while still encoding (a bounded window of frames in flight); relays forward every frame,
// undecoded, to the children whose subtree needs it; rollouts place each frame into their serving
// layout and apply it in place with the codec's safe apply.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "dcr/auth/keyring.h"
#include "dcr/codec/decoder.h"
#include "dcr/codec/encoder.h"
#include "dcr/refit/plan.h"
#include "dcr/layout/shard.h"
#include "dcr/transport/transport.h"

namespace dcr {

enum class FrameKind { delta, full };

// The points a step passes on each rank: a trainer starts encoding, a trainer or relay has sent or
// forwarded half its frames, a rollout has applied half its frames, a rank is about to learn the
// commit decision (after its vote).
enum class Phase { encode, stream, apply, commit };
const char* phase_name(Phase phase);

struct Topology;

// What a caller sets on a step from outside (the `dcr refit` job's kill points, a test's injected
// failure): called at each phase point with the rank (its topology) and the step's target; an
// error there fails this rank's part of the step, as a rank that stopped would. Null: nothing.
struct StepHooks {
  std::function<Status(const Topology& rank, Phase phase, uint64_t target)> at;
};

// What one rank did in one step; reduced over the job for the step record.
struct StepStats {
  uint64_t frames = 0;
  uint64_t wire_bytes = 0;  // frame bytes a trainer sent
  uint64_t changed = 0;     // changed elements a trainer encoded
  uint64_t elements = 0;    // elements a trainer covered
  double encode_s = 0;      // trainer: waiting for its encoders (all of the encoding, with one)
  double send_s = 0;        // trainer: waiting for the window and the last sends
  double forward_s = 0;     // relay: receive + forward
  double apply_s = 0;       // rollout: apply
  double wait_s = 0;        // relay/rollout: waiting for the next frame
  uint64_t sent = 0;        // follower root relay: frames read from the store; reduced: the frames trainers sent
  uint64_t context_frames = 0;   // trainer: frames sent with value packing contexts
  uint64_t declined_frames = 0;  // trainer: frames --contexts auto kept in the faster coding
  double commit_s = 0;           // from the vote to the decision (this rank's; not reduced)
};

class ContextRule;

struct Link {
  Transport* transport;
  const Topology* topology;
  int window;
  double timeout_s;
  const StepHooks* hooks;            // the caller's phase points
  uint32_t channel = 0;              // this pass's frames travel on this channel (stale ones are not taken)
  const Keyring* keys = nullptr;     // with a key file: trainers seal, relays verify, rollouts open
  bool encrypt = false;              // trainers seal with AES-256-GCM rather than HMAC-SHA-256
  const ContextRule* contexts = nullptr;  // trainers: whether frames take value packing contexts
};

// Where a trainer's encoded frames go, in plan order: the root relay, or a store (--role publish).
using FrameSink = std::function<Status(SharedBytes frame)>;

// Encodes this trainer's planned frames (several encoders working ahead) and delivers each, in
// plan order, the moment it and those before it are encoded; counts them in *stats.
Status encode_frames(const RefitPlan& plan, const Link& link, int trainer, FrameKind kind, Versions versions,
                     Shard* baseline, Shard* current, const std::vector<FrameEncoder*>& encoders, StepStats* stats,
                     const FrameSink& deliver);

// Encodes this trainer's frames and sends each to the root relay (or to `sink` instead), at most
// link.window in flight. `sent`, when given, keeps every frame sent (for publishing to the spool
// after the commit).
Status trainer_step(const RefitPlan& plan, const Link& link, int trainer, FrameKind kind, Versions versions,
                    Shard* baseline, Shard* current, const std::vector<FrameEncoder*>& encoders, StepStats* stats,
                    std::vector<SharedBytes>* sent, const FrameSink& sink = nullptr);

// Frame n of a pass from somewhere other than the relay's parent: a follower job's root relay
// reads each version's frames from the store (src/refit/follow.cc).
using FrameFeed = std::function<Status(uint64_t n, Message* out)>;

// Receives the frames of a pass from the relay's parent (or from `feed`), checks each and forwards
// it to the children whose subtree needs it.
Status relay_step(const RefitPlan& plan, const Link& link, int relay, uint64_t target, StepStats* stats,
                  const FrameFeed& feed = nullptr);

// Applies an opened frame (its view: header read once; payload checked here unless a seal did) to
// `shard`: its box, or every box of a bundle.
Status apply_frame(FrameView* frame, uint64_t committed, Shard* shard, FrameDecoder* decoder, ApplyOutcome* outcome);

// Applies every frame this rollout needs into `shard`; versions.base is its committed version (the
// base every delta must name); `full` frames apply over anything. Keeps receiving after a failed apply, so the sender side is drained, and
// returns the first error.
Status rollout_step(const RefitPlan& plan, const Link& link, int rollout, Versions versions, bool full, Shard* shard,
                    FrameDecoder* decoder, StepStats* stats);

}  // namespace dcr
