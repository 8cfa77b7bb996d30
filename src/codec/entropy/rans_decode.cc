// The rANS decoder (rans.h): a slice at a time, in order, checking every bound; rans_avx512.cc
// holds the AVX-512 twin of its 32-state loop.
#include "dcr/codec/rans.h"

#include <algorithm>
#include <string>

#include "dcr/codec/simd.h"
#include "src/codec/entropy/rans_avx512.h"

namespace dcr {

namespace {

constexpr uint32_t kLow = kRansLow;  // the normalised state lies in [kLow, kHigh)
constexpr uint32_t kHigh = 1u << 31;

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

// Symbol i's slot table: the one table's of a plain stream, or that of its bucket (rans_encode_buckets'
// code).
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
