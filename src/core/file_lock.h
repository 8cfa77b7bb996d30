// An exclusive lock on a file (flock), held for the life of the object: one job per state
// directory. The kernel drops the lock when its holder dies, so a job killed with -9 never leaves a
// stale lock behind; the holder's pid and host are written into the file so that a refusal can say
// who holds it.
#pragma once

#include <string>

#include "dcr/core/status.h"

namespace dcr {

class FileLock {
 public:
  FileLock() = default;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  FileLock(FileLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  FileLock& operator=(FileLock&& other) noexcept;
  ~FileLock();

  // Creates `path` (0600) if needed and locks it without waiting. invalid_argument naming `what`,
  // the file and its holder when another process holds it.
  static Status acquire(const std::string& path, const std::string& what, FileLock* out);
  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace dcr
