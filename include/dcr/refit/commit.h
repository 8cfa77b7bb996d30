// The two-phase joint commit and the agreement on the committed version on resume, over the
// control collective and each rank's journal. Rank 0 of the collective is the root. No MPI here:
// the same code runs under mpirun and on threads in one process (tests/refit/test_commit.cc).
#pragma once

#include <cstdint>
#include <functional>

#include "dcr/auth/keyring.h"
#include "dcr/codec/encoder.h"
#include "dcr/core/status.h"
#include "dcr/core/version.h"
#include "dcr/journal/journal.h"
#include "dcr/refit/collective.h"

namespace dcr {

struct CommitParty {
  Collective* control = nullptr;
  Journal* journal = nullptr;  // null without durable state
  bool durable_vote = false;   // rollouts: a yes is recorded (fsync'ed) before it is cast
  uint64_t manifest_hash = 0;
  const Keyring* keys = nullptr;  // with a job key the root's decision carries an HMAC-SHA-256 tag
  std::function<Status()> before_decision;                   // the fault injector's point: an error votes no
  std::function<void(const Status&, const char*)> report;    // a journal write that failed, and what it was
};

// Phase 1: every rank votes (a rank whose yes cannot be made durable, or whose before_decision
// fails, votes no). The root commits
// only if all voted yes, and records the decision durably before anyone learns it (a root that
// cannot record it decides no). Phase 2: every rank learns the decision and records it. Returns it.
// With keys, a commit reaches the other ranks with the root's tag over (target, base, manifest); a
// rank whose check fails does not record it and returns no (naming the forged decision).
bool joint_decision(const CommitParty& p, bool vote, Versions versions);

// The job's committed version on resume: the highest that any rank's journal proves committed
// (a rank records "committed v" only after the root decided v, so any such record proves it), or
// kNoVersion. Every rank learns it. A journal of another model on any rank is refused on every
// rank (invalid_argument; *foreign_rank names the first such rank), and so are journals whose
// versions differ by more than one (one job's never do).
Status agree_on_committed(Collective& control, const Journal* journal, uint64_t manifest_hash, uint64_t* version,
                          int* foreign_rank);

}  // namespace dcr
