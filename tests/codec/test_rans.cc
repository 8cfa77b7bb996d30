#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "dcr/codec/rans.h"
#include "dcr/codec/stream.h"
#include "dcr/codec/tokens.h"

namespace dcr {
namespace {

std::vector<uint8_t> skewed_symbols(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::geometric_distribution<int> geo(0.6);
  std::vector<uint8_t> out(n);
  for (auto& s : out) s = static_cast<uint8_t>(std::min(geo(rng), 255));
  return out;
}

std::vector<uint8_t> roundtrip(const std::vector<uint8_t>& symbols) {
  Histogram hist;
  histogram_of(symbols.data(), symbols.size(), &hist);
  RansTable table;
  table.build(hist);
  std::vector<uint8_t> code, scratch;
  std::vector<RansSlot> lookup;
  table.write(&code);
  rans_encode(symbols.data(), symbols.size(), table, &scratch, &code);
  ByteReader reader(code.data(), code.size(), "test");
  RansTable read_back;
  EXPECT_TRUE(read_back.read(&reader).is_ok());
  std::vector<uint8_t> decoded(symbols.size());
  const Status s = rans_decode(code.data() + reader.position(), code.size() - reader.position(), read_back,
                               symbols.size(), &lookup, decoded.data());
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return decoded;
}

TEST(Rans, RoundTripsSkewedUniformAndSingleSymbolInputs) {
  EXPECT_EQ(roundtrip(skewed_symbols(100000, 1)), skewed_symbols(100000, 1));
  std::vector<uint8_t> uniform(70000);
  std::mt19937 rng(2);
  for (auto& s : uniform) s = static_cast<uint8_t>(rng());
  EXPECT_EQ(roundtrip(uniform), uniform);
  std::vector<uint8_t> single(5000, 42);
  EXPECT_EQ(roundtrip(single), single);
  std::vector<uint8_t> one{7};
  EXPECT_EQ(roundtrip(one), one);
}

TEST(Rans, CodesWithinOnePercentOfEmpiricalEntropy) {
  const std::vector<uint8_t> symbols = skewed_symbols(1 << 20, 3);
  Histogram hist;
  histogram_of(symbols.data(), symbols.size(), &hist);
  double entropy_bits = 0;
  for (uint64_t c : hist) {
    if (c) entropy_bits -= c * std::log2(double(c) / symbols.size());
  }
  StreamCodec codec;
  std::vector<uint8_t> out;
  EXPECT_EQ(codec.write(symbols.data(), symbols.size(), StreamOptions{}, &out), Coder::rans);
  EXPECT_LT(out.size(), entropy_bits / 8 * 1.01);
}

TEST(Rans, RejectsCorruptTablesAndCodes) {
  const std::vector<uint8_t> symbols = skewed_symbols(10000, 4);
  StreamCodec codec;
  std::vector<uint8_t> stream;
  codec.write(symbols.data(), symbols.size(), StreamOptions{}, &stream);
  for (size_t cut = 0; cut < stream.size(); ++cut) {
    ByteReader reader(stream.data(), cut, "cut stream");
    const uint8_t* data;
    size_t size;
    EXPECT_FALSE(codec.read(&reader, symbols.size(), 0, &data, &size).is_ok()) << "cut at " << cut;
  }
}

TEST(Tokens, EveryBucketRoundTrips) {
  for (unsigned bit = 0; bit < 64; ++bit) {
    for (uint64_t v : {1ull << bit, (1ull << bit) - 1, (1ull << bit) + 1, ~0ull >> (63 - bit)}) {
      const Token t = make_token(v);
      EXPECT_EQ(t.extra_bits, token_extra_bits(t.symbol));
      EXPECT_EQ(token_value(t.symbol, t.extra), v) << v;
    }
  }
}

}  // namespace
}  // namespace dcr
