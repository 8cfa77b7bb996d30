#include "dcr/refit/refit.h"

#include <chrono>
#include <cstdio>
#include <memory>

#include "dcr/model/change_model.h"
#include "dcr/model/real_weights.h"
#include "dcr/refit/plan.h"
#include "dcr/refit/roles.h"
#include "dcr/refit/topology.h"
#include "dcr/transport/rate_limit.h"

namespace dcr {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Two-phase joint commit: every rank votes, the root (world rank 0) decides only if all voted yes,
// then broadcasts the decision.
bool joint_commit(bool vote, MPI_Comm world) {
  int mine = vote ? 1 : 0, all = 0;
  MPI_Reduce(&mine, &all, 1, MPI_INT, MPI_MIN, 0, world);
  MPI_Bcast(&all, 1, MPI_INT, 0, world);
  return all == 1;
}

bool all_true(bool value, MPI_Comm world) {
  int mine = value ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, world);
  return all == 1;
}

// Everything one rank holds for the job.
struct RankState {
  RefitConfig config;
  Topology topology;
  RefitPlan plan;
  std::unique_ptr<Transport> transport;        // the data plane
  std::unique_ptr<Transport> limited;          // trainers: the emulated link to the root relay
  RealWeights pool;
  std::unique_ptr<ChangeModel> model;          // trainers, and rollouts that verify
  Shard baseline, current;                     // trainers
  Shard serving, full_serving;                 // rollouts: the refit target, and the full-refit copy
  FrameEncoder encoder;
  FrameDecoder decoder;
  Fault fault;
  uint64_t committed = 0;                      // this rank's committed version
  std::vector<std::pair<uint64_t, uint64_t>> chain;  // (version, base) committed so far
  MPI_Comm bcast_comm = MPI_COMM_NULL;         // trainer 0 + rollouts

  Transport* link() { return limited ? limited.get() : transport.get(); }
  bool has_model() const {
    return topology.role == Role::trainer || (topology.role == Role::rollout && config.verify);
  }
};

Status load_pool(const RefitConfig& config, RealWeights* pool) {
  if (config.weights == "none") return Status::ok();
  std::string model_json;
  const Status found = find_real_weights(config.weights == "auto" ? "esrgan-medium" : config.weights, &model_json);
  if (!found.is_ok()) return config.weights == "auto" ? Status::ok() : found;
  return load_tfjs_weights(model_json, pool);
}

Status set_up(const RefitConfig& config, MPI_Comm world, RankState* s) {
  s->config = config;
  DCR_TRY(make_topology(config, world, &s->topology));
  DCR_TRY(make_plan(config, s->topology, &s->plan));
  DCR_TRY(parse_fault(config.fault, &s->fault));
  DCR_TRY(make_transport(config.transport, world, &s->transport));
  const Topology& t = s->topology;
  if (t.role == Role::trainer && config.link_gbps > 0) {
    RateLimit limit;
    limit.bytes_per_s = config.link_gbps * 1e9 / 8;
    limit.peers = {t.relay_rank(0)};
    s->limited = std::make_unique<RateLimitedTransport>(s->transport.get(), limit);
  }
  if (s->has_model()) {
    DCR_TRY(load_pool(config, &s->pool));
    ChangeModelOptions options;
    options.seed = config.seed;
    options.pool = s->pool.values.empty() ? nullptr : &s->pool;
    DCR_TRY(ChangeModel::create(s->plan.manifest, options, &s->model));
  }
  if (t.role == Role::trainer) {
    s->baseline = Shard(s->plan.manifest, s->plan.trainer_holdings[t.index]);
    s->current = Shard(s->plan.manifest, s->plan.trainer_holdings[t.index]);
  } else if (t.role == Role::rollout) {
    s->serving = Shard(s->plan.manifest, s->plan.rollout_holdings[t.index]);
    if (config.compare_full) s->full_serving = Shard(s->plan.manifest, s->plan.rollout_holdings[t.index]);
  }
  const bool in_bcast = (t.role == Role::trainer && t.index == 0) || t.role == Role::rollout;
  MPI_Comm_split(world, in_bcast ? 0 : MPI_UNDEFINED, t.world_rank, &s->bcast_comm);
  return Status::ok();
}

