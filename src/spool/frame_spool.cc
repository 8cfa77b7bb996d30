#include "dcr/spool/frame_spool.h"

#include <algorithm>
#include <functional>
#include <set>

#include "dcr/auth/seal.h"
#include "dcr/codec/frame.h"
#include "dcr/core/hash.h"
#include "dcr/core/log.h"
#include "src/core/clock.h"
#include "src/core/files.h"
#include "src/spool/manifest.h"

namespace dcr {
namespace {

constexpr int kIndexDigits = 6;
constexpr char kDelta = 'v', kFull = 'f';

std::string prefix_of(char series, uint64_t target) { return std::string(1, series) + std::to_string(target) + "/"; }

std::string manifest_name(uint32_t writer, uint32_t writers) {
  return writers == 1 ? std::string("MANIFEST") : "w" + std::to_string(writer) + ".MANIFEST";
}

std::string frame_name(uint32_t writer, size_t index) {
  return "w" + std::to_string(writer) + "-" + files::zero_padded(index, kIndexDigits) + ".frame";
}

bool is_manifest(const std::string& key) {
  const std::string suffix = "MANIFEST";
  return key.size() >= suffix.size() && key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string describe_version(bool full, uint64_t target) {
  return (full ? "snapshot of version " : "version ") + std::to_string(target);
}

}  // namespace

// ---- FramePublisher ----

Status FramePublisher::add(const uint8_t* frame, size_t bytes) {
  DCR_REQUIRE(open_, Code::invalid_argument, "frame publisher: not begun (FrameSpool::begin) or already finished");
  const std::string what = "frame " + std::to_string(files_.size()) + " of " + describe_version(full_, target_) +
                           " (writer " + std::to_string(writer_) + ")";
  FrameHeader h;
  DCR_TRY(check_stored_frame(frame, bytes, &h).with_context(what));
  DCR_REQUIRE(h.target_version == target_, Code::invalid_argument,
              what + ": it is a frame to version " + std::to_string(h.target_version));
  DCR_REQUIRE(!full_ || h.is_full(), Code::invalid_argument, what + ": it is a delta, not a full frame");
  DCR_REQUIRE(h.is_full() || h.base_version == base_, Code::invalid_argument,
              what + ": it is a delta on version " + std::to_string(h.base_version) + ", not on the base " +
                  std::to_string(base_));
  const std::string key = prefix_ + frame_name(writer_, files_.size());
  DCR_TRY(store_->put(key, frame, bytes, false).with_context(what));
  files_.push_back(FrameRef{key, "", bytes, hash64(frame, bytes)});
  return Status::ok();
}

Status FramePublisher::finish() {
  DCR_REQUIRE(open_, Code::invalid_argument, "frame publisher: not begun (FrameSpool::begin) or already finished");
  spool::Manifest m;
  m.base = base_;
  m.target = target_;
  m.writer = writer_;
  m.writers = writers_;
  m.full = full_;
  m.published_us = unix_micros();
  m.publication = publication_;
  m.state = state_;
  for (const FrameRef& f : files_) m.frames.push_back(spool::ManifestEntry{f.key.substr(prefix_.size()), f.bytes, f.hash});
  const std::shared_ptr<const Keyring> keys = keys_;
  const std::string text = keys ? spool::format_manifest(m, [&keys](const std::string& body, uint32_t* id) {
    return text_tag(*keys, body, id);
  }) : spool::format_manifest(m);
  // Durable: the frames put before it are durable with it.
  DCR_TRY(store_->put(prefix_ + manifest_name(writer_, writers_), reinterpret_cast<const uint8_t*>(text.data()),
                      text.size(), true));
  open_ = false;
  return Status::ok();
}

// ---- FrameSpool ----

struct FrameSpool::Manifests {
  std::vector<spool::Manifest> parts;  // writer by writer
  std::vector<std::string> keys;

