// dcr refit --role follow: a job of relays and rollouts only, started and restarted on its own
// schedule, that applies every version a publisher job (--role publish) puts into the store. The
// root relay (world rank 0) lists the store and decides the next version for everyone: the next
// delta of the chain from the committed version, or, when this job has no committed version or
// is further behind than the store keeps, the newest full snapshot (the deltas after it follow).
// It reads each version's frames from the store and forwards them down the relay tree as a
// trainer's would come; rollouts apply and the job commits jointly as in one job, with the same
// journals, snapshots and serve-dir files. Nothing is applied from a version whose manifests are
// missing, incomplete or fail their MAC: the spool refuses to list it.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "dcr/core/log.h"
#include "src/core/clock.h"
#include "src/core/files.h"
#include "src/job/rank_state.h"
#include "src/job/store_layout.h"

namespace dcr {
namespace {

std::string seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", s);
  return text;
}

enum Action : uint64_t { kWait, kDelta, kFull, kDone };

struct Next {
  uint64_t action = kWait;
  VersionEntry entry;  // what to apply (root relay only: the others learn base and target)
  std::string why;     // root relay: why it waits
};

// Root relay: the next step after `committed` (kNoVersion: nothing yet), as the file comment says.
Status choose(const FrameSpool& spool, const Keyring* keys, uint64_t committed, bool need_full, Next* next) {
  *next = Next();
  uint64_t newest = 0, closed = kNoVersion;
  bool any = false;
  DCR_TRY(spool.newest(&newest, &any));
  DCR_TRY(read_closed(spool, keys, &closed));
  if (!any) return next->why = "no complete version in the store yet", Status::ok();
  DCR_REQUIRE(committed == kNoVersion || newest >= committed, Code::invalid_argument,
              "store '" + spool.describe() + "' went backwards: its newest version is " + std::to_string(newest) +
                  ", but this job committed version " + std::to_string(committed) +
                  " of the same publication (versions were removed or the store rolled back); follow it again from "
                  "its newest snapshot with a fresh --state-dir");
  if (committed != kNoVersion && !need_full && newest <= committed) {
    if (closed == committed) next->action = kDone;
    next->why = "the store's newest version is " + std::to_string(newest) + ", which this job holds";
    return Status::ok();
  }
  std::vector<VersionEntry> chain;
  if (committed != kNoVersion && !need_full && spool.chain(committed, newest, &chain).is_ok()) {
    next->action = kDelta;
    next->entry = chain.front();
    return Status::ok();
  }
  // A snapshot, newer than what this job holds when a delta on it was refused.
  std::vector<VersionEntry> fulls;
  DCR_TRY(spool.snapshots(&fulls));
  for (auto it = fulls.rbegin(); it != fulls.rend(); ++it) {
    const bool newer = committed == kNoVersion || it->target > committed;
    if (newer && spool.chain(it->target, newest, &chain).is_ok()) {
      next->action = kFull;
      next->entry = *it;
      return Status::ok();
    }
  }
  DCR_REQUIRE(!need_full, Code::aborted,
              "a version was not committed (see the messages above) and store '" + spool.describe() +
                  "' has no full snapshot above version " + std::to_string(committed) +
                  " to take instead; every rank stays on version " + std::to_string(committed));
  next->why = "no full snapshot in the store starts a chain to its newest version " + std::to_string(newest);
  return Status::ok();
}

// Collective: the root relay's choice, for everyone.
Status agree_on_next(RankState* s, bool need_full, Next* next) {
  const bool root = s->core.topology.world_rank == 0;
  const Status st = root ? choose(*s->spool, s->core.keys.get(), s->core.committed, need_full, next) : Status::ok();
  DCR_TRY(all_ok(s, st, "reading the store"));
  next->action = s->core.control->broadcast(next->action, 0);
  next->entry.base = s->core.control->broadcast(next->entry.base, 0);
  next->entry.target = s->core.control->broadcast(next->entry.target, 0);
  next->entry.full = next->action == kFull;
  return Status::ok();
}

// Root relay: frame n of the version, read from the store and checked against its manifest.
struct StoreFeed {
  const FrameSpool* spool;
  VersionEntry entry;
  std::vector<FrameRef> refs;
  Status ready;

