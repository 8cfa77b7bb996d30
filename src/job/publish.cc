// dcr refit --role publish: a job of trainer ranks only. Each version is encoded as today and put
// into the store instead of sent to a relay: every trainer puts its frames, then its manifest; the
// version is visible (committed, for the publisher) once the last manifest is there. Version 0,
// and every --full-every-th, is also put as a full snapshot. The store is the publisher's only
// state: a restarted publisher removes what it left unfinished, proves that the newest complete
// version is what it rebuilds (each trainer's state hash in its manifest), and resumes after it.
// Trainer 0 holds the prefix's lease (publisher_lease.h), writes LAYOUT first (with the
// publication's id), prunes after each version and writes CLOSED (the last version) when the
// source has no more.
#include <algorithm>
#include <functional>

#include "dcr/core/hash.h"
#include "dcr/core/log.h"
#include "src/core/clock.h"
#include "src/job/rank_state.h"
#include "src/job/store_layout.h"

namespace dcr {
namespace {

// hash64 over the hash of every box this trainer holds, in plan order, at the version in `current`:
// recorded in each manifest, and what a restarted publisher compares with the store's newest.
uint64_t writer_state(RankState* s) {
  std::vector<uint64_t> hashes;
  for (const PlannedFrame& f : s->core.plan.frames[s->core.topology.index]) {
    for (const Box& part : f.parts) {
      Region r;
      hashes.push_back(s->core.current.region(part, &r).is_ok() ? region_hash(r) : 0);
    }
  }
  return hash64(hashes.data(), hashes.size() * sizeof(uint64_t));
}

// One writer's publication of one pass into the store: the sink the trainer's frames go to as they
// are encoded, then its manifest (with this trainer's state hash).
class StorePass {
 public:
  StorePass(RankState* s, FrameKind kind, Versions versions, uint64_t state) {
    const uint32_t writer = static_cast<uint32_t>(s->core.topology.index);
    begun_ = kind == FrameKind::full ? s->spool->begin_full(versions.target, writer, &publisher_)
                                     : s->spool->begin(versions.base, versions.target, writer, &publisher_);
    publisher_.set_state(state);
  }
  StepIO io() {
    StepIO io;
    io.sink = [this](SharedBytes frame) {
      DCR_TRY(begun_);
      return publisher_.add(*frame);
    };
    return io;
  }
  Status finish() {
    DCR_TRY(begun_);
    return publisher_.finish();
  }

