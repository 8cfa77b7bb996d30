// What every endpoint of one job is told alike: the job's shape and knobs, as typed values parsed
// once at the edges (the `dcr refit` command line and INI file, the C API's dcr_spec_set, the
// Python binding) from one table (refit_option_table: name, default, range, help). The `dcr
// refit` application (src/job) adds its own options on top (src/job/config.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dcr/core/option_table.h"
#include "dcr/core/status.h"
#include "dcr/layout/serve_quant.h"

namespace dcr {

// The ranks a job holds: all three roles (one job), trainers only (a publisher into a store) or
// relays and rollouts only (a follower of a store).
enum class JobRole { all, publish, follow };
const char* job_role_name(JobRole role);

// Value packing contexts: wherever the link is the slowest stage (src/refit/context_rule.h),
// always where smaller, or never.
enum class ContextMode { automatic, on, off };
const char* context_mode_name(ContextMode mode);

// How rollouts take a version: applied frame by frame as it streams in (the shortest refit, for
// synchronous RL), or staged whole (received, authenticated and checked without touching the
// serving buffers) and applied in one short pause once every rollout holds it.
enum class ApplyMode { stream, staged };
const char* apply_mode_name(ApplyMode mode);

struct RefitOptions {
  JobRole role = JobRole::all;
  int trainers = 2;                  // trainer ranks (fsdp = trainers / (train_tp * train_pp * train_dp))
  int train_tp = 1;                  // tensor-parallel degree of the training layout
  int train_ep = 1;                  // expert-parallel degree (divides the trainers of a stage of a replica)
  int train_pp = 1;                  // pipeline stages of the training layout
  std::vector<int> train_pp_layers;  // layers per stage (empty: an even split)
  int train_dp = 1;                  // data-parallel replicas of the training layout
  bool check_replicas = false;       // trainers compare their parts' hashes with their replicas' each version
  int relays = -1;                   // relay ranks; -1 = one per node
  int fanout = 2;                    // children per relay in the relay tree
  int rollout_tp = 2;                // tensor-parallel degree of the serving layout
  int rollout_ep = 1;                // expert-parallel degree of the serving layout (divides rollout_tp)
  bool fuse = true;                  // fused qkv / gate_up serving buffers
  ServeQuant serve_quant = ServeQuant::none;  // what rollouts serve (layout/serve_quant.h)
  std::string model_family;          // configs/models/<name>.json or a path; default: from config.json
  // Serving layouts frames are also cut for (every TP of serve_tp with every EP of serve_ep that
  // divides it): each frame then lies inside one serving piece of each, so one stream serves them
  // all. A publisher promises these to its followers (empty lists: its --rollout-tp, --rollout-ep);
  // a follower takes them from the store. See promised_layouts().
  std::vector<int> serve_tp, serve_ep;
  uint64_t frame_elements = 1 << 20; // largest frame (elements)
  uint64_t bundle_below = 1 << 16;   // boxes under this many elements share bundle frames (0: none)
  int window = 32;                   // frames a sender keeps in flight
  int encode_threads = 1;            // threads each trainer encodes frames with
  ContextMode contexts = ContextMode::automatic;
  double link_gbps = 0;              // the trainer -> first-relay link (Gbit/s): --contexts auto's rate; 0 = measured
  double timeout_s = 120;            // a peer silent this long is reported dead
  std::string state_dir;             // durable progress (journals); empty: none
  std::string baseline_dir;          // trainers keep their baseline in a file-backed mapping here; empty: in memory
  std::string key_file;              // job keys (dcr keygen): frames sealed; empty: unauthenticated
  bool encrypt = false;              // with key_file: frames sealed with AES-256-GCM
  ApplyMode apply = ApplyMode::stream;
  uint64_t stage_mb = 1024;          // staged: frames held in memory per rollout; beyond, spilled to state_dir
  int apply_threads = 1;             // staged: threads each rollout applies its frames with in the pause
};

// One serving layout's shape: TP degree and EP degree (EP divides TP). Fused or not does not
// change which canonical elements a rank holds, so a frame cut for one serves both.
struct ServeShape {
  int tp = 1, ep = 1;
  bool operator==(const ServeShape& o) const { return tp == o.tp && ep == o.ep; }
  bool operator<(const ServeShape& o) const { return tp != o.tp ? tp < o.tp : ep < o.ep; }
};
// The promised layouts, ascending: serve_tp x serve_ep where EP divides TP (an empty list stands
// for the job's own degree); none when both lists are empty, unless this is a publisher.
std::vector<ServeShape> promised_layouts(const RefitOptions& options);
// "TP 1, TP 2, TP 4 EP 2": layouts as the options name them.
std::string describe_layouts(const std::vector<ServeShape>& layouts);

// The options every caller of the library may set, by the names `dcr refit` takes (without "--").
const std::vector<Option<RefitOptions>>& refit_option_table();

// invalid_argument naming the options whose values do not fit together (a TP degree that does not
// divide the ranks, --encrypt without --key-file, ...).
Status check_refit_options(const RefitOptions& options);

}  // namespace dcr
