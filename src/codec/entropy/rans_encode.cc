// The rANS encoder (rans.h): symbols last to first into N interleaved states, each symbol by one
// table or by its bucket's; rans_avx512.cc holds the AVX-512 twin of its 32-state loop.
#include "dcr/codec/rans.h"

#include <algorithm>

#include "dcr/codec/simd.h"
#include "src/codec/entropy/rans_avx512.h"

namespace dcr {

namespace {

constexpr uint32_t kLow = kRansLow;  // the normalised state lies in [kLow, 2^31)

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

}  // namespace dcr
