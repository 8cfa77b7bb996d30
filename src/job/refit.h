// The SPMD refit job: the first full sync, then `steps` delta refits, each committed jointly, with
// a full refit and an MPI_Bcast of the same version timed beside it.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dcr/core/status.h"
#include "dcr/refit/collective.h"
#include "dcr/refit/roles.h"
#include "dcr/transport/transport.h"
#include "src/job/config.h"
#include "src/job/progress.h"

namespace dcr {

struct StepRecord {
  uint64_t version = 0;
  uint64_t base = 0;
  std::string kind;            // "full" (first sync) or "delta"
  double change_rate = 0;      // changed fraction of all elements
  uint64_t frames = 0;          // frame hops: sends, forwards and applies over every rank
  uint64_t trainer_frames = 0;  // the frames the trainers sent (their wire_bytes)
  uint64_t wire_bytes = 0;
  // Bytes the trainers compared (their frames' boxes), all of them and the most any one did: with
  // data-parallel replicas, how evenly the work is spread (scanned_most / (scanned_bytes / trainers)).
  uint64_t scanned_bytes = 0, scanned_most = 0;
  double scan_balance = 0;  // scanned_most over the trainers' mean (1: even; 0 without trainers)
  uint64_t full_bytes = 0;     // bytes of the full refit of the same version
  double seconds = 0;
  double full_seconds = 0;
  double bcast_seconds = 0;
  bool committed = false;
  // What was compared after the commit: "model bytes" (--verify: every rollout's buffers against
  // the expected model, byte for byte) or "frame hashes" (--verify false: only each frame's base
  // and target hash, on apply). bitexact is meaningful with "model bytes" only.
  std::string checked;
  bool bitexact = false;       // committed and every rollout equals the expected model byte for byte
  bool published = false;      // --role publish: the version is complete in the store (no rollouts here)
  double encode_s = 0, send_s = 0, forward_s = 0, apply_s = 0, commit_s = 0;  // slowest rank per stage
  // --apply: how rollouts took the version. staging_s: from the step's start until every rollout
  // held it (staged; 0 streamed); pause_s: the time serving must stop, from the pause's start to the
  // commit (streamed: the whole step). Per rollout, the largest: frame bytes received, and of
  // them held in memory and spilled to the state directory until the pause.
  std::string apply;
  double staging_s = 0, pause_s = 0;
  uint64_t received_bytes = 0, staged_memory = 0, staged_spilled = 0;
  // Value packing contexts: --contexts, the frames that took them and those auto kept in the faster
  // coding, and the link rate trainer 0's rule used ("given", "measured" or "unknown": 0).
  std::string contexts;
  uint64_t context_frames = 0, declined_frames = 0;
  double link_gbps = 0;
  std::string link_source;
  // --role follow: seconds from the publisher finishing this version (its manifests' time) to this
  // job committing it; 0 elsewhere.
  double lag_s = 0;
  // Two jobs: the version's requests to the store. Publisher: every trainer's, from its start to its
  // commit; follower: the root relay's since its previous version (its polls while waiting too).
  uint64_t store_gets = 0, store_lists = 0, store_puts = 0, store_put_bytes = 0;
  // Memory: each role's largest peak of anonymous memory (RssAnon) since the previous record, and
  // the largest shard it holds (trainers: their pieces; rollouts: their serving buffers); 0 for a
  // role this job has no ranks of.
  uint64_t trainer_anon = 0, relay_anon = 0, rollout_anon = 0, trainer_shard = 0, rollout_shard = 0;
};

struct RefitReport {
  std::string summary;  // topology, model, transport
  uint64_t manifest_hash = 0;
  uint64_t model_bytes = 0;
  std::vector<StepRecord> steps;
};

// What the job tells its caller as it goes, on world rank 0 (the library itself prints nothing;
// diagnostics go through DCR_LOG): lines of progress (the job, resumes, bytes read) and each
// version's record.
struct RefitObserver {
  std::function<void(const std::string&)> note = [](const std::string&) {};
  std::function<void(const StepRecord&)> step = [](const StepRecord&) {};
  // A long version's progress (--progress; src/job/progress.h), from a thread of its own.
  std::function<void(const ProgressEvent&)> progress;
};

// The ranks of one job and how they talk: the control plane (votes, decisions, the job's
// agreement) and its data plane; MPI in `dcr refit` (mpi_world), threads and loopback queues in
// the tests.
struct JobWorld {
  Collective* control = nullptr;
  // Opens this rank's data plane (collective over the job; a publisher job opens none).
  std::function<Status(DataPlane plane, std::unique_ptr<Transport>* out)> open_data_plane;
  MPI_Comm mpi = MPI_COMM_NULL;  // the --compare-bcast comparison's communicator (null: refused)
  StepHooks hooks;               // a caller's own phase points, beside --fail-at's (tests inject failures here)
};

// The MPI world of `dcr refit` over `comm`: a control plane whose collectives each wait at most
// 2 x --timeout + 30 s (then the job aborts, naming what hung), UCX or MPI for data.
struct MpiWorld {
  MpiWorld(const RefitConfig& config, MPI_Comm comm);
  std::unique_ptr<Collective> control;
  JobWorld world;
};

// Runs the job on `world` (collective). Rank 0 fills `report`. Fails if any step did not commit.
Status run_refit(const RefitConfig& config, const JobWorld& world, RefitReport* report,
                 const RefitObserver& observer = {});

double speedup(const StepRecord& r);  // full_seconds / seconds (0 without a full refit)
constexpr const char* kCheckedModelBytes = "model bytes";
constexpr const char* kCheckedFrameHashes = "frame hashes";
bool compared_bytes(const StepRecord& r);  // whether r.bitexact says anything (bytes were compared)
Status write_refit_json(const RefitReport& report, const std::string& path);
Status write_refit_csv(const RefitReport& report, const std::string& path);

}  // namespace dcr
