#include "src/job/refit.h"

#include <cstdio>

#include "dcr/core/log.h"
#include "src/core/clock.h"
#include "src/job/rank_state.h"

namespace dcr {

namespace {

void warn_if_failed(const Topology& t, const Status& status, const char* what) {
  if (!status.is_ok()) DCR_LOG(warn, "refit", "%s: %s: %s", t.describe().c_str(), what, status.to_string().c_str());
}

// Trainer 0 (the broadcast's root): the served model's tensors, quantized before the clock starts
// where the plan serves block FP8 (else the source's own bytes, read in place). Only the timing
// uses them (receivers drop what they get), so a failure is reported and the broadcast still runs.
Status served_model_bits(RankState* s, CanonicalBits* bits, TensorBytes* out) {
  *out = s->source->bytes();
  if (s->core.plan.quant == ServeQuant::none) return Status::ok();
  DCR_TRY(served_tensors(s->core.plan.manifest, s->core.plan.served_bytes(*out), bits));
  *out = [bits](uint32_t id) { return (*bits)[id].data(); };
  return Status::ok();
}

double time_bcast(RankState* s) {
  const bool root = s->bcast_comm != MPI_COMM_NULL && s->core.topology.role == Role::trainer;
  CanonicalBits quantized;
  TensorBytes model;
  if (root) warn_if_failed(s->core.topology, served_model_bits(s, &quantized, &model), "the MPI_Bcast comparison");
  barrier(s);
  const auto start = Clock::now();
  if (s->bcast_comm != MPI_COMM_NULL) {
    std::vector<uint8_t> scratch;
    for (size_t i = 0; i < s->core.plan.manifest.tensors.size(); ++i) {
      const uint64_t bytes = s->core.plan.manifest.tensors[i].nbytes();
      uint8_t* data = root ? const_cast<uint8_t*>(model(static_cast<uint32_t>(i))) : (scratch.resize(bytes), scratch.data());
      for (uint64_t off = 0; off < bytes; off += 1u << 30) {
        MPI_Request request;
        MPI_Ibcast(data + off, static_cast<int>(std::min<uint64_t>(1u << 30, bytes - off)), MPI_BYTE, 0, s->bcast_comm,
                   &request);
        wait_or_abort(&request, 2 * s->config.timeout_s + 30, "the MPI_Bcast comparison", s->bcast_comm);
      }
    }
  }
  barrier(s);
  return seconds_since(start);
}

// The full refit of the current version into the rollouts' second copy, for comparison.
double time_full(RankState* s, uint64_t version, uint64_t* full_bytes, bool* ok) {
  barrier(s);
  const auto start = Clock::now();
  StepStats stats;
  *ok = all_true(s, transfer(s, FrameKind::full, {version, version}, &s->full_serving, &stats));
  const double seconds = seconds_since(start);
  StepStats total;
  reduce_stats(s, stats, &total);
  *full_bytes = total.wire_bytes;
  *ok = *ok && verified(s, s->full_serving);
  return seconds;
}

// One refit of `kind` to version `target`: transfer, joint commit, promotion, verification.
StepRecord refit_once(RankState* s, FrameKind kind, uint64_t target) {
  StepRecord r;
  const Versions versions = kind == FrameKind::full ? Versions{target, target} : Versions{s->core.committed, target};
  r.version = target;
  r.base = versions.base;
  r.kind = kind == FrameKind::full ? "full" : "delta";
  r.contexts = context_mode_name(s->config.contexts);
  r.link_gbps = s->core.context_rule.link_gbps();
  r.link_source = s->core.context_rule.link_source();
  StepStats stats;
  run_version(s, kind, versions, source_checked(s, StepIO{}, target), &r, &stats);
  if (s->core.topology.role == Role::trainer) {  // the version is read in place while it is sent
    s->touched = s->source->touched_bytes();
    s->peak_rss = status_bytes("VmHWM");
  }
  StepStats total;
  reduce_stats(s, stats, &total);
  record_totals(total, &r);
  const int trainers = s->core.topology.trainers;
  if (trainers > 0 && total.scanned_bytes > 0) r.scan_balance = double(total.scanned_most) * trainers / total.scanned_bytes;
  if (kind == FrameKind::delta) s->core.context_rule.observe_apply(total.apply_s, total.changed, s->core.topology.trainers);
  r.checked = s->config.verify ? kCheckedModelBytes : kCheckedFrameHashes;
  r.bitexact = r.committed && s->config.verify && verified(s, s->core.serving);
  record_memory(s, &r);
  return r;
}

std::string describe_job(const RefitConfig& config, const RankState& s, uint64_t model_bytes) {
  const Topology& t = s.core.topology;
  const TrainingLayout l = training_layout(config, s.core.plan.rules);
  const std::string trainers = std::to_string(config.trainers) + " trainers (fsdp " + std::to_string(l.fsdp) + " x tp " +
                               std::to_string(l.tp) + (l.pp > 1 ? " x pp " + std::to_string(l.pp) : "") +
                               (l.dp > 1 ? " x dp " + std::to_string(l.dp) + " replicas" : "") +
                               (l.ep > 1 ? ", experts over ep " + std::to_string(l.ep) : "") + ")";
  const std::string relays = std::to_string(t.relays) + " relays (fanout " + std::to_string(config.fanout) + ", depth " +
                             std::to_string(t.depth) + ")";
  const std::string rollouts = std::to_string(t.rollouts) + " rollouts (tp " + std::to_string(config.rollout_tp) +
                               (config.rollout_ep > 1 ? ", ep " + std::to_string(config.rollout_ep) : "") +
                               (config.fuse ? ", fused qkv/gate_up" : "") +
                               (s.core.plan.quant != ServeQuant::none ? std::string(", serving ") + serve_quant_name(s.core.plan.quant) : "") +
                               ")";
  const std::string model = "model " +
                            (config.role == JobRole::follow ? "of the publication"
                             : config.from_checkpoints() ? "from checkpoints"
                             : config.init_checkpoint.empty() ? config.model
                                                              : config.init_checkpoint) +
                            " (" + std::to_string(model_bytes) + " bytes, family " + s.core.plan.rules.family + ")";
  const std::string promised = describe_layouts(s.core.plan.cut_layouts);
  if (config.role == JobRole::publish) {
    return "publish to " + s.spool->describe() + ": " + trainers + ", frames cut for the serving layouts " + promised +
           ", " + model;
  }
  if (config.role == JobRole::follow) {
    return "follow " + s.spool->describe() + " (published by " + trainers + " for " + promised + "): " + relays +
           " -> " + rollouts + ", transport " + std::string(data_plane_name(config.transport)) + ", " + model;
  }
  return trainers + " -> " + relays + " -> " + rollouts + ", transport " + std::string(data_plane_name(config.transport)) + ", " + model;
}

// A note when expert parallelism is asked for a model without experts ("" otherwise).
std::string describe_unused_ep(const RefitConfig& config, const RefitPlan& plan) {
  if (config.rollout_ep == 1 && config.train_ep == 1) return "";
  for (const TensorRule& r : plan.rules.tensors) {
    if (r.kind == SplitKind::expert_column || r.kind == SplitKind::expert_row) return "";
  }
  return "dcr refit: note: --rollout-ep " + std::to_string(config.rollout_ep) + " and --train-ep " +
         std::to_string(config.train_ep) + " change nothing: the model has no expert tensors (family " + plan.rules.family +
         "), so every tensor is split by tensor parallelism alone";
}

std::string describe_keys(const RankState& s) {
  if (!s.core.keys) return "dcr refit: frames are NOT authenticated (no --key-file): anyone who can reach a rank or write the "
                      "spool can forge a delta";
  return std::string("dcr refit: frames sealed with ") + (s.config.encrypt ? "AES-256-GCM (encrypted)" : "HMAC-SHA-256") +
         " under key id " + std::to_string(s.core.keys->sealing().id) + " of '" + s.config.key_file + "' (" +
         std::to_string(s.core.keys->keys().size()) + " key(s) accepted)";
}

uint64_t piece_bytes(const RefitPlan& plan, const Holdings& h) {
  uint64_t total = 0;
  for (const LocalPiece& p : h.pieces) total += p.box.elements() * plan.manifest.tensors[p.box.tensor].width();
  return total;
}

// Checkpoint versions: what each trainer read of the checkpoint against its shard, and its peak RSS.
void report_reads(RankState* s) {
  const Topology& t = s->core.topology;
  const bool trainer = t.role == Role::trainer;
  // Each rank's three numbers in a vector of every rank's: summed, they are everyone's.
  std::vector<uint64_t> all(3 * static_cast<size_t>(t.world_size), 0);
  all[3 * t.world_rank] = s->touched;
  all[3 * t.world_rank + 1] = trainer ? piece_bytes(s->core.plan, s->core.plan.trainer_holdings[t.index]) : 0;
  all[3 * t.world_rank + 2] = s->peak_rss;
  s->core.control->all_sum(&all);
  if (t.world_rank != 0) return;
  std::string line = "      checkpoint read per trainer (touched / shard MB, peak RSS MB):";
  for (int r = 0; r < t.trainers; ++r) {
    char one[96];
    std::snprintf(one, sizeof one, " %.2f/%.2f, %.1f;", all[3 * r] / 1e6, all[3 * r + 1] / 1e6, all[3 * r + 2] / 1e6);
    line += one;
  }
  s->observer.note(line);
}

}  // namespace

MpiWorld::MpiWorld(const RefitConfig& config, MPI_Comm comm)
    : control(mpi_collective(comm, 2 * config.timeout_s + 30)) {
  world.control = control.get();
  world.open_data_plane = [comm](DataPlane plane, std::unique_ptr<Transport>* out) {
    return make_transport(data_plane_name(plane), comm, out);
  };
  world.mpi = comm;
}

Status run_refit(const RefitConfig& config, const JobWorld& world, RefitReport* report, const RefitObserver& observer) {
  RankState s;
  s.observer = observer;
  DCR_TRY(all_ok(&s, set_up(config, world, &s), "set-up"));
  const Topology& t = s.core.topology;
  report->manifest_hash = s.core.plan.manifest.hash();
  report->model_bytes = s.core.plan.manifest.total_bytes();
  report->summary = describe_job(s.config, s, report->model_bytes);  // a follower's: the publication's options
  if (t.world_rank == 0) {
    s.observer.note("dcr refit: " + report->summary);
    s.observer.note("dcr refit: " + t.describe_placement());
    s.observer.note(describe_keys(s));
    const std::string unused = describe_unused_ep(s.config, s.core.plan);
    if (!unused.empty()) s.observer.note(unused);
  }

  if (config.role != JobRole::all) {
    const Status st = config.role == JobRole::publish ? run_publish(&s, report) : run_follow(&s, report);
    tear_down(&s);
    return st;
  }
  uint64_t first = 0;
  DCR_TRY(recover(&s, &first));
  for (uint64_t version = first;; ++version) {
    bool exists = false;
    DCR_TRY(version_exists(&s, version, &exists));
    if (!exists) break;
    DCR_TRY(seek_everywhere(&s, version));
    DCR_TRY(all_ok(&s, s.core.reload_keys(), "reading the key file"));  // a key appended since seals this version
    if (s.spool) s.spool->set_keys(s.core.keys);
    if (config.from_checkpoints() && t.world_rank == 0) {
      char line[64];
      std::snprintf(line, sizeof line, "v%-3llu from ", static_cast<unsigned long long>(version));
      s.observer.note(line + s.source->describe(version));
    }
    StepRecord r = refit_once(&s, version == 0 ? FrameKind::full : FrameKind::delta, version);
    if (r.committed && version > 0 && config.compare_full) {
      bool full_ok = false;
      r.full_seconds = time_full(&s, version, &r.full_bytes, &full_ok);
      r.bitexact = r.bitexact && full_ok;
    }
    if (r.committed && version > 0 && config.compare_bcast) r.bcast_seconds = time_bcast(&s);
    if (t.world_rank == 0) {
      s.observer.step(r);
      report->steps.push_back(r);
    }
    if (config.from_checkpoints()) report_reads(&s);
    const std::string stays = s.core.committed == kNoVersion ? "no rank holds a committed version yet"
                                                               : "every rank stays on version " + std::to_string(s.core.committed);
    if (!r.committed && !s.step_error.is_ok()) {
      return s.step_error.with_context("version " + std::to_string(version) + " was not committed; " + stays);
    }
    DCR_REQUIRE(r.committed, Code::aborted,
                "version " + std::to_string(version) + " was not committed: a rank refused or failed (see its message); " + stays);
    DCR_REQUIRE(r.bitexact || !compared_bytes(r), Code::target_mismatch,
                "version " + std::to_string(version) + " committed but a rollout's bits differ from the expected model");
    // Snapshots and spool copies make restarts cheaper; losing one only makes a restart take a full sync.
    if (!config.serve_dir.empty()) DCR_TRY(publish_serving(&s, version));
    warn_if_failed(t, write_snapshot(&s), "snapshot not written");
    if (version > 0) warn_if_failed(t, publish_to_spool(&s, {r.base, version}), "delta not published to the spool");
  }
  tear_down(&s);
  return Status::ok();
}

}  // namespace dcr
