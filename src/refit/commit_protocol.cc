#include "dcr/refit/commit.h"

namespace dcr {

namespace {

Status record(const CommitParty& p, const JournalRecord& r) {
  return p.journal ? p.journal->append(r, true) : Status::ok();
}

bool recorded(const CommitParty& p, const Status& st, const char* what) {
  if (!st.is_ok() && p.report) p.report(st, what);
  return st.is_ok();
}

}  // namespace

bool joint_decision(const CommitParty& p, bool vote, Versions versions) {
  if (vote && p.durable_vote) vote = recorded(p, record(p, {JournalRecord::voted, versions.target, 0, 0}), "journal");
  if (p.before_decision) vote = recorded(p, p.before_decision(), "commit") && vote;
  const JournalRecord committed{JournalRecord::committed, versions.target, versions.base, p.manifest_hash};
  const bool all_yes = p.control->all_true(vote);
  bool decision = false;
  if (p.control->rank() == 0) decision = all_yes && recorded(p, record(p, committed), "journal");
  decision = p.control->broadcast(decision ? 1 : 0, 0) == 1;
  if (decision && p.control->rank() != 0) recorded(p, record(p, committed), "journal");
  return decision;
}

Status agree_on_committed(Collective& control, const Journal* journal, uint64_t manifest_hash, uint64_t* version,
                          int* foreign_rank) {
  uint64_t mine = kNoVersion, base = 0, manifest = 0;
  const bool has = journal && journal->last_committed(&mine, &base, &manifest);
  const bool foreign = has && manifest != manifest_hash;
  const uint64_t first_foreign = control.all_min(foreign ? static_cast<uint64_t>(control.rank()) : kNoVersion);
  if (first_foreign != kNoVersion) {
    *foreign_rank = static_cast<int>(first_foreign);
    return Status(Code::invalid_argument, "the journal of rank " + std::to_string(first_foreign) +
                                              " belongs to another model (manifest hash differs)");
  }
  // kNoVersion is the largest value: take the maximum over the ranks that have a version.
  const uint64_t highest = control.all_max(has ? mine : 0);
  const uint64_t lowest = control.all_min(has ? mine : kNoVersion);
  const bool any = control.all_max(has ? 1 : 0) == 1;
  // Journals of one job differ by at most one version (the root records a decision before the
  // others learn it; compaction keeps only the head). A wider gap is a forged or foreign record.
  DCR_REQUIRE(!any || highest - lowest <= 1, Code::invalid_argument,
              "the journals claim committed versions from " + std::to_string(lowest) + " to " + std::to_string(highest) +
                  "; one job's journals differ by at most one: some were forged or come from another job "
                  "(restore the state directory or start with a fresh one)");
  *version = any ? highest : kNoVersion;
  return Status::ok();
}

}  // namespace dcr
