#include "dcr/refit/endpoint.h"

#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>

#include "dcr/core/hash.h"
#include "dcr/core/log.h"
#include "src/core/files.h"
#include "dcr/journal/journal.h"
#include "dcr/refit/plan.h"
#include "dcr/refit/topology.h"
#include "src/refit/endpoint_core.h"

namespace dcr {

namespace {
// Passes of frames use channels from here on (those below stay free for other traffic); a failed
// pass's stale frames stay on its own channel.
constexpr uint32_t kFirstPassChannel = 16;
constexpr uint32_t kPassChannels = 1u << 30;
}  // namespace

Status EndpointCore::reload_keys() {
  if (config.key_file.empty()) return Status::ok();
  Keyring ring;
  DCR_TRY(Keyring::load(config.key_file, &ring));
  keys = std::make_shared<Keyring>(ring.for_publication(publication));
  return Status::ok();
}

Status EndpointCore::open_state() {
  DCR_TRY(reload_keys());
  if (topology.role == Role::trainer) {
    for (int i = 0; i < config.encode_threads; ++i) encoders.push_back(std::make_unique<FrameEncoder>());
    context_rule.start(config.contexts, config.link_gbps, config.encode_threads);
    const Holdings& held = plan.trainer_holdings[topology.index];
    if (config.baseline_dir.empty()) {
      baseline = Shard(plan.manifest, held);
    } else {
      DCR_TRY(BaselineFile::create(config.baseline_dir, std::to_string(topology.world_rank), plan.manifest, held,
                                   &baseline_file, &baseline));
    }
  }
  if (topology.role == Role::rollout) {
    for (int i = 1; i < config.apply_threads; ++i) more_decoders.push_back(std::make_unique<FrameDecoder>());
  }
  if (config.state_dir.empty()) return Status::ok();
  DCR_TRY(files::make_dirs(config.state_dir, files::kPrivateDir).with_context("state directory"));
  const std::string rank = config.state_dir + "/rank-" + std::to_string(topology.world_rank);
  DCR_TRY(FileLock::acquire(rank + ".lock", "state directory '" + config.state_dir + "'", &state_lock));
  journal = std::make_unique<Journal>();
  return journal->open(rank + ".journal");
}

namespace {

void log_error(const Topology& t, const Status& st) {
  if (!st.is_ok()) DCR_LOG(error, "refit", "%s: %s", t.describe().c_str(), st.to_string().c_str());
}

double since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

uint32_t EndpointCore::next_channel() { return kFirstPassChannel + static_cast<uint32_t>(passes_++ % kPassChannels); }

Status EndpointCore::transfer(FrameKind kind, Versions versions, const StepIO& io, StepStats* out, FrameStage* staged) {
  const Link pass{link,           &topology,   config.window,  config.timeout_s, &hooks,
                  next_channel(), keys.get(), config.encrypt, &context_rule, &progress};
  Status st;
  switch (topology.role) {
    case Role::trainer: {
      std::vector<FrameEncoder*> encode_with;
      for (const auto& e : encoders) encode_with.push_back(e.get());
      std::vector<SharedBytes>* sent = kind == FrameKind::delta && !io.sink ? keep_sent : nullptr;
      if (sent) sent->clear();
      const StepStats before = *out;
      st = trainer_step(plan, pass, topology.index, kind, versions, &baseline, &current, encode_with, out, sent, io.sink);
      if (st.is_ok()) context_rule.observe_sends(out->wire_bytes - before.wire_bytes, out->send_s - before.send_s);
      break;
    }
    case Role::relay:
      st = relay_step(plan, pass, topology.index, versions.target, out, io.feed);
      break;
    case Role::rollout:
      st = rollout_step(plan, pass, topology.index, versions, kind == FrameKind::full, io.into ? io.into : &serving,
                        &decoder, out, staged);
      break;
  }
  log_error(topology, st);
  return st;
}

void EndpointCore::promote() {
  if (topology.role != Role::trainer) return;
  if (config.train_dp == 1) return baseline.copy_from(current);
  std::vector<Box> sent;
  for (const PlannedFrame& f : plan.frames[topology.index]) sent.insert(sent.end(), f.parts.begin(), f.parts.end());
  baseline.copy_from(current, sent);
}

namespace {

// Each tensor's hash over the pieces of `shard` (in their order) as (tensor, hash) pairs.
std::vector<uint8_t> part_hashes(Shard* shard) {
  std::vector<uint64_t> words;
  std::vector<uint64_t> hashes;
  const std::vector<LocalPiece>& pieces = shard->holdings().pieces;
  for (size_t i = 0; i < pieces.size(); ++i) {
    Region region;
    hashes.push_back(shard->region(pieces[i].box, &region).is_ok() ? region_hash(region) : 0);
    if (i + 1 < pieces.size() && pieces[i + 1].box.tensor == pieces[i].box.tensor) continue;
    words.push_back(pieces[i].box.tensor);
    words.push_back(hash64(hashes.data(), hashes.size() * sizeof(uint64_t)));
    hashes.clear();
  }
  const auto* bytes = reinterpret_cast<const uint8_t*>(words.data());
  return std::vector<uint8_t>(bytes, bytes + words.size() * sizeof(uint64_t));
}

}  // namespace

Status EndpointCore::replicas_agree(uint64_t target) {
  const std::vector<std::vector<uint8_t>> all =
      control->all_gather(topology.role == Role::trainer ? part_hashes(&current) : std::vector<uint8_t>());
  const TrainingLayout layout = training_layout(config, plan.rules);
  const int group = layout.tp * layout.fsdp;
  for (int t = 0; t < topology.trainers; ++t) {
    const int first = t - training_coords(layout, t).dp * group;  // its replica 0
    if (first == t || all[t] == all[first]) continue;
    const size_t n = std::min(all[t].size(), all[first].size()) / sizeof(uint64_t);
    size_t at = 0;  // the first differing (tensor, hash) pair
    while (at + 2 <= n && std::memcmp(&all[t][at * 8], &all[first][at * 8], 16) == 0) at += 2;
    uint64_t tensor = 0;
    if (at + 2 <= n) std::memcpy(&tensor, &all[t][at * 8], sizeof tensor);
    const std::string name = tensor < plan.manifest.tensors.size() ? plan.manifest.tensors[tensor].name : "?";
    return Status(Code::invalid_argument,
                  "--check-replicas: version " + std::to_string(target) + " is refused: data-parallel replicas " +
                      topology.describe_rank(topology.trainer_rank(first)) + " and " +
                      topology.describe_rank(topology.trainer_rank(t)) + " hold different bits of tensor '" + name +
                      "' (replicas must hold the same parameters: a training bug)");
  }
  return Status::ok();
}

bool EndpointCore::replicas_refuse(Versions versions, Status* moved) {
  if (!config.check_replicas || config.train_dp == 1) return false;  // one replica: nothing to compare
  *moved = replicas_agree(versions.target);
  if (moved->is_ok()) return false;
  if (topology.world_rank == 0) log_error(topology, *moved);  // every rank found the same
  return true;
}

bool EndpointCore::run_step(FrameKind kind, Versions versions, const StepIO& io, Status* moved) {
  if (staged()) return stage_version(kind, versions, io, moved) && apply_version(kind, versions, moved);
  const auto start = std::chrono::steady_clock::now();
  *moved = Status::ok();
  if (replicas_refuse(versions, moved)) return commit(false, versions);
  if (journal && topology.role == Role::rollout) {
    *moved = journal->append({JournalRecord::begin, versions.base, versions.target, 0}, false).with_context("journal");
    log_error(topology, *moved);
  }
  progress.enter(StepStage::sending, 0);
  const Status sent = transfer(kind, versions, io, &stats);  // every rank takes part, even one that cannot vote yes
  if (moved->is_ok()) *moved = sent;
  if (moved->is_ok() && io.before_vote) log_error(topology, *moved = io.before_vote());
  const auto vote = std::chrono::steady_clock::now();
  progress.stage = StepStage::committing;
  const bool decided = commit(moved->is_ok(), versions);
  progress.stage = StepStage::idle;
  stats.commit_s += since(vote);
  if (topology.role == Role::rollout) stats.pause_s += since(start);  // serving stops for all of a streamed step
  return decided;
}

bool EndpointCore::stage_version(FrameKind kind, Versions versions, const StepIO& io, Status* moved) {
  if (replicas_refuse(versions, moved)) return false;  // every rank alike: nothing staged anywhere
  const auto start = std::chrono::steady_clock::now();
  const bool rollout = topology.role == Role::rollout;
  if (rollout) {
    const std::string spill = config.state_dir.empty() ? "" : config.state_dir + "/rank-" + std::to_string(topology.world_rank) + ".stage";
    stage.start(config.stage_mb << 20, spill);
  }
  progress.enter(rollout ? StepStage::staging : StepStage::sending, 0);
  *moved = transfer(kind, versions, io, &stats, rollout ? &stage : nullptr);
  if (moved->is_ok() && io.before_vote) log_error(topology, *moved = io.before_vote());
  progress.stage = StepStage::staging;  // until every rollout holds the version
  const bool everywhere = control->all_true(moved->is_ok());
  if (rollout) stats.stage_s += since(start);
  if (!everywhere) stage.clear(), progress.stage = StepStage::idle;
  return everywhere;
}

bool EndpointCore::apply_version(FrameKind kind, Versions versions, Status* moved) {
  const auto start = std::chrono::steady_clock::now();
  progress.stage = StepStage::applying;  // a rollout's counts restart with its applies (apply_staged)
  if (topology.role == Role::rollout) {
    *moved = journal ? journal->append({JournalRecord::begin, versions.base, versions.target, 0}, false).with_context("journal")
                     : Status::ok();
    const Link pass{link, &topology, config.window, config.timeout_s, &hooks, 0, keys.get(), config.encrypt, nullptr, &progress};
    std::vector<FrameDecoder*> decoders = {&decoder};
    for (const auto& d : more_decoders) decoders.push_back(d.get());
    if (moved->is_ok()) *moved = apply_staged(&stage, pass, versions, kind == FrameKind::full, &serving, decoders, &stats);
    log_error(topology, *moved);
    stage.clear();
    progress.stage = StepStage::committing;
  }
  const auto vote = std::chrono::steady_clock::now();
  const bool decided = commit(moved->is_ok(), versions);
  progress.stage = StepStage::idle;
  stats.commit_s += since(vote);
  if (topology.role == Role::rollout) stats.pause_s += since(start);  // until this rollout may serve again
  return decided;
}

bool EndpointCore::commit(bool vote, Versions versions) {
  auto report = [this](const Status& st, const char* what) {
    if (!st.is_ok()) DCR_LOG(error, "refit", "%s: %s: %s", topology.describe().c_str(), what, st.to_string().c_str());
  };
  CommitParty party;
  party.control = control;
  party.journal = journal.get();
  party.durable_vote = topology.role == Role::rollout;
  party.manifest_hash = plan.manifest.hash();
  party.keys = keys.get();
  party.before_decision = [this, versions] {
    return hooks.at ? hooks.at(topology, Phase::commit, versions.target) : Status::ok();
  };
  party.report = report;
  if (!joint_decision(party, vote, versions)) return false;
  // After a commit the journal needs only the version chain's head and the newest snapshot.
  if (journal) {
    std::vector<JournalRecord> keep = {{JournalRecord::committed, versions.target, versions.base, party.manifest_hash}};
    uint64_t snapshot = 0;
    if (journal->last_snapshot(&snapshot)) keep.push_back({JournalRecord::snapshot, snapshot, 0, 0});
    report(journal->compact(keep), "journal compaction");
  }
  promote();
  committed = versions.target;
  return true;
}

Status EndpointCore::step(uint64_t proposed, const std::function<Status(uint64_t)>& check, bool* closed) {
  DCR_TRY(begin_step(proposed, check, closed));
  return finish_step();
}

Status EndpointCore::begin_step(uint64_t proposed, const std::function<Status(uint64_t)>& check, bool* closed) {
  *closed = false;
  DCR_REQUIRE(!job_closed, Code::invalid_argument,
              topology.describe() + ": the job was closed (Trainer::close); this endpoint takes no more steps");
  DCR_REQUIRE(!pending_, Code::invalid_argument,
              topology.describe() + ": version " + std::to_string(pending_versions_.target) +
                  " is staged and not yet applied (Rollout::apply)");
  stats = StepStats{};
  settled_ = false;
  const uint64_t target = control->broadcast(proposed, 0);
  if (target == kNoVersion) {
    *closed = job_closed = settled_ = true;
    return Status::ok();
  }
  const std::string name = "version " + std::to_string(target);
  const Status ready = check ? check(target) : Status::ok();
  log_error(topology, ready);
  if (!control->all_true(ready.is_ok())) {
    return ready.is_ok() ? Status(Code::aborted, name + " was refused by a rank before anything was sent (see its message)")
                         : ready;
  }
  const bool full = committed == kNoVersion || resumed || (failed != kNoVersion && failed != target);
  const Versions versions = full ? Versions{target, target} : Versions{committed, target};
  const FrameKind kind = full ? FrameKind::full : FrameKind::delta;
  Status moved;
  if (!staged()) {
    settled_ = true;
    return run_step(kind, versions, StepIO{}, &moved) ? committed_step() : not_committed(target, moved);
  }
  if (!stage_version(kind, versions, StepIO{}, &moved)) return not_committed(target, moved);
  pending_ = true;
  pending_kind_ = kind;
  pending_versions_ = versions;
  return Status::ok();
}

Status EndpointCore::finish_step() {
  if (settled_) return Status::ok();  // closed, or streamed and committed by begin_step
  DCR_REQUIRE(pending_, Code::invalid_argument,
              topology.describe() + ": no version is staged (stage() failed or was not called): nothing to apply");
  pending_ = false;
  settled_ = true;
  Status moved;
  if (!apply_version(pending_kind_, pending_versions_, &moved)) return not_committed(pending_versions_.target, moved);
  return committed_step();
}

Status EndpointCore::committed_step() {
  failed = kNoVersion;
  resumed = false;
  return Status::ok();
}

Status EndpointCore::not_committed(uint64_t target, const Status& moved) {
  failed = target;
  const std::string name = "version " + std::to_string(target);
  return moved.is_ok() ? Status(Code::aborted, name + " was not committed: another rank failed (see its message)")
                       : moved.with_context(name + " was not committed");
}

// The library's set-up of one endpoint: the topology and plan from the spec, alike on every rank.
Status set_up_endpoint(const EndpointSpec& spec, Transport* t, Collective* c, Role role, EndpointCore* core) {
  DCR_REQUIRE(t != nullptr && c != nullptr, Code::invalid_argument, "an endpoint needs a transport and a collective");
  DCR_REQUIRE(t->size() == c->size() && t->rank() == c->rank(), Code::invalid_argument,
              "the transport (rank " + std::to_string(t->rank()) + " of " + std::to_string(t->size()) +
                  ") and the collective (rank " + std::to_string(c->rank()) + " of " + std::to_string(c->size()) +
                  ") must span the same ranks");
  DCR_REQUIRE(!spec.manifest.tensors.empty(), Code::invalid_argument, "the endpoint spec has no tensors");
  core->config = spec.options;
  if (core->config.relays < 0) core->config.relays = 1;
  RefitOptions checked = core->config;  // keys in the spec stand for a key file (encrypt needs one or the other)
  if (!spec.keys.keys().empty() && checked.key_file.empty()) checked.key_file = "the spec's keys";
  DCR_TRY(check_refit_options(checked));
  core->transport = core->link = t;
  core->control = c;
  core->hooks = spec.hooks;
  if (!spec.keys.keys().empty()) core->keys = std::make_shared<Keyring>(spec.keys);
  // Every rank on one node: the tree is the same for all.
  DCR_TRY(make_topology_from_nodes(core->config, c->rank(), std::vector<int>(static_cast<size_t>(c->size()), 0),
                                   &core->topology));
  DCR_REQUIRE(core->topology.role == role, Code::invalid_argument,
              "rank " + std::to_string(c->rank()) + " is a " + role_name(core->topology.role) + " in this job, not a " +
                  role_name(role) + " (ranks: trainers first, then relays, then rollouts)");
  DCR_TRY(spec.manifest.validate());
  core->plan.model = spec.manifest;
  core->plan.model_config = spec.model_config;
  DCR_TRY(make_plan(core->config, core->topology, &core->plan));
  return core->open_state();
}

// The job's committed version from the journals (collective), for a resumed job.
Status agree_on_start(EndpointCore* core) {
  uint64_t version = kNoVersion;
  int foreign = -1;
  DCR_TRY(agree_on_committed(*core->control, core->journal.get(), core->plan.manifest.hash(), &version, &foreign));
  core->committed = version;
  core->resumed = version != kNoVersion;
  return Status::ok();
}

// Collective set-up: a rank that fails makes every rank fail (none waits for it in a collective).
Status create_core(const EndpointSpec& spec, Transport* transport, Collective* control, Role role,
                   std::unique_ptr<EndpointCore>* out) {
  auto core = std::make_unique<EndpointCore>();
  const Status mine = set_up_endpoint(spec, transport, control, role, core.get());
  if (control == nullptr) return mine;
  DCR_TRY(agree(*control, mine, "endpoint set-up"));
  DCR_TRY(agree_on_start(core.get()));
  *out = std::move(core);
  return Status::ok();
}

// ---- Trainer

Trainer::Trainer() = default;
Trainer::~Trainer() = default;

Status Trainer::create(const EndpointSpec& spec, Transport* transport, Collective* control,
                       std::unique_ptr<Trainer>* out) {
  std::unique_ptr<Trainer> trainer(new Trainer());
  DCR_TRY(create_core(spec, transport, control, Role::trainer, &trainer->core_));
  *out = std::move(trainer);
  return Status::ok();
}

const Holdings& Trainer::holdings() const { return core_->plan.trainer_holdings[core_->topology.index]; }
uint64_t Trainer::committed() const { return core_->committed; }
const StepStats& Trainer::last_step() const { return core_->stats; }

Status Trainer::publish(uint64_t version, const std::vector<BufferMemory>& shard) {
  EndpointCore& c = *core_;
  // Trainer 0's version is the step's; the others must publish the same one.
  auto check = [&](uint64_t named) {
    DCR_REQUIRE(version == named, Code::invalid_argument,
                c.topology.describe() + " publishes version " + std::to_string(version) + " while trainer 0 publishes " +
                    std::to_string(named));
    DCR_REQUIRE(c.committed == kNoVersion || version > c.committed, Code::invalid_argument,
                "version " + std::to_string(version) + " is not above the committed " + std::to_string(c.committed));
    return Shard::attach(c.plan.manifest, holdings(), shard, &c.current).with_context(c.topology.describe());
  };
  bool closed = false;
  return c.step(version, check, &closed);
}

Status Trainer::close() {
  bool closed = false;
  return core_->step(kNoVersion, nullptr, &closed);
}

// ---- Relay

Relay::Relay() = default;
Relay::~Relay() = default;

Status Relay::create(const EndpointSpec& spec, Transport* transport, Collective* control, std::unique_ptr<Relay>* out) {
  std::unique_ptr<Relay> relay(new Relay());
  DCR_TRY(create_core(spec, transport, control, Role::relay, &relay->core_));
  *out = std::move(relay);
  return Status::ok();
}

Status Relay::step(bool* closed) { return core_->step(kNoVersion, nullptr, closed); }
uint64_t Relay::committed() const { return core_->committed; }
const StepStats& Relay::last_step() const { return core_->stats; }

Status Relay::serve() {
  for (;;) {
    bool closed = false;
    const Status st = step(&closed);
    if (closed) return Status::ok();
    if (core_->job_closed) return st;  // serve() called again after the job ended
    if (!st.is_ok()) DCR_LOG(warn, "endpoint", "%s: %s", core_->topology.describe().c_str(), st.to_string().c_str());
  }
}

// ---- Rollout

Rollout::Rollout() = default;
Rollout::~Rollout() = default;

Status Rollout::create(const EndpointSpec& spec, Transport* transport, Collective* control,
                       std::unique_ptr<Rollout>* out) {
  std::unique_ptr<Rollout> rollout(new Rollout());
  DCR_TRY(create_core(spec, transport, control, Role::rollout, &rollout->core_));
  *out = std::move(rollout);
  return Status::ok();
}

const Holdings& Rollout::holdings() const { return core_->plan.rollout_holdings[core_->topology.index]; }
uint64_t Rollout::committed() const { return core_->committed; }
const StepStats& Rollout::last_step() const { return core_->stats; }

Status Rollout::attach(const std::vector<BufferMemory>& memory) {
  return Shard::attach(core_->plan.manifest, holdings(), memory, &core_->serving);
}

namespace {

Status check_attached(const EndpointCore& c) {
  return c.serving.holdings().pieces.empty() ? Status(Code::invalid_argument, c.topology.describe() + " has no buffers attached")
                                             : Status::ok();
}

}  // namespace

Status Rollout::receive(uint64_t* version, bool* closed) {
  DCR_TRY(core_->begin_step(kNoVersion, [this](uint64_t) { return check_attached(*core_); }, closed));
  return apply(version);
}

Status Rollout::stage(uint64_t* version, bool* closed) {
  EndpointCore& c = *core_;
  DCR_REQUIRE(c.config.apply == ApplyMode::staged, Code::invalid_argument,
              c.topology.describe() + ": stage() needs the job's option apply=staged (it is apply=stream: use receive())");
  DCR_TRY(c.begin_step(kNoVersion, [&c](uint64_t) { return check_attached(c); }, closed));
  *version = c.pending() ? c.pending_target() : c.committed;
  return Status::ok();
}

Status Rollout::apply(uint64_t* version) {
  DCR_TRY(core_->finish_step());
  *version = core_->committed;
  return Status::ok();
}

}  // namespace dcr
