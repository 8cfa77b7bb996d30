// Packed bit streams, least significant bit first, for the raw low bits of bucketed tokens.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "dcr/core/status.h"

namespace dcr {

class BitWriter {
 public:
  explicit BitWriter(std::vector<uint8_t>* out) : out_(out) {}

  // Appends the low `count` bits of `value` (count <= 64).
  void put(uint64_t value, unsigned count) {
    if (count == 0) return;
    if (count < 64) value &= (1ull << count) - 1;
    acc_ |= value << fill_;
    const unsigned room = 64 - fill_;
    if (count < room) {
      fill_ += count;
      return;
    }
    flush_word(acc_);
    acc_ = room == 64 ? 0 : (value >> room);
    fill_ = count - room;
  }

  void finish() {
    for (unsigned i = 0; i < fill_; i += 8) out_->push_back(static_cast<uint8_t>(acc_ >> i));
    acc_ = 0;
    fill_ = 0;
  }

 private:
  void flush_word(uint64_t word) {
    for (unsigned i = 0; i < 64; i += 8) out_->push_back(static_cast<uint8_t>(word >> i));
  }

  std::vector<uint8_t>* out_;
  uint64_t acc_ = 0;
  unsigned fill_ = 0;
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
    const size_t byte = bit_pos_ >> 3;
    if (count <= 56 && byte + 8 <= size_) {  // one unaligned 8-byte load holds all the bits
      uint64_t window;
      std::memcpy(&window, data_ + byte, 8);
      *value = (window >> (bit_pos_ & 7)) & ((1ull << count) - 1);
      bit_pos_ += count;
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

  // True when every remaining bit is padding in the last byte (the writer pads with zeros).
  bool at_end() const { return (bit_pos_ + 7) / 8 == size_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t bit_pos_ = 0;
};

}  // namespace dcr
