// Versioned publication of frames in an object store (object_store.h: a shared directory or an
// S3 bucket), for receivers that catch up later (a restarted rollout, a late replica) and for
// follower jobs that take every version from it (dcr refit --role follow): they read the chain of
// deltas from their version to the newest, or a full snapshot and the deltas after it.
//
// Keys in the store:
//   v<target>/w<writer>-<index, 6 digits>.frame   a delta's frames, exactly the frames' bytes
//   v<target>/MANIFEST                             with one writer per version
//   v<target>/w<writer>.MANIFEST                   with several writers per version, one each
//   f<target>/...                                  the same for a full snapshot of `target`
// A manifest (text, see src/spool/manifest.h) lists its writer's frame objects with their size and
// hash64, the base and target versions and the writer count, and ends with a hash of itself. Frames
// are put first, a writer's manifest last (durably). A version exists for readers only once every
// writer's manifest is there: until then it is invisible.
//
// Versions increase along a chain: each published delta names its base (< target), and a reader
// at version `from` applies the versions linking from -> to in order.
// A FrameSpool holds no state beyond its store, its writer count and the manifests of complete
// versions it has read (which never change); several processes may use the same store (each writer
// publishes its own objects; prune from one process only).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "dcr/auth/keyring.h"
#include "dcr/core/status.h"
#include "dcr/store/object_store.h"

namespace dcr {

// One published version (a delta, or a full snapshot) as its manifests describe it.
struct VersionEntry {
  uint64_t base = 0;  // == target for a full snapshot
  uint64_t target = 0;
  uint32_t writers = 0;
  uint64_t frames = 0;        // over all writers
  uint64_t bytes = 0;         // frame bytes over all writers
  bool full = false;          // a full snapshot
  uint64_t published_us = 0;  // when the last writer finished (unix microseconds; 0: not recorded)
  std::vector<uint64_t> states;  // each writer's state hash (FramePublisher::set_state; 0: not given)
};

// One frame of a published version, as its manifest lists it.
struct FrameRef {
  std::string key;       // in the store
  std::string manifest;  // the key of the manifest listing it
  uint64_t bytes = 0;
  uint64_t hash = 0;
};

class FrameSpool;

// One writer's publication of one version, frame by frame (a trainer can publish while it
// encodes): add() puts each frame at once, finish() puts the manifest.
class FramePublisher {
 public:
  FramePublisher() = default;

  // Checks the frame (parse_frame_header; target version, and the base for delta frames; full
  // frames for a snapshot) and puts it. Code::invalid_argument for a frame of another version.
  Status add(const uint8_t* frame, size_t bytes);
  Status add(const std::vector<uint8_t>& frame) { return add(frame.data(), frame.size()); }
  // The hash of this writer's boxes at the target, recorded in the manifest (spool/manifest.h).
  void set_state(uint64_t state) { state_ = state; }
  // Puts the manifest; the version becomes visible once every writer finished.
  Status finish();

 private:
  friend class FrameSpool;
  std::shared_ptr<ObjectStore> store_;
  std::string prefix_;  // "v<target>/" or "f<target>/"
  uint64_t base_ = 0, target_ = 0;
  bool full_ = false;
  uint32_t writer_ = 0, writers_ = 0;
  uint64_t state_ = 0;
  std::string publication_;
  std::vector<FrameRef> files_;
  std::shared_ptr<const Keyring> keys_;
  bool open_ = false;
};

class FrameSpool {
 public:
  // `writers`: how many writers publish each version (each its own frames).
  FrameSpool(std::shared_ptr<ObjectStore> store, uint32_t writers = 1);
  // The spool in a shared directory (a file:// store).
  explicit FrameSpool(const std::string& dir, uint32_t writers = 1);
  // With keys, every manifest written carries an HMAC-SHA-256 line under the newest key, and every
  // manifest read must carry a valid one (Code::corrupt naming it otherwise).
  void set_keys(std::shared_ptr<const Keyring> keys) { keys_ = std::move(keys); }
  // With a publication id (two jobs joined by a store), every manifest written names it and every
  // manifest read must name it: a version copied from another publication is refused.
  void set_publication(std::string id) {
    publication_ = std::move(id);
    complete_.clear();
  }
  const std::string& publication() const { return publication_; }

  std::string describe() const { return store_->describe(); }
  ObjectStore& store() const { return *store_; }
  uint32_t writers() const { return writers_; }

