#include "src/refit/baseline_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "src/core/files.h"

namespace dcr {

BaselineFile::~BaselineFile() {
  if (data_ != nullptr) ::munmap(data_, bytes_);
}

Status BaselineFile::create(const std::string& dir, const std::string& rank, const Manifest& manifest,
                            const Holdings& holdings, std::unique_ptr<BaselineFile>* file, Shard* out) {
  constexpr uint64_t kAlign = 64;
  std::vector<uint64_t> offsets;
  uint64_t bytes = 0;
  for (size_t b = 0; b < holdings.buffer_elements.size(); ++b) {
    offsets.push_back(bytes);
    bytes += (holdings.buffer_elements[b] * dtype_width(holdings.buffer_dtypes[b]) + kAlign - 1) / kAlign * kAlign;
  }
  DCR_TRY(files::make_dirs(dir, files::kPrivateDir).with_context("--baseline-dir"));
  const std::string path = dir + "/baseline-" + rank + "-" + std::to_string(::getpid()) + ".bin";
  const auto failed = [&path](const char* what) {
    return Status(Code::io_error, "--baseline-dir: cannot " + std::string(what) + " '" + path + "': " + std::strerror(errno));
  };
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return failed("create");
  std::unique_ptr<BaselineFile> mapped(new BaselineFile());
  const bool sized = ::ftruncate(fd, static_cast<off_t>(bytes)) == 0;
  void* data = sized && bytes > 0 ? ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : nullptr;
  const Status st = !sized ? failed("size") : data == MAP_FAILED ? failed("map") : Status::ok();
  ::unlink(path.c_str());
  ::close(fd);
  DCR_TRY(st);
  mapped->data_ = data == MAP_FAILED ? nullptr : static_cast<uint8_t*>(data);
  mapped->bytes_ = bytes;
  std::vector<BufferMemory> memory;
  for (size_t b = 0; b < offsets.size(); ++b) {
    memory.push_back(BufferMemory{mapped->data_ + offsets[b],
                                  holdings.buffer_elements[b] * dtype_width(holdings.buffer_dtypes[b]),
                                  holdings.buffer_dtypes[b], MemorySpace::host});
  }
  DCR_TRY(Shard::attach(manifest, holdings, memory, out));
  *file = std::move(mapped);
  return Status::ok();
}

}  // namespace dcr