  Status read(uint64_t n, Message* m) const {
    DCR_TRY(ready);
    m->peer = -1;
    return spool->read_frame(entry, refs[n], &m->bytes);
  }
};

StoreFeed open_feed(RankState* s, const VersionEntry& entry) {
  StoreFeed feed{s->spool.get(), entry, {}, Status::ok()};
  feed.ready = s->spool->frames_of(entry, &feed.refs);
  const uint64_t expected = s->core.plan.frames_for_relay(s->core.topology, 0);
  if (feed.ready.is_ok() && feed.refs.size() != expected) {
    feed.ready = Status(Code::corrupt, "version " + std::to_string(entry.target) + " in the store has " +
                                           std::to_string(feed.refs.size()) + " frames, this job's plan " +
                                           std::to_string(expected) + " (published for another layout?)");
  }
  return feed;
}

// One version from the store through the tree into the rollouts, committed jointly. Collective.
StepRecord follow_once(RankState* s, const Next& next) {
  const bool full = next.action == kFull;
  const Versions versions = full ? Versions{next.entry.target, next.entry.target} : Versions{s->core.committed, next.entry.target};
  StepRecord r;
  r.version = versions.target;
  r.base = versions.base;
  r.kind = full ? "full" : "delta";
  const bool root = s->core.topology.world_rank == 0;
  StoreFeed feed;
  if (root) feed = open_feed(s, next.entry);
  StepIO io;  // the root relay reads the frames from the store instead of trainers
  if (root) io.feed = [&feed](uint64_t n, Message* m) { return feed.read(n, m); };
  StepStats stats;
  run_version(s, full ? FrameKind::full : FrameKind::delta, versions, io, &r, &stats);
  const uint64_t published = s->core.control->broadcast(root ? feed.entry.published_us : 0, 0);
  const uint64_t now = unix_micros();
  r.lag_s = published > 0 && now > published ? (now - published) / 1e6 : 0;
  StepStats total;
  reduce_stats(s, stats, &total);
  record_totals(total, &r);
  r.wire_bytes = root ? next.entry.bytes : 0;  // what the root read from the store (no trainer here sent any)
  record_memory(s, &r);
  return r;
}

// After a commit: the bits checked against the expected model (--verify), the snapshot and the
// serve-dir files, as in one job.
Status after_commit(RankState* s, StepRecord* r) {
  bool checked = true;
  r->checked = s->config.verify ? kCheckedModelBytes : kCheckedFrameHashes;
  if (s->config.verify) {
    bool exists = false;
    DCR_TRY(version_exists(s, r->version, &exists));
    DCR_REQUIRE(exists, Code::not_found,
                "--verify: this job has no expected model of version " + std::to_string(r->version) +
                    " to check against (--checkpoints, or the change model's --steps)");
    DCR_TRY(seek_everywhere(s, r->version));
    checked = verified(s, s->core.serving);
  }
  r->bitexact = s->config.verify && checked;
  DCR_REQUIRE(checked, Code::target_mismatch,
              "version " + std::to_string(r->version) + " committed but a rollout's bits differ from the expected model");
  if (!s->config.serve_dir.empty()) DCR_TRY(publish_serving(s, r->version));
  const Status snapshot = write_snapshot(s);
  if (!snapshot.is_ok()) DCR_LOG(warn, "refit", "%s: snapshot not written: %s", s->core.topology.describe().c_str(),
                                 snapshot.to_string().c_str());
  return Status::ok();
}

// The committed version from the journals, with every rollout's buffers restored at it from its
// snapshot; none when a rollout could not (the next version comes as a full snapshot).
Status resume(RankState* s) {
  s->core.committed = kNoVersion;
  if (!s->core.journal) return Status::ok();
  uint64_t version = kNoVersion;
  DCR_TRY(agree_on_version(s, &version));
  if (version == kNoVersion) return Status::ok();
  const bool restored = all_true(s, s->core.topology.role != Role::rollout || restore_from_snapshot(s, version));
  s->core.committed = restored ? version : kNoVersion;  // a rollout without its state: start again from a snapshot
  if (restored) DCR_TRY(repair_serving(s, version));
  if (s->core.topology.world_rank == 0) {
    s->observer.note("dcr refit: follower resumed at committed version " + std::to_string(version) + " from '" +
                     s->config.state_dir + "'" + (restored ? "" : " (a rollout lacks its snapshot: a full one comes next)"));
  }
  return Status::ok();
}

// Root relay: a job with a state directory follows one publication for good. The directory
// remembers the publication's id; a store that now holds another one (republished, or another
// store at the same URL) is refused rather than applied over versions of the first.
Status check_followed(const RankState& s) {
  if (s.config.state_dir.empty()) return Status::ok();
  const std::string path = s.config.state_dir + "/publication";
  std::vector<uint8_t> bytes;
  bool found = false;
  DCR_TRY(files::read_whole(path, &bytes, &found));
  const std::string mine = s.core.publication + "\n";
  if (!found) return files::write_atomic(path, {{mine.data(), mine.size()}}, true, files::kPrivateFile);
  const std::string followed(bytes.begin(), bytes.end());
  DCR_REQUIRE(followed == mine, Code::invalid_argument,
              "--state-dir '" + s.config.state_dir + "' holds the state of publication " +
                  followed.substr(0, std::min<size_t>(followed.size(), 32)) + ", but store '" + s.spool->describe() +
                  "' now holds publication " + s.core.publication +
                  " (republished, or another store): its committed versions belong to the other; follow the new "
                  "publication with a fresh --state-dir");
  return Status::ok();
}

// Root relay: LAYOUT from the store, checked, as text.
Status root_layout(const RefitConfig& config, const FrameSpool& spool, std::vector<uint8_t>* text) {
  Keyring ring;
  if (!config.key_file.empty()) DCR_TRY(Keyring::load(config.key_file, &ring));
  nlohmann::json layout;
  DCR_TRY(read_layout(spool, config.key_file.empty() ? nullptr : &ring, &layout));
  const std::string dumped = layout.dump();
  text->assign(dumped.begin(), dumped.end());
  return Status::ok();
}

}  // namespace

