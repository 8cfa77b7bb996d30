// Internal to the refit: everything one rank holds for the job, and the operations the driver, the
// commit and the recovery share.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "dcr/codec/decoder.h"
#include "dcr/codec/encoder.h"
#include "dcr/journal/journal.h"
#include "dcr/model/change_model.h"
#include "dcr/model/real_weights.h"
#include "dcr/refit/collective.h"
#include "src/job/faults.h"
#include "dcr/refit/plan.h"
#include "src/job/refit.h"
#include "dcr/refit/roles.h"
#include "dcr/layout/shard.h"
#include "src/job/source.h"
#include "dcr/refit/topology.h"
#include "dcr/spool/frame_spool.h"
#include "dcr/transport/transport.h"
#include "src/job/config.h"
#include "src/refit/endpoint_core.h"
#include "src/job/memory_meter.h"
#include "src/job/publisher_lease.h"

namespace dcr {

// The harness's rank: the endpoint core (transport, plan, journal, commit) plus what only `dcr
// refit` has: the version source, the full-refit copy, the spool, the MPI_Bcast comparison.
struct RankState {
  RefitConfig config;                          // what `dcr refit` was told
  EndpointCore core;                           // this rank's endpoint: topology, plan, shards, step, commit
  JobWorld world;                              // the control plane, the data plane's factory, MPI for the bcast
  std::unique_ptr<Transport> own_transport;    // the data plane
  std::unique_ptr<Transport> limited;          // trainers: the emulated link to the root relay
  std::unique_ptr<Transport> faulty;           // trainer 0 under --fault: its link, with the fault applied
  KillPoint kill;                              // --fail-at: reached through the endpoint's step hooks
  std::unique_ptr<VersionSource> source;       // trainers, and rollouts that verify
  uint64_t touched = 0, peak_rss = 0;          // trainers: checkpoint bytes touched, VmHWM, at the last load
  Shard full_serving;                          // rollouts: the full-refit copy
  std::unique_ptr<FrameSpool> spool;           // with --spool-dir, or the store (--role publish | follow)
  std::shared_ptr<ObjectStore> store;          // --store, every request counted into store_counts
  std::shared_ptr<StoreCounts> store_counts;   // --store: every request this rank made to it
  MemoryMeter memory;                          // this rank's peak anonymous memory, per record
  std::unique_ptr<PublisherLease> lease;       // --role publish, trainer 0: this job is the store's publisher
  std::vector<SharedBytes> sent;               // trainers: this step's frames, published after the commit
  RefitObserver observer;                      // world rank 0: where progress lines and records go
  nlohmann::json layout;                       // --role follow: the publication's description (store LAYOUT)
  MPI_Comm bcast_comm = MPI_COMM_NULL;         // --compare-bcast: trainer 0 + rollouts
  Status step_error;                           // this rank's part of the last step, where it failed

