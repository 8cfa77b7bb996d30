// Deterministic fault injection for the fault tests (never set in production runs), all from
// outside the library: kill points ride the library's step hooks (StepHooks), frame faults a
// decorator of the trainer's transport.
//  --fault wrong-base@V | corrupt@V        trainer 0 sends deltas naming a wrong base, or flips a
//                                          payload bit of its first frame of each pass, for version V;
//  --fault forge@V | unsealed@V            (with a key file) trainer 0 sends its first frame of V
//                                          sealed under a forged key of the same id (its XXH3 hashes
//                                          all consistent), or without a MAC;
//  --fail-at ROLE:INDEX:PHASE:V[,...]      that rank kills itself (SIGKILL, like kill -9) in PHASE of
//                                          version V: encode | stream | apply | commit | resume (while
//                                          the job resumes at V). With a state directory each point
//                                          fires once (a marker file remembers it), so running the
//                                          same command again resumes past it. Several points, comma
//                                          separated, kill several ranks (at once, or one per run).
//  --fail-at ROLE:INDEX:PHASE:V:stop       that rank stops itself (SIGSTOP) there instead, so that a
//                                          harness can kill its whole node at that point (the
//                                          cluster tests); SIGCONT lets it go on.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dcr/auth/keyring.h"
#include "dcr/core/status.h"
#include "dcr/refit/roles.h"
#include "dcr/refit/topology.h"
#include "dcr/transport/transport.h"

namespace dcr {

struct FrameFault {
  enum Kind { none, wrong_base, corrupt, forge, unsealed } kind = none;
  uint64_t version = 0;
};

struct KillPoint {
  bool armed = false;
  Role role = Role::trainer;
  int index = 0;
  Phase phase = Phase::encode;  // a step's phase point, unless at_resume
  bool at_resume = false;       // while the job resumes at `version` (src/job/recovery.cc)
  uint64_t version = 0;
  std::string text;    // as given (--fail-at), for messages and round trips
  std::string marker;  // file that records the kill happened (empty: no state directory; arm_kill_points)
  bool stop = false;   // SIGSTOP instead of SIGKILL (":stop")
  std::vector<KillPoint> more;  // further points of the same --fail-at
};

Status parse_frame_fault(const std::string& text, FrameFault* fault);
std::string frame_fault_text(const FrameFault& fault);  // "corrupt@3", "" for none
Status parse_kill_point(const std::string& text, KillPoint* point);
// With a state directory each point fires once: its marker file there remembers it.
void arm_kill_points(const std::string& state_dir, KillPoint* point);

// If `point` names this rank, phase (or the resume) and version, and has not fired in an earlier
// run: kills this process (or stops it). Otherwise returns.
void kill_point(const KillPoint& point, const Topology& topology, Phase phase, uint64_t version);
void kill_point_at_resume(const KillPoint& point, const Topology& topology, uint64_t version);
// The step hooks that reach `point` (which must outlive them).
StepHooks kill_hooks(const KillPoint& point);

// Trainer 0's link with `fault` applied to the frames of its version as they are sent; `keys` (the
// job's keys, read again each version) opens and reseals a sealed frame. Wraps `inner`, which must
// outlive it.
std::unique_ptr<Transport> frame_fault_transport(Transport* inner, FrameFault fault,
                                                 std::function<const Keyring*()> keys, bool encrypt);

}  // namespace dcr
