// Read-only memory mappings of files that another process may rewrite while they are read (a
// trainer saving a checkpoint again under the same name). Reading a page of a mapping whose file
// was truncated raises SIGBUS; a process-wide handler, installed by the first mapping, turns the
// rest of that mapping into zero pages, so the interrupted read completes, and marks the mapping
// as faulted. Callers read what they need, then ask check_unchanged() whether what they read is
// the file they opened: it reports a fault, or a size, mtime, ctime, inode or device that differs
// from the open's, as an error naming the file.
//
// A SIGBUS anywhere else (another mapping, a signal sent by a process) goes to the action there
// was before the handler, as if it had never been installed. A handler a host program installs
// after ours replaces it: its mappings are then read unprotected, as before.
// Internal: the checkpoint readers' (src/ckpt) shared facility.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "dcr/core/status.h"

namespace dcr {

class MappedFile {
 public:
  // Opens and maps `path` (a regular file; invalid_argument otherwise, not_found when missing,
  // io_error when it cannot be opened or mapped). An empty file maps to no bytes.
  static Status open(const std::string& path, std::unique_ptr<MappedFile>* out);
  // The same for a file the caller already has open as `fd` (it stays the caller's to close);
  // `path` names it in messages and is what check_unchanged looks at.
  static Status map(int fd, const std::string& path, std::unique_ptr<MappedFile>* out);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  // Tells the kernel the pages are read in no order (no readahead: only the pages touched are read).
  void advise_random() const;
  // Whether a read of the mapping found a page gone (the file was truncated under it).
  bool faulted() const;
  // io_error naming the file when it changed since the open: a page vanished under a read, or its
  // size, mtime, ctime, inode or device differ (rewritten in place, replaced, removed). Call it
  // after the reads it vouches for.
  Status check_unchanged() const;

 private:
  struct Identity {  // what stat() says of the file
    uint64_t device = 0, inode = 0, size = 0;
    int64_t mtime_s = 0, mtime_ns = 0, ctime_s = 0, ctime_ns = 0;
  };
  MappedFile() = default;
  std::string differences(const Identity& now) const;

  std::string path_;
  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  int slot_ = -1;  // the mapping's entry in the SIGBUS handler's table (-1: nothing mapped)
  Identity opened_;
};

}  // namespace dcr