  bool has_model() const {
    return core.topology.role == Role::trainer || (core.topology.role == Role::rollout && config.verify);
  }
  std::string snapshot_path() const;
};

// Collective. A rank that fails while setting up on its own makes every rank stop (all_ok).
Status set_up(const RefitConfig& config, const JobWorld& world, RankState* s);
// Collective: whether `mine` is ok on every rank. A failing rank prints its error with its rank
// and role; every rank then returns an error (the others name the first rank that failed), so no
// rank waits in a collective another has left.
Status all_ok(RankState* s, const Status& mine, const char* what);
void tear_down(RankState* s);

// Collective, each waiting at most collective_timeout_s (then the job aborts: wait_or_abort).
bool all_true(RankState* s, bool value);
void barrier(RankState* s);
// Collective: whether version v exists (see VersionSource::has_version); every rank agrees.
Status version_exists(RankState* s, uint64_t version, bool* exists);
// Makes the source hold `version` (where this rank has one); trainers take it as `current`: a view
// of the source's bytes where the plan serves them as they are, else computed into their own
// buffers (block FP8).
Status advance_source_to(RankState* s, uint64_t version);
// `io` whose before_vote first checks, on a trainer, that its source did not change while the
// step read it in place (advance_source_to's view); a changed checkpoint fails the vote.
StepIO source_checked(RankState* s, StepIO io, uint64_t version);
// Collective: moves every rank with a source to `version`; fails everywhere when one cannot.
Status seek_everywhere(RankState* s, uint64_t version);

// One pass of frames through the tree: trainers send `kind` frames for base -> target, relays
// forward, rollouts apply into `serving`. Returns this rank's vote.
bool transfer(RankState* s, FrameKind kind, Versions versions, Shard* serving, StepStats* stats);
// Collective: one version through this rank's endpoint (EndpointCore::run_step, the one step of
// every job), after a barrier so that its seconds time the version alone. Fills r->committed,
// seconds and commit_s; *stats: what this rank did; s->step_error: this rank's error, if any.
bool run_version(RankState* s, FrameKind kind, Versions versions, const StepIO& io, StepRecord* r, StepStats* stats);
void reduce_stats(RankState* s, const StepStats& mine, StepStats* total);
// Collective: each role's peak anonymous memory since the previous record, and its shard bytes.
void record_memory(RankState* s, StepRecord* r);
// A step's reduced statistics into its record (frames, bytes, change rate, stage times, contexts).
void record_totals(const StepStats& total, StepRecord* r);
// Whether every rollout's shard equals the model's current bits (true where nobody verifies).
bool verified(RankState* s, const Shard& shard);


// Rollouts: an HDF5 snapshot of the serving buffers at the committed version, recorded in the journal.
Status write_snapshot(RankState* s);
// Rollouts publish their serving buffers as vLLM sharded-state files (--serve-dir), then each
// replica's first rank names the version. Collective.
Status publish_serving(RankState* s, uint64_t version);
// After a resume at committed `version`: rewrites the --serve-dir files where a replica's directory
// names another version (a job that died after its commit, before or while writing them), so a
// serving engine never reads an older version than every status reports. Collective.
Status repair_serving(RankState* s, uint64_t version);
// Set-up, on each replica's first rollout: its --serve-dir replica directory can be written and
// holds no other layout's publication (and rollout 0: no replica beyond this job's).
Status check_serve_dir(const RankState& s);
// The two-job drivers (--role publish, --role follow), on a set-up rank.
Status run_publish(RankState* s, RefitReport* report);
Status run_follow(RankState* s, RefitReport* report);
// Collective, a follow job's set-up before its plan: waits for the publisher's LAYOUT (root relay;
// up to --follow-timeout), shares it, and takes the publication's options, promised layouts and
// model from it (store_layout.h: adopt_layout), so the job needs no checkpoint of its own.
Status join_publication(RankState* s);
// Collective: every rank takes world rank 0's publication id (`on_root`: its own is ignored
// elsewhere): the spool's manifests must name it, and the keys are bound to it.
Status adopt_publication(RankState* s, const std::string& on_root);
// Trainers: publish the frames of the version just committed to the spool.
Status publish_to_spool(RankState* s, Versions versions);

// Collective: the job's committed version from every rank's journal (kNoVersion: none), the highest
// any journal proves; invalid_argument naming the rank whose journal is of another model.
Status agree_on_version(RankState* s, uint64_t* version);
// Rollouts: the serving buffers at `version` from this rollout's snapshot when the journal says it
// holds `version`, or an older snapshot plus the deltas published in the spool since (at most
// --catchup-max of them); false (with a warning) when neither works.
bool restore_from_snapshot(RankState* s, uint64_t version);

// Resumes from the state directory: agrees on the committed version, rebuilds every rank's state
// at it (trainers from the model, rollouts from their snapshot or a full sync), and returns the
// next version to refit (0 when there is nothing to resume).
Status recover(RankState* s, uint64_t* next_version);

}  // namespace dcr
