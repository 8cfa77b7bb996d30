#include "dcr/spool/frame_spool.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "dcr/codec/frame.h"
#include "dcr/core/hash.h"
#include "src/core/files.h"
#include "dcr/auth/seal.h"
#include "src/spool/manifest.h"

namespace dcr {
namespace {

constexpr int kIndexDigits = 6;

std::string manifest_name(uint32_t writer, uint32_t writers) {
  return writers == 1 ? std::string("MANIFEST") : "w" + std::to_string(writer) + ".MANIFEST";
}

std::string frame_name(uint32_t writer, size_t index) {
  return "w" + std::to_string(writer) + "-" + files::zero_padded(index, kIndexDigits) + ".frame";
}

bool is_manifest(const std::string& name) {
  const std::string suffix = "MANIFEST";
  return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool exists(const std::string& path) {
  std::error_code error;
  return std::filesystem::exists(path, error);
}

std::string quoted(const std::string& path) { return "'" + path + "'"; }

}  // namespace

// ---- FramePublisher ----

Status FramePublisher::add(const uint8_t* frame, size_t bytes) {
  DCR_REQUIRE(open_, Code::invalid_argument, "frame publisher: not begun (FrameSpool::begin) or already finished");
  const std::string what = "frame " + std::to_string(files_.size()) + " of version " + std::to_string(target_) +
                           " (writer " + std::to_string(writer_) + ")";
  FrameHeader h;
  DCR_TRY(check_stored_frame(frame, bytes, &h).with_context(what));
  DCR_REQUIRE(h.target_version == target_, Code::invalid_argument,
              what + ": it is a frame to version " + std::to_string(h.target_version));
  DCR_REQUIRE(h.is_full() || h.base_version == base_, Code::invalid_argument,
              what + ": it is a delta on version " + std::to_string(h.base_version) + ", not on the base " +
                  std::to_string(base_));
  const std::string name = frame_name(writer_, files_.size());
  DCR_TRY(files::write_atomic(dir_ + name, {{frame, bytes}}, false, files::kPrivateFile));
  files_.push_back(Listed{name, bytes, hash64(frame, bytes)});
  return Status::ok();
}

Status FramePublisher::finish() {
  DCR_REQUIRE(open_, Code::invalid_argument, "frame publisher: not begun (FrameSpool::begin) or already finished");
  DCR_TRY(files::sync_directory(dir_));  // the frames' renames are durable before the manifest's
  spool::Manifest m;
  m.base = base_;
  m.target = target_;
  m.writer = writer_;
  m.writers = writers_;
  for (const Listed& f : files_) m.frames.push_back(spool::ManifestEntry{f.name, f.bytes, f.hash});
  const std::shared_ptr<const Keyring> keys = keys_;
  const std::string text = keys ? spool::format_manifest(m, [&keys](const std::string& body, uint32_t* id) {
    return text_tag(*keys, body, id);
  }) : spool::format_manifest(m);
  DCR_TRY(files::write_atomic(dir_ + manifest_name(writer_, writers_), {{text.data(), text.size()}}, true,
                              files::kPrivateFile));
  DCR_TRY(files::sync_directory(dir_ + ".."));  // the version directory's own entry
  open_ = false;
  return Status::ok();
}

// ---- FrameSpool ----

struct FrameSpool::Manifests {
  std::vector<spool::Manifest> parts;  // writer by writer
  std::vector<std::string> paths;

