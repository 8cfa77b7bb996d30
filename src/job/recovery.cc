// Resuming a job from its state directory after any rank died.
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "dcr/auth/seal.h"
#include "dcr/ckpt/hdf5_checkpoint.h"
#include "dcr/core/log.h"
#include "dcr/refit/commit.h"
#include "src/job/rank_state.h"

namespace dcr {

namespace {

constexpr uint64_t kNone = kNoVersion;

// A rank whose journal lags the agreed version (its record was damaged or never written) records
// it now that its state is rebuilt at that version, so every journal agrees again.
Status record_resumed(RankState* s, uint64_t version) {
  uint64_t mine = kNone, base = 0, manifest = 0;
  if (s->core.journal->last_committed(&mine, &base, &manifest) && mine == version) return Status::ok();
  return s->core.journal->append({JournalRecord::committed, version, version, s->core.plan.manifest.hash()}, true);
}

// Applies the published deltas after `from` up to `to` that this rollout receives.
Status catch_up(RankState* s, uint64_t from, uint64_t to) {
  std::vector<VersionEntry> chain;
  DCR_TRY(s->spool->chain(from, to, &chain));
  for (const VersionEntry& entry : chain) {
    std::vector<std::vector<uint8_t>> frames;
    DCR_TRY(s->spool->read_version(entry.target, &frames));
    for (std::vector<uint8_t>& frame : frames) {
      FrameView view;
      const Status read = s->core.keys ? open_frame(*s->core.keys, &frame, &view) : view_frame(frame.data(), frame.size(), &view);
      DCR_TRY(read.with_context("spool version " + std::to_string(entry.target)));
      const std::vector<int>* receivers = s->core.plan.receivers_of(view.header.box);
      DCR_REQUIRE(receivers != nullptr, Code::corrupt,
                  "spool frame for " + view.header.box.describe() + " matches no planned frame");
      if (!std::binary_search(receivers->begin(), receivers->end(), s->core.topology.index)) continue;
      ApplyOutcome outcome;
      DCR_TRY(apply_frame(&view, entry.base, &s->core.serving, &s->core.decoder, &outcome));
    }
  }
  return Status::ok();
}

}  // namespace

// Every rank's journal is evidence: the highest version any of them proves committed is the job's
// (a damaged root journal does not send the job back to an older version). Foreign journals are
// refused.
Status agree_on_version(RankState* s, uint64_t* version) {
  int foreign = -1;
  const Status st = agree_on_committed(*s->core.control, s->core.journal.get(), s->core.plan.manifest.hash(), version, &foreign);
  DCR_REQUIRE(st.is_ok(), Code::invalid_argument,
              "state directory '" + s->config.state_dir + "' belongs to another model, or to this one served in another form (--serve-quant) (the journal of " +
                  s->core.topology.describe_rank(foreign) + "); use a fresh one");
  return Status::ok();
}

bool restore_from_snapshot(RankState* s, uint64_t version) {
  uint64_t snapshot = kNone;
  if (!s->core.journal->last_snapshot(&snapshot) || snapshot > version) return false;
  const bool chain = snapshot == version || (s->spool && version - snapshot <= uint64_t(s->config.catchup_max));
  if (!chain) return false;
  Manifest manifest;
  CanonicalBits buffers;
  uint64_t stored = 0;
  Status st = read_hdf5_checkpoint(s->snapshot_path(), &manifest, &buffers, &stored);
  if (st.is_ok() && stored != snapshot) st = Status(Code::corrupt, "snapshot holds version " + std::to_string(stored));
  if (st.is_ok()) st = s->core.serving.restore(manifest, buffers);
  if (st.is_ok() && snapshot < version) st = catch_up(s, snapshot, version).with_context("catch-up from the spool");
  if (!st.is_ok()) {
    DCR_LOG(warn, "recovery", "%s: cannot restore version %llu from snapshot v%llu (%s); taking a full sync",
                 s->core.topology.describe().c_str(), static_cast<unsigned long long>(version),
                 static_cast<unsigned long long>(snapshot), st.to_string().c_str());
    return false;
  }
  if (snapshot < version) {
    DCR_LOG(info, "recovery", "%s: restored snapshot v%llu and caught up to v%llu from the spool",
                s->core.topology.describe().c_str(), static_cast<unsigned long long>(snapshot),
                static_cast<unsigned long long>(version));
  }
  return true;
}

namespace {

// Hash of every box a rollout receives, summed (wrapping) per rollout: trainers from the version
// they rebuilt, each rollout from its own buffers. Equal sums mean the rollout holds the trainers'
// bits, whatever its snapshot or journal claimed.
uint64_t box_hash(Shard* shard, const Box& box) {
  Region r;
  return shard->region(box, &r).is_ok() ? region_hash(r) : 0;
}

// Collective: whether this rollout's restored buffers hold the version the trainers rebuilt.
// A snapshot swapped with another rollout's, left by a run with another seed, or caught up over
// a spool that lost a frame fails here, with or without --verify.
bool matches_trainers(RankState* s, bool restored) {
  const Topology& t = s->core.topology;
  std::vector<uint64_t> mine(t.rollouts, 0);
  for (size_t trainer = 0; trainer < s->core.plan.frames.size(); ++trainer) {
    for (const PlannedFrame& f : s->core.plan.frames[trainer]) {
      const bool sender = t.role == Role::trainer && t.index == static_cast<int>(trainer);
      const bool receiver = t.role == Role::rollout && restored &&
                            std::binary_search(f.receivers.begin(), f.receivers.end(), t.index);
      if (!sender && !receiver) continue;
      uint64_t h = 0;
      for (const Box& part : f.parts) h += box_hash(sender ? &s->core.current : &s->core.serving, part);
      for (int i : f.receivers) {
        if (sender) mine[i] += h;
      }
      if (receiver) mine[t.index] -= h;  // the trainers' sums minus this rollout's: zero when equal
    }
  }
  s->core.control->all_sum(&mine);  // now each rollout's difference from the trainers
  if (t.role != Role::rollout || !restored) return restored;
  if (mine[t.index] == 0) return true;
  DCR_LOG(warn, "recovery", "%s: the restored state is not the version the trainers rebuilt (box hashes differ); "
          "discarding it and taking a full sync", t.describe().c_str());
  return false;
}

}  // namespace

Status recover(RankState* s, uint64_t* next_version) {
  *next_version = 0;
  if (!s->core.journal) return Status::ok();
  uint64_t version = kNone;
  DCR_TRY(agree_on_version(s, &version));
  if (version == kNone) return Status::ok();

  // Every rank rebuilds its state at `version`.
  const Topology& t = s->core.topology;
  bool exists = false;
  DCR_TRY(version_exists(s, version, &exists));
  DCR_REQUIRE(exists, Code::not_found, "committed version " + std::to_string(version) + " has no checkpoint to rebuild from");
  const Status rebuilt = s->has_model() ? advance_source_to(s, version) : Status::ok();
  if (rebuilt.is_ok()) s->core.promote();
  DCR_TRY(all_ok(s, rebuilt, "rebuilding the committed version"));
  const bool restored = matches_trainers(s, t.role == Role::rollout && restore_from_snapshot(s, version));
  kill_point_at_resume(s->kill, t, version);
  const bool synced_everywhere = all_true(s, t.role != Role::rollout || restored);
  std::vector<uint64_t> missing = {t.role == Role::rollout && !restored ? 1u : 0u};
  s->core.control->all_sum(&missing);
  const uint64_t rollouts_missing = missing[0];

  // Rollouts without a snapshot of this version take a full sync of it; boxes that already hold it
  // are skipped by hash, so restored rollouts write nothing.
  s->core.committed = version;
  if (!synced_everywhere) {
    StepStats stats;
    const bool vote = transfer(s, FrameKind::full, {version, version}, &s->core.serving, &stats);
    DCR_REQUIRE(all_true(s, vote), Code::aborted,
                "the full sync of version " + std::to_string(version) + " after a restart failed (see the messages above)");
  }
  // A snapshot only makes the next restart cheaper: one that cannot be written is reported, not fatal.
  const Status snapshot = t.role == Role::rollout && !restored ? write_snapshot(s) : Status::ok();
  if (!snapshot.is_ok()) {
    DCR_LOG(warn, "recovery", "%s: snapshot not written after the resume: %s", t.describe().c_str(),
                 snapshot.to_string().c_str());
  }
  DCR_REQUIRE(verified(s, s->core.serving), Code::target_mismatch,
              "after resuming at version " + std::to_string(version) + " a rollout's bits differ from the expected model");
  DCR_TRY(all_ok(s, record_resumed(s, version), "journal after the resume"));
  DCR_TRY(repair_serving(s, version));
  if (t.world_rank == 0) {
    char line[512];
    std::snprintf(line, sizeof line, "dcr refit: resumed at committed version %llu from '%s' (%llu rollout(s) re-synced, "
                  "the rest restored from their snapshots)",
                  static_cast<unsigned long long>(version), s->config.state_dir.c_str(), static_cast<unsigned long long>(rollouts_missing));
    s->observer.note(line);
  }
  *next_version = version + 1;
  return Status::ok();
}

}  // namespace dcr
