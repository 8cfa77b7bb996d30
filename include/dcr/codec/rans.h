// Order-0 range asymmetric numeral system (rANS) coder over a byte alphabet, with a per-stream
// static frequency table. Unlike Huffman (zstd's literal coder) it spends fractions of a bit per
// symbol, which is what low-entropy token streams (1-3 bits per change) need to reach their bound.
//
// State: N interleaved 32-bit states, N = 4 or 32 (symbol i uses state i % N, so the dependency
// chains overlap; 32 fill two AVX-512 registers), each kept in [2^15, 2^31); renormalisation moves
// one 16-bit word at most per symbol, so encoding and decoding are branch-free; probabilities are
// quantised to kRansProbBits. Symbols are encoded last-to-first so the decoder reads forward.
// Division in the encoder is a multiplication by a per-symbol reciprocal (exact for x < 2^31).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "dcr/codec/byte_io.h"
#include "dcr/core/status.h"

namespace dcr {

// 12-bit probabilities: the decoder's slot table (4096 x 4 bytes) stays in L1; quantising costs
// well under 1% on the skewed token streams dcr codes.
constexpr unsigned kRansProbBits = 12;
constexpr uint32_t kRansProbScale = 1u << kRansProbBits;

using Histogram = std::array<uint64_t, 256>;

void histogram_of(const uint8_t* symbols, size_t count, Histogram* hist);
// The counts of every stride-th symbol (symbols 0, stride, 2 stride, ... below count), unscaled.
void strided_histogram_of(const uint8_t* symbols, size_t count, size_t stride, Histogram* hist);

// Counts for a rANS table over long streams, read from every kHistogramStride-th symbol and
// scaled; every symbol up to `max_symbol` (the stream's largest) counts at least 1, so each symbol
// present stays codable. Streams of at most kExactHistogram symbols are counted exactly. The table
// only sets the coded size (~0.2% more bytes on the benchmark's streams), never what decodes.
constexpr size_t kHistogramStride = 8;
constexpr size_t kExactHistogram = 1 << 14;
void sampled_histogram_of(const uint8_t* symbols, size_t count, uint8_t max_symbol, Histogram* hist);

// Quantised frequencies summing to kRansProbScale; every symbol present in the input keeps >= 1.
class RansTable {
 public:
  // Builds the table from counts; `hist` must have at least one non-zero entry.
  void build(const Histogram& hist);

  void write(std::vector<uint8_t>* out) const;
  Status read(ByteReader* reader);  // for decoding: leaves the encoder's reciprocals unset

  uint32_t freq(uint8_t s) const { return freq_[s]; }
  uint32_t cum(uint8_t s) const { return cum_[s]; }
  // floor(x / freq(s)) == (x * reciprocal(s)) >> reciprocal_shift(s) for every x < 2^31.
  uint64_t reciprocal(uint8_t s) const { return rcp_[s]; }
  unsigned reciprocal_shift(uint8_t s) const { return rcp_shift_[s]; }

 private:
  void finish_cumulative(bool reciprocals);
  std::array<uint32_t, 256> freq_{};
  std::array<uint32_t, 256> cum_{};
  std::array<uint64_t, 256> rcp_{};
  std::array<uint8_t, 256> rcp_shift_{};
};

// One decoding slot, packed: symbol (bits 0-7), slot - cum of that symbol (bits 8-19) and its
// frequency - 1 (bits 20-31).
using RansSlot = uint32_t;

// The slot cum(symbol) + k of a symbol of frequency `freq`.
inline RansSlot rans_slot(uint32_t freq, uint32_t k, uint8_t symbol) { return ((freq - 1) << 20) | (k << 8) | symbol; }

// Appends the rANS code of `symbols` with `lanes` (4 or 32) interleaved states (table not included)
// to `out`.
void rans_encode(const uint8_t* symbols, size_t count, const RansTable& table, unsigned lanes,
                 std::vector<uint8_t>* scratch, std::vector<uint8_t>* out);

// The same with a table per symbol: symbol i by tables[buckets[i]] (value packing contexts, whose
// tokens each go by their bucket's table in one stream). Every bucket lies below `table_count`.
void rans_encode_buckets(const uint8_t* symbols, const uint8_t* buckets, size_t count, const RansTable* tables,
                         unsigned table_count, unsigned lanes, std::vector<uint8_t>* scratch,
                         std::vector<uint8_t>* out);

// Decodes the `count` symbols of `code` a slice at a time, in order (a receiver can decode the
// changes of one block of the destination, then apply them while the block is in cache). The slice
// that ends the stream fails with Code::corrupt unless the code is consumed exactly and the final
// states are the initial ones.
class RansDecoder {
 public:
  // `lookup` (kRansProbScale slots, filled here from `table`) must outlive the decoding.
  Status start(const uint8_t* code, size_t code_bytes, const RansTable& table, size_t count, unsigned lanes,
               RansSlot* lookup);
  // For rans_encode_buckets' code: `lookup` holds kRansProbScale slots per table, table b's from
  // slot b * kRansProbScale.
  Status start_buckets(const uint8_t* code, size_t code_bytes, const RansTable* tables, unsigned table_count,
                       size_t count, unsigned lanes, RansSlot* lookup);
  // Symbols [done(), upto) into symbols[done(), upto). A plain code decodes to a multiple of the
  // lanes or the count; bucket code to any count, symbol i by the table of buckets[i] (below the
  // tables' count: the caller answers for that).
  Status decode(size_t upto, uint8_t* symbols, const uint8_t* buckets = nullptr);
  size_t done() const { return done_; }

 private:
  Status begin(const uint8_t* code, size_t code_bytes, size_t count, unsigned lanes, RansSlot* lookup);
  template <class Slots>
  bool decode_with(size_t upto, uint8_t* symbols, Slots slots);
  const uint8_t* code_ = nullptr;
  size_t code_bytes_ = 0;
  size_t pos_ = 0;  // the next code byte
  size_t count_ = 0;
  size_t done_ = 0;
  unsigned lanes_ = 4;
  const RansSlot* lookup_ = nullptr;
  uint32_t x_[32];
};

}  // namespace dcr
