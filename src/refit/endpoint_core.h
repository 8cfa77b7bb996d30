// Internal to the refit: what one endpoint holds whatever its role, and the protocol every role
// runs: one pass of frames through the relay tree, and the joint commit around it. The library's
// Trainer, Relay and Rollout are façades over it; the `dcr refit` harness (RankState) is built on
// it and adds the change model, the comparisons, snapshots, the spool and recovery.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "dcr/auth/keyring.h"
#include "dcr/codec/decoder.h"
#include "dcr/codec/encoder.h"
#include "dcr/journal/journal.h"
#include "src/refit/baseline_file.h"
#include "dcr/layout/shard.h"
#include "dcr/refit/collective.h"
#include "dcr/refit/commit.h"
#include "dcr/refit/options.h"
#include "dcr/refit/plan.h"
#include "dcr/refit/roles.h"
#include "dcr/refit/topology.h"
#include "src/core/file_lock.h"
#include "src/refit/context_rule.h"
#include "src/refit/frame_stage.h"
#include "dcr/transport/transport.h"

namespace dcr {

// Where one step's frames come from and go to beyond the relay tree; each part optional.
struct StepIO {
  Shard* into = nullptr;  // rollouts: where frames apply (null: the serving shard)
  FrameFeed feed;         // the root relay: frames from elsewhere (a store) instead of the trainers
  FrameSink sink;         // trainers: frames to elsewhere (a store) instead of the root relay
  // After this rank's frames moved and before it votes (a publisher's manifests, its snapshot
  // pass): an error votes no.
  std::function<Status()> before_vote;
};

class EndpointCore {
 public:
  RefitOptions config;
  Topology topology;
  RefitPlan plan;
  Transport* transport = nullptr;  // the data plane (the caller's)
  Transport* link = nullptr;       // trainers: what frames are sent on (transport, or a rate-limited view)
  Collective* control = nullptr;   // votes, decisions, versions (the caller's)
  StepHooks hooks;                 // the caller's phase points (the job's kill points, a test's failures)
  std::shared_ptr<const Keyring> keys;  // with a key file: frames are sealed, verified and opened
  std::string publication;         // two jobs joined by a store: the publication's id, which every seal binds
  std::unique_ptr<Journal> journal;  // with a state directory
  FileLock state_lock;             // with a state directory: this rank's files are this job's alone
  std::unique_ptr<BaselineFile> baseline_file;  // trainers with --baseline-dir: where `baseline` lives
  std::vector<std::unique_ptr<FrameEncoder>> encoders;  // trainers: one per encode thread
  ContextRule context_rule;        // trainers: --contexts, with what the sends and applies measured
  FrameDecoder decoder;
  std::vector<std::unique_ptr<FrameDecoder>> more_decoders;  // rollouts: --apply-threads beyond the first
  Shard baseline, current;         // trainers: the last committed shard, and the version being sent
  Shard serving;                   // rollouts: the refit target
  FrameStage stage;                // rollouts under --apply staged: the version's frames until the pause
  std::vector<SharedBytes>* keep_sent = nullptr;  // trainers: where a step's delta frames are kept (spool)
  uint64_t committed = kNoVersion;
  StepStats stats;                 // of the last step
  StepProgress progress;           // of the running step (read by a progress meter on another thread)

