// Versioned publication of frames in a shared directory, for receivers that catch up later (a
// restarted rollout, a late replica): they read the chain of deltas from their version to the
// newest instead of asking the trainers again.
//
// Layout under `dir`:
//   v<target>/w<writer>-<index, 6 digits>.frame   one frame each, exactly the frame's bytes
//   v<target>/MANIFEST                             with one writer per version
//   v<target>/w<writer>.MANIFEST                   with several writers per version, one each
// A manifest (text, see src/spool/manifest.h) lists its writer's frame files with their size and
// hash64, the base and target versions and the writer count, and ends with a hash of itself. Each
// file is written as "<name>.tmp", fsynced and renamed; a writer's manifest comes last. A version
// exists for readers only once every writer's manifest is there: until then it is invisible.
//
// Versions increase along a chain: each published version names its base (< target), and a reader
// at version `from` applies the versions linking from -> to in order.
// A FrameSpool holds no state beyond its directory and writer count; several processes may use the
// same directory (each writer publishes its own files; prune from one process only).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dcr/auth/keyring.h"
#include "dcr/core/status.h"

namespace dcr {

// One published version as its manifests describe it.
struct VersionEntry {
  uint64_t base = 0;
  uint64_t target = 0;
  uint32_t writers = 0;
  uint64_t frames = 0;  // over all writers
  uint64_t bytes = 0;   // frame bytes over all writers
};

class FrameSpool;

// One writer's publication of one version, frame by frame (a trainer can publish while it
// encodes): add() writes each frame file at once, finish() writes the manifest.
class FramePublisher {
 public:
  FramePublisher() = default;

  // Checks the frame (parse_frame_header; target version, and the base for delta frames) and
  // writes its file. Code::invalid_argument for a frame of another version.
  Status add(const uint8_t* frame, size_t bytes);
  Status add(const std::vector<uint8_t>& frame) { return add(frame.data(), frame.size()); }
  // Writes the manifest; the version becomes visible once every writer finished.
  Status finish();

 private:
  friend class FrameSpool;
  struct Listed {
    std::string name;
    uint64_t bytes;
    uint64_t hash;
  };
  std::string dir_;  // v<target>/
  uint64_t base_ = 0, target_ = 0;
  uint32_t writer_ = 0, writers_ = 0;
  std::vector<Listed> files_;
  std::shared_ptr<const Keyring> keys_;
  bool open_ = false;
};

class FrameSpool {
 public:
  // `writers`: how many writers publish each version (each its own frames).
  explicit FrameSpool(std::string dir, uint32_t writers = 1);
  // With keys, every manifest written carries an HMAC-SHA-256 line under the newest key, and every
  // manifest read must carry a valid one (Code::corrupt naming it otherwise).
  void set_keys(std::shared_ptr<const Keyring> keys) { keys_ = std::move(keys); }

  const std::string& dir() const { return dir_; }
  uint32_t writers() const { return writers_; }

  // Starts writer `writer`'s publication of base -> target (base < target). Code::invalid_argument
  // when that writer already published this version.
  Status begin(uint64_t base, uint64_t target, uint32_t writer, FramePublisher* out) const;
  // begin + add each frame + finish.
  Status publish(uint64_t base, uint64_t target, uint32_t writer, const std::vector<std::vector<uint8_t>>& frames) const;
  // The same for the only writer (writers() must be 1).
  Status publish(uint64_t base, uint64_t target, const std::vector<std::vector<uint8_t>>& frames) const;

  // Whether `target` has a valid manifest from each of `writers` writers (agreeing on its base).
  bool complete(uint64_t target, uint32_t writers) const;
  bool complete(uint64_t target) const { return complete(target, writers_); }

  // The version `target`: Code::not_found when not (completely) published, Code::corrupt naming
  // the manifest that fails validation.
  Status version(uint64_t target, VersionEntry* out) const;
  // Every complete version, ascending by target.
  Status published(std::vector<VersionEntry>* out) const;
  // The versions linking from -> to in apply order (each one's base the previous one's target;
  // empty when from == to). Code::not_found naming the missing version where the chain breaks
  // (walking back from `to`), or saying that the chain passes below `from`.
  Status chain(uint64_t from, uint64_t to, std::vector<VersionEntry>* out) const;
  // Every frame of `target` (writer by writer, in publication order), each checked against its
  // manifest (size, hash64) and by parse_frame_header; errors (Code::corrupt) name the file.
  Status read_version(uint64_t target, std::vector<std::vector<uint8_t>>* frames) const;
  // Keeps the newest `keep_last` (>= 1) complete versions; removes older ones (manifests first,
  // so that each disappears at once for readers) and abandoned incomplete ones older than those
  // kept. Newer incomplete versions (publications in progress) stay.
  Status prune(size_t keep_last) const;
  // Removes every version (complete or not) whose target is below `oldest_kept`. A writer that knows
  // the newest committed version uses this, so that another writer still publishing it does not
  // make one version too many stay.
  Status prune_before(uint64_t oldest_kept) const;

 private:
  struct Manifests;
  std::string version_dir(uint64_t target) const;
  Status load(uint64_t target, uint32_t writers, Manifests* out, bool* found) const;
  Status load_published(uint64_t target, Manifests* out) const;  // not_found unless complete
  Status read_frame(const std::string& manifest_path, const std::string& name, uint64_t bytes, uint64_t hash,
                    const VersionEntry& entry, std::vector<uint8_t>* frame) const;
  Status version_dirs(std::vector<uint64_t>* targets) const;
  Status remove_version(uint64_t target) const;

  std::string dir_;
  uint32_t writers_;
  std::shared_ptr<const Keyring> keys_;
};

}  // namespace dcr
