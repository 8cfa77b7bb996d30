// Little-endian byte writing and bounds-checked reading. Every read of untrusted bytes goes
// through ByteReader, which fails with Code::corrupt instead of reading past the end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "dcr/core/status.h"

namespace dcr {

// The low `bytes` bytes of value at p, least significant first.
inline void store_le(uint8_t* p, uint64_t value, unsigned bytes) {
  for (unsigned i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(value >> (8 * i));
}

inline void put_le(std::vector<uint8_t>* out, uint64_t value, unsigned bytes) {
  const size_t at = out->size();
  out->resize(at + bytes);
  store_le(out->data() + at, value, bytes);
}

// The bytes put_varint takes for v.
inline size_t varint_bytes(uint64_t v) {
  size_t n = 1;
  for (; v >= 0x80; v >>= 7) ++n;
  return n;
}

inline void put_varint(std::vector<uint8_t>* out, uint64_t value) {
  while (value >= 0x80) {
    out->push_back(static_cast<uint8_t>(value | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<uint8_t>(value));
}

inline uint64_t get_le(const uint8_t* p, unsigned bytes) {
  uint64_t value = 0;
  for (unsigned i = 0; i < bytes; ++i) value |= static_cast<uint64_t>(p[i]) << (8 * i);
  return value;
}

class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size, const char* what) : data_(data), size_(size), what_(what) {}

  size_t remaining() const { return size_ - pos_; }
  size_t position() const { return pos_; }

  Status read_le(unsigned bytes, uint64_t* value) {
    DCR_TRY(need(bytes));
    *value = get_le(data_ + pos_, bytes);
    pos_ += bytes;
    return Status::ok();
  }

  Status read_varint(uint64_t* value) {
    uint64_t result = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
      DCR_TRY(need(1));
      const uint8_t byte = data_[pos_++];
      if (shift == 63 && byte > 1) break;
      result |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) {
        *value = result;
        return Status::ok();
      }
    }
    return Status(Code::corrupt, std::string(what_) + ": varint longer than 64 bits");
  }

  // Points *bytes at the next n bytes without copying.
  Status take(size_t n, const uint8_t** bytes) {
    DCR_TRY(need(n));
    *bytes = data_ + pos_;
    pos_ += n;
    return Status::ok();
  }

 private:
  Status need(size_t n) const {
    if (n > size_ - pos_) {
      return Status(Code::corrupt, std::string(what_) + ": truncated (needs " + std::to_string(n) +
                                       " more bytes at offset " + std::to_string(pos_) + ", has " +
                                       std::to_string(size_ - pos_) + ")");
    }
    return Status::ok();
  }

  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  const char* what_;
};

}  // namespace dcr
