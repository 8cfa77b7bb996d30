#include "dcr/journal/journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "dcr/codec/byte_io.h"
#include "dcr/core/hash.h"
#include "dcr/core/log.h"
#include "src/core/files.h"

namespace dcr {

namespace {

constexpr uint32_t kMagic = 0x4a524344;  // "DCRJ"
constexpr size_t kRecordBytes = 40;      // magic, type, a, b, c, hash64 of the first 32 bytes

void encode_record(const JournalRecord& r, uint8_t* out) {
  std::vector<uint8_t> b;
  put_le(&b, kMagic, 4);
  put_le(&b, r.type, 4);
  put_le(&b, r.a, 8);
  put_le(&b, r.b, 8);
  put_le(&b, r.c, 8);
  put_le(&b, hash64(b.data(), b.size()), 8);
  std::memcpy(out, b.data(), kRecordBytes);
}

bool decode_record(const uint8_t* p, JournalRecord* r) {
  if (get_le(p, 4) != kMagic || get_le(p + 32, 8) != hash64(p, 32)) return false;
  const uint64_t type = get_le(p + 4, 4);
  if (type < JournalRecord::begin || type > JournalRecord::snapshot) return false;
  r->type = static_cast<JournalRecord::Type>(type);
  r->a = get_le(p + 8, 8);
  r->b = get_le(p + 16, 8);
  r->c = get_le(p + 24, 8);
  return true;
}

Status io_error(const std::string& what, const std::string& path) {
  return Status(Code::io_error, what + " '" + path + "': " + std::strerror(errno));
}

}  // namespace

Journal::~Journal() {
  if (fd_ >= 0) ::close(fd_);
}

Status Journal::open(const std::string& path) { return open_with(path, O_RDWR | O_CREAT); }

Status Journal::open_read_only(const std::string& path) {
  read_only_ = true;
  return open_with(path, O_RDONLY);
}

Status Journal::open_with(const std::string& path, int flags) {
  path_ = path;
  fd_ = ::open(path.c_str(), flags | O_NONBLOCK | O_CLOEXEC, files::kPrivateFile);  // O_NONBLOCK: a FIFO must not block the open
  if (fd_ < 0) return io_error("cannot open journal", path);
  struct stat st {};
  if (::fstat(fd_, &st) != 0) return io_error("cannot stat journal", path);
  DCR_REQUIRE(S_ISREG(st.st_mode), Code::invalid_argument,
              "journal '" + path + "' is not a regular file (a directory, FIFO or device); move it away");
  return read_all();
}

Status Journal::read_all() {
  records_.clear();
  const off_t size = ::lseek(fd_, 0, SEEK_END);
  if (size < 0) return io_error("cannot size journal", path_);
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  if (::pread(fd_, bytes.data(), bytes.size(), 0) != size) return io_error("cannot read journal", path_);
  size_t good = 0;
  JournalRecord r;
  while (good + kRecordBytes <= bytes.size() && decode_record(bytes.data() + good, &r)) {
    records_.push_back(r);
    good += kRecordBytes;
  }
  dropped_bytes_ = bytes.size() - good;
  if (dropped_bytes_ > 0 && read_only_) {
    DCR_LOG(warn, "journal", "'%s' ends in %llu damaged bytes after record %zu (left as they are)", path_.c_str(),
            static_cast<unsigned long long>(dropped_bytes_), records_.size());
  } else if (dropped_bytes_ > 0) {  // a torn or damaged tail: cut it so appends follow the last good record
    if (::ftruncate(fd_, static_cast<off_t>(good)) != 0) return io_error("cannot cut the damaged tail of journal", path_);
    DCR_LOG(warn, "journal", "'%s' ended in %llu damaged bytes after record %zu; they were dropped", path_.c_str(),
            static_cast<unsigned long long>(dropped_bytes_), records_.size());
  }
  if (::lseek(fd_, static_cast<off_t>(good), SEEK_SET) < 0) return io_error("cannot seek journal", path_);
  return Status::ok();
}

Status Journal::append(const JournalRecord& record, bool durable) {
  DCR_REQUIRE(!read_only_, Code::invalid_argument, "journal '" + path_ + "' was opened read-only");
  DCR_REQUIRE(fd_ >= 0, Code::invalid_argument, "journal is not open");
  uint8_t bytes[kRecordBytes];
  encode_record(record, bytes);
  DCR_TRY(files::write_all(fd_, files::Piece{bytes, kRecordBytes}, path_));
  if (durable && ::fsync(fd_) != 0) return io_error("cannot fsync journal", path_);
  records_.push_back(record);
  return Status::ok();
}

Status Journal::compact(const std::vector<JournalRecord>& keep) {
  DCR_REQUIRE(!read_only_, Code::invalid_argument, "journal '" + path_ + "' was opened read-only");
  std::vector<uint8_t> bytes(keep.size() * kRecordBytes);
  for (size_t i = 0; i < keep.size(); ++i) encode_record(keep[i], bytes.data() + i * kRecordBytes);
  DCR_TRY(files::write_atomic(path_, {{bytes.data(), bytes.size()}}, true, files::kPrivateFile));
  ::close(fd_);
  fd_ = ::open(path_.c_str(), O_RDWR, files::kPrivateFile);
  if (fd_ < 0) return io_error("cannot reopen journal", path_);
  return read_all();
}

bool Journal::last_committed(uint64_t* version, uint64_t* base, uint64_t* manifest_hash) const {
  for (auto it = records_.rbegin(); it != records_.rend(); ++it) {
    if (it->type == JournalRecord::committed) {
      *version = it->a;
      *base = it->b;
      *manifest_hash = it->c;
      return true;
    }
  }
  return false;
}

bool Journal::last_snapshot(uint64_t* version) const {
  for (auto it = records_.rbegin(); it != records_.rend(); ++it) {
    if (it->type == JournalRecord::snapshot) {
      *version = it->a;
      return true;
    }
  }
  return false;
}

}  // namespace dcr
