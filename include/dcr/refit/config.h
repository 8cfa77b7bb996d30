// Everything `dcr refit` is told (the cli fills it from an INI file and the command line).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dcr/core/status.h"

namespace dcr {

struct RefitConfig {
  std::string model = "tiny";        // preset name
  std::string init_checkpoint;       // start from this checkpoint (safetensors, HDF5 or an HF directory) instead
  std::string checkpoints;           // refit these HF checkpoints (a glob), in natural order
  std::string watch;                 // refit each new complete checkpoint appearing in this directory
  double watch_timeout_s = 600;      // --watch: give up after this long without a new checkpoint
  std::string model_family;          // configs/models/<name>.json or a path; default: from config.json
  std::string serve_dir;             // rollouts publish vLLM sharded-state files here on each commit
  std::string weights = "none";      // master weights: none | auto | esrgan-medium | faceres-deep
  int trainers = 2;                  // trainer ranks (fsdp = trainers / train_tp)
  int train_tp = 1;                  // tensor-parallel degree of the training layout
  int relays = -1;                   // relay ranks; -1 = auto (one per node, at least one)
  int fanout = 2;                    // children per relay in the relay tree
  int rollout_tp = 2;                // tensor-parallel degree of the serving layout
  int rollout_ep = 1;                // expert-parallel degree of the serving layout (divides rollout_tp)
  int train_ep = 1;                  // expert-parallel degree of the training layout (divides trainers)
  bool fuse = true;                  // fused qkv / gate_up serving buffers
  std::string serve_quant = "none";  // what rollouts serve: none (the model's dtypes) | fp8-block (layout/serve_quant.h)
  std::string transport = "ucx";     // data plane: ucx | mpi
  int steps = 3;                     // delta refits after the first (full) sync
  std::vector<double> rates = {1, 3, 5};  // changed percent per step, cycled
  uint64_t frame_elements = 1 << 20; // largest frame (elements)
  uint64_t bundle_below = 1 << 16;   // boxes under this many elements share bundle frames (0: none)
  int window = 32;                   // frames a sender keeps in flight
  int encode_threads = 1;            // threads each trainer encodes frames with
  std::string contexts = "auto";     // value packing contexts: auto (by time, src/refit/context_rule.h) | true | false
  double link_gbps = 0;              // emulated trainer -> first-relay link (Gbit/s); 0 = none
  bool compare_full = true;          // also time a full refit of every version
  bool compare_bcast = true;         // also time an MPI_Bcast of the full model
  bool verify = true;                // rollouts check their bits against the expected model
  double timeout_s = 120;            // a peer silent this long is reported dead
  uint64_t seed = 1;
  std::string json;                  // per-step records (JSON)
  std::string csv;                   // per-step records (CSV)
  std::string state_dir;             // durable progress (journals, snapshots); empty: none
  int snapshot_every = 1;            // rollout snapshot every N committed versions (0: never)
  std::string spool_dir;             // trainers publish each committed delta here (catch-up)
  int catchup_max = 16;              // longest delta chain a restarted rollout replays from the spool
  int spool_keep = 0;                // versions the spool keeps (pruned after each commit); 0: catchup_max
  // Two jobs joined by an object store (src/refit/publish.cc, follow.cc): "all" (one job: trainers,
  // relays, rollouts), "publish" (a job of trainer ranks only, putting each version into --store)
  // or "follow" (a job of relays and rollouts only, applying each version it finds in --store).
  std::string role = "all";
  std::string store;                 // store URL (file:///dir, s3://bucket/prefix): --role publish | follow
  int rollouts = 0;                  // publish: the follower job's rollout ranks (its frames are cut for them)
  int full_every = 16;               // publish: a full snapshot every N versions (and of the first)
  double follow_timeout_s = 600;     // follow: give up after this long without a new version
  double poll_s = 0.5;               // follow: how often the store is listed while waiting
  std::string key_file;              // job keys (dcr keygen): frames sealed with HMAC-SHA-256; empty: unauthenticated
  bool encrypt = false;              // with key_file: frames sealed with AES-256-GCM (payload encrypted)
  std::string fault;                 // test-only: wrong-base@V | corrupt@V | forge@V | unsealed@V
  std::string fail_at;               // test-only: ROLE:INDEX:PHASE:VERSION kill -9 point

  // Versions come from real checkpoints (--checkpoints or --watch) rather than the change model.
  bool from_checkpoints() const { return !checkpoints.empty() || !watch.empty(); }
  bool has_checkpoint() const { return from_checkpoints() || !init_checkpoint.empty(); }
};

// invalid_argument naming the option for a configuration that cannot work.
Status check_refit_config(const RefitConfig& config);

}  // namespace dcr
