#include "src/ckpt/durable_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace dcr {

namespace {

Status sync_path(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags);
  DCR_REQUIRE(fd >= 0, Code::io_error, "cannot open '" + path + "' to sync it: " + std::strerror(errno));
  const bool synced = ::fsync(fd) == 0;
  const int error = errno;
  ::close(fd);
  DCR_REQUIRE(synced, Code::io_error, "fsync of '" + path + "' failed: " + std::strerror(error));
  return Status::ok();
}

}  // namespace

std::string temp_path(const std::string& path) { return path + ".tmp"; }

Status commit_file(const std::string& tmp, const std::string& path) {
  Status s = sync_path(tmp, O_RDONLY);
  if (s.is_ok() && std::rename(tmp.c_str(), path.c_str()) != 0) {
    s = Status(Code::io_error, "cannot rename '" + tmp + "' to '" + path + "': " + std::strerror(errno));
  }
  if (!s.is_ok()) {
    std::remove(tmp.c_str());
    return s;
  }
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  return sync_path(dir.empty() ? "." : dir.string(), O_RDONLY | O_DIRECTORY);
}

}  // namespace dcr
