// dcr refit --role publish: a job of trainer ranks only. Each version is encoded as today and put
// into the store instead of sent to a relay: every trainer puts its frames, then its manifest; the
// version is visible (committed, for the publisher) once the last manifest is there. Version 0,
// and every --full-every-th, is also put as a full snapshot. The store is the publisher's only
// state: a restarted publisher removes what it left unfinished and resumes after the newest
// complete version. Trainer 0 writes LAYOUT first, prunes after each version and writes CLOSED
// (the last version) when the source has no more.
#include <algorithm>
#include <functional>

#include "dcr/core/log.h"
#include "src/core/clock.h"
#include "src/refit/rank_state.h"
#include "src/refit/store_layout.h"

namespace dcr {
namespace {

// This trainer's frames of `kind` for `versions`, put into the store as they are encoded.
Status put_frames(RankState* s, FrameKind kind, Versions versions, StepStats* stats) {
  const uint32_t writer = static_cast<uint32_t>(s->topology.index);
  FramePublisher publisher;
  DCR_TRY(kind == FrameKind::full ? s->spool->begin_full(versions.target, writer, &publisher)
                                  : s->spool->begin(versions.base, versions.target, writer, &publisher));
  const Link link{nullptr, &s->topology, s->config.window, s->config.timeout_s, &s->kill, 0, s->keys.get(),
                  s->config.encrypt, &s->context_rule};
  std::vector<FrameEncoder*> encoders;
  for (const auto& e : s->encoders) encoders.push_back(e.get());
  auto put = [&publisher](SharedBytes frame) { return publisher.add(*frame); };
  DCR_TRY(encode_frames(s->plan, link, s->topology.index, kind, versions, &s->baseline, &s->current, s->frame_fault,
                        encoders, stats, put));
  const auto start = Clock::now();
  DCR_TRY(publisher.finish());
  stats->send_s += seconds_since(start);
  s->context_rule.observe_sends(stats->wire_bytes, stats->send_s);  // the store is the link
  return Status::ok();
}

// Collective: trainer 0's answer (a status and a number) for everyone.
Status from_trainer0(RankState* s, const std::function<Status(uint64_t*)>& ask, const char* what, uint64_t* value) {
  Status st = s->topology.index == 0 ? ask(value) : Status::ok();
  DCR_TRY(all_ok(s, st, what));
  *value = s->control->broadcast(*value, 0);
  return Status::ok();
}

// Trainer 0 at start-up: LAYOUT written (or the same), CLOSED gone, unfinished versions removed;
// every trainer learns the newest complete version and rebuilds its baseline there.
Status resume_from_store(RankState* s) {
  auto prepare = [s](uint64_t* newest) {
    DCR_TRY(put_layout(*s->spool, store_layout(s->config, s->plan)));
    DCR_TRY(s->spool->store().remove(kClosedKey));
    bool found = false;
    DCR_TRY(s->spool->newest(newest, &found));
    if (!found) *newest = kNoVersion;
    return found ? s->spool->remove_after(*newest) : Status::ok();
  };
  uint64_t newest = kNoVersion;
  DCR_TRY(from_trainer0(s, prepare, "opening the store", &newest));
  s->committed = newest;
  if (newest == kNoVersion) return Status::ok();
  DCR_TRY(seek_everywhere(s, newest));
  s->baseline.copy_from(s->current);
  if (s->topology.index == 0) {
    s->observer.note("dcr refit: publisher resumed after version " + std::to_string(newest) + ", the newest complete in '" +
                     s->spool->describe() + "' (unfinished versions above it removed)");
  }
  return Status::ok();
}

// Trainer 0 after each version: the newest --spool-keep deltas stay, and the newest snapshot with
// every delta after it (a follower further behind starts from that snapshot); the rest goes.
Status prune_store(RankState* s, uint64_t newest) {
  if (s->topology.index != 0) return Status::ok();
  std::vector<VersionEntry> fulls;
  DCR_TRY(s->spool->snapshots(&fulls));
  const uint64_t full = fulls.empty() ? 0 : fulls.back().target;
  const uint64_t keep = static_cast<uint64_t>(std::max(1, s->config.spool_keep > 0 ? s->config.spool_keep : s->config.catchup_max));
  DCR_TRY(s->spool->prune_before(std::min(newest + 1 > keep ? newest + 1 - keep : 0, full + 1)));
  return s->spool->prune_snapshots_before(full);
}

// One version into the store: the delta from the last one (none for the first), then the full
// snapshot where one is due. Collective.
StepRecord publish_once(RankState* s, uint64_t target) {
  const bool first = s->committed == kNoVersion;
  const bool snapshot = first || target % static_cast<uint64_t>(s->config.full_every) == 0;
  StepRecord r;
  r.version = target;
  r.base = first ? target : s->committed;
  r.kind = first ? "full" : "delta";
  r.contexts = s->config.contexts;
  r.link_gbps = s->context_rule.link_gbps();
  r.link_source = s->context_rule.link_source();
  barrier(s, "the barrier before a version");
  const auto start = Clock::now();
  StepStats delta, full;
  Status st = first ? Status::ok() : put_frames(s, FrameKind::delta, {s->committed, target}, &delta);
  if (st.is_ok() && snapshot) st = put_frames(s, FrameKind::full, {target, target}, &full);
  if (!st.is_ok()) DCR_LOG(error, "refit", "%s: %s", s->topology.describe().c_str(), st.to_string().c_str());
  r.committed = r.published = all_true(s, st.is_ok());
  r.seconds = seconds_since(start);
  StepStats delta_total, full_total;
  reduce_stats(s, delta, &delta_total);
  reduce_stats(s, full, &full_total);
  record_totals(first ? full_total : delta_total, &r);
  r.full_bytes = full_total.wire_bytes;
  if (r.committed) {
    s->baseline.copy_from(s->current);
    s->committed = target;
  }
  return r;
}

}  // namespace

Status run_publish(RankState* s, RefitReport* report) {
  DCR_TRY(resume_from_store(s));
  uint64_t last = s->committed;
  for (uint64_t version = s->committed == kNoVersion ? 0 : s->committed + 1;; ++version) {
    bool exists = false;
    DCR_TRY(version_exists(s, version, s->world, &exists));
    if (!exists) break;
    DCR_TRY(seek_everywhere(s, version));
    DCR_TRY(all_ok(s, s->reload_keys(), "reading the key file"));
    s->spool->set_keys(s->keys);
    const StepRecord r = publish_once(s, version);
    if (s->topology.world_rank == 0) {
      s->observer.step(r);
      report->steps.push_back(r);
    }
    DCR_REQUIRE(r.committed, Code::aborted,
                "version " + std::to_string(version) + " was not completely put into '" + s->spool->describe() +
                    "' (see the trainers' messages); it stays invisible, and a restarted publisher redoes it");
    last = version;
    const Status pruned = prune_store(s, version);
    if (!pruned.is_ok()) DCR_LOG(warn, "refit", "pruning the store: %s", pruned.to_string().c_str());
  }
  if (s->topology.index == 0 && last != kNoVersion) {
    const std::string text = std::to_string(last) + "\n";
    DCR_TRY(s->spool->store().put(kClosedKey, reinterpret_cast<const uint8_t*>(text.data()), text.size(), true));
  }
  return Status::ok();
}

}  // namespace dcr