 private:
  FramePublisher publisher_;
  Status begun_;
};

// Collective: trainer 0's answer (a status and a number) for everyone.
Status from_trainer0(RankState* s, const std::function<Status(uint64_t*)>& ask, const char* what, uint64_t* value) {
  Status st = s->core.topology.index == 0 ? ask(value) : Status::ok();
  DCR_TRY(all_ok(s, st, what));
  *value = s->core.control->broadcast(*value, 0);
  return Status::ok();
}

// Trainer 0 at start-up: the lease taken, LAYOUT written (or the same), CLOSED gone, unfinished
// versions removed. *newest: the newest complete version (kNoVersion: none).
Status prepare_store(RankState* s, std::string* publication, uint64_t* newest) {
  auto note = [s](const std::string& line) { s->observer.note(line); };
  DCR_TRY(PublisherLease::take(s->config.store, note, &s->lease));
  DCR_TRY(put_layout(*s->spool, s->core.keys.get(), store_layout(s->config, s->core.plan), publication));
  // The listing below takes this publication's versions only, their MACs under its keys.
  s->core.publication = *publication;
  s->spool->set_publication(*publication);
  DCR_TRY(s->core.reload_keys());
  s->spool->set_keys(s->core.keys);
  DCR_TRY(s->spool->store().remove(kClosedKey));
  bool found = false;
  DCR_TRY(s->spool->newest(newest, &found));
  if (!found) *newest = kNoVersion;
  return found ? s->spool->remove_after(*newest) : Status::ok();
}

// Each trainer, rebuilt at the store's newest version: its state hash must be the one its manifest
// of that version records, or the store was written from another source (another seed, glob or
// checkpoint, or another publisher) and nothing may be built on it.
Status prove_newest(RankState* s, uint64_t newest) {
  VersionEntry entry;
  if (!s->spool->version(newest, &entry).is_ok()) DCR_TRY(s->spool->snapshot(newest, &entry));
  const size_t writer = static_cast<size_t>(s->core.topology.index);
  const uint64_t stored = writer < entry.states.size() ? entry.states[writer] : 0;
  const uint64_t rebuilt = writer_state(s);
  DCR_REQUIRE(stored == rebuilt, Code::invalid_argument,
              "store '" + s->spool->describe() + "': its newest version " + std::to_string(newest) + " (writer " +
                  std::to_string(writer) + ") " +
                  (stored == 0 ? std::string("records no state hash (written by an older dcr)")
                               : "is not what this publisher rebuilds for it (state hash " + hex16(stored) +
                                     " there, " + hex16(rebuilt) + " rebuilt)") +
                  ": it was published from another source (another seed, --checkpoints glob or model) or by "
                  "another publisher; publish to a fresh prefix, or restart with the options that wrote it");
  return Status::ok();
}

// Collective at start-up: the store prepared (trainer 0), every trainer in the publication and,
// after a restart, rebuilt at the newest complete version and proven to match it.
Status resume_from_store(RankState* s) {
  std::string publication;
  uint64_t newest = kNoVersion;
  DCR_TRY(from_trainer0(s, [&](uint64_t* v) { return prepare_store(s, &publication, v); }, "opening the store", &newest));
  DCR_TRY(adopt_publication(s, publication));
  s->core.committed = newest;
  if (newest == kNoVersion) return Status::ok();
  DCR_TRY(seek_everywhere(s, newest));
  DCR_TRY(all_ok(s, prove_newest(s, newest), "checking the store's newest version"));
  s->core.promote();
  if (s->core.topology.index == 0) {
    s->observer.note("dcr refit: publisher resumed after version " + std::to_string(newest) + ", the newest complete in '" +
                     s->spool->describe() + "' (its state hashes match the rebuilt version; unfinished versions above "
                     "it removed)");
  }
  return Status::ok();
}

// Trainer 0 after each version: the newest --spool-keep deltas stay, and the newest snapshot with
// every delta after it (a follower further behind starts from that snapshot); the rest goes.
Status prune_store(RankState* s, uint64_t newest) {
  if (s->core.topology.index != 0) return Status::ok();
  std::vector<VersionEntry> fulls;
  DCR_TRY(s->spool->snapshots(&fulls));
  const uint64_t full = fulls.empty() ? 0 : fulls.back().target;
  const uint64_t keep = static_cast<uint64_t>(std::max(1, s->config.spool_keep > 0 ? s->config.spool_keep : s->config.catchup_max));
  DCR_TRY(s->spool->prune_before(std::min(newest + 1 > keep ? newest + 1 - keep : 0, full + 1)));
  return s->spool->prune_snapshots_before(full);
}

// One version into the store: the delta from the last one (none for the first), then the full
// snapshot where one is due. Collective.
// The store requests of every trainer since `before` (this trainer's counts then), into *r. Collective.
void record_requests(RankState* s, const StoreCounts& before, StepRecord* r) {
  const StoreCounts mine = s->store_counts->since(before);
  std::vector<uint64_t> counts{mine.gets, mine.lists, mine.puts, mine.put_bytes};
  s->core.control->all_sum(&counts);
  r->store_gets = counts[0];
  r->store_lists = counts[1];
  r->store_puts = counts[2];
  r->store_put_bytes = counts[3];
}

StepRecord publish_once(RankState* s, uint64_t target) {
  const StoreCounts before = *s->store_counts;
  const bool first = s->core.committed == kNoVersion;
  const bool snapshot = first || target % static_cast<uint64_t>(s->config.full_every) == 0;
  StepRecord r;
  r.version = target;
  r.base = first ? target : s->core.committed;
  r.kind = first ? "full" : "delta";
  r.contexts = context_mode_name(s->config.contexts);
  r.link_gbps = s->core.context_rule.link_gbps();
  r.link_source = s->core.context_rule.link_source();
  // The version's pass (the delta, or the first version's full frames) is the step's; a snapshot
  // due with a delta is a second pass, put before the vote. The store is the link; the commit
  // among the trainers is the publisher's: the version is complete once every manifest is there.
  const uint64_t state = writer_state(s);
  const FrameKind kind = first ? FrameKind::full : FrameKind::delta;
  const Versions versions = first ? Versions{target, target} : Versions{s->core.committed, target};
  StorePass pass(s, kind, versions, state);
  StepStats delta, full;
  StepIO io = pass.io();
  io.before_vote = [&]() -> Status {
    DCR_TRY(pass.finish());
    if (first || !snapshot) return Status::ok();
    StorePass snapshot_pass(s, FrameKind::full, {target, target}, state);
    DCR_TRY(s->core.transfer(FrameKind::full, {target, target}, snapshot_pass.io(), &full));
    return snapshot_pass.finish();
  };
  r.published = run_version(s, kind, versions, source_checked(s, io, target), &r, &delta);
  StepStats delta_total, full_total;
  reduce_stats(s, delta, &delta_total);
  reduce_stats(s, full, &full_total);
  record_totals(delta_total, &r);
  r.full_bytes = first ? delta_total.wire_bytes : full_total.wire_bytes;
  record_requests(s, before, &r);
  record_memory(s, &r);
  return r;
}

// Trainer 0's lease, checked before each version: a publisher whose lease was taken stops.
Status lease_held(RankState* s) { return s->lease ? s->lease->check() : Status::ok(); }

// Every version the source has, each put into the store; *last: the newest put.
Status publish_versions(RankState* s, RefitReport* report, uint64_t* last) {
  *last = s->core.committed;
  for (uint64_t version = s->core.committed == kNoVersion ? 0 : s->core.committed + 1;; ++version) {
    bool exists = false;
    DCR_TRY(version_exists(s, version, &exists));
    if (!exists) break;
    DCR_TRY(all_ok(s, lease_held(s), "the publisher lease"));
    DCR_TRY(seek_everywhere(s, version));
    DCR_TRY(all_ok(s, s->core.reload_keys(), "reading the key file"));
    s->spool->set_keys(s->core.keys);
    const StepRecord r = publish_once(s, version);
    if (s->core.topology.world_rank == 0) {
      s->observer.step(r);
      report->steps.push_back(r);
    }
    DCR_REQUIRE(r.committed, Code::aborted,
                "version " + std::to_string(version) + " was not completely put into '" + s->spool->describe() +
                    "' (see the trainers' messages); it stays invisible, and a restarted publisher redoes it");
    *last = version;
    const Status pruned = prune_store(s, version);
    if (!pruned.is_ok()) DCR_LOG(warn, "refit", "pruning the store: %s", pruned.to_string().c_str());
  }
  return Status::ok();
}

}  // namespace

// The lease is given back however the publisher ends (a version that failed included), so the same
// command run again starts at once; only a publisher killed outright leaves it to go stale.
Status run_publish(RankState* s, RefitReport* report) {
  uint64_t last = kNoVersion;
  Status st = resume_from_store(s);
  if (st.is_ok()) st = publish_versions(s, report, &last);
  if (st.is_ok()) {
    const bool closes = s->core.topology.index == 0 && last != kNoVersion;
    st = all_ok(s, closes ? put_closed(*s->spool, s->core.keys.get(), last) : Status::ok(), "closing the publication");
  }
  const Status released = s->lease ? s->lease->release() : Status::ok();
  if (!released.is_ok()) DCR_LOG(warn, "refit", "the publisher lease: %s", released.to_string().c_str());
  return st;
}

}  // namespace dcr
