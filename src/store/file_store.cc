// The file:// object store: each key is a file under one directory ("v3/MANIFEST" is
// <dir>/v3/MANIFEST), written as "<file>.tmp" and renamed, so readers see whole objects only.
// Opened for reading it creates nothing and refuses put and remove.
#include <algorithm>
#include <filesystem>
#include <system_error>

#include "dcr/store/object_store.h"
#include "src/core/files.h"

namespace dcr {
namespace {

// Keys are relative paths of plain names: no "", ".", ".." parts, no leading '/', no NUL.
Status check_key(const std::string& key) {
  bool ok = !key.empty() && key.front() != '/' && key.back() != '/' && key.find('\0') == std::string::npos;
  for (size_t start = 0; ok && start <= key.size();) {
    const size_t end = std::min(key.find('/', start), key.size());
    const std::string part = key.substr(start, end - start);
    ok = !part.empty() && part != "." && part != ".." &&
         (part.size() < 4 || part.compare(part.size() - 4, 4, ".tmp") != 0);
    start = end + 1;
  }
  DCR_REQUIRE(ok, Code::invalid_argument, "object key '" + key + "' is not a relative path of plain names");
  return Status::ok();
}

// "object 'v1/w0-000000.frame' in file:///d holds 900 bytes, more than the 800 this read accepts".
Status check_size(const std::string& what, uint64_t size, uint64_t max_bytes) {
  DCR_REQUIRE(size <= max_bytes, Code::corrupt,
              what + " holds " + std::to_string(size) + " bytes, more than the " + std::to_string(max_bytes) +
                  " this read accepts");
  return Status::ok();
}

class FileStore : public ObjectStore {
 public:
  using ObjectStore::get;
  FileStore(std::string dir, StoreAccess access) : dir_(std::move(dir)), access_(access) {}

  std::string describe() const override { return "file://" + dir_; }

  Status put(const std::string& key, const uint8_t* data, size_t bytes, bool durable) override {
    DCR_TRY(check_key(key));
    DCR_TRY(check_writable("put", key));
    const std::filesystem::path path = path_of(key);
    DCR_TRY(make_parents(path.parent_path()));
    // Durable: the object and every rename before it into its directory survive a crash.
    DCR_TRY(files::write_atomic(path.string(), {{data, bytes}}, durable, files::kPrivateFile));
    if (durable && path.parent_path() != std::filesystem::path(dir_)) DCR_TRY(files::sync_directory(dir_));
    return Status::ok();
  }

  // The size is checked before reading and again after (the file may be replaced meanwhile).
  Status get(const std::string& key, std::vector<uint8_t>* out, bool* found, uint64_t max_bytes) override {
    DCR_TRY(check_key(key));
    out->clear();
    const std::string path = path_of(key).string(), what = "object '" + key + "' in " + describe();
    uint64_t size = 0;
    const Status there = files::check_regular_file(path, UINT64_MAX, &size);
    *found = there.code() != Code::not_found;
    if (!*found) return Status::ok();
    DCR_TRY(there);
    DCR_TRY(check_size(what, size, max_bytes));
    DCR_TRY(files::read_whole(path, out, found));
    return check_size(what, out->size(), max_bytes);
  }

  Status list(const std::string& prefix, std::vector<std::string>* keys) override {
    keys->clear();
    DCR_TRY(walk(dir_, prefix, keys));
    std::sort(keys->begin(), keys->end());
    return Status::ok();
  }

  // Removes the file, then its directories up to the store's own while they are empty.
  Status remove(const std::string& key) override {
    DCR_TRY(check_key(key));
    DCR_TRY(check_writable("remove", key));
    std::filesystem::path path = path_of(key);
    std::error_code error;
    std::filesystem::remove(path, error);
    DCR_REQUIRE(!error, Code::io_error, "cannot remove '" + path.string() + "': " + error.message());
    for (path = path.parent_path(); path != std::filesystem::path(dir_); path = path.parent_path()) {
      if (!std::filesystem::is_empty(path, error) || error) break;
      std::filesystem::remove(path, error);
    }
    return Status::ok();
  }

 private:
  // Adds the key of every regular file under `dir` starting with `prefix`. A file or directory
  // removed while it is walked (a publisher pruning as a follower lists) is left out, as an S3
  // listing taken a moment later would; any other error fails the listing.
  Status walk(const std::filesystem::path& dir, const std::string& prefix, std::vector<std::string>* keys) const {
    const auto gone = [](const std::error_code& e) { return e == std::errc::no_such_file_or_directory; };
    std::error_code error;
    std::filesystem::directory_iterator it(dir, error), end;
    for (; !error && it != end; it.increment(error)) {
      std::error_code kind;
      if (!it->is_symlink(kind) && it->is_directory(kind)) {  // as before: symlinked directories not followed
        DCR_TRY(walk(it->path(), prefix, keys));
        continue;
      }
      if (!it->is_regular_file(kind)) {
        DCR_REQUIRE(!kind || gone(kind), Code::io_error, "cannot list '" + it->path().string() + "': " + kind.message());
        continue;
      }
      const std::string key = std::filesystem::relative(it->path(), dir_, kind).generic_string();
      const bool temporary = key.size() > 4 && key.compare(key.size() - 4, 4, ".tmp") == 0;
      if (!kind && !temporary && key.compare(0, prefix.size(), prefix) == 0) keys->push_back(key);
    }
    DCR_REQUIRE(!error || gone(error), Code::io_error, "cannot list '" + dir.string() + "': " + error.message());
    return Status::ok();
  }

  Status check_writable(const char* what, const std::string& key) const {
    DCR_REQUIRE(access_ == StoreAccess::write, Code::invalid_argument,
                std::string(what) + " of '" + key + "' refused: the store " + describe() + " was opened for reading");
    return Status::ok();
  }

  std::filesystem::path path_of(const std::string& key) const { return std::filesystem::path(dir_) / key; }

  // The store's directories are private (0700), as the spool's always were.
  Status make_parents(const std::filesystem::path& dir) const {
    std::error_code error;
    if (std::filesystem::is_directory(dir, error)) return Status::ok();
    if (dir != std::filesystem::path(dir_)) DCR_TRY(make_parents(dir.parent_path()));
    return files::make_dirs(dir.string(), files::kPrivateDir);
  }

  std::string dir_;
  StoreAccess access_;
};

}  // namespace

std::unique_ptr<ObjectStore> file_store(const std::string& dir, StoreAccess access) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  return std::make_unique<FileStore>(d, access);
}

}  // namespace dcr
