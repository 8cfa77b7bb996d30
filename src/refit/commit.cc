// The joint commit and what each rank makes durable around it.
#include <algorithm>

#include "dcr/ckpt/hdf5_checkpoint.h"
#include "dcr/core/log.h"
#include "dcr/refit/commit.h"
#include "src/refit/rank_state.h"

namespace dcr {

namespace {

// After a commit the journal needs only the version chain's head and the newest snapshot.
Status compact(RankState* s, Versions versions) {
  if (!s->journal) return Status::ok();
  std::vector<JournalRecord> keep = {{JournalRecord::committed, versions.target, versions.base, s->plan.manifest.hash()}};
  uint64_t snapshot = 0;
  if (s->journal->last_snapshot(&snapshot)) keep.push_back({JournalRecord::snapshot, snapshot, 0, 0});
  return s->journal->compact(keep);
}

void report(RankState* s, const Status& status, const char* what) {
  if (!status.is_ok()) {
    DCR_LOG(error, "refit", "%s: %s: %s", s->topology.describe().c_str(), what, status.to_string().c_str());
  }
}

}  // namespace

bool joint_commit(RankState* s, bool vote, Versions versions, MPI_Comm world) {
  CommitParty party;
  party.control = s->control.get();
  party.journal = s->journal.get();
  party.durable_vote = s->topology.role == Role::rollout;
  party.manifest_hash = s->plan.manifest.hash();
  party.before_decision = [s, versions] { return fault_point(s->kill, s->topology, Phase::commit, versions.target); };
  party.report = [s](const Status& st, const char* what) { report(s, st, what); };
  if (!joint_decision(party, vote, versions)) return false;
  report(s, compact(s, versions), "journal compaction");
  s->committed = versions.target;
  return true;
}

Status publish_to_spool(RankState* s, Versions versions) {
  if (!s->spool || s->topology.role != Role::trainer || s->sent.empty()) return Status::ok();
  FramePublisher publisher;
  DCR_TRY(s->spool->begin(versions.base, versions.target, static_cast<uint32_t>(s->topology.index), &publisher));
  for (const SharedBytes& frame : s->sent) DCR_TRY(publisher.add(*frame));
  DCR_TRY(publisher.finish());
  s->sent.clear();
  // The spool serves catch-up chains of at most --catchup-max deltas ending at the newest committed
  // version: older versions only grow it. One writer prunes, counting `target` as kept even while
  // the other writers are still publishing their part of it.
  const uint64_t keep = static_cast<uint64_t>(std::max(1, s->config.catchup_max));
  if (s->topology.index == 0 && versions.target >= keep) DCR_TRY(s->spool->prune_before(versions.target + 1 - keep));
  return Status::ok();
}

Status write_snapshot(RankState* s) {
  if (s->topology.role != Role::rollout || !s->journal || s->config.snapshot_every == 0 ||
      s->committed % s->config.snapshot_every != 0) {
    return Status::ok();
  }
  DCR_TRY(s->serving.with_buffers([s](const CanonicalBits& buffers) {
    return write_hdf5_checkpoint(s->snapshot_path(), s->serving.buffer_manifest(), buffers, s->committed, s->committed);
  }));
  return s->journal->append({JournalRecord::snapshot, s->committed, 0, 0}, true);
}

}  // namespace dcr
