// The rANS frequency table: built from counts, and written to and read from a stream's code.
#include "dcr/codec/rans.h"

#include <algorithm>
#include <string>

namespace dcr {

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

}  // namespace dcr