CanonicalBits canonical_bits(const ChangeModel& model) {
  CanonicalBits bits(model.manifest().tensors.size());
  for (size_t i = 0; i < bits.size(); ++i) bits[i] = model.stored(i);
  return bits;
}

// One pass of frames through the tree: trainers send `kind` frames for base -> target, relays
// forward, rollouts apply into `serving`. Returns this rank's vote.
bool transfer(RankState* s, FrameKind kind, Versions versions, Shard* serving, StepStats* stats) {
  const Link link{s->link(), &s->topology, s->config.window, s->config.timeout_s};
  const Topology& t = s->topology;
  Status status;
  switch (t.role) {
    case Role::trainer:
      status = trainer_step(s->plan, link, t.index, kind, versions, &s->baseline, &s->current, s->fault, &s->encoder,
                            stats);
      break;
    case Role::relay:
      status = relay_step(s->plan, link, t.index, stats);
      break;
    case Role::rollout:
      status = rollout_step(s->plan, link, t.index, kind == FrameKind::full ? kAnyVersion : s->committed, serving,
                            &s->decoder, stats);
      break;
  }
  if (!status.is_ok()) std::fprintf(stderr, "dcr refit: %s: %s\n", t.describe().c_str(), status.to_string().c_str());
  return status.is_ok();
}

// Sums counters and takes the slowest rank's stage times onto world rank 0.
void reduce_stats(const StepStats& mine, MPI_Comm world, StepStats* total) {
  uint64_t counts[4] = {mine.frames, mine.wire_bytes, mine.changed, mine.elements}, sums[4] = {};
  MPI_Reduce(counts, sums, 4, MPI_UINT64_T, MPI_SUM, 0, world);
  double times[5] = {mine.encode_s, mine.send_s, mine.forward_s, mine.apply_s, mine.wait_s}, maxima[5] = {};
  MPI_Reduce(times, maxima, 5, MPI_DOUBLE, MPI_MAX, 0, world);
  *total = StepStats{sums[0], sums[1], sums[2], sums[3], maxima[0], maxima[1], maxima[2], maxima[3], maxima[4]};
}

// Whether every rollout's shard equals the model's current bits (true where nobody verifies).
bool verified(RankState* s, const Shard& shard, MPI_Comm world) {
  bool ok = true;
  if (s->topology.role == Role::rollout && s->config.verify) {
    std::string difference;
    ok = shard.matches(canonical_bits(*s->model), &difference);
    if (!ok) std::fprintf(stderr, "dcr refit: %s: %s\n", s->topology.describe().c_str(), difference.c_str());
  }
  return all_true(ok, world);
}

double time_bcast(RankState* s, MPI_Comm world) {
  MPI_Barrier(world);
  const auto start = Clock::now();
  if (s->bcast_comm != MPI_COMM_NULL) {
    const bool root = s->topology.role == Role::trainer;
    std::vector<uint8_t> scratch;
    for (size_t i = 0; i < s->plan.manifest.tensors.size(); ++i) {
      const uint64_t bytes = s->plan.manifest.tensors[i].nbytes();
      uint8_t* data = root ? const_cast<uint8_t*>(s->model->stored(i).data()) : (scratch.resize(bytes), scratch.data());
      for (uint64_t off = 0; off < bytes; off += 1u << 30) {
        MPI_Bcast(data + off, static_cast<int>(std::min<uint64_t>(1u << 30, bytes - off)), MPI_BYTE, 0, s->bcast_comm);
      }
    }
  }
  MPI_Barrier(world);
  return since(start);
}

// The full refit of the current version into the rollouts' second copy, for comparison.
double time_full(RankState* s, uint64_t version, MPI_Comm world, uint64_t* full_bytes, bool* ok) {
  MPI_Barrier(world);
  const auto start = Clock::now();
  StepStats stats;
  const bool vote = transfer(s, FrameKind::full, {version, version}, &s->full_serving, &stats);
  *ok = joint_commit(vote, world);
  const double seconds = since(start);
  StepStats total;
  reduce_stats(stats, world, &total);
  *full_bytes = total.wire_bytes;
  *ok = *ok && verified(s, s->full_serving, world);
  return seconds;
}

