// The entropy stage: one byte stream coded as raw bytes, zstd, or rANS, whichever is smallest.
// Wire layout of a stream: coder (1 byte), decoded length (varint), coded length (varint), code;
// an rANS code starts with its frequency table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "dcr/codec/byte_io.h"
#include "dcr/codec/rans.h"
#include "dcr/core/status.h"

namespace dcr {

// rans: 4 interleaved states; rans32: 32 (long streams: two AVX-512 registers of states).
enum class Coder : uint8_t { raw = 0, zstd = 1, rans = 2, rans32 = 3 };

// Streams of this many symbols or more take rans32: its states cost 112 bytes more than rans's,
// and shorter streams code and decode far slower with the 4 states, one at a time.
constexpr size_t kWideRansSymbols = 8192;

struct StreamOptions {
  bool try_zstd = false;  // zstd pays off on repetitive bytes (bitmaps, value planes), not on tokens
  bool raw_only = false;  // store as is: no entropy stage (full frames: raw speed over size)
  int zstd_level = 1;
};

// Reusable buffers and compression contexts; one per thread.
class StreamCodec {
 public:
  StreamCodec();
  ~StreamCodec();
  StreamCodec(const StreamCodec&) = delete;
  StreamCodec& operator=(const StreamCodec&) = delete;

  // Appends `data` as one stream, choosing the smallest coder; returns the coder used. `hist`, when
  // given, is the byte histogram of `data` (saves counting it again).
  Coder write(const uint8_t* data, size_t size, const StreamOptions& options, std::vector<uint8_t>* out,
              const Histogram* hist = nullptr);

  // Reads one stream of at most `max_size` decoded bytes. *data points either into the input (raw)
  // or into an internal buffer valid until the next read into the same `slot` (0..kStreamSlots-1).
  static constexpr int kStreamSlots = 8;
  Status read(ByteReader* reader, size_t max_size, int slot, const uint8_t** data, size_t* size);

  // The same a slice at a time: open takes the stream's header and code from `reader`; its bytes
  // [0, upto) are then at *data once decode(slot, upto) succeeds (raw, zstd and short rANS streams
  // decode in full at open; long rANS streams as far as asked, `upto` a multiple of 32 or the size).
  Status open(ByteReader* reader, size_t max_size, int slot, const uint8_t** data, size_t* size);
  Status decode(int slot, size_t upto);

  // Estimated size (header included) of a stream of `size` symbols distributed as `hist` (counts
  // of any total, e.g. from a sample), coded with the better of raw and rANS.
  static double estimate(const Histogram& hist, size_t size);

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace dcr
