// Packed bit streams, least significant bit first, for the raw low bits of bucketed tokens.
// Little-endian hosts only (the packer stores its accumulator as is).
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "dcr/core/status.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "dcr's bit streams assume a little-endian host");

namespace dcr {

// Packs fields into a caller-sized buffer without branches: each put stores the low 64 bits of the
// stream's tail and moves on by one 8-byte word once it is full. The buffer needs room for the
// packed bytes plus 8 (see capacity()).
class BitPacker {
 public:
  explicit BitPacker(uint8_t* out = nullptr) : start_(out), ptr_(out) {}

  // Bytes a buffer needs to pack `bits` bits in total.
  static size_t capacity(uint64_t bits) { return bits / 8 + 16; }

  // Appends the `count` (<= 64) bits of `value`, which must be below 2^count.
  void put(uint64_t value, unsigned count) {
    const uint64_t low = acc_ | (value << fill_);
    const uint64_t high = (value >> 1) >> (63 - fill_);  // the bits past this word (none when fill_ is 0)
    const unsigned total = fill_ + count;
    std::memcpy(ptr_, &low, 8);
    const unsigned full = total >> 6;
    ptr_ += 8 * full;
    acc_ = full ? high : low;
    fill_ = total & 63;
  }

  uint64_t bits() const { return 8 * static_cast<uint64_t>(ptr_ - start_) + fill_; }
  // Bytes written so far, the last one padded with zero bits.
  size_t bytes() {
    std::memcpy(ptr_, &acc_, 8);
    return static_cast<size_t>(ptr_ - start_) + (fill_ + 7) / 8;
  }

 private:
  uint8_t* start_;
  uint8_t* ptr_;
  uint64_t acc_ = 0;
  unsigned fill_ = 0;  // bits of acc_ in use, below 64
};

class BitReader {
 public:
  BitReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  // Reads `count` bits (<= 64); returns false past the end of the stream.
  bool get(unsigned count, uint64_t* value) {
    if (count == 0) {
      *value = 0;
      return true;
    }
    if (count > size_ * 8 - bit_pos_) return false;
    if (count <= 56 && has_window()) {
      *value = get_unchecked(count);
      return true;
    }
    uint64_t result = 0;
    unsigned done = 0;
    while (done < count) {
      const size_t byte = bit_pos_ >> 3;
      const unsigned offset = bit_pos_ & 7;
      const unsigned take = (8 - offset) < (count - done) ? (8 - offset) : (count - done);
      const uint64_t bits = (static_cast<uint64_t>(data_[byte]) >> offset) & ((1u << take) - 1);
      result |= bits << done;
      done += take;
      bit_pos_ += take;
    }
    *value = result;
    return true;
  }

  // Moves the read position to bit `bit` (<= 8 * size) of the stream.
  void seek(size_t bit) { bit_pos_ = bit; }
  size_t position() const { return bit_pos_; }

  // Whether 8 bytes can be loaded at the read position: get_unchecked may then take up to 56 bits.
  bool has_window() const { return (bit_pos_ >> 3) + 8 <= size_; }

  // Reads `count` (<= 56) bits with one unaligned 8-byte load; only while has_window().
  uint64_t get_unchecked(unsigned count) {
    uint64_t window;
    std::memcpy(&window, data_ + (bit_pos_ >> 3), 8);
    const uint64_t value = (window >> (bit_pos_ & 7)) & ((1ull << count) - 1);
    bit_pos_ += count;
    return value;
  }

  // True when every remaining bit is padding in the last byte (the writer pads with zeros).
  bool at_end() const { return (bit_pos_ + 7) / 8 == size_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t bit_pos_ = 0;
};

}  // namespace dcr
