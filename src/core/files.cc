#include "src/core/files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/statvfs.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace dcr::files {
namespace {

Status errno_status(const std::string& what, const std::string& path, int error) {
  const Code code = error == ENOENT ? Code::not_found : Code::io_error;
  return Status(code, what + " '" + path + "': " + std::strerror(error));
}

Status read_all(int fd, uint8_t* at, size_t left, const std::string& path) {
  while (left > 0) {
    const ssize_t n = ::read(fd, at, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno_status("cannot read", path, errno);
    if (n == 0) return Status(Code::corrupt, "'" + path + "' shrank while being read");
    at += n;
    left -= static_cast<size_t>(n);
  }
  return Status::ok();
}

// fsyncs what `path` names (a file, or a directory with O_DIRECTORY in `flags`).
Status sync_path(const std::string& path, int flags, const char* what) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return errno_status(std::string("cannot open ") + what, path, errno);
  const bool synced = ::fsync(fd) == 0;
  const int error = errno;
  ::close(fd);
  return synced ? Status::ok() : errno_status(std::string("cannot fsync ") + what, path, error);
}

// Writes and fsyncs `tmp`; the caller renames it.
Status write_synced(const std::string& tmp, const std::vector<Piece>& pieces, unsigned mode) {
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, static_cast<mode_t>(mode));
  if (fd < 0) return errno_status("cannot create", tmp, errno);
  Status s;
  for (const Piece& piece : pieces) {
    s = write_all(fd, piece, tmp);
    if (!s.is_ok()) break;
  }
  if (s.is_ok() && ::fsync(fd) != 0) s = errno_status("cannot fsync", tmp, errno);
  if (::close(fd) != 0 && s.is_ok()) s = errno_status("cannot close", tmp, errno);
  return s;
}

// After `written` (the synced temporary file, or why it is not): renames `tmp` over `path`, then
// fsyncs the directory where asked; removes `tmp` on any failure.
Status rename_over(Status written, const std::string& tmp, const std::string& path, bool sync_dir) {
  if (written.is_ok() && std::rename(tmp.c_str(), path.c_str()) != 0)
    written = Status(Code::io_error, "cannot rename '" + tmp + "' to '" + path + "': " + std::strerror(errno));
  if (!written.is_ok()) {
    ::unlink(tmp.c_str());
    return written;
  }
  return sync_dir ? sync_directory(std::filesystem::path(path).parent_path().string()) : Status::ok();
}

}  // namespace

Status write_all(int fd, const Piece& piece, const std::string& path) {
  const auto* at = static_cast<const uint8_t*>(piece.data);
  size_t left = piece.bytes;
  while (left > 0) {
    const ssize_t n = ::write(fd, at, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno_status("cannot write", path, errno);
    at += n;
    left -= static_cast<size_t>(n);
  }
  return Status::ok();
}

Status sync_directory(const std::string& dir) {
  return sync_path(dir.empty() ? "." : dir, O_RDONLY | O_DIRECTORY, "directory");
}

std::string temp_path(const std::string& path) { return path + ".tmp"; }

Status write_atomic(const std::string& path, const std::vector<Piece>& pieces, bool sync_dir, unsigned mode) {
  const std::string tmp = temp_path(path);
  return rename_over(write_synced(tmp, pieces, mode), tmp, path, sync_dir);
}

Status commit_file(const std::string& tmp, const std::string& path) {
  return rename_over(sync_path(tmp, O_RDONLY, "file"), tmp, path, true);
}

Status check_regular_file(const std::string& path, uint64_t max_bytes, uint64_t* size) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0) {
    return errno == ENOENT ? Status(Code::not_found, "'" + path + "' does not exist (or is a dangling link)")
                           : errno_status("cannot stat", path, errno);
  }
  DCR_REQUIRE(S_ISREG(info.st_mode), Code::invalid_argument,
              "'" + path + "' is not a regular file (" +
                  (S_ISDIR(info.st_mode) ? "a directory" : S_ISFIFO(info.st_mode) ? "a FIFO" : "a device or socket") + ")");
  DCR_REQUIRE(static_cast<uint64_t>(info.st_size) <= max_bytes, Code::invalid_argument,
              "'" + path + "' holds " + std::to_string(info.st_size) + " bytes, more than the " +
                  std::to_string(max_bytes) + " this reader accepts");
  if (size) *size = static_cast<uint64_t>(info.st_size);
  return Status::ok();
}

Status read_whole(const std::string& path, std::vector<uint8_t>* out, bool* found) {
  if (found) *found = true;
  if (found && ::access(path.c_str(), F_OK) != 0 && errno == ENOENT) {
    *found = false;
    return Status::ok();
  }
  DCR_TRY(check_regular_file(path, UINT64_MAX, nullptr));
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0 && errno == ENOENT && found) {
    *found = false;
    return Status::ok();
  }
  if (fd < 0) return errno_status("cannot open", path, errno);
  struct stat info;
  Status s;
  if (::fstat(fd, &info) != 0) s = errno_status("cannot stat", path, errno);
  if (s.is_ok()) {
    out->resize(static_cast<size_t>(info.st_size));
    s = read_all(fd, out->data(), out->size(), path);
  }
  ::close(fd);
  return s;
}

Status check_free_space(const std::string& path, uint64_t bytes) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  struct statvfs fs {};
  if (::statvfs(dir.empty() ? "." : dir.c_str(), &fs) != 0) return Status::ok();  // the write itself will say
  const uint64_t free_bytes = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
  DCR_REQUIRE(free_bytes >= bytes, Code::io_error,
              "cannot write '" + path + "': No space left on device (about " + std::to_string(bytes) + " bytes needed, " +
                  std::to_string(free_bytes) + " free)");
  return Status::ok();
}

Status make_dirs(const std::string& dir, unsigned mode) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  DCR_REQUIRE(!error, Code::io_error, "cannot create directory '" + dir + "': " + error.message());
  DCR_REQUIRE(mode == 0 || ::chmod(dir.c_str(), static_cast<mode_t>(mode)) == 0, Code::io_error,
              "cannot set the permissions of directory '" + dir + "'");
  return Status::ok();
}

Status remove_tree(const std::string& path) {
  std::error_code error;
  std::filesystem::remove_all(path, error);
  DCR_REQUIRE(!error, Code::io_error, "cannot remove '" + path + "': " + error.message());
  return Status::ok();
}

Status list_dir(const std::string& dir, std::vector<std::string>* names) {
  names->clear();
  DIR* handle = ::opendir(dir.c_str());
  if (handle == nullptr && errno == ENOENT) return Status::ok();
  if (handle == nullptr) return errno_status("cannot list", dir, errno);
  while (const dirent* entry = ::readdir(handle)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names->push_back(name);
  }
  ::closedir(handle);
  return Status::ok();
}

bool parse_numbered(const std::string& name, const std::string& prefix, uint64_t* number) {
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return false;
  if (name.size() - prefix.size() > 19) return false;  // keeps the value within uint64_t
  uint64_t value = 0;
  for (size_t i = prefix.size(); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
    value = value * 10 + static_cast<uint64_t>(name[i] - '0');
  }
  *number = value;
  return true;
}

std::string zero_padded(uint64_t value, int width) {
  std::string digits = std::to_string(value);
  if (static_cast<int>(digits.size()) < width) digits.insert(0, static_cast<size_t>(width) - digits.size(), '0');
  return digits;
}

}  // namespace dcr::files
