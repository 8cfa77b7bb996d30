// Everything `dcr refit` is told: the library's options (dcr/refit/options.h) and the
// application's own (where versions come from, the records, the two-job path, restarts), parsed
// once from the command line and an INI file (src/cli/refit_options.cc) through one table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dcr/core/option_table.h"
#include "dcr/core/status.h"
#include "src/job/faults.h"
#include "dcr/refit/options.h"

namespace dcr {

enum class DataPlane { ucx, mpi };
const char* data_plane_name(DataPlane plane);

struct RefitConfig : RefitOptions {
  std::string model = "tiny";        // preset name
  std::string init_checkpoint;       // start from this checkpoint (safetensors, HDF5 or an HF directory) instead
  std::string checkpoints;           // refit these HF checkpoints (a glob), in natural order
  std::string watch;                 // refit each new complete checkpoint appearing in this directory
  double watch_timeout_s = 600;      // --watch: give up after this long without a new checkpoint
  std::string serve_dir;             // rollouts publish vLLM sharded-state files here on each commit
  std::string weights = "none";      // master weights: none | auto | esrgan-medium | faceres-deep
  DataPlane transport = DataPlane::ucx;
  int steps = 3;                     // delta refits after the first (full) sync
  std::vector<double> rates = {1, 3, 5};  // changed percent per step, cycled
  bool compare_full = true;          // also time a full refit of every version
  bool compare_bcast = true;         // also time an MPI_Bcast of the full model
  bool verify = true;                // rollouts check their bits against the expected model
  uint64_t seed = 1;
  std::string json;                  // per-step records (JSON)
  std::string csv;                   // per-step records (CSV)
  double progress_s = 5;             // a progress line every this many seconds of a long version (0: none)
  std::string progress_json;         // progress events as JSON lines
  bool progress_inline = false;      // one progress line rewritten in place (a terminal)
  int snapshot_every = 1;            // rollout snapshot every N committed versions (0: never)
  std::string spool_dir;             // trainers publish each committed delta here (catch-up)
  int catchup_max = 16;              // longest delta chain a restarted rollout replays from the spool
  int spool_keep = 0;                // versions the spool keeps (pruned after each commit); 0: catchup_max
  // Two jobs joined by an object store (src/job/publish.cc, follow.cc): RefitOptions::role says
  // which ranks this job holds; the store joins them.
  std::string store;                 // store URL (file:///dir, s3://bucket/prefix): --role publish | follow
  int full_every = 16;               // publish: a full snapshot every N versions (and of the first)
  double follow_timeout_s = 600;     // follow: give up after this long without a new version
  double poll_s = 0.5;               // follow: how often the store is listed while waiting
  FrameFault fault;                  // test only: --fault wrong-base@V | corrupt@V | forge@V | unsealed@V
  KillPoint fail_at;                 // test only: --fail-at ROLE:INDEX:PHASE:VERSION kill -9 points

  // Versions come from real checkpoints (--checkpoints or --watch) rather than the change model.
  bool from_checkpoints() const { return !checkpoints.empty() || !watch.empty(); }
  bool has_checkpoint() const { return from_checkpoints() || !init_checkpoint.empty(); }
};

// Every option of `dcr refit`: the library's (refit_option_table) and the application's.
const std::vector<Option<RefitConfig>>& refit_config_table();

// invalid_argument naming the option for a configuration that cannot work.
Status check_refit_config(const RefitConfig& config);

}  // namespace dcr
