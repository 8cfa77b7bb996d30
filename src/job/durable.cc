// What the harness makes durable after each commit: the spool copy of the delta and the snapshot.
#include <algorithm>

#include "dcr/ckpt/hdf5_checkpoint.h"
#include "dcr/ckpt/serving_files.h"
#include "dcr/core/log.h"
#include "dcr/refit/commit.h"
#include "src/core/files.h"
#include "src/job/rank_state.h"

namespace dcr {

Status publish_to_spool(RankState* s, Versions versions) {
  if (!s->spool || s->core.topology.role != Role::trainer || s->sent.empty()) return Status::ok();
  FramePublisher publisher;
  DCR_TRY(s->spool->begin(versions.base, versions.target, static_cast<uint32_t>(s->core.topology.index), &publisher));
  for (const SharedBytes& frame : s->sent) DCR_TRY(publisher.add(*frame));
  DCR_TRY(publisher.finish());
  s->sent.clear();
  // The spool keeps --spool-keep versions (default --catchup-max: the longest chain a catch-up
  // replays) ending at the newest committed one: older versions only grow it. One writer prunes,
  // counting `target` as kept even while the other writers are still publishing their part of it.
  const int wanted = s->config.spool_keep > 0 ? s->config.spool_keep : s->config.catchup_max;
  const uint64_t keep = static_cast<uint64_t>(std::max(1, wanted));
  if (s->core.topology.index == 0 && versions.target >= keep) DCR_TRY(s->spool->prune_before(versions.target + 1 - keep));
  return Status::ok();
}

Status write_snapshot(RankState* s) {
  if (s->core.topology.role != Role::rollout || !s->core.journal || s->config.snapshot_every == 0 ||
      s->core.committed % s->config.snapshot_every != 0) {
    return Status::ok();
  }
  DCR_TRY(s->core.serving.with_buffers([s](const CanonicalBits& buffers) {
    return write_hdf5_checkpoint(s->snapshot_path(), s->core.serving.buffer_manifest(), buffers, s->core.committed, s->core.committed,
                                 files::kPrivateFile);
  }));
  return s->core.journal->append({JournalRecord::snapshot, s->core.committed, 0, 0}, true);
}

namespace {

std::string replica_dir(const RankState& s) {
  return s.config.serve_dir + "/replica-" + std::to_string(s.core.topology.index / s.config.rollout_tp);
}

ServingDirLayout serving_dir_layout(const RankState& s) {
  return ServingDirLayout{s.config.rollout_tp, s.config.rollout_ep, s.core.plan.manifest.hash()};
}

// The version a replica's directory names (kNoVersion: none, or unreadable).
uint64_t served_version(const RankState& s) {
  bool found = false;
  uint64_t version = kNoVersion;
  const Status st = read_serving_version(replica_dir(s), &found, &version);
  return st.is_ok() && found ? version : kNoVersion;
}

}  // namespace

Status check_serve_dir(const RankState& s) {
  const Topology& t = s.core.topology;
  if (s.config.serve_dir.empty() || t.role != Role::rollout || t.index % s.config.rollout_tp != 0) return Status::ok();
  DCR_TRY(check_serving_dir(replica_dir(s), serving_dir_layout(s)));
  if (t.index != 0) return Status::ok();
  std::vector<std::string> names;
  DCR_TRY(files::list_dir(s.config.serve_dir, &names));
  const uint64_t replicas = static_cast<uint64_t>(t.rollouts / s.config.rollout_tp);
  for (const std::string& name : names) {
    uint64_t replica = 0;
    DCR_REQUIRE(!files::parse_numbered(name, "replica-", &replica) || replica < replicas, Code::invalid_argument,
                "--serve-dir: '" + s.config.serve_dir + "/" + name + "' is a replica this job of " + std::to_string(replicas) +
                    " replica(s) will not update: it was published by a job of more rollouts; remove it, or publish "
                    "into an empty directory");
  }
  return Status::ok();
}

Status repair_serving(RankState* s, uint64_t version) {
  const Topology& t = s->core.topology;
  if (s->config.serve_dir.empty()) return Status::ok();
  const bool leader = t.role == Role::rollout && t.index % s->config.rollout_tp == 0;
  const uint64_t there = leader ? served_version(*s) : version;
  if (all_true(s, there == version)) return Status::ok();
  if (leader && there != version) {
    const std::string named = there == kNoVersion ? "no version" : "version " + std::to_string(there);
    DCR_LOG(warn, "refit", "%s: --serve-dir '%s' names %s, not the committed version %llu: rewriting it",
            t.describe().c_str(), replica_dir(*s).c_str(), named.c_str(), static_cast<unsigned long long>(version));
  }
  return publish_serving(s, version).with_context("repairing --serve-dir at committed version " + std::to_string(version));
}

Status publish_serving(RankState* s, uint64_t version) {
  const Topology& t = s->core.topology;
  const bool rollout = t.role == Role::rollout;
  const int tp = s->config.rollout_tp;
  Status st = rollout ? write_serving_shard(replica_dir(*s), t.index % tp, s->core.serving) : Status::ok();
  const bool written = all_true(s, st.is_ok());
  if (rollout && written && t.index % tp == 0) st = write_serving_version(replica_dir(*s), version, serving_dir_layout(*s));
  if (!st.is_ok()) DCR_LOG(error, "refit", "%s: --serve-dir: %s", t.describe().c_str(), st.to_string().c_str());
  DCR_REQUIRE(all_true(s, st.is_ok()), st.is_ok() ? Code::io_error : st.code(),
              st.is_ok() ? "a rollout failed to publish its serving shard (see its message above)" : st.message());
  return Status::ok();
}

}  // namespace dcr
