// One refit step as each role runs it. Trainers encode their frames and stream them to the root
// relay while still encoding (a bounded window of frames in flight); relays forward every frame,
// undecoded, to the children whose subtree needs it; rollouts place each frame into their serving
// layout and apply it in place with the codec's safe apply.
#pragma once

#include <atomic>
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
// forwarded half its frames, a rollout has staged half its frames (--apply staged), a rollout has
// applied half its frames (as they stream in, or inside the pause), a rank is about to learn the
// commit decision (after its vote).
enum class Phase { encode, stream, stage, apply, commit };
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
  uint64_t scanned_bytes = 0;  // bytes of its shard a trainer compared (its frames' boxes)
  uint64_t scanned_most = 0;   // reduced (src/job): the largest scanned_bytes of any trainer
  double encode_s = 0;      // trainer: waiting for its encoders (all of the encoding, with one)
  double send_s = 0;        // trainer: waiting for the window and the last sends
  double forward_s = 0;     // relay: receive + forward
  double apply_s = 0;       // rollout: apply
  double wait_s = 0;        // relay/rollout: waiting for the next frame
  uint64_t sent = 0;        // follower root relay: frames read from the store; reduced: the frames trainers sent
  uint64_t context_frames = 0;   // trainer: frames sent with value packing contexts
  uint64_t declined_frames = 0;  // trainer: frames --contexts auto kept in the faster coding
  double commit_s = 0;           // from the vote to the decision (this rank's; not reduced)
  // Rollouts: the frame bytes received, and under --apply staged the bytes held until the pause
  // (in memory and spilled to the state directory); the seconds from the step's start to the
  // whole job holding the version (staging) and from the pause's start to this rollout learning
  // the decision (pause: under --apply stream the whole step, as serving stops for all of it).
  // Trainers and relays count none of them (a trainer's baseline promotion after the decision is
  // not a pause of serving).
  uint64_t received_bytes = 0, staged_memory = 0, staged_spilled = 0;
  double stage_s = 0, pause_s = 0;
};

class ContextRule;
class FrameStage;

// What this rank's running step has done so far, readable from another thread (a progress meter):
// the stage the step is in, and the frames this rank moved in it (sent, forwarded, received or
// applied) of those it expects in that stage, with their bytes.
enum class StepStage { idle, sending, staging, applying, committing };
const char* step_stage_name(StepStage stage);
struct StepProgress {
  std::atomic<StepStage> stage{StepStage::idle};
  std::atomic<uint64_t> frames{0}, expected{0}, bytes{0};
  void enter(StepStage s, uint64_t expected_frames) {
    frames = 0, bytes = 0, expected = expected_frames, stage = s;
  }
  void moved(uint64_t frame_bytes) { bytes += frame_bytes, frames += 1; }
};

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
  StepProgress* progress = nullptr;       // counted per frame where given
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
// base every delta must name); `full` frames apply over anything. With `stage` (--apply staged)
// each frame is checked as far as it can be without applying it (check_staged) and held there
// instead; `shard` is not touched. Keeps receiving after a failed frame, so the sender side is
// drained, and returns the first error.
Status rollout_step(const RefitPlan& plan, const Link& link, int rollout, Versions versions, bool full, Shard* shard,
                    FrameDecoder* decoder, StepStats* stats, FrameStage* stage = nullptr);

// What a rollout checks of a frame it stages: its payload, its versions (this step's target; a
// delta on the committed base) and that each box it carries lies in `shard`.
Status check_staged(FrameView* frame, Versions versions, bool full, Shard* shard, FrameDecoder* decoder);

// The pause of --apply staged: applies every frame held in `stage` into `shard` (each viewed and
// checked again: the spill file is read back), on one thread per decoder (frames are disjoint
// boxes), reaching Phase::apply halfway; stops at the first error.
Status apply_staged(FrameStage* stage, const Link& link, Versions versions, bool full, Shard* shard,
                    const std::vector<FrameDecoder*>& decoders, StepStats* stats);

}  // namespace dcr
