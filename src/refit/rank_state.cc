#include "src/refit/rank_state.h"

#include <cstdio>
#include <filesystem>

#include "dcr/ckpt/checkpoint.h"
#include "dcr/transport/rate_limit.h"

namespace dcr {

std::string RankState::snapshot_path() const {
  return config.state_dir + "/rollout-" + std::to_string(topology.index) + ".h5";
}

namespace {

Status load_pool(const RefitConfig& config, RealWeights* pool) {
  if (config.weights == "none") return Status::ok();
  std::string model_json;
  const Status found = find_real_weights(config.weights == "auto" ? "esrgan-medium" : config.weights, &model_json);
  if (!found.is_ok()) return config.weights == "auto" ? Status::ok() : found;
  return load_tfjs_weights(model_json, pool);
}

Status open_journal(RankState* s) {
  if (s->config.state_dir.empty()) return Status::ok();
  std::error_code error;
  std::filesystem::create_directories(s->config.state_dir, error);
  DCR_REQUIRE(!error, Code::io_error, "cannot create state directory '" + s->config.state_dir + "': " + error.message());
  s->journal = std::make_unique<Journal>();
  return s->journal->open(s->config.state_dir + "/rank-" + std::to_string(s->topology.world_rank) + ".journal");
}

}  // namespace

Status set_up(const RefitConfig& config, MPI_Comm world, RankState* s) {
  s->config = config;
  DCR_TRY(make_topology(config, world, &s->topology));
  CanonicalBits initial;
  if (!config.init_checkpoint.empty()) DCR_TRY(load_checkpoint(config.init_checkpoint, &s->plan.manifest, &initial));
  DCR_TRY(make_plan(config, s->topology, &s->plan));
  DCR_TRY(parse_frame_fault(config.fault, &s->frame_fault));
  DCR_TRY(parse_kill_point(config.fail_at, config.state_dir, &s->kill));
  DCR_TRY(open_journal(s));
  if (!config.spool_dir.empty()) s->spool = std::make_unique<FrameSpool>(config.spool_dir, config.trainers);
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
    options.initial = initial.empty() ? nullptr : &initial;
    DCR_TRY(ChangeModel::create(s->plan.manifest, options, &s->model));
  }
  if (t.role == Role::trainer) {
    for (int i = 0; i < config.encode_threads; ++i) s->encoders.push_back(std::make_unique<FrameEncoder>());
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

void tear_down(RankState* s) {
  if (s->bcast_comm != MPI_COMM_NULL) MPI_Comm_free(&s->bcast_comm);
}

bool all_true(bool value, MPI_Comm world) {
  int mine = value ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, world);
  return all == 1;
}

TensorBytes model_bytes(const ChangeModel& model) {
  return [&model](uint32_t tensor) { return model.stored(tensor).data(); };
}

void advance_model_to(RankState* s, uint64_t version) {
  if (!s->model) return;
  const std::vector<double>& rates = s->config.rates;
  for (; s->model_version < version; ++s->model_version) {
    const double percent = rates[s->model_version % rates.size()];  // version v+1 uses rates[v % n]
    s->model->step(s->model->tune_lr(percent / 100));
  }
}

namespace {
std::vector<FrameEncoder*> encoders_of(const RankState& s) {
  std::vector<FrameEncoder*> out;
  for (const auto& e : s.encoders) out.push_back(e.get());
  return out;
}
}  // namespace

bool transfer(RankState* s, FrameKind kind, Versions versions, Shard* serving, StepStats* stats) {
  const Link link{s->link(), &s->topology, s->config.window, s->config.timeout_s, &s->kill};
  const Topology& t = s->topology;
  Status status;
  switch (t.role) {
    case Role::trainer:
      s->sent.clear();
      status = trainer_step(s->plan, link, t.index, kind, versions, &s->baseline, &s->current, s->frame_fault,
                            encoders_of(*s), stats, s->spool && kind == FrameKind::delta ? &s->sent : nullptr);
      break;
    case Role::relay:
      status = relay_step(s->plan, link, t.index, versions.target, stats);
      break;
    case Role::rollout:
      status = rollout_step(s->plan, link, t.index, versions, kind == FrameKind::full, serving, &s->decoder, stats);
      break;
  }
  if (!status.is_ok()) std::fprintf(stderr, "dcr refit: %s: %s\n", t.describe().c_str(), status.to_string().c_str());
  return status.is_ok();
}

void reduce_stats(const StepStats& mine, MPI_Comm world, StepStats* total) {
  uint64_t counts[4] = {mine.frames, mine.wire_bytes, mine.changed, mine.elements}, sums[4] = {};
  MPI_Reduce(counts, sums, 4, MPI_UINT64_T, MPI_SUM, 0, world);
  double times[5] = {mine.encode_s, mine.send_s, mine.forward_s, mine.apply_s, mine.wait_s}, maxima[5] = {};
  MPI_Reduce(times, maxima, 5, MPI_DOUBLE, MPI_MAX, 0, world);
  *total = StepStats{sums[0], sums[1], sums[2], sums[3], maxima[0], maxima[1], maxima[2], maxima[3], maxima[4]};
}

bool verified(RankState* s, const Shard& shard, MPI_Comm world) {
  bool ok = true;
  if (s->topology.role == Role::rollout && s->config.verify) {
    std::string difference;
    ok = shard.matches(model_bytes(*s->model), &difference);
    if (!ok) std::fprintf(stderr, "dcr refit: %s: %s\n", s->topology.describe().c_str(), difference.c_str());
  }
  return all_true(ok, world);
}

}  // namespace dcr
