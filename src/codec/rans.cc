#include "dcr/codec/rans.h"

#include <algorithm>
#include <string>

#include "dcr/codec/simd.h"
#include "src/codec/rans_avx512.h"

namespace dcr {

namespace {
constexpr uint32_t kLow = kRansLow;  // the normalised state lies in [kLow, kHigh)
constexpr uint32_t kHigh = 1u << 31;
}

namespace {

// The counts of symbols 0, stride, 2 stride, ... below count, in four sub-histograms: they break
// the store-to-load dependency on runs of one symbol.
inline void count_every(const uint8_t* symbols, size_t count, size_t stride, Histogram* hist) {
  uint32_t part[4][256] = {};
  const size_t step = 4 * stride;
  size_t i = 0;
  for (; i + step <= count; i += step) {
    ++part[0][symbols[i]];
    ++part[1][symbols[i + stride]];
    ++part[2][symbols[i + 2 * stride]];
    ++part[3][symbols[i + 3 * stride]];
  }
  for (; i < count; i += stride) ++part[0][symbols[i]];
  for (int s = 0; s < 256; ++s) {
    (*hist)[s] = static_cast<uint64_t>(part[0][s]) + part[1][s] + part[2][s] + part[3][s];
  }
}

}  // namespace

void histogram_of(const uint8_t* symbols, size_t count, Histogram* hist) { count_every(symbols, count, 1, hist); }

void strided_histogram_of(const uint8_t* symbols, size_t count, size_t stride, Histogram* hist) {
  count_every(symbols, count, stride, hist);
}

void sampled_histogram_of(const uint8_t* symbols, size_t count, uint8_t max_symbol, Histogram* hist) {
  if (count <= kExactHistogram) return histogram_of(symbols, count, hist);
  count_every(symbols, count, kHistogramStride, hist);
  for (int s = 0; s < 256; ++s) {
    (*hist)[s] = s <= max_symbol ? std::max<uint64_t>(1, (*hist)[s] * kHistogramStride) : 0;
  }
}

void RansTable::build(const Histogram& hist) {
  uint64_t total = 0;
  for (uint64_t c : hist) total += c;
  int64_t sum = 0;
  for (int s = 0; s < 256; ++s) {
    if (hist[s] == 0) {
      freq_[s] = 0;
      continue;
    }
    const double scaled = static_cast<double>(hist[s]) * kRansProbScale / static_cast<double>(total);
    freq_[s] = std::max<uint32_t>(1, static_cast<uint32_t>(scaled + 0.5));
    sum += freq_[s];
  }
  // Move the rounding error onto the largest frequencies, never dropping a present symbol to 0.
  while (sum != kRansProbScale) {
    const int largest = static_cast<int>(std::max_element(freq_.begin(), freq_.end()) - freq_.begin());
    if (sum < kRansProbScale) {
      freq_[largest] += static_cast<uint32_t>(kRansProbScale - sum);
      sum = kRansProbScale;
    } else {
      const int64_t cut = std::min<int64_t>(sum - kRansProbScale, freq_[largest] - 1);
      freq_[largest] -= static_cast<uint32_t>(cut);
      sum -= cut;
      if (cut == 0) break;  // unreachable: 256 symbols at 1 each sum to less than 2^12
    }
  }
  finish_cumulative(true);
}

void RansTable::finish_cumulative(bool reciprocals) {
  uint32_t running = 0;
  for (int s = 0; s < 256; ++s) {
    cum_[s] = running;
    running += freq_[s];
    if (!reciprocals) continue;
    // Granlund-Montgomery: with l = ceil(log2 f) and m = ceil(2^(31+l) / f), floor(x*m / 2^(31+l))
    // equals floor(x / f) for all x < 2^31.
    const uint32_t f = freq_[s];
    const unsigned l = f <= 1 ? 0 : 32 - static_cast<unsigned>(__builtin_clz(f - 1));
    rcp_shift_[s] = static_cast<uint8_t>(31 + l);
    rcp_[s] = f == 0 ? 0 : ((1ull << (31 + l)) + f - 1) / f;
  }
}

// Layout: symbol count - 1 (one byte), then per present symbol in increasing order: the symbol
// byte and, for all but the last, its frequency - 1 as a varint; the last takes the remainder.
void RansTable::write(std::vector<uint8_t>* out) const {
  int present = 0;
  for (uint32_t f : freq_) present += f != 0;
  out->push_back(static_cast<uint8_t>(present - 1));
  int seen = 0;
  for (int s = 0; s < 256; ++s) {
    if (freq_[s] == 0) continue;
    out->push_back(static_cast<uint8_t>(s));
    if (++seen < present) put_varint(out, freq_[s] - 1);
  }
}

Status RansTable::read(ByteReader* reader) {
  freq_.fill(0);
  uint64_t present_minus_one;
  DCR_TRY(reader->read_le(1, &present_minus_one));
  const int present = static_cast<int>(present_minus_one) + 1;
  uint64_t sum = 0;
  int last_symbol = -1;
  for (int i = 0; i < present; ++i) {
    uint64_t symbol;
    DCR_TRY(reader->read_le(1, &symbol));
    DCR_REQUIRE(static_cast<int>(symbol) > last_symbol, Code::corrupt,
                "rANS table: symbols not in increasing order");
    last_symbol = static_cast<int>(symbol);
    uint64_t f = 0;
    if (i + 1 < present) {
      DCR_TRY(reader->read_varint(&f));
      f += 1;
      DCR_REQUIRE(f < kRansProbScale && sum + f < kRansProbScale, Code::corrupt,
                  "rANS table: frequencies exceed the probability scale");
    } else {
      f = kRansProbScale - sum;
    }
    freq_[symbol] = static_cast<uint32_t>(f);
    sum += f;
  }
  finish_cumulative(false);
  return Status::ok();
}

namespace {

// Branch-free: at most one 16-bit word leaves the state per symbol. The word is stored whether it
// is emitted or not; an unemitted store lands below the stream start and is overwritten later.
inline void encode_one(uint32_t& x, uint8_t s, const RansTable& table, uint8_t*& ptr) {
  const uint32_t f = table.freq(s);
  const bool emit = x >= (f << (31 - kRansProbBits));
  store_le(ptr - 2, x, 2);  // renormalisation words travel little-endian
  ptr -= emit ? 2 : 0;
  x = emit ? x >> 16 : x;
  const uint32_t q = static_cast<uint32_t>((x * table.reciprocal(s)) >> table.reciprocal_shift(s));
  x = (q << kRansProbBits) + (x - q * f) + table.cum(s);
}

inline uint8_t decode_step(uint32_t& x, const RansSlot* lookup) {
  const RansSlot slot = lookup[x & (kRansProbScale - 1)];
  x = ((slot >> 20) + 1) * (x >> kRansProbBits) + ((slot >> 8) & 0xfff);
  return static_cast<uint8_t>(slot);
}

// Refills a state below kLow from the next word; the caller guarantees two bytes remain.
inline void refill(uint32_t& x, const uint8_t* code, size_t& pos) {
  const bool need = x < kLow;
  const uint32_t word = static_cast<uint32_t>(get_le(code + pos, 2));
  x = need ? (x << 16) | word : x;
  pos += need ? 2 : 0;
}

// One symbol with the bounds checked; false when the code runs out.
inline bool decode_checked(uint32_t& x, const RansSlot* lookup, const uint8_t* code, size_t size, size_t& pos,
                           uint8_t* symbol) {
  *symbol = decode_step(x, lookup);
  if (x >= kLow) return true;
  if (size - pos < 2) return false;
  refill(x, code, pos);
  return true;
}

// Symbol i's table: the one table of a plain stream (OneTable), or that of its bucket
// (BucketTables). Templates, so a plain stream's loops test nothing per symbol; the loops take them
// by value, so they stay in registers (in memory, each word stored through a byte pointer could
// alias them, and they would be loaded again).
struct OneTable {
  const RansTable& table;
  const RansTable& of(size_t) const { return table; }
};
struct BucketTables {
  const RansTable* tables;
  const uint8_t* buckets;
  unsigned count;
  const RansTable& of(size_t i) const { return tables[buckets[i]]; }
};

// Symbol i is coded by state i % N; the N chains are independent, so their latencies overlap.
// Within a group the states are encoded N-1 down to 0, so the decoder refills them 0 up to N-1.
template <unsigned N, class Tables>
void encode_groups(const uint8_t* symbols, size_t groups, Tables t, uint32_t* x, uint8_t*& ptr) {
  for (size_t g = groups; g-- > 0;) {
    for (unsigned k = N; k-- > 0;) encode_one(x[k], symbols[N * g + k], t.of(N * g + k), ptr);
  }
}

inline void encode_groups_avx512(const uint8_t* symbols, size_t groups, const OneTable& t, uint32_t* x,
                                 uint8_t*& ptr) {
  rans_encode_groups_avx512(symbols, groups, t.table, x, ptr);
}
inline void encode_groups_avx512(const uint8_t* symbols, size_t groups, const BucketTables& t, uint32_t* x,
                                 uint8_t*& ptr) {
  rans_encode_bucket_groups_avx512(symbols, t.buckets, groups, t.tables, t.count, x, ptr);
}

// The symbols past the last full group of N first (the encoder runs backwards), then the groups.
template <unsigned N, class Tables>
void encode_lanes(const uint8_t* symbols, size_t count, Tables t, uint32_t* x, uint8_t*& ptr) {
  size_t i = count;
  for (; i % N != 0; --i) encode_one(x[(i - 1) % N], symbols[i - 1], t.of(i - 1), ptr);
  if (N == 32 && simd_level() >= SimdLevel::avx512) return encode_groups_avx512(symbols, i / N, t, x, ptr);
  encode_groups<N>(symbols, i / N, t, x, ptr);
}

template <class Tables>
void encode(const uint8_t* symbols, size_t count, Tables t, unsigned lanes, std::vector<uint8_t>* scratch,
            std::vector<uint8_t>* out) {
  const size_t state_bytes = 4 * lanes;
  const size_t room = 2 * count + state_bytes + 16;
  if (scratch->size() < room) scratch->resize(room);  // only grows: a shrink would zero-fill on the next grow
  uint8_t* end = scratch->data() + room;
  uint8_t* ptr = end - state_bytes;  // the code is built backwards in [ptr, end - state_bytes)
  uint32_t x[32];
  std::fill(x, x + lanes, kLow);
  if (lanes == 32) {
    encode_lanes<32>(symbols, count, t, x, ptr);
  } else {
    encode_lanes<4>(symbols, count, t, x, ptr);
  }
  uint8_t states[128];  // x0 first, each little-endian, ahead of the code
  for (unsigned k = 0; k < lanes; ++k) store_le(states + 4 * k, x[k], 4);
  out->insert(out->end(), states, states + state_bytes);
  out->insert(out->end(), ptr, end - state_bytes);
}

// Symbol i's slot table, as OneTable and BucketTables give its table.
struct OneSlots {
  const RansSlot* lookup;
  const uint8_t* buckets() const { return nullptr; }
  const RansSlot* of(size_t) const { return lookup; }
  OneSlots from(size_t) const { return *this; }
};
struct BucketSlots {
  const RansSlot* lookup;
  const uint8_t* bucket;
  const uint8_t* buckets() const { return bucket; }
  const RansSlot* of(size_t i) const { return lookup + (static_cast<size_t>(bucket[i]) << kRansProbBits); }
  BucketSlots from(size_t i) const { return {lookup, bucket + i}; }  // symbol i as symbol 0
};

// Whole groups while 2N bytes remain (at most one word per state): no bounds checks. Returns the
// symbols decoded.
template <unsigned N, class Slots>
size_t decode_groups(const uint8_t* code, size_t code_bytes, Slots slots, size_t count, uint32_t* x,
                     size_t& pos, uint8_t* symbols) {
  size_t i = 0;
  for (; i + N <= count && code_bytes - pos >= 2 * N; i += N) {
    for (unsigned k = 0; k < N; ++k) symbols[i + k] = decode_step(x[k], slots.of(i + k));
    for (unsigned k = 0; k < N; ++k) refill(x[k], code, pos);
  }
  return i;
}

void fill_slots(const RansTable& table, RansSlot* lookup) {
  if (simd_level() >= SimdLevel::avx512) return rans_fill_slots_avx512(table, lookup);
  for (int s = 0; s < 256; ++s) {
    const uint32_t f = table.freq(static_cast<uint8_t>(s)), c = table.cum(static_cast<uint8_t>(s));
    for (uint32_t k = 0; k < f; ++k) lookup[c + k] = rans_slot(f, k, static_cast<uint8_t>(s));
  }
}

}  // namespace

void rans_encode(const uint8_t* symbols, size_t count, const RansTable& table, unsigned lanes,
                 std::vector<uint8_t>* scratch, std::vector<uint8_t>* out) {
  encode(symbols, count, OneTable{table}, lanes, scratch, out);
}

void rans_encode_buckets(const uint8_t* symbols, const uint8_t* buckets, size_t count, const RansTable* tables,
                         unsigned table_count, unsigned lanes, std::vector<uint8_t>* scratch,
                         std::vector<uint8_t>* out) {
  encode(symbols, count, BucketTables{tables, buckets, table_count}, lanes, scratch, out);
}

Status RansDecoder::start(const uint8_t* code, size_t code_bytes, const RansTable& table, size_t count,
                          unsigned lanes, RansSlot* lookup) {
  fill_slots(table, lookup);
  return begin(code, code_bytes, count, lanes, lookup);
}

Status RansDecoder::start_buckets(const uint8_t* code, size_t code_bytes, const RansTable* tables,
                                  unsigned table_count, size_t count, unsigned lanes, RansSlot* lookup) {
  for (unsigned b = 0; b < table_count; ++b) fill_slots(tables[b], lookup + b * size_t{kRansProbScale});
  return begin(code, code_bytes, count, lanes, lookup);
}

Status RansDecoder::begin(const uint8_t* code, size_t code_bytes, size_t count, unsigned lanes, RansSlot* lookup) {
  const size_t state_bytes = 4 * lanes;
  DCR_REQUIRE(code_bytes >= state_bytes, Code::corrupt,
              "rANS stream shorter than its " + std::to_string(lanes) + " states");
  for (unsigned k = 0; k < lanes; ++k) {
    x_[k] = static_cast<uint32_t>(get_le(code + 4 * k, 4));
    DCR_REQUIRE(x_[k] >= kLow && x_[k] < kHigh, Code::corrupt, "rANS stream: initial state out of range");
  }
  code_ = code;
  code_bytes_ = code_bytes;
  pos_ = state_bytes;
  count_ = count;
  done_ = 0;
  lanes_ = lanes;
  lookup_ = lookup;
  return Status::ok();
}

// Up to a whole group one symbol at a time (bucket code decodes to any count), then whole groups,
// then the rest; false where the code runs out.
template <class Slots>
bool RansDecoder::decode_with(size_t upto, uint8_t* symbols, Slots slots) {
  size_t i = done_;
  const auto one_at_a_time = [&](size_t end) {  // symbol i takes state i % lanes (a power of two)
    for (; i < end; ++i) {
      if (!decode_checked(x_[i & (lanes_ - 1)], slots.of(i), code_, code_bytes_, pos_, &symbols[i])) return false;
    }
    return true;
  };
  if (!one_at_a_time(std::min(upto, (i + lanes_ - 1) / lanes_ * lanes_))) return false;
  if (i == upto) return true;
  const auto group_slots = slots.from(i);
  if (lanes_ == 32 && simd_level() >= SimdLevel::avx512) {
    i += rans_decode_groups_avx512(code_, code_bytes_, lookup_, group_slots.buckets(), upto - i, x_, pos_,
                                   symbols + i);
  } else if (lanes_ == 32) {
    i += decode_groups<32>(code_, code_bytes_, group_slots, upto - i, x_, pos_, symbols + i);
  } else {
    i += decode_groups<4>(code_, code_bytes_, group_slots, upto - i, x_, pos_, symbols + i);
  }
  return one_at_a_time(upto);
}

Status RansDecoder::decode(size_t upto, uint8_t* symbols, const uint8_t* buckets) {
  const bool ok = buckets != nullptr ? decode_with(upto, symbols, BucketSlots{lookup_, buckets})
                                     : decode_with(upto, symbols, OneSlots{lookup_});
  DCR_REQUIRE(ok, Code::corrupt, "rANS stream: truncated");
  done_ = upto;
  if (done_ < count_) return Status::ok();
  bool final_states = true;
  for (unsigned k = 0; k < lanes_; ++k) final_states = final_states && x_[k] == kLow;
  DCR_REQUIRE(pos_ == code_bytes_ && final_states, Code::corrupt, "rANS stream: does not end where its symbol count says");
  return Status::ok();
}

}  // namespace dcr
