// Zero-filled memory that costs nothing until written: an anonymous private mapping reserved
// without swap accounting (MAP_NORESERVE). A page reads as zero and takes no resident memory until
// a byte of it is written, so an array indexed in canonical coordinates costs only the part a rank
// fills (the change model's masters and stored bits, of which each rank keeps its own rows).
// Internal: the change model's (src/model) storage.
#pragma once

#include <cstdint>

#include "dcr/core/status.h"

namespace dcr {

class ZeroPages {
 public:
  // `bytes` zero bytes (none for 0); io_error when the address space cannot be reserved.
  static Status map(uint64_t bytes, ZeroPages* out);
  ZeroPages() = default;
  ~ZeroPages();
  ZeroPages(ZeroPages&& other) noexcept;
  ZeroPages& operator=(ZeroPages&& other) noexcept;
  ZeroPages(const ZeroPages&) = delete;
  ZeroPages& operator=(const ZeroPages&) = delete;

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }

 private:
  void release();
  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace dcr
