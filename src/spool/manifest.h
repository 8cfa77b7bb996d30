// The frame spool's manifest: one writer's part of one version, as text lines
//   dcr-frame-spool 1
//   base <decimal>
//   target <decimal>
//   writer <w> of <writers>
//   frame <file name> <bytes> <hash64, 16 hex digits>      (one line per frame, in order)
//   end <frame count> <hash64 of every byte before this line, 16 hex digits>
// The end line makes a truncated or altered manifest detectable.
#pragma once

#include <cstdint>
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
  std::vector<ManifestEntry> frames;
};

std::string format_manifest(const Manifest& manifest);

// Code::corrupt naming `path` (and the line) when `text` is not a whole, valid manifest.
Status parse_manifest(const std::string& text, const std::string& path, Manifest* out);

}  // namespace dcr::spool