// One refit of `kind` to version `target`: transfer, joint commit, promotion, verification.
StepRecord refit_once(RankState* s, FrameKind kind, uint64_t target, MPI_Comm world) {
  StepRecord r;
  r.version = target;
  r.base = s->committed;
  r.kind = kind == FrameKind::full ? "full" : "delta";
  if (s->topology.role == Role::trainer) s->current.load(canonical_bits(*s->model));
  MPI_Barrier(world);
  const auto start = Clock::now();
  StepStats stats;
  const bool vote = transfer(s, kind, {s->committed, target}, &s->serving, &stats);
  const auto commit_start = Clock::now();
  r.committed = joint_commit(vote, world);
  r.commit_s = since(commit_start);
  r.seconds = since(start);
  if (r.committed) {
    if (s->topology.role == Role::trainer) s->baseline.copy_from(s->current);
    s->chain.push_back({target, s->committed});
    s->committed = target;
  }
  StepStats total;
  reduce_stats(stats, world, &total);
  r.frames = total.frames;
  r.wire_bytes = total.wire_bytes;
  r.change_rate = total.elements ? double(total.changed) / total.elements : 0;
  r.encode_s = total.encode_s;
  r.send_s = total.send_s;
  r.forward_s = total.forward_s;
  r.apply_s = total.apply_s;
  r.bitexact = r.committed && verified(s, s->serving, world);
  return r;
}

void advance_model(RankState* s, double percent) {
  if (s->model) s->model->step(s->model->tune_lr(percent / 100));
}

}  // namespace

Status run_refit(const RefitConfig& config, MPI_Comm world, RefitReport* report) {
  RankState s;
  const Status setup = set_up(config, world, &s);
  DCR_REQUIRE(all_true(setup.is_ok(), world), setup.is_ok() ? Code::unavailable : setup.code(),
              setup.is_ok() ? "another rank failed to set up (see its message)" : setup.message());
  const Topology& t = s.topology;
  report->manifest_hash = s.plan.manifest.hash();
  report->model_bytes = s.plan.manifest.total_bytes();
  report->summary = std::to_string(t.trainers) + " trainers (fsdp " + std::to_string(config.trainers / config.train_tp) +
                    " x tp " + std::to_string(config.train_tp) + ") -> " + std::to_string(t.relays) + " relays (fanout " +
                    std::to_string(config.fanout) + ", depth " + std::to_string(t.depth) + ") -> " +
                    std::to_string(t.rollouts) + " rollouts (tp " + std::to_string(config.rollout_tp) +
                    (config.fuse ? ", fused qkv/gate_up" : "") + "), transport " + config.transport + ", model " +
                    config.model + " (" + std::to_string(report->model_bytes) + " bytes)";
  if (t.world_rank == 0) std::printf("dcr refit: %s\n", report->summary.c_str());

  for (int step = 0; step <= config.steps; ++step) {
    const double percent = step == 0 ? 0 : config.rates[(step - 1) % config.rates.size()];
    if (step > 0) advance_model(&s, percent);
    StepRecord r = refit_once(&s, step == 0 ? FrameKind::full : FrameKind::delta, step, world);
    if (r.committed && step > 0 && config.compare_full) {
      bool full_ok = false;
      r.full_seconds = time_full(&s, step, world, &r.full_bytes, &full_ok);
      r.bitexact = r.bitexact && full_ok;
    }
    if (r.committed && step > 0 && config.compare_bcast) r.bcast_seconds = time_bcast(&s, world);
    if (t.world_rank == 0) {
      print_step(r);
      report->steps.push_back(r);
    }
    DCR_REQUIRE(r.committed, Code::aborted,
                "version " + std::to_string(step) + " was not committed: a rank refused or failed (see its message); "
                "every rank stays on version " + std::to_string(s.committed));
    DCR_REQUIRE(r.bitexact, Code::target_mismatch,
                "version " + std::to_string(step) + " committed but a rollout's bits differ from the expected model");
  }
  if (s.bcast_comm != MPI_COMM_NULL) MPI_Comm_free(&s.bcast_comm);
  return Status::ok();
}

}  // namespace dcr