  // Opens the journal (state directory), reads the key file, and, for trainers, makes the
  // encoders and the baseline shard.
  Status open_state();
  // Reads the key file again (a job rotates keys between versions by appending a key to it).
  Status reload_keys();
  // The channel of the next pass of frames: every rank counts passes alike, so a failed pass's
  // stale frames are never taken by a later one.
  uint32_t next_channel();
  // One pass of `kind` frames base -> target: trainers send from `current` on `link`, relays
  // forward, rollouts apply (io.into, io.feed and io.sink redirect them); what this rank did is
  // added to *stats. Logs and returns this rank's error. No commit: a pass alone compares or repairs.
  Status transfer(FrameKind kind, Versions versions, const StepIO& io, StepStats* stats, FrameStage* stage = nullptr);
  // The joint commit of versions.target (commit.h) with this rank's journal, the commit phase point
  // and journal compaction; on commit, promotes the trainer's baseline and sets `committed`.
  // Returns the decision.
  bool commit(bool vote, Versions versions);
  // A trainer's current version becomes its baseline: the boxes it sends (with data-parallel
  // replicas, its share of the shard; the rest of its baseline is never read).
  void promote();
  // --check-replicas (collective, every rank): each trainer hashes every tensor part of its shard in
  // `current`; every rank gathers them and finds the same first part two data-parallel replicas
  // hold differently: invalid_argument naming the version, the tensor and both ranks.
  Status replicas_agree(uint64_t target);
  // Whether --check-replicas refuses this step (*moved: why); every rank answers alike.
  bool replicas_refuse(Versions versions, Status* moved);

  // One version through this rank: every step of every job runs here (the library's step below,
  // and the `dcr refit` job's one-job, publish and follow steps). Under --apply stream rollouts
  // record `begin` (a record that cannot be written votes no), the frames move and apply
  // (transfer), io.before_vote runs, this rank votes and the job commits jointly. Under --apply
  // staged (once the job has a committed version: the first one has nothing served to protect) the
  // same step runs as its two halves below, back to back. Returns the decision; *moved: this
  // rank's part (ok when its frames moved and before_vote passed). Adds to `stats`.
  bool run_step(FrameKind kind, Versions versions, const StepIO& io, Status* moved);
  // Whether this job's next step goes in two halves (every rank answers alike).
  bool staged() const { return config.apply == ApplyMode::staged && committed != kNoVersion; }
  // The first half: the frames move, rollouts stage them (serving buffers untouched),
  // io.before_vote runs, and every rank learns whether the whole job holds the version. false: the
  // step failed, nothing was applied anywhere and the stage is empty.
  bool stage_version(FrameKind kind, Versions versions, const StepIO& io, Status* moved);
  // The second half, the pause: rollouts record `begin` and apply what they staged, and the job
  // commits jointly. Returns the decision.
  bool apply_version(FrameKind kind, Versions versions, Status* moved);

  // The library's step: trainer 0 names `proposed` (kNoVersion ends the job: *closed; any step
  // after that is refused at once, without waiting for a peer), every rank
  // checks it is ready for the named version (`check`, null: ready), the frames move (as deltas from
  // the committed version, or full frames for the first version, after a resume, and when a failed
  // version is abandoned for another) and the job commits. begin_step and finish_step are its two
  // halves for a staged rollout (Rollout::stage and Rollout::apply): begin_step ends with the
  // version staged everywhere (or committed, where the step streamed), finish_step applies it.
  Status step(uint64_t proposed, const std::function<Status(uint64_t)>& check, bool* closed);
  Status begin_step(uint64_t proposed, const std::function<Status(uint64_t)>& check, bool* closed);
  Status finish_step();
  bool pending() const { return pending_; }  // a version is staged, waiting for finish_step
  uint64_t pending_target() const { return pending_versions_.target; }
  uint64_t failed = kNoVersion;  // the target of a step that did not commit since the last commit
  bool resumed = false;          // the first step after a resume goes as full frames
  bool job_closed = false;       // trainer 0 closed the job: no step follows

 private:
  // What a step leaves: `failed` and `resumed` for the next one, and the error to return.
  Status committed_step();
  Status not_committed(uint64_t target, const Status& moved);

  uint64_t passes_ = 0;
  bool pending_ = false;   // begin_step staged pending_versions_, finish_step applies them
  bool settled_ = false;   // begin_step ended the step itself (streamed and committed, or closed)
  FrameKind pending_kind_ = FrameKind::delta;
  Versions pending_versions_{};
};

}  // namespace dcr
