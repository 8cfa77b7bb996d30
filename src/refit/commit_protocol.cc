#include "dcr/refit/commit.h"

#include <cstdio>
#include <string>

#include "dcr/auth/seal.h"

namespace dcr {

namespace {

Status record(const CommitParty& p, const JournalRecord& r) {
  return p.journal ? p.journal->append(r, true) : Status::ok();
}

bool recorded(const CommitParty& p, const Status& st, const char* what) {
  if (!st.is_ok() && p.report) p.report(st, what);
  return st.is_ok();
}

std::string decision_text(const CommitParty& p, Versions versions) {
  return "dcr commit decision: target " + std::to_string(versions.target) + " base " + std::to_string(versions.base) +
         " manifest " + std::to_string(p.manifest_hash);
}

// The root's tag over a commit, sent as its key id and four 64-bit words; every other rank checks it.
bool authenticated(const CommitParty& p, Versions versions) {
  const std::string text = decision_text(p, versions);
  uint32_t key_id = 0;
  std::string hex = p.control->rank() == 0 ? text_tag(*p.keys, text, &key_id) : std::string(64, '0');
  key_id = static_cast<uint32_t>(p.control->broadcast(key_id, 0));
  for (int w = 0; w < 4; ++w) {
    const uint64_t word = p.control->broadcast(std::stoull(hex.substr(16 * w, 16), nullptr, 16), 0);
    char part[17];
    std::snprintf(part, sizeof part, "%016llx", static_cast<unsigned long long>(word));
    hex.replace(16 * w, 16, part);
  }
  if (p.control->rank() == 0) return true;
  return recorded(p, check_text_tag(*p.keys, text, key_id, hex,
                                    "the commit decision for version " + std::to_string(versions.target)),
                  "commit decision");
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
  if (decision && p.keys) decision = authenticated(p, versions);
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
