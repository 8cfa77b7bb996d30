// dcr as a library: the trainer, relay and rollout endpoints a training framework and a serving
// engine call. Each endpoint lives on the caller's memory and the caller's communicator (a data
// Transport and a control Collective of the same ranks, in the same order): nothing global, and
// several endpoints can live in one process (the unit tests run a whole job on threads).
//
// Every version is one step that all endpoints of the job take together: trainer 0 names the
// version, every trainer checks its shard, the trainers stream frames through the relay tree, the
// rollouts apply them in place, and the job commits jointly (commit.h). A step that fails anywhere
// commits nothing; the next publish retries (a retry of the same version as deltas, whose frames
// skip boxes that already hold the target by hash, so no XOR is applied twice; another version as
// full frames, which apply over anything).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "dcr/auth/keyring.h"
#include "dcr/core/status.h"
#include "dcr/core/tensor.h"
#include "dcr/layout/shard.h"
#include "dcr/refit/collective.h"
#include "dcr/refit/commit.h"
#include "dcr/refit/options.h"
#include "dcr/refit/roles.h"
#include "dcr/transport/transport.h"

namespace dcr {

// What every endpoint of one job is given alike.
struct EndpointSpec {
  // The job's shape and knobs (dcr/refit/options.h); relays -1 means one. state_dir: journals, for
  // durable votes and commits (empty: none).
  RefitOptions options;
  Manifest manifest;            // the canonical tensors (checkpoint names, dtypes, shapes)
  nlohmann::json model_config;  // the checkpoint's config.json for the family rules (null: none)
  Keyring keys;                 // the job keys when job.key_file is empty (none: frames unauthenticated)
  StepHooks hooks;              // called at each phase point of every step (roles.h); tests inject failures here
};

class EndpointCore;  // the state and the step all three roles share (src/refit/endpoint.cc)

class Trainer {
 public:
  // On collective rank r < trainers. invalid_argument when the rank is not a trainer, the ranks of
  // `transport` and `control` differ, or the layout does not fit the manifest. Collective.
  static Status create(const EndpointSpec& spec, Transport* transport, Collective* control,
                       std::unique_ptr<Trainer>* out);
  ~Trainer();

  // The buffers this trainer holds (its FSDP/TP shard): names, sizes, shapes and dtypes, in the
  // order publish wants them.
  const Holdings& holdings() const;
  // Streams `version` from `shard` (one BufferMemory per holdings buffer, read as it is now) and
  // returns once the job decided: ok when committed, aborted (naming the cause where this rank
  // knows it) when not. Every trainer calls it with the same version, above the committed one and
  // below kNoVersion (UINT64_MAX, which close() sends).
  Status publish(uint64_t version, const std::vector<BufferMemory>& shard);
  // Ends the job for every endpoint: relays return from serve(), rollouts from receive() closed.
  // Every call after it, on any endpoint of the job, fails at once with invalid_argument.
  // Every trainer calls it.
  Status close();

  uint64_t committed() const;  // kNoVersion before the first commit
  const StepStats& last_step() const;

 private:
  Trainer();
  std::unique_ptr<EndpointCore> core_;
};

class Relay {
 public:
  static Status create(const EndpointSpec& spec, Transport* transport, Collective* control,
                       std::unique_ptr<Relay>* out);
  ~Relay();
  // Forwards every step's frames, undecoded, until the trainers close the job. A failed step is
  // logged and voted down; serving goes on.
  Status serve();
  // One step of serve(): forwards one version's frames and takes part in its commit; *closed is
  // set, with ok, when the trainers closed the job.
  Status step(bool* closed);

  uint64_t committed() const;
  const StepStats& last_step() const;

 private:
  Relay();
  std::unique_ptr<EndpointCore> core_;
};

class Rollout {
 public:
  // `memory`: one BufferMemory per holdings buffer (the serving layout: fused qkv_proj and
  // gate_up_proj, vocabulary padded, ...), which the caller keeps alive and in place.
  static Status create(const EndpointSpec& spec, Transport* transport, Collective* control,
                       std::unique_ptr<Rollout>* out);
  ~Rollout();

  const Holdings& holdings() const;
  // Attaches the caller's buffers (before the first receive; again to move them).
  Status attach(const std::vector<BufferMemory>& memory);
  // Takes part in the next step: applies the version in place into the caller's buffers, verified
  // frame by frame, and returns ok with *version committed; aborted when the job did not commit
  // (under apply=stream the buffers may hold part of it: the retry completes it). *closed is set,
  // with ok, when the trainers closed the job. Under apply=staged it is stage() then apply().
  Status receive(uint64_t* version, bool* closed);

  // apply=staged, the two halves of a step for a serving engine. stage() receives, authenticates
  // and checks the next version's frames without touching the buffers (the engine keeps
  // generating with the committed weights) and returns when every rollout of the job holds it
  // (*version: the staged version) or the step failed (aborted: nothing applied anywhere). apply()
  // is the pause: it applies the staged version into the buffers and returns when the job
  // committed it (*version). The engine pauses its generation between the two. The first
  // version of a job, with nothing served yet, streams: stage() returns with it committed and
  // apply() has nothing left to do. apply() after a failed stage() is refused (invalid_argument).
  // The trainers' publish() returns after the apply.
  Status stage(uint64_t* version, bool* closed);
  Status apply(uint64_t* version);

  uint64_t committed() const;
  const StepStats& last_step() const;

 private:
  Rollout();
  std::unique_ptr<EndpointCore> core_;
};

}  // namespace dcr
