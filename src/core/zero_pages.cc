#include "src/core/zero_pages.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

namespace dcr {

Status ZeroPages::map(uint64_t bytes, ZeroPages* out) {
  out->release();
  if (bytes == 0) return Status::ok();
  void* at = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  DCR_REQUIRE(at != MAP_FAILED, Code::io_error,
              "cannot reserve " + std::to_string(bytes) + " bytes of address space: " + std::strerror(errno));
  out->data_ = static_cast<uint8_t*>(at);
  out->size_ = bytes;
  return Status::ok();
}

ZeroPages::~ZeroPages() { release(); }

ZeroPages::ZeroPages(ZeroPages&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

ZeroPages& ZeroPages::operator=(ZeroPages&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void ZeroPages::release() {
  if (data_ != nullptr) munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace dcr