  VersionEntry entry() const {
    VersionEntry e{parts[0].base, parts[0].target, parts[0].writers, 0, 0, parts[0].full, 0, {}};
    for (const spool::Manifest& m : parts) {
      e.states.push_back(m.state);
      e.frames += m.frames.size();
      e.published_us = std::max(e.published_us, m.published_us);
      for (const spool::ManifestEntry& f : m.frames) e.bytes += f.bytes;
    }
    return e;
  }
};

FrameSpool::FrameSpool(std::shared_ptr<ObjectStore> store, uint32_t writers) : store_(std::move(store)), writers_(writers) {}

FrameSpool::FrameSpool(const std::string& dir, uint32_t writers) : FrameSpool(file_store(dir), writers) {}

Status FrameSpool::start(uint64_t base, uint64_t target, bool full, uint32_t writer, FramePublisher* out) const {
  const std::string here = "frame spool '" + store_->describe() + "': ";
  DCR_REQUIRE(writer < writers_, Code::invalid_argument,
              here + "writer " + std::to_string(writer) + " is not one of its " + std::to_string(writers_));
  const std::string prefix = prefix_of(full ? kFull : kDelta, target);
  const std::string manifest = prefix + manifest_name(writer, writers_);
  std::vector<std::string> there;
  DCR_TRY(store_->list(manifest, &there));
  DCR_REQUIRE(std::find(there.begin(), there.end(), manifest) == there.end(), Code::invalid_argument,
              here + "writer " + std::to_string(writer) + " already published " + describe_version(full, target) +
                  " (" + where(manifest) + ")");
  *out = FramePublisher();
  out->store_ = store_;
  out->prefix_ = prefix;
  out->base_ = base;
  out->target_ = target;
  out->full_ = full;
  out->writer_ = writer;
  out->writers_ = writers_;
  out->keys_ = keys_;
  out->publication_ = publication_;
  out->open_ = true;
  return Status::ok();
}

Status FrameSpool::begin(uint64_t base, uint64_t target, uint32_t writer, FramePublisher* out) const {
  DCR_REQUIRE(base < target, Code::invalid_argument,
              "frame spool '" + store_->describe() + "': version " + std::to_string(target) +
                  " must come after its base " + std::to_string(base));
  return start(base, target, false, writer, out);
}

Status FrameSpool::begin_full(uint64_t target, uint32_t writer, FramePublisher* out) const {
  return start(target, target, true, writer, out);
}

Status FrameSpool::publish(uint64_t base, uint64_t target, uint32_t writer,
                           const std::vector<std::vector<uint8_t>>& frames) const {
  FramePublisher publisher;
  DCR_TRY(begin(base, target, writer, &publisher));
  for (const std::vector<uint8_t>& frame : frames) DCR_TRY(publisher.add(frame));
  return publisher.finish();
}

Status FrameSpool::publish(uint64_t base, uint64_t target, const std::vector<std::vector<uint8_t>>& frames) const {
  DCR_REQUIRE(writers_ == 1, Code::invalid_argument,
              "frame spool '" + store_->describe() + "' has " + std::to_string(writers_) + " writers: name the writer");
  return publish(base, target, 0, frames);
}

// Reads and checks every writer's manifest of `target`; *found is false when one is missing.
Status FrameSpool::load(char series, uint64_t target, uint32_t writers, Manifests* out, bool* found) const {
  *found = false;
  *out = Manifests();
  const std::string cached = prefix_of(series, target) + std::to_string(writers);
  const auto hit = complete_.find(cached);
  if (hit != complete_.end()) {
    *out = *hit->second;
    *found = true;
    return Status::ok();
  }
  const bool full = series == kFull;
  for (uint32_t w = 0; w < writers; ++w) {
    const std::string key = prefix_of(series, target) + manifest_name(w, writers);
    const std::string path = where(key);
    std::vector<uint8_t> bytes;
    bool here = false;
    DCR_TRY(store_->get(key, &bytes, &here));
    if (!here) return Status::ok();
    spool::Manifest m;
    const std::string text(bytes.begin(), bytes.end());
    DCR_TRY(spool::parse_manifest(text, path.substr(1, path.size() - 2), &m));
    if (keys_) {
      DCR_REQUIRE(!m.mac.empty(), Code::corrupt,
                  "spool manifest " + path + " is not authenticated (no mac line) but this job has a key file");
      DCR_TRY(check_text_tag(*keys_, text.substr(0, m.mac_covers), m.mac_key, m.mac, "spool manifest " + path));
    }
    DCR_REQUIRE(m.publication == publication_, Code::corrupt,
                "spool manifest " + path + " belongs to " +
                    (m.publication.empty() ? std::string("no publication") : "publication " + m.publication) +
                    ", not to this store's " + (publication_.empty() ? std::string("(none)") : publication_) +
                    ": copied from another store or publisher; refused");
    DCR_REQUIRE(m.target == target && m.writer == w && m.writers == writers && m.full == full, Code::corrupt,
                "spool manifest " + path + " describes writer " + std::to_string(m.writer) + " of " +
                    std::to_string(m.writers) + " for " + describe_version(m.full, m.target));
    DCR_REQUIRE(w == 0 || m.base == out->parts[0].base, Code::corrupt,
                "spool manifest " + path + " names base " + std::to_string(m.base) + ", writer 0's names " +
                    std::to_string(out->parts[0].base));
    out->parts.push_back(std::move(m));
    out->keys.push_back(key);
  }
  *found = writers > 0;
  if (*found) complete_[cached] = std::make_shared<const Manifests>(*out);
  return Status::ok();
}

bool FrameSpool::complete(uint64_t target, uint32_t writers) const {
  Manifests m;
  bool found = false;
  return load(kDelta, target, writers, &m, &found).is_ok() && found;
}

Status FrameSpool::load_published(char series, uint64_t target, Manifests* m) const {
  bool found = false;
  DCR_TRY(load(series, target, writers_, m, &found));
  DCR_REQUIRE(found, Code::not_found,
              describe_version(series == kFull, target) + " is not published in frame spool '" + store_->describe() +
                  "' (no complete manifest)");
  return Status::ok();
}

Status FrameSpool::entry_of(char series, uint64_t target, VersionEntry* out) const {
  Manifests m;
  DCR_TRY(load_published(series, target, &m));
  *out = m.entry();
  return Status::ok();
}

Status FrameSpool::version(uint64_t target, VersionEntry* out) const { return entry_of(kDelta, target, out); }
Status FrameSpool::snapshot(uint64_t target, VersionEntry* out) const { return entry_of(kFull, target, out); }

// The targets of `series` with any object in the store ("v12/..." -> 12).
Status FrameSpool::targets(char series, std::vector<uint64_t>* out) const {
  std::vector<std::string> keys;
  DCR_TRY(store_->list(std::string(1, series), &keys));
  std::set<uint64_t> found;
  for (const std::string& key : keys) {
    uint64_t target = 0;
    const size_t slash = key.find('/');
    if (slash != std::string::npos && files::parse_numbered(key.substr(0, slash), std::string(1, series), &target))
      found.insert(target);
  }
  out->assign(found.begin(), found.end());
  forget_unlisted(series, keys);
  return Status::ok();
}

// Cached manifests stand for the store only while their objects are listed: one removed since
// (pruned, or a publisher's unfinished version) is forgotten.
void FrameSpool::forget_unlisted(char series, const std::vector<std::string>& listed) const {
  const std::set<std::string> keys(listed.begin(), listed.end());
  for (auto it = complete_.lower_bound(std::string(1, series)); it != complete_.end() && it->first[0] == series;) {
    const std::vector<std::string>& needed = it->second->keys;
    const bool all = std::all_of(needed.begin(), needed.end(), [&](const std::string& k) { return keys.count(k) > 0; });
    it = all ? std::next(it) : complete_.erase(it);
  }
}

Status FrameSpool::all_of(char series, std::vector<VersionEntry>* out) const {
  std::vector<uint64_t> all;
  DCR_TRY(targets(series, &all));
  out->clear();
  for (uint64_t target : all) {
    VersionEntry e;
    const Status s = entry_of(series, target, &e);
    if (s.code() == Code::not_found) continue;
    if (s.code() == Code::corrupt) {  // skipped here; named where a reader needs it
      if (reported_.insert(s.message()).second) DCR_LOG(warn, "spool", "skipping a damaged version: %s", s.message().c_str());
      continue;
    }
    DCR_TRY(s);
    out->push_back(e);
  }
  return Status::ok();
}

Status FrameSpool::published(std::vector<VersionEntry>* out) const { return all_of(kDelta, out); }
Status FrameSpool::snapshots(std::vector<VersionEntry>* out) const { return all_of(kFull, out); }

Status FrameSpool::newest(uint64_t* target, bool* found) const {
  *found = false;
  for (char series : {kDelta, kFull}) {
    std::vector<VersionEntry> all;
    DCR_TRY(all_of(series, &all));
    if (all.empty()) continue;
    *target = *found ? std::max(*target, all.back().target) : all.back().target;
    *found = true;
  }
  return Status::ok();
}

Status FrameSpool::chain(uint64_t from, uint64_t to, std::vector<VersionEntry>* out) const {
  const std::string here = "chain from version " + std::to_string(from) + " to " + std::to_string(to);
  DCR_REQUIRE(from <= to, Code::invalid_argument, here + ": versions only move forward");
  out->clear();
  std::vector<uint64_t> listed;
  DCR_TRY(targets(kDelta, &listed));  // one LIST: manifests removed since are forgotten
  for (uint64_t at = to; at != from;) {
    VersionEntry e;
    const Status s = version(at, &e);
    if (!s.is_ok()) {
      const std::string link = out->empty() ? "" : ": the base of version " + std::to_string(out->back().target);
      return s.with_context(here + link);
    }
    DCR_REQUIRE(e.base >= from, Code::not_found,
                here + ": version " + std::to_string(at) + " is based on version " + std::to_string(e.base) +
                    ", which comes before " + std::to_string(from) + ": no published chain starts at " +
                    std::to_string(from));
    DCR_REQUIRE(e.base < at, Code::corrupt, here + ": version " + std::to_string(at) + " names itself as its base");
    out->push_back(e);
    at = e.base;
  }
  std::reverse(out->begin(), out->end());
  return Status::ok();
}

Status FrameSpool::frames_of(const VersionEntry& entry, std::vector<FrameRef>* out) const {
  const char series = entry.full ? kFull : kDelta;
  Manifests m;
  DCR_TRY(load_published(series, entry.target, &m));
  DCR_REQUIRE(m.entry().base == entry.base && m.entry().frames == entry.frames, Code::corrupt,
              describe_version(entry.full, entry.target) + " in '" + store_->describe() +
                  "' changed while it was being read (was it republished?)");
  out->clear();
  for (size_t w = 0; w < m.parts.size(); ++w) {
    for (const spool::ManifestEntry& f : m.parts[w].frames) {
      out->push_back(FrameRef{prefix_of(series, entry.target) + f.name, m.keys[w], f.bytes, f.hash});
    }
  }
  return Status::ok();
}

Status FrameSpool::read_frame(const VersionEntry& entry, const FrameRef& ref, std::vector<uint8_t>* frame) const {
  const std::string what = "frame object " + where(ref.key);
  bool found = false;
  DCR_TRY(store_->get(ref.key, frame, &found, ref.bytes));
  DCR_REQUIRE(found, Code::corrupt, what + ", listed in " + where(ref.manifest) + ", is missing");
  DCR_REQUIRE(frame->size() == ref.bytes, Code::corrupt,
              what + " has " + std::to_string(frame->size()) + " bytes, its manifest says " + std::to_string(ref.bytes));
  DCR_REQUIRE(hash64(frame->data(), frame->size()) == ref.hash, Code::corrupt,
              what + " does not match the hash in its manifest");
  FrameHeader h;
  const Status s = check_stored_frame(frame->data(), frame->size(), &h);
  DCR_REQUIRE(s.is_ok(), Code::corrupt, what + ": " + s.message());
  const bool fits = h.target_version == entry.target && (entry.full ? h.is_full() : h.is_full() || h.base_version == entry.base);
  DCR_REQUIRE(fits, Code::corrupt,
              what + " holds a frame " + h.describe() + ", not one of " +
                  (entry.full ? describe_version(true, entry.target)
                              : "version " + std::to_string(entry.base) + "->" + std::to_string(entry.target)));
  return Status::ok();
}

Status FrameSpool::read_version(uint64_t target, std::vector<std::vector<uint8_t>>* frames) const {
  VersionEntry entry;
  DCR_TRY(version(target, &entry));
  std::vector<FrameRef> refs;
  DCR_TRY(frames_of(entry, &refs));
  frames->assign(refs.size(), {});
  for (size_t i = 0; i < refs.size(); ++i) DCR_TRY(read_frame(entry, refs[i], &(*frames)[i]));
  return Status::ok();
}

// Manifests first: the version is gone for readers before its frames go.
Status FrameSpool::remove_version(char series, uint64_t target) const {
  const std::string prefix = prefix_of(series, target);
  for (auto it = complete_.lower_bound(prefix); it != complete_.end() && it->first.rfind(prefix, 0) == 0;) {
    it = complete_.erase(it);
  }
  std::vector<std::string> keys;
  DCR_TRY(store_->list(prefix, &keys));
  for (const std::string& key : keys)
    if (is_manifest(key)) DCR_TRY(store_->remove(key));
  for (const std::string& key : keys)
    if (!is_manifest(key)) DCR_TRY(store_->remove(key));
  return Status::ok();
}

Status FrameSpool::prune(size_t keep_last) const {
  DCR_REQUIRE(keep_last >= 1, Code::invalid_argument,
              "frame spool '" + store_->describe() + "': prune must keep at least the newest version");
  std::vector<uint64_t> all, complete_targets;
  DCR_TRY(targets(kDelta, &all));
  for (uint64_t target : all)
    if (complete(target)) complete_targets.push_back(target);
  if (complete_targets.empty()) return Status::ok();
  return prune_before(complete_targets[complete_targets.size() - std::min(keep_last, complete_targets.size())]);
}

Status FrameSpool::remove_where(char series, const std::function<bool(uint64_t)>& drop) const {
  std::vector<uint64_t> all;
  DCR_TRY(targets(series, &all));
  for (uint64_t target : all)
    if (drop(target)) DCR_TRY(remove_version(series, target));
  return Status::ok();
}

Status FrameSpool::prune_before(uint64_t oldest_kept) const {
  return remove_where(kDelta, [oldest_kept](uint64_t target) { return target < oldest_kept; });
}

Status FrameSpool::prune_snapshots_before(uint64_t oldest_kept) const {
  return remove_where(kFull, [oldest_kept](uint64_t target) { return target < oldest_kept; });
}

Status FrameSpool::remove_after(uint64_t newest_kept) const {
  auto above = [newest_kept](uint64_t target) { return target > newest_kept; };
  DCR_TRY(remove_where(kDelta, above));
  return remove_where(kFull, above);
}

}  // namespace dcr
