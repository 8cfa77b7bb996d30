#include "dcr/refit/endpoint.h"

#include <filesystem>
#include <functional>

#include "dcr/core/log.h"
#include "dcr/journal/journal.h"
#include "dcr/refit/plan.h"
#include "dcr/refit/topology.h"

namespace dcr {

namespace {
// Step channels start above the harness's frame channel; a failed step's stale frames stay on its
// own channel and are never taken by a later step.
constexpr uint32_t kFirstStepChannel = 16;
constexpr uint32_t kStepChannels = 1u << 30;
}  // namespace

// What one endpoint holds, whatever its role, and the step every role takes together.
class EndpointCore {
 public:
  Status set_up(const EndpointSpec& spec, Transport* transport, Collective* control, Role role);

  // One step: trainer 0 names `proposed` (kNoVersion ends the job: *closed), every rank checks it
  // is ready for the named version (`check`, null: ready), the frames move and the job commits.
  Status step(uint64_t proposed, const std::function<Status(uint64_t)>& check, bool* closed);

  Topology topology;
  RefitPlan plan;
  RefitConfig config;
  Transport* transport = nullptr;
  Collective* control = nullptr;
  KillPoint fault;
  std::unique_ptr<Journal> journal;
  std::vector<std::unique_ptr<FrameEncoder>> encoders;
  FrameDecoder decoder;
  Shard baseline, current;  // trainers: the last committed shard, and the caller's memory
  Shard serving;            // rollouts: the caller's memory
  bool attached = false;
  uint64_t committed = kNoVersion;
  uint64_t failed = kNoVersion;  // the target of a step that did not commit since the last commit
  bool resumed = false;          // the first step after a resume goes as full frames
  uint64_t steps = 0;
  uint64_t target = kNoVersion;  // of the current step
  StepStats stats;