Status join_publication(RankState* s) {
  const auto start = Clock::now();
  const bool root = s->core.topology.world_rank == 0;
  const FrameSpool spool(s->store);
  std::vector<uint8_t> text;
  Status st;
  for (bool said = false;; said = true) {
    st = root ? root_layout(s->config, spool, &text) : Status::ok();
    const bool absent = s->core.control->broadcast(st.code() == Code::not_found ? 1 : 0, 0) == 1;
    if (!absent || seconds_since(start) > s->config.follow_timeout_s) break;
    if (root && !said) {
      DCR_LOG(info, "refit", "%s; waiting up to %g s (--follow-timeout) for it", st.message().c_str(),
              s->config.follow_timeout_s);
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(s->config.poll_s));
  }
  DCR_TRY(all_ok(s, st, "reading the store's layout"));
  s->core.control->broadcast(&text, 0);
  s->layout = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  DCR_TRY(all_ok(s, adopt_layout(s->layout, s->config.store, &s->config, &s->core.plan), "joining the publication"));
  s->core.config = s->config;  // the library's part: the publication's trainers, frame cut and promise
  s->core.publication = s->layout.value("publication", std::string());
  return check_refit_config(s->config);
}

Status run_follow(RankState* s, RefitReport* report) {
  DCR_TRY(adopt_publication(s, s->core.publication));
  DCR_TRY(all_ok(s, s->core.topology.world_rank == 0 ? check_followed(*s) : Status::ok(),
                 "checking the publication this job follows"));
  DCR_TRY(resume(s));
  bool need_full = false;  // a delta was refused: the next version comes as a newer full snapshot
  auto waiting_since = Clock::now();
  StoreCounts counted = *s->store_counts;  // the root relay's requests until the previous record
  for (;;) {
    DCR_TRY(all_ok(s, s->core.reload_keys(), "reading the key file"));
    s->spool->set_keys(s->core.keys);
    Next next;
    DCR_TRY(agree_on_next(s, need_full, &next));
    if (next.action == kDone) break;
    if (next.action == kWait) {
      const bool late = seconds_since(waiting_since) > s->config.follow_timeout_s;
      DCR_REQUIRE(!all_true(s, late), Code::unavailable,
                  "no new version in store '" + s->spool->describe() + "' for " + seconds(s->config.follow_timeout_s) +
                      " s (--follow-timeout); this job holds version " +
                      (s->core.committed == kNoVersion ? std::string("none") : std::to_string(s->core.committed)) +
                      (next.why.empty() ? "" : "; " + next.why));
      std::this_thread::sleep_for(std::chrono::duration<double>(s->config.poll_s));
      continue;
    }
    StepRecord r = follow_once(s, next);
    if (!r.committed && !need_full) {  // e.g. a rollout whose state was not the delta's base
      need_full = true;
      if (s->core.topology.world_rank == 0) {
        s->observer.note("dcr refit: version " + std::to_string(r.version) +
                         " was not committed; trying a newer full snapshot instead");
      }
      continue;
    }
    DCR_REQUIRE(r.committed, Code::aborted,
                "version " + std::to_string(r.version) + " from the store was not committed (see the messages above); "
                "every rank stays on its committed version");
    need_full = false;
    waiting_since = Clock::now();
    const Status done = after_commit(s, &r);
    const StoreCounts requests = s->store_counts->since(counted);
    counted = *s->store_counts;
    r.store_gets = requests.gets;
    r.store_lists = requests.lists;
    if (s->core.topology.world_rank == 0) {
      s->observer.step(r);
      report->steps.push_back(r);
    }
    DCR_TRY(done);
  }
  return Status::ok();
}

}  // namespace dcr
