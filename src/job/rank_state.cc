#include "src/job/rank_state.h"

#include <filesystem>
#include <thread>

#include "dcr/ckpt/checkpoint.h"
#include "dcr/core/hash.h"
#include "dcr/model/presets.h"
#include "dcr/core/log.h"
#include "dcr/transport/rate_limit.h"
#include "src/core/clock.h"
#include "src/job/store_layout.h"

namespace dcr {

std::string RankState::snapshot_path() const {
  return config.state_dir + "/rollout-" + std::to_string(core.topology.index) + ".h5";
}

namespace {

Status load_pool(const RefitConfig& config, RealWeights* pool) {
  if (config.weights == "none") return Status::ok();
  std::string model_json;
  const Status found = find_real_weights(config.weights == "auto" ? "esrgan-medium" : config.weights, &model_json);
  if (!found.is_ok()) return config.weights == "auto" ? Status::ok() : found;
  return load_tfjs_weights(model_json, pool);
}

// The plan's manifest (and config.json) from the starting checkpoint, and, with `want_bits` (this
// rank builds the change model from them), its bits: a safetensors or HDF5 file (read whole), or an
// HF checkpoint directory (its tensors read only with want_bits).
Status load_initial(const RefitConfig& config, Collective& control, bool want_bits, RefitPlan* plan,
                    CanonicalBits* initial) {
  std::string dir = config.init_checkpoint;
  if (config.from_checkpoints()) DCR_TRY(first_checkpoint(config, control, &dir));
  if (dir.empty()) return Status::ok();
  if (!std::filesystem::is_directory(dir)) return load_checkpoint(dir, &plan->model, initial);
  std::unique_ptr<HfCheckpoint> c;
  DCR_TRY(HfCheckpoint::open(dir, &c));
  plan->model = c->manifest();
  plan->model_config = c->config();
  if (config.from_checkpoints() || !want_bits) return Status::ok();
  for (uint32_t id = 0; id < plan->model.tensors.size(); ++id) {
    const uint8_t* bytes = c->tensor(id);
    initial->emplace_back(bytes, bytes + plan->model.tensors[id].nbytes());
  }
  return Status::ok();
}

// The model boxes this rank's change model keeps: a trainer's shard, a verifying rollout's serving
// pieces; every element (null) for trainer 0 under --compare-bcast, which broadcasts the model.
const std::vector<Box>* source_boxes(const RankState& s, std::vector<Box>* boxes) {
  const Topology& t = s.core.topology;
  if (t.role == Role::trainer && t.index == 0 && s.config.compare_bcast) return nullptr;
  const RefitPlan& plan = s.core.plan;
  *boxes = plan.model_boxes(t.role == Role::trainer ? plan.trainer_holdings[t.index] : plan.rollout_holdings[t.index]);
  return boxes;
}

Status make_source(const RankState& s, const CanonicalBits& initial, std::unique_ptr<VersionSource>* out) {
  const RefitConfig& config = s.config;
  const RefitPlan& plan = s.core.plan;
  if (config.from_checkpoints()) return checkpoint_source(config, plan.model, plan.model_config, out);
  RealWeights pool;
  DCR_TRY(load_pool(config, &pool));
  ChangeModelOptions options;
  options.seed = config.seed;
  options.pool = pool.values.empty() ? nullptr : &pool;
  options.initial = initial.empty() ? nullptr : &initial;
  std::vector<Box> boxes;
  options.held = source_boxes(s, &boxes);
  std::unique_ptr<ChangeModel> model;
  DCR_TRY(ChangeModel::create(plan.model, options, &model));
  *out = change_model_source(config, std::move(model));
  return Status::ok();
}

// The store of --role publish (opened to write: the publisher creates the bucket) or follow (to
// read: a follower never writes; it waits up to --follow-timeout for a bucket that does not exist
// yet, which a publisher started after it creates).
Status open_job_store(const RefitConfig& config, bool speaks, std::unique_ptr<ObjectStore>* out) {
  if (config.role != JobRole::follow) return open_store(config.store, StoreAccess::write, out).with_context("--store");
  const auto start = Clock::now();
  for (bool said = false;; said = true) {
    const Status st = open_store(config.store, StoreAccess::read, out);
    if (st.code() != Code::not_found || seconds_since(start) > config.follow_timeout_s) return st.with_context("--store");
    if (speaks && !said) {
      DCR_LOG(info, "refit", "%s; waiting up to %g s (--follow-timeout) for it", st.message().c_str(),
              config.follow_timeout_s);
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(config.poll_s));
  }
}

// The job's own phase points (--fail-at) and then the caller's.
StepHooks both(StepHooks first, StepHooks then) {
  if (!first.at) return then;
  if (!then.at) return first;
  StepHooks hooks;
  hooks.at = [first, then](const Topology& rank, Phase phase, uint64_t target) {
    DCR_TRY(first.at(rank, phase, target));
    return then.at(rank, phase, target);
  };
  return hooks;
}

// A follower's model is the publication's; a checkpoint it was given as well (--checkpoints to
// verify against, --init-checkpoint) must be of that model.
Status keep_published_model(const RefitPlan& published, RefitPlan* plan) {
  const std::string difference = plan->model.tensors.empty() ? "" : manifest_difference(published.model, plan->model);
  DCR_REQUIRE(difference.empty(), Code::invalid_argument,
              "the checkpoint this follow job was given is not the model of the publication it follows: " + difference);
  plan->model = published.model;
  plan->model_config = published.model_config;
  return Status::ok();
}

// What each rank sets up on its own (the checkpoint, plan, journal, source); it can fail on some
// ranks only (a missing weights package, a file one node cannot read).
Status set_up_local(const RefitConfig& config, RankState* s) {
  CanonicalBits initial;
  const RefitPlan published = s->core.plan;  // a follower's (join_publication)
  DCR_TRY(load_initial(config, *s->core.control, s->has_model(), &s->core.plan, &initial));
  if (config.role == JobRole::follow) DCR_TRY(keep_published_model(published, &s->core.plan));
  if (s->core.plan.model.tensors.empty()) DCR_TRY(make_preset(config.model, &s->core.plan.model));  // no checkpoint given
  DCR_TRY(make_plan(config, s->core.topology, &s->core.plan));
  if (config.role == JobRole::follow) DCR_TRY(check_plan(s->layout, s->core.plan));
  DCR_TRY(check_serve_dir(*s));
  s->kill = config.fail_at;
  arm_kill_points(config.state_dir, &s->kill);
  s->core.hooks = both(kill_hooks(s->kill), s->world.hooks);
  DCR_TRY(s->core.open_state());
  if (!config.spool_dir.empty()) s->spool = std::make_unique<FrameSpool>(config.spool_dir, config.trainers);
  if (s->store) s->spool = std::make_unique<FrameSpool>(s->store, config.trainers);
  if (s->has_model() || config.from_checkpoints()) DCR_TRY(make_source(*s, initial, &s->source));
  return Status::ok();
}

}  // namespace

Status set_up(const RefitConfig& config, const JobWorld& world, RankState* s) {
  DCR_TRY(check_refit_config(config));  // the same verdict on every rank
  DCR_REQUIRE(!config.compare_bcast || world.mpi != MPI_COMM_NULL, Code::invalid_argument,
              "--compare-bcast times MPI_Bcast: it needs an MPI job (--compare-bcast false elsewhere)");
  s->config = config;
  s->core.config = config;  // the library's part of it
  s->memory.start();
  s->world = world;
  s->core.control = world.control;
  DCR_TRY(make_topology(config, *world.control, &s->core.topology));
  s->core.committed = kNoVersion;  // until the first full sync (version 0) or a resume commits one
  if (!config.store.empty()) {  // before a follower joins: it reads the publication there
    std::unique_ptr<ObjectStore> store;
    DCR_TRY(all_ok(s, open_job_store(config, s->core.topology.world_rank == 0, &store), "opening the store"));
    s->store_counts = std::make_shared<StoreCounts>();
    s->store = counted_store(std::move(store), s->store_counts);
  }
  if (config.role == JobRole::follow) DCR_TRY(join_publication(s));
  DCR_TRY(all_ok(s, set_up_local(s->config, s), "set-up"));
  const Topology& t = s->core.topology;
  if (config.role != JobRole::publish) {  // a publisher job's ranks only talk to the store
    DCR_TRY(world.open_data_plane(config.transport, &s->own_transport));
    s->core.transport = s->core.link = s->own_transport.get();
  }
  if (t.role == Role::trainer && config.link_gbps > 0 && config.role == JobRole::all) {
    RateLimit limit;
    limit.bytes_per_s = config.link_gbps * 1e9 / 8;
    limit.peers = {t.relay_rank(0)};
    s->limited = std::make_unique<RateLimitedTransport>(s->core.transport, limit);
    s->core.link = s->limited.get();
  }
  if (t.role == Role::trainer && t.index == 0 && config.fault.kind != FrameFault::none) {
    s->faulty = frame_fault_transport(s->core.link, config.fault, [s] { return s->core.keys.get(); }, config.encrypt);
    s->core.link = s->faulty.get();
  }
  if (s->spool) {
    if (config.role == JobRole::all) s->core.keep_sent = &s->sent;
    s->spool->set_keys(s->core.keys);
  }
  if (t.role == Role::rollout) {
    s->core.serving = Shard(s->core.plan.manifest, s->core.plan.rollout_holdings[t.index]);
    if (config.compare_full) s->full_serving = Shard(s->core.plan.manifest, s->core.plan.rollout_holdings[t.index]);
  }
  const bool in_bcast = (t.role == Role::trainer && t.index == 0) || t.role == Role::rollout;
  if (config.compare_bcast) MPI_Comm_split(world.mpi, in_bcast ? 0 : MPI_UNDEFINED, t.world_rank, &s->bcast_comm);
  return Status::ok();
}

Status all_ok(RankState* s, const Status& mine, const char* what) {
  if (!mine.is_ok()) {
    DCR_LOG(error, "refit", "%s: %s: %s", s->core.topology.describe().c_str(), what, mine.to_string().c_str());
  }
  const Topology& t = s->core.topology;
  return agree(*s->core.control, mine, what,
               [&t](int rank) { return rank < t.world_size ? t.describe_rank(rank) : "rank " + std::to_string(rank); });
}

void tear_down(RankState* s) {
  if (s->bcast_comm != MPI_COMM_NULL) MPI_Comm_free(&s->bcast_comm);
}

Status adopt_publication(RankState* s, const std::string& on_root) {
  uint64_t words[2] = {0, 0};
  if (s->core.topology.world_rank == 0 && on_root.size() == 32) {
    parse_hex16(on_root.substr(0, 16), &words[0]);
    parse_hex16(on_root.substr(16), &words[1]);
  }
  for (uint64_t& w : words) w = s->core.control->broadcast(w, 0);
  s->core.publication = hex16(words[0]) + hex16(words[1]);
  s->spool->set_publication(s->core.publication);
  DCR_TRY(all_ok(s, s->core.reload_keys(), "reading the key file"));
  s->spool->set_keys(s->core.keys);
  return Status::ok();
}

Status version_exists(RankState* s, uint64_t version, bool* exists) {
  if (s->source) return s->source->has_version(version, *s->core.control, exists);
  *exists = version <= static_cast<uint64_t>(s->config.steps);  // ranks without the change model
  return Status::ok();
}

Status advance_source_to(RankState* s, uint64_t version) {
  if (!s->source) return Status::ok();
  DCR_TRY(s->source->seek(version));
  if (s->core.topology.role != Role::trainer) return Status::ok();
  const RefitPlan& plan = s->core.plan;
  const Holdings& held = plan.trainer_holdings[s->core.topology.index];
  if (plan.served_as_is()) {  // sent from where the source holds it (the step checks it unchanged)
    s->core.current = Shard::view(plan.manifest, held, plan.served_in_place(s->source->bytes()));
    return Status::ok();
  }
  if (s->core.current.holdings().pieces.empty()) s->core.current = Shard(plan.manifest, held);
  const Status loaded = s->core.current.load(plan.served_bytes(s->source->bytes()));
  // A file saved again while it was loaded leaves a torn shard: never encoded, and named as the
  // cause rather than whatever the torn bytes made load() refuse.
  DCR_TRY(s->source->check_unchanged().with_context("version " + std::to_string(version) + " is not used"));
  return loaded.with_context("version " + std::to_string(version));
}

StepIO source_checked(RankState* s, StepIO io, uint64_t version) {
  if (s->core.topology.role != Role::trainer || !s->source) return io;
  io.before_vote = [s, then = io.before_vote, version]() -> Status {
    // The version was read in place while it was sent: a file saved again meanwhile voids it.
    DCR_TRY(s->source->check_unchanged().with_context("version " + std::to_string(version) + " is not committed"));
    return then ? then() : Status::ok();
  };
  return io;
}

Status seek_everywhere(RankState* s, uint64_t version) {
  const Status st = s->has_model() ? advance_source_to(s, version) : Status::ok();
  if (!st.is_ok()) DCR_LOG(error, "refit", "%s: %s", s->core.topology.describe().c_str(), st.to_string().c_str());
  DCR_REQUIRE(all_true(s, st.is_ok()), st.is_ok() ? Code::invalid_argument : st.code(),
              st.is_ok() ? "another rank could not read version " + std::to_string(version) + " (see its message)"
                         : st.message());
  return Status::ok();
}

bool transfer(RankState* s, FrameKind kind, Versions versions, Shard* serving, StepStats* stats) {
  StepIO io;
  io.into = serving;
  return s->core.transfer(kind, versions, io, stats).is_ok();
}

bool run_version(RankState* s, FrameKind kind, Versions versions, const StepIO& io, StepRecord* r, StepStats* stats) {
  barrier(s);
  s->core.stats = StepStats{};
  r->apply = apply_mode_name(s->core.staged() ? ApplyMode::staged : ApplyMode::stream);
  const bool meter = s->core.topology.world_rank == 0;
  ProgressMeter progress(&s->core.progress, versions.target, meter ? s->config.progress_s : 0, s->observer.progress);
  const auto start = Clock::now();
  Status moved;
  r->committed = s->core.run_step(kind, versions, io, &moved);
  progress.stop(r->committed);
  s->step_error = moved;
  r->seconds = seconds_since(start);
  r->commit_s = s->core.stats.commit_s;
  *stats = s->core.stats;
  return r->committed;
}

bool all_true(RankState* s, bool value) { return s->core.control->all_true(value); }

void barrier(RankState* s) { s->core.control->barrier(); }

void record_memory(RankState* s, StepRecord* r) {
  const Topology& t = s->core.topology;
  const uint64_t anon = s->memory.take();
  const uint64_t shard = t.role == Role::trainer ? s->core.baseline.bytes() : t.role == Role::rollout ? s->core.serving.bytes() : 0;
  std::vector<double> most(5, 0);
  most[t.role == Role::trainer ? 0 : t.role == Role::relay ? 1 : 2] = static_cast<double>(anon);
  most[t.role == Role::trainer ? 3 : 4] = static_cast<double>(shard);
  s->core.control->all_max(&most);
  r->trainer_anon = static_cast<uint64_t>(most[0]);
  r->relay_anon = static_cast<uint64_t>(most[1]);
  r->rollout_anon = static_cast<uint64_t>(most[2]);
  r->trainer_shard = static_cast<uint64_t>(most[3]);
  r->rollout_shard = static_cast<uint64_t>(most[4]);
}

void reduce_stats(RankState* s, const StepStats& mine, StepStats* total) {
  const uint64_t sent = s->core.topology.role == Role::trainer ? mine.frames : mine.sent;
  // Every rank learns them: trainers' --contexts auto takes the apply time.
  std::vector<uint64_t> sums = {mine.frames, mine.wire_bytes, mine.changed,        mine.elements,
                                sent,        mine.context_frames, mine.declined_frames, mine.scanned_bytes};
  // Seconds and per-rollout bytes: the slowest or largest rank's.
  std::vector<double> maxima = {mine.encode_s,     mine.send_s,  mine.forward_s, mine.apply_s, mine.wait_s,
                                mine.stage_s,      mine.pause_s, double(mine.received_bytes),
                                double(mine.staged_memory), double(mine.staged_spilled), double(mine.scanned_bytes)};
  s->core.control->all_sum(&sums);
  s->core.control->all_max(&maxima);
  StepStats& t = *total;
  t = StepStats{};
  t.frames = sums[0], t.wire_bytes = sums[1], t.changed = sums[2], t.elements = sums[3], t.sent = sums[4];
  t.context_frames = sums[5], t.declined_frames = sums[6], t.scanned_bytes = sums[7];
  t.encode_s = maxima[0], t.send_s = maxima[1], t.forward_s = maxima[2], t.apply_s = maxima[3], t.wait_s = maxima[4];
  t.stage_s = maxima[5], t.pause_s = maxima[6];
  t.received_bytes = uint64_t(maxima[7]), t.staged_memory = uint64_t(maxima[8]), t.staged_spilled = uint64_t(maxima[9]);
  t.scanned_most = uint64_t(maxima[10]);
}

void record_totals(const StepStats& total, StepRecord* r) {
  r->frames = total.frames;
  r->trainer_frames = total.sent;
  r->wire_bytes = total.wire_bytes;
  r->change_rate = total.elements ? double(total.changed) / total.elements : 0;
  r->scanned_bytes = total.scanned_bytes;
  r->scanned_most = total.scanned_most;
  r->encode_s = total.encode_s;
  r->send_s = total.send_s;
  r->forward_s = total.forward_s;
  r->apply_s = total.apply_s;
  r->context_frames = total.context_frames;
  r->declined_frames = total.declined_frames;
  r->staging_s = total.stage_s;
  r->pause_s = total.pause_s;
  r->received_bytes = total.received_bytes;
  r->staged_memory = total.staged_memory;
  r->staged_spilled = total.staged_spilled;
}

bool verified(RankState* s, const Shard& shard) {
  bool ok = true;
  if (s->core.topology.role == Role::rollout && s->config.verify) {
    std::string difference;
    const Status st = shard.matches(s->core.plan.served_bytes(s->source->bytes()), &ok, &difference);
    if (!st.is_ok()) ok = false, difference = st.to_string();
    // Bits compared with a file saved again meanwhile prove nothing either way: say that, not "bits differ".
    const Status unchanged = s->source->check_unchanged();
    if (!unchanged.is_ok()) ok = false, difference = "cannot verify: " + unchanged.to_string();
    if (!ok) DCR_LOG(error, "refit", "%s: %s", s->core.topology.describe().c_str(), difference.c_str());
  }
  return all_true(s, ok);
}

}  // namespace dcr