 private:
  Status open_journal();
  Status transfer(FrameKind kind, Versions versions, uint32_t channel);
  bool commit(bool vote, Versions versions);
};

Status EndpointCore::set_up(const EndpointSpec& spec, Transport* t, Collective* c, Role role) {
  DCR_REQUIRE(t != nullptr && c != nullptr, Code::invalid_argument, "an endpoint needs a transport and a collective");
  DCR_REQUIRE(t->size() == c->size() && t->rank() == c->rank(), Code::invalid_argument,
              "the transport (rank " + std::to_string(t->rank()) + " of " + std::to_string(t->size()) +
                  ") and the collective (rank " + std::to_string(c->rank()) + " of " + std::to_string(c->size()) +
                  ") must span the same ranks");
  DCR_REQUIRE(!spec.manifest.tensors.empty(), Code::invalid_argument, "the endpoint spec has no tensors");
  config = spec.job;
  if (config.relays < 0) config.relays = 1;
  DCR_TRY(check_refit_config(config));
  transport = t;
  control = c;
  fault = spec.fault;
  // Every rank on one node: the tree is the same for all; the caller's ranks say where they are.
  DCR_TRY(make_topology_from_nodes(config, c->rank(), std::vector<int>(static_cast<size_t>(c->size()), 0), &topology));
  DCR_REQUIRE(topology.role == role, Code::invalid_argument,
              "rank " + std::to_string(c->rank()) + " is a " + role_name(topology.role) + " in this job, not a " +
                  role_name(role) + " (ranks: trainers first, then relays, then rollouts)");
  plan.manifest = spec.manifest;
  plan.model_config = spec.model_config;
  DCR_TRY(spec.manifest.validate());
  DCR_TRY(make_plan(config, topology, &plan));
  DCR_TRY(open_journal());
  if (role == Role::trainer) {
    for (int i = 0; i < config.encode_threads; ++i) encoders.push_back(std::make_unique<FrameEncoder>());
    baseline = Shard(plan.manifest, plan.trainer_holdings[topology.index]);
  }
  return Status::ok();
}

Status EndpointCore::open_journal() {
  if (config.state_dir.empty()) return Status::ok();
  std::error_code error;
  std::filesystem::create_directories(config.state_dir, error);
  DCR_REQUIRE(!error, Code::io_error, "cannot create state directory '" + config.state_dir + "': " + error.message());
  journal = std::make_unique<Journal>();
  return journal->open(config.state_dir + "/rank-" + std::to_string(topology.world_rank) + ".journal");
}

Status EndpointCore::transfer(FrameKind kind, Versions versions, uint32_t channel) {
  const Link link{transport, &topology, config.window, config.timeout_s, &fault, channel};
  std::vector<FrameEncoder*> encode_with;
  for (const auto& e : encoders) encode_with.push_back(e.get());
  switch (topology.role) {
    case Role::trainer:
      return trainer_step(plan, link, topology.index, kind, versions, &baseline, &current, FrameFault{}, encode_with,
                          &stats, nullptr);
    case Role::relay:
      return relay_step(plan, link, topology.index, versions.target, &stats);
    case Role::rollout:
      return rollout_step(plan, link, topology.index, versions, kind == FrameKind::full, &serving, &decoder, &stats);
  }
  return Status::ok();
}

bool EndpointCore::commit(bool vote, Versions versions) {
  CommitParty party;
  party.control = control;
  party.journal = journal.get();
  party.durable_vote = topology.role == Role::rollout;
  party.manifest_hash = plan.manifest.hash();
  party.before_decision = [this, versions] { return fault_point(fault, topology, Phase::commit, versions.target); };
  party.report = [this](const Status& st, const char* what) {
    DCR_LOG(error, "endpoint", "%s: %s: %s", topology.describe().c_str(), what, st.to_string().c_str());
  };
  return joint_decision(party, vote, versions);
}

Status EndpointCore::step(uint64_t proposed, const std::function<Status(uint64_t)>& check, bool* closed) {
  *closed = false;
  stats = StepStats{};
  target = control->broadcast(proposed, 0);
  if (target == kNoVersion) {
    *closed = true;
    return Status::ok();
  }
  const std::string name = "version " + std::to_string(target);
  const Status ready = check ? check(target) : Status::ok();
  if (!ready.is_ok()) DCR_LOG(error, "endpoint", "%s: %s", topology.describe().c_str(), ready.to_string().c_str());
  if (!control->all_true(ready.is_ok())) {
    return ready.is_ok() ? Status(Code::aborted, name + " was refused by a rank before anything was sent (see its message)")
                         : ready;
  }
  // Deltas from the committed version; full frames for the first version, after a resume, and when
  // a failed version is abandoned for another (its boxes may hold neither base nor target).
  const bool full = committed == kNoVersion || resumed || (failed != kNoVersion && failed != target);
  const Versions versions = full ? Versions{target, target} : Versions{committed, target};
  const uint32_t channel = kFirstStepChannel + static_cast<uint32_t>(steps++ % kStepChannels);
  if (journal && topology.role == Role::rollout) {
    DCR_TRY(journal->append({JournalRecord::begin, versions.base, target, 0}, false));
  }
  const Status moved = transfer(full ? FrameKind::full : FrameKind::delta, versions, channel);
  if (!moved.is_ok()) DCR_LOG(error, "endpoint", "%s: %s", topology.describe().c_str(), moved.to_string().c_str());
  if (!commit(moved.is_ok(), versions)) {
    failed = target;
    return moved.is_ok() ? Status(Code::aborted, name + " was not committed: another rank failed (see its message)")
                         : moved.with_context(name + " was not committed");
  }
  if (topology.role == Role::trainer) baseline.copy_from(current);
  committed = target;
  failed = kNoVersion;
  resumed = false;
  return Status::ok();
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
  const Status mine = core->set_up(spec, transport, control, role);
  if (control == nullptr) return mine;
  const uint64_t first = control->all_min(mine.is_ok() ? kNoVersion : static_cast<uint64_t>(control->rank()));
  if (!mine.is_ok()) return mine;
  DCR_REQUIRE(first == kNoVersion, Code::aborted,
              "endpoint set-up failed on rank " + std::to_string(first) + " (see its message)");
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
  DCR_REQUIRE(version != kNoVersion, Code::invalid_argument, "no version to publish");
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

Status Relay::serve() {
  for (;;) {
    bool closed = false;
    const Status st = core_->step(kNoVersion, nullptr, &closed);
    if (closed) return Status::ok();
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
  DCR_TRY(Shard::attach(core_->plan.manifest, holdings(), memory, &core_->serving));
  core_->attached = true;
  return Status::ok();
}

Status Rollout::receive(uint64_t* version, bool* closed) {
  EndpointCore& c = *core_;
  auto check = [&](uint64_t) {
    return c.attached ? Status::ok() : Status(Code::invalid_argument, c.topology.describe() + " has no buffers attached");
  };
  DCR_TRY(c.step(kNoVersion, check, closed));
  *version = c.committed;
  return Status::ok();
}

}  // namespace dcr
