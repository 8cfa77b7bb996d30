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
  // Its rANS table and code alone, states not included (2 bytes for no symbols: a table of one).
  static double estimate_table_and_code(const Histogram& hist, size_t size);

  // Value packing contexts' token stream (docs/frame-format.md): one stream of `size` symbols whose
  // code opens with `table_count` rANS tables, symbol i coded with the table of bucket buckets[i];
  // hists[b] counts bucket b's symbols exactly. 4 or 32 states, by the length as write chooses.
  void write_buckets(const uint8_t* data, const uint8_t* buckets, size_t size, const Histogram* hists,
                     unsigned table_count, std::vector<uint8_t>* out);
  // Its header and states: what the stream costs beyond each bucket's estimate_table_and_code.
  static double bucket_stream_overhead(size_t size);
  // The reading side: the stream, which must hold `size` symbols, into `slot`; decode_buckets then
  // decodes its bytes up to any `upto`, given the buckets of those symbols.
  Status open_buckets(ByteReader* reader, size_t size, unsigned table_count, int slot, const uint8_t** data);
  Status decode_buckets(int slot, size_t upto, const uint8_t* buckets);

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace dcr
