#include "src/core/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace dcr {
namespace {

std::string host_name() {
  char name[256] = {};
  return ::gethostname(name, sizeof name - 1) == 0 ? name : "?";
}

// What the holder wrote ("pid 123 on host n01"), for the refusal.
std::string holder_of(int fd) {
  char text[300] = {};
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  std::string holder = n > 0 ? std::string(text, static_cast<size_t>(n)) : "";
  while (!holder.empty() && (holder.back() == '\n' || holder.back() == '\0')) holder.pop_back();
  return holder.empty() ? "another process" : holder;
}

}  // namespace

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);
}

Status FileLock::acquire(const std::string& path, const std::string& what, FileLock* out) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  DCR_REQUIRE(fd >= 0, Code::io_error, "cannot open the lock file '" + path + "': " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    const std::string holder = holder_of(fd);
    ::close(fd);
    DCR_REQUIRE(error != EWOULDBLOCK, Code::invalid_argument,
                what + " is in use by another job: '" + path + "' is locked by " + holder +
                    "; two jobs on one state directory would interleave their journals: give each job its own");
    return Status(Code::io_error, "cannot lock '" + path + "': " + std::strerror(error));
  }
  const std::string me = "pid " + std::to_string(::getpid()) + " on host " + host_name() + "\n";
  // Best effort: the lock, not the text, excludes; the text only names the holder in a refusal.
  const bool named = ::ftruncate(fd, 0) == 0 && ::pwrite(fd, me.data(), me.size(), 0) == static_cast<ssize_t>(me.size());
  (void)named;
  *out = FileLock();
  out->fd_ = fd;
  return Status::ok();
}

}  // namespace dcr
