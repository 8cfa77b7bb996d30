// Deterministic fault injection for the fault tests (never set in production runs):
//  --fault wrong-base@V | corrupt@V        trainer 0 sends a delta naming a wrong base, or flips a
//                                          payload bit of its first frame, for version V;
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
// Endpoint tests on threads use the same points with `fail` set: the rank's step returns an error
// there instead (once), as a rank that stopped would leave it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dcr/core/status.h"
#include "dcr/refit/topology.h"

namespace dcr {

enum class Phase { encode, stream, apply, commit, resume };
const char* phase_name(Phase phase);

struct FrameFault {
  enum Kind { none, wrong_base, corrupt, forge, unsealed } kind = none;
  uint64_t version = 0;
};

struct KillPoint {
  bool armed = false;
  Role role = Role::trainer;
  int index = 0;
  Phase phase = Phase::encode;
  uint64_t version = 0;
  std::string text;    // as given (--fail-at), for messages and round trips
  std::string marker;  // file that records the kill happened (empty: no state directory; arm_kill_points)
  bool fail = false;   // return an error (once) instead of killing the process
  bool stop = false;   // SIGSTOP instead of SIGKILL (":stop")
  mutable bool fired = false;
  std::vector<KillPoint> more;  // further points of the same --fail-at
};

Status parse_frame_fault(const std::string& text, FrameFault* fault);
std::string frame_fault_text(const FrameFault& fault);  // "corrupt@3", "" for none
Status parse_kill_point(const std::string& text, KillPoint* point);
// With a state directory each point fires once: its marker file there remembers it.
void arm_kill_points(const std::string& state_dir, KillPoint* point);

// If `point` names this rank, phase and version (and has not fired before): kills this process, or
// with `fail` returns Code::aborted naming the injected failure. Otherwise ok.
Status fault_point(const KillPoint& point, const Topology& topology, Phase phase, uint64_t version);

}  // namespace dcr