  VersionEntry entry() const {
    VersionEntry e{parts[0].base, parts[0].target, parts[0].writers, 0, 0};
    for (const spool::Manifest& m : parts) {
      e.frames += m.frames.size();
      for (const spool::ManifestEntry& f : m.frames) e.bytes += f.bytes;
    }
    return e;
  }
};

FrameSpool::FrameSpool(std::string dir, uint32_t writers) : dir_(std::move(dir)), writers_(writers) {}

std::string FrameSpool::version_dir(uint64_t target) const { return dir_ + "/v" + std::to_string(target); }

Status FrameSpool::begin(uint64_t base, uint64_t target, uint32_t writer, FramePublisher* out) const {
  const std::string where = "frame spool " + quoted(dir_) + ": ";
  DCR_REQUIRE(base < target, Code::invalid_argument,
              where + "version " + std::to_string(target) + " must come after its base " + std::to_string(base));
  DCR_REQUIRE(writer < writers_, Code::invalid_argument,
              where + "writer " + std::to_string(writer) + " is not one of its " + std::to_string(writers_));
  const std::string manifest = version_dir(target) + "/" + manifest_name(writer, writers_);
  DCR_REQUIRE(!exists(manifest), Code::invalid_argument,
              where + "writer " + std::to_string(writer) + " already published version " + std::to_string(target) +
                  " (" + quoted(manifest) + ")");
  DCR_TRY(files::make_dirs(dir_, files::kPrivateDir));
  DCR_TRY(files::make_dirs(version_dir(target), files::kPrivateDir));
  *out = FramePublisher();
  out->dir_ = version_dir(target) + "/";
  out->base_ = base;
  out->target_ = target;
  out->writer_ = writer;
  out->writers_ = writers_;
  out->keys_ = keys_;
  out->open_ = true;
  return Status::ok();
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
              "frame spool " + quoted(dir_) + " has " + std::to_string(writers_) + " writers: name the writer");
  return publish(base, target, 0, frames);
}

// Reads and checks every writer's manifest of `target`; *found is false when one is missing.
Status FrameSpool::load(uint64_t target, uint32_t writers, Manifests* out, bool* found) const {
  *found = false;
  *out = Manifests();
  for (uint32_t w = 0; w < writers; ++w) {
    const std::string path = version_dir(target) + "/" + manifest_name(w, writers);
    std::vector<uint8_t> bytes;
    bool here = false;
    DCR_TRY(files::read_whole(path, &bytes, &here));
    if (!here) return Status::ok();
    spool::Manifest m;
    const std::string text(bytes.begin(), bytes.end());
    DCR_TRY(spool::parse_manifest(text, path, &m));
    if (keys_) {
      DCR_REQUIRE(!m.mac.empty(), Code::corrupt,
                  "spool manifest " + quoted(path) + " is not authenticated (no mac line) but this job has a key file");
      DCR_TRY(check_text_tag(*keys_, text.substr(0, m.mac_covers), m.mac_key, m.mac, "spool manifest " + quoted(path)));
    }
    DCR_REQUIRE(m.target == target && m.writer == w && m.writers == writers, Code::corrupt,
                "spool manifest " + quoted(path) + " describes writer " + std::to_string(m.writer) + " of " +
                    std::to_string(m.writers) + " for version " + std::to_string(m.target));
    DCR_REQUIRE(w == 0 || m.base == out->parts[0].base, Code::corrupt,
                "spool manifest " + quoted(path) + " names base " + std::to_string(m.base) + ", writer 0's names " +
                    std::to_string(out->parts[0].base));
    out->parts.push_back(std::move(m));
    out->paths.push_back(path);
  }
  *found = writers > 0;
  return Status::ok();
}

bool FrameSpool::complete(uint64_t target, uint32_t writers) const {
  Manifests m;
  bool found = false;
  return load(target, writers, &m, &found).is_ok() && found;
}

Status FrameSpool::load_published(uint64_t target, Manifests* m) const {
  bool found = false;
  DCR_TRY(load(target, writers_, m, &found));
  DCR_REQUIRE(found, Code::not_found,
              "version " + std::to_string(target) + " is not published in frame spool " + quoted(dir_) +
                  " (no complete manifest)");
  return Status::ok();
}

Status FrameSpool::version(uint64_t target, VersionEntry* out) const {
  Manifests m;
  DCR_TRY(load_published(target, &m));
  *out = m.entry();
  return Status::ok();
}

Status FrameSpool::version_dirs(std::vector<uint64_t>* targets) const {
  std::vector<std::string> names;
  DCR_TRY(files::list_dir(dir_, &names));
  targets->clear();
  for (const std::string& name : names) {
    uint64_t target = 0;
    if (files::parse_numbered(name, "v", &target)) targets->push_back(target);
  }
  std::sort(targets->begin(), targets->end());
  return Status::ok();
}

Status FrameSpool::published(std::vector<VersionEntry>* out) const {
  std::vector<uint64_t> targets;
  DCR_TRY(version_dirs(&targets));
  out->clear();
  for (uint64_t target : targets) {
    VersionEntry e;
    const Status s = version(target, &e);
    if (s.code() == Code::not_found) continue;
    DCR_TRY(s);
    out->push_back(e);
  }
  return Status::ok();
}

Status FrameSpool::chain(uint64_t from, uint64_t to, std::vector<VersionEntry>* out) const {
  const std::string where = "chain from version " + std::to_string(from) + " to " + std::to_string(to);
  DCR_REQUIRE(from <= to, Code::invalid_argument, where + ": versions only move forward");
  out->clear();
  for (uint64_t at = to; at != from;) {
    VersionEntry e;
    const Status s = version(at, &e);
    if (!s.is_ok()) {
      const std::string link = out->empty() ? "" : ": the base of version " + std::to_string(out->back().target);
      return s.with_context(where + link);
    }
    DCR_REQUIRE(e.base >= from, Code::not_found,
                where + ": version " + std::to_string(at) + " is based on version " + std::to_string(e.base) +
                    ", which comes before " + std::to_string(from) + ": no published chain starts at " +
                    std::to_string(from));
    DCR_REQUIRE(e.base < at, Code::corrupt, where + ": version " + std::to_string(at) + " names itself as its base");
    out->push_back(e);
    at = e.base;
  }
  std::reverse(out->begin(), out->end());
  return Status::ok();
}

Status FrameSpool::read_frame(const std::string& manifest_path, const std::string& name, uint64_t bytes,
                              uint64_t hash, const VersionEntry& entry, std::vector<uint8_t>* frame) const {
  const std::string path = version_dir(entry.target) + "/" + name;
  const std::string what = "frame file " + quoted(path);
  bool found = false;
  DCR_TRY(files::read_whole(path, frame, &found));
  DCR_REQUIRE(found, Code::corrupt, what + ", listed in " + quoted(manifest_path) + ", is missing");
  DCR_REQUIRE(frame->size() == bytes, Code::corrupt,
              what + " has " + std::to_string(frame->size()) + " bytes, its manifest says " + std::to_string(bytes));
  DCR_REQUIRE(hash64(frame->data(), frame->size()) == hash, Code::corrupt,
              what + " does not match the hash in its manifest");
  FrameHeader h;
  const Status s = check_stored_frame(frame->data(), frame->size(), &h);
  DCR_REQUIRE(s.is_ok(), Code::corrupt, what + ": " + s.message());
  DCR_REQUIRE(h.target_version == entry.target && (h.is_full() || h.base_version == entry.base), Code::corrupt,
              what + " holds a frame " + h.describe() + ", not one of version " + std::to_string(entry.base) +
                  "->" + std::to_string(entry.target));
  return Status::ok();
}

Status FrameSpool::read_version(uint64_t target, std::vector<std::vector<uint8_t>>* frames) const {
  Manifests m;
  DCR_TRY(load_published(target, &m));
  const VersionEntry entry = m.entry();
  frames->clear();
  frames->reserve(entry.frames);
  for (size_t w = 0; w < m.parts.size(); ++w) {
    for (const spool::ManifestEntry& f : m.parts[w].frames) {
      frames->emplace_back();
      DCR_TRY(read_frame(m.paths[w], f.name, f.bytes, f.hash, entry, &frames->back()));
    }
  }
  return Status::ok();
}

// Manifests first: the version is gone for readers before its frames go.
Status FrameSpool::remove_version(uint64_t target) const {
  const std::string dir = version_dir(target);
  std::vector<std::string> names;
  DCR_TRY(files::list_dir(dir, &names));
  for (const std::string& name : names)
    if (is_manifest(name)) DCR_TRY(files::remove_tree(dir + "/" + name));
  return files::remove_tree(dir);
}

Status FrameSpool::prune(size_t keep_last) const {
  DCR_REQUIRE(keep_last >= 1, Code::invalid_argument,
              "frame spool " + quoted(dir_) + ": prune must keep at least the newest version");
  std::vector<uint64_t> targets, complete_targets;
  DCR_TRY(version_dirs(&targets));
  for (uint64_t target : targets)
    if (complete(target)) complete_targets.push_back(target);
  if (complete_targets.empty()) return Status::ok();
  return prune_before(complete_targets[complete_targets.size() - std::min(keep_last, complete_targets.size())]);
}

Status FrameSpool::prune_before(uint64_t oldest_kept) const {
  std::vector<uint64_t> targets;
  DCR_TRY(version_dirs(&targets));
  for (uint64_t target : targets)
    if (target < oldest_kept) DCR_TRY(remove_version(target));
  return Status::ok();
}

}  // namespace dcr
