// The frame spool's manifest: one writer's part of one version, as text lines
//   dcr-frame-spool 1
//   base <decimal>
//   target <decimal>
//   writer <w> of <writers>
//   full                                                    (a full snapshot: base == target)
//   publication <32 hex digits>                             (optional: the publication it belongs to)
//   state <hash64, 16 hex digits>                           (optional: hash of the writer's boxes at target)
//   published <unix time, microseconds>                     (optional: when the writer finished)
//   frame <file name> <bytes> <hash64, 16 hex digits>      (one line per frame, in order)
//   mac <key id> <HMAC-SHA-256 of every byte before this line, 64 hex digits>   (with a job key)
//   end <frame count> <hash64 of every byte before this line, 16 hex digits>
// The end line makes a truncated or damaged manifest detectable, the mac line an altered one.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dcr/core/status.h"

namespace dcr::spool {

struct ManifestEntry {
  std::string name;  // a plain file name in the version's directory
  uint64_t bytes = 0;
  uint64_t hash = 0;
};

struct Manifest {
  uint64_t base = 0;
  uint64_t target = 0;
  uint32_t writer = 0;
  uint32_t writers = 1;
  bool full = false;        // full frames of `target` (base == target), not a delta
  uint64_t published_us = 0;  // 0: not given
  // The publication (--role publish) this manifest belongs to, fixed at its first version: a copy
  // from another publication is refused. "" outside the two-job path.
  std::string publication;
  // hash64 over the hashes of every box this writer holds, in plan order, at `target` (0: not
  // given): a restarted publisher proves it rebuilt the store's newest version with it.
  uint64_t state = 0;
  std::vector<ManifestEntry> frames;
  uint32_t mac_key = 0;   // the key id of the mac line (0: none)
  std::string mac;        // its 64 hex digits
  size_t mac_covers = 0;  // bytes of the text the mac covers
};

// `mac`, when given, makes the mac line from the text before it (its key id and tag).
std::string format_manifest(const Manifest& manifest,
                            const std::function<std::string(const std::string&, uint32_t*)>& mac = nullptr);

// Code::corrupt naming `path` (and the line) when `text` is not a whole, valid manifest.
Status parse_manifest(const std::string& text, const std::string& path, Manifest* out);

}  // namespace dcr::spool
