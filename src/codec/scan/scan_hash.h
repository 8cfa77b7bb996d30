// Internal to the codec: the encoder's scan, hashing the bytes it reads while they are in
// registers, so that XXH3's arithmetic overlaps the reads of both copies instead of taking a
// second pass over the block; for the encoder it also tokenises the changes it finds, which
// overlaps that work with the reads too.
#pragma once

#include <cstdint>
#include <cstring>

#include "dcr/codec/value_mode.h"
#include "src/codec/tokens/token_writer.h"

namespace dcr {

// Where scan_and_hash copies the base and target words of the changes it finds, in their order;
// each has room for the range's elements + 32 (whole registers are stored).
struct ChangedWords {
  uint16_t* base;
  uint16_t* target;
};

// The token streams lent to scan_and_hash, which tokenises the changes it finds as it goes (the
// box's 2-byte elements, their words copied out); ChangeCollector::add() then tokenises only the
// changes past `done`.
struct ScanTokens {
  TokenWriter::Cursor gaps, deltas;
  uint64_t next;  // the box position after the last change tokenised
  uint64_t done;  // changes tokenised
  ValueMode delta_mode;
};

// XXH3-64 (seed 0, default secret) of a buffer whose length is known up front, fed its whole
// 64-byte stripes in order: the same value as hash64(buffer, length) (tests check every length
// class: short inputs, block boundaries, the overlapping last stripe). Stripes past those XXH3
// takes in its main loop are ignored; finish reads the last one itself.
// scan_and_hash feeds it.
class StripeHash {
 public:
  void start(uint64_t length);
  // Feeds the whole stripes of buffer[begin, end), `begin` a multiple of 64 just past what was fed
  // (AVX-512 only: see feed_available()). The buffer may be a run of the hashed bytes that starts
  // at byte `offset` of them (a multiple of 64); begin and end are then the run's own.
  void feed(const uint8_t* buffer, uint64_t begin, uint64_t end, uint64_t offset = 0);
  uint64_t finish(const uint8_t* buffer) const;  // the buffer of `length` bytes that was fed
  // The same for inputs of at least kLongInput bytes, from a copy of the buffer's last 64 bytes.
  uint64_t finish_long(const uint8_t* last_stripe) const;
  static constexpr uint64_t kLongInput = 241;

 private:
  friend uint64_t scan_and_hash(const uint8_t*, const uint8_t*, uint64_t, uint64_t, uint32_t*, StripeHash*,
                                StripeHash*, ChangedWords, uint64_t, ScanTokens*);
  alignas(64) uint64_t acc_[8];
  uint64_t length_ = 0;
  uint64_t stripes_ = 0;  // fed by the main loop: all but the last stripe
  uint64_t blocks_ = 0;   // whole blocks of stripes, each followed by a scramble
};

// The last 64 bytes of the concatenation of `runs` byte runs (at least 64 bytes in all):
// run_of(k) gives run k as {data, bytes}.
template <class RunOf>
void last_stripe(size_t runs, RunOf run_of, uint8_t* out) {
  uint64_t need = 64;
  for (size_t k = runs; k-- > 0 && need > 0;) {
    const auto [data, bytes] = run_of(k);
    const uint64_t take = need < bytes ? need : bytes;
    std::memcpy(out + need - take, data + bytes - take, take);
    need -= take;
  }
}

// Whether StripeHash::feed runs on this CPU (AVX-512).
bool feed_available();

// Whether scan_and_hash runs for elements of `width` bytes on this CPU (2-byte elements with
// AVX512-VBMI2); elsewhere the encoder scans and hashes separately.
bool scan_and_hash_available(unsigned width);

// scan_changes_in over 2-byte elements [begin, end) of two buffers, feeding every whole stripe it
// reads to the hashes of the buffers and copying the changed words out while they are in registers
// (the tokeniser then reads them in order instead of gathering them). The hashes may cover more
// than one pair of buffers, concatenated (a bundle's boxes): the buffers' element 0 is element
// `offset` (a multiple of 32) of the hashed whole. Calls must cover the whole in order from its
// element 0, each beginning at a multiple of 32 elements of it. Positions are the buffers' own.
// With `tokens`, the changes found are also tokenised, in order, as the box's (the buffers' element
// 0 is its element `offset`): a group of sixteen at a time between the scan's reads, where the work
// overlaps their memory traffic, and the last few after the scan.
uint64_t scan_and_hash(const uint8_t* base, const uint8_t* target, uint64_t begin, uint64_t end,
                       uint32_t* positions, StripeHash* base_hash, StripeHash* target_hash, ChangedWords words,
                       uint64_t offset = 0, ScanTokens* tokens = nullptr);

}  // namespace dcr