  // Starts writer `writer`'s publication of the delta base -> target (base < target), or of a full
  // snapshot of `target`. Code::invalid_argument when that writer already published it.
  Status begin(uint64_t base, uint64_t target, uint32_t writer, FramePublisher* out) const;
  Status begin_full(uint64_t target, uint32_t writer, FramePublisher* out) const;
  // begin + add each frame + finish.
  Status publish(uint64_t base, uint64_t target, uint32_t writer, const std::vector<std::vector<uint8_t>>& frames) const;
  // The same for the only writer (writers() must be 1).
  Status publish(uint64_t base, uint64_t target, const std::vector<std::vector<uint8_t>>& frames) const;

  // Whether the delta to `target` has a valid manifest from each of `writers` writers (agreeing on its base).
  bool complete(uint64_t target, uint32_t writers) const;
  bool complete(uint64_t target) const { return complete(target, writers_); }

  // The delta to `target` (or the full snapshot of it): Code::not_found when not (completely)
  // published, Code::corrupt naming the manifest that fails validation.
  Status version(uint64_t target, VersionEntry* out) const;
  Status snapshot(uint64_t target, VersionEntry* out) const;
  // Every complete delta (or full snapshot), ascending by target. A version whose manifests fail
  // validation (damaged, forged, of another publication) is left out and named once in a warning:
  // a reader that needs it fails in chain() or version(), one that does not goes on.
  Status published(std::vector<VersionEntry>* out) const;
  Status snapshots(std::vector<VersionEntry>* out) const;
  // The newest target of a complete delta or snapshot; *found false when there is none.
  Status newest(uint64_t* target, bool* found) const;
  // The deltas linking from -> to in apply order (each one's base the previous one's target;
  // empty when from == to). Code::not_found naming the missing version where the chain breaks
  // (walking back from `to`), or saying that the chain passes below `from`.
  Status chain(uint64_t from, uint64_t to, std::vector<VersionEntry>* out) const;
  // The frames of a published version (writer by writer, in publication order), and one frame's
  // bytes, checked against its manifest (size, hash64) and by parse_frame_header; errors
  // (Code::corrupt) name the object.
  Status frames_of(const VersionEntry& entry, std::vector<FrameRef>* out) const;
  Status read_frame(const VersionEntry& entry, const FrameRef& ref, std::vector<uint8_t>* frame) const;
  // Every frame of the delta to `target`.
  Status read_version(uint64_t target, std::vector<std::vector<uint8_t>>* frames) const;
  // Keeps the newest `keep_last` (>= 1) complete deltas; removes older ones (manifests first,
  // so that each disappears at once for readers) and abandoned incomplete ones older than those
  // kept. Newer incomplete versions (publications in progress) stay.
  Status prune(size_t keep_last) const;
  // Removes every delta (complete or not) whose target is below `oldest_kept`. A writer that knows
  // the newest committed version uses this, so that another writer still publishing it does not
  // make one version too many stay.
  Status prune_before(uint64_t oldest_kept) const;
  // The same for full snapshots.
  Status prune_snapshots_before(uint64_t oldest_kept) const;
  // Removes every delta and snapshot above `newest_kept` (a publisher's unfinished versions, when
  // it restarts at the newest complete one).
  Status remove_after(uint64_t newest_kept) const;

 private:
  struct Manifests;
  Status start(uint64_t base, uint64_t target, bool full, uint32_t writer, FramePublisher* out) const;
  Status load(char series, uint64_t target, uint32_t writers, Manifests* out, bool* found) const;
  Status load_published(char series, uint64_t target, Manifests* out) const;  // not_found unless complete
  Status entry_of(char series, uint64_t target, VersionEntry* out) const;
  Status all_of(char series, std::vector<VersionEntry>* out) const;
  Status targets(char series, std::vector<uint64_t>* out) const;
  Status remove_version(char series, uint64_t target) const;
  void forget_unlisted(char series, const std::vector<std::string>& listed) const;
  Status remove_where(char series, const std::function<bool(uint64_t)>& drop) const;  // each target it says
  std::string where(const std::string& key) const { return "'" + store_->describe() + "/" + key + "'"; }

  std::shared_ptr<ObjectStore> store_;
  uint32_t writers_;
  std::shared_ptr<const Keyring> keys_;
  std::string publication_;
  mutable std::set<std::string> reported_;  // damaged versions already named in a warning
  // Complete versions' manifests as validated once (by "v12/" + writers): a complete manifest never
  // changes, so a reader polling the store lists it and GETs only the new ones; one no longer
  // listed is forgotten.
  mutable std::map<std::string, std::shared_ptr<const Manifests>> complete_;
};

}  // namespace dcr
