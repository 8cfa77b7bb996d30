// The joint commit and what each rank makes durable around it.
#include <cstdio>

#include "dcr/ckpt/hdf5_checkpoint.h"
#include "src/refit/rank_state.h"

namespace dcr {

namespace {

Status record(RankState* s, const JournalRecord& r, bool durable) {
  return s->journal ? s->journal->append(r, durable) : Status::ok();
}

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
    std::fprintf(stderr, "dcr refit: %s: %s: %s\n", s->topology.describe().c_str(), what, status.to_string().c_str());
  }
}

}  // namespace

bool joint_commit(RankState* s, bool vote, Versions versions, MPI_Comm world) {
  // Phase 1: a rollout's yes is durable before it is cast.
  if (vote && s->topology.role == Role::rollout) {
    const Status st = record(s, {JournalRecord::voted, versions.target, 0, 0}, true);
    report(s, st, "journal");
    vote = st.is_ok();
  }
  maybe_kill(s->kill, s->topology, Phase::commit, versions.target);
  int mine = vote ? 1 : 0, decision = 0;
  MPI_Reduce(&mine, &decision, 1, MPI_INT, MPI_MIN, 0, world);
  // Phase 2: the root's decision is durable before anyone learns it.
  if (s->topology.world_rank == 0 && decision == 1) {
    const Status st = record(s, {JournalRecord::committed, versions.target, versions.base, s->plan.manifest.hash()}, true);
    report(s, st, "journal");
    decision = st.is_ok() ? 1 : 0;
  }
  MPI_Bcast(&decision, 1, MPI_INT, 0, world);
  if (decision != 1) return false;
  if (s->topology.world_rank != 0) {
    report(s, record(s, {JournalRecord::committed, versions.target, versions.base, s->plan.manifest.hash()}, true),
           "journal");
  }
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
  return Status::ok();
}

Status write_snapshot(RankState* s) {
  if (s->topology.role != Role::rollout || !s->journal || s->config.snapshot_every == 0 ||
      s->committed % s->config.snapshot_every != 0) {
    return Status::ok();
  }
  DCR_TRY(write_hdf5_checkpoint(s->snapshot_path(), s->serving.buffer_manifest(), s->serving.buffers(), s->committed,
                                s->committed));
  return s->journal->append({JournalRecord::snapshot, s->committed, 0, 0}, true);
}

}  // namespace dcr
