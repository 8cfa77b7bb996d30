// A rank's durable progress: an append-only file of fixed-size checksummed records. A record cut
// short by a crash (or damaged) ends the journal: everything before it stands, it and what follows
// are dropped (and reported). Appends that mark a durability point are fsync'ed; compaction
// rewrites the file with write-to-temp, fsync, rename, so the journal on disk is always whole.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dcr/core/status.h"

namespace dcr {

struct JournalRecord {
  enum Type : uint32_t {
    begin = 1,     // a: base, b: target — a refit step started
    applied = 2,   // a: target, b: frame ordinal — a frame applied and verified
    voted = 3,     // a: target — every needed frame applied and verified; voted yes
    committed = 4, // a: version, b: base, c: manifest hash — the version is committed
    snapshot = 5,  // a: version — a snapshot of this version is on disk
  };
  Type type;
  uint64_t a = 0, b = 0, c = 0;
};

class Journal {
 public:
  // Opens (creating if absent) the journal at `path` and reads what it holds; a damaged tail is cut.
  // Anything but a regular file (a directory, FIFO, device) is refused.
  Status open(const std::string& path);
  // Reads an existing journal without changing it (a damaged tail is reported, not cut); appends
  // and compaction are refused. For inspection (`dcr state`).
  Status open_read_only(const std::string& path);

  const std::vector<JournalRecord>& records() const { return records_; }
  uint64_t dropped_bytes() const { return dropped_bytes_; }  // torn or damaged tail found at open

  // Appends a record; `durable` fsyncs it (and all before it) before returning.
  Status append(const JournalRecord& record, bool durable);
  // Rewrites the journal to hold only `keep` (atomically).
  Status compact(const std::vector<JournalRecord>& keep);

  // The last committed version and its base; false when none.
  bool last_committed(uint64_t* version, uint64_t* base, uint64_t* manifest_hash) const;
  // The newest snapshot version recorded; false when none.
  bool last_snapshot(uint64_t* version) const;

  ~Journal();

 private:
  Status read_all();
  Status open_with(const std::string& path, int flags);
  std::string path_;
  int fd_ = -1;
  bool read_only_ = false;
  std::vector<JournalRecord> records_;
  uint64_t dropped_bytes_ = 0;
};

}  // namespace dcr
