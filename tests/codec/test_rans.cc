#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "dcr/codec/rans.h"
#include "dcr/codec/simd.h"
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

std::vector<uint8_t> roundtrip(const std::vector<uint8_t>& symbols, unsigned lanes) {
  Histogram hist;
  histogram_of(symbols.data(), symbols.size(), &hist);
  RansTable table;
  table.build(hist);
  std::vector<uint8_t> code, scratch;
  std::vector<RansSlot> lookup;
  table.write(&code);
  rans_encode(symbols.data(), symbols.size(), table, lanes, &scratch, &code);
  ByteReader reader(code.data(), code.size(), "test");
  RansTable read_back;
  EXPECT_TRUE(read_back.read(&reader).is_ok());
  std::vector<uint8_t> decoded(symbols.size());
  lookup.resize(kRansProbScale);
  RansDecoder decoder;
  Status s = decoder.start(code.data() + reader.position(), code.size() - reader.position(), read_back,
                           symbols.size(), lanes, lookup.data());
  if (s.is_ok()) s = decoder.decode(symbols.size(), decoded.data());
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return decoded;
}

// Both state counts, and for 32 states both the AVX-512 and the scalar coder (where the CPU has it).
TEST(Rans, RoundTripsSkewedUniformAndSingleSymbolInputs) {
  std::vector<uint8_t> uniform(70000);
  std::mt19937 rng(2);
  for (auto& s : uniform) s = static_cast<uint8_t>(rng());
  const std::vector<std::vector<uint8_t>> inputs = {skewed_symbols(100000, 1), skewed_symbols(100003, 5), uniform,
                                                    std::vector<uint8_t>(5000, 42), {7}, {1, 2, 3, 4, 5, 6, 7, 8, 9}};
  for (SimdLevel level : {SimdLevel::avx512_vbmi, SimdLevel::avx512, SimdLevel::scalar}) {
    limit_simd(level);
    for (unsigned lanes : {4u, 32u}) {
      for (const auto& input : inputs) EXPECT_EQ(roundtrip(input, lanes), input) << lanes << " lanes, " << input.size();
    }
  }
  limit_simd(SimdLevel::avx512_vbmi);
}

// Apply decodes a frame's streams a slice at a time while it scatters: every slicing gives the
// symbols of one call, and a damaged code fails by its last slice at the latest.
TEST(Rans, DecodesSliceBySliceAsInOneCall) {
  const std::vector<uint8_t> symbols = skewed_symbols(20011, 3);
  Histogram hist;
  histogram_of(symbols.data(), symbols.size(), &hist);
  RansTable table;
  table.build(hist);
  for (SimdLevel level : {SimdLevel::avx512_vbmi, SimdLevel::scalar}) {
    limit_simd(level);
    for (unsigned lanes : {4u, 32u}) {
      std::vector<uint8_t> code, scratch;
      rans_encode(symbols.data(), symbols.size(), table, lanes, &scratch, &code);
      for (size_t slice : {size_t{32}, size_t{64}, size_t{4096}}) {
        for (size_t cut : {size_t{0}, size_t{2}}) {  // the whole code, or its last word missing
          std::vector<RansSlot> lookup(kRansProbScale);
          std::vector<uint8_t> decoded(symbols.size());
          RansDecoder decoder;
          Status s = decoder.start(code.data(), code.size() - cut, table, symbols.size(), lanes, lookup.data());
          for (size_t done = 0; s.is_ok() && done < symbols.size();) {
            done = std::min(symbols.size(), done + slice);
            s = decoder.decode(done, decoded.data());
          }
          const std::string what = std::to_string(lanes) + " lanes, slices of " + std::to_string(slice);
          if (cut == 0) {
            EXPECT_TRUE(s.is_ok()) << what << ": " << s.to_string();
            EXPECT_EQ(decoded, symbols) << what;
          } else {
            EXPECT_EQ(s.code(), Code::corrupt) << what;
          }
        }
      }
    }
  }
  limit_simd(SimdLevel::avx512_vbmi);
}

std::vector<uint8_t> stream_at(SimdLevel level, const std::vector<uint8_t>& symbols) {
  limit_simd(level);
  StreamCodec codec;
  std::vector<uint8_t> stream;
  codec.write(symbols.data(), symbols.size(), StreamOptions{}, &stream);
  limit_simd(SimdLevel::avx512_vbmi);
  return stream;
}

// The AVX-512 coder writes the scalar coder's bytes for every alphabet class it treats apart:
// largest symbol below 32, 64 or 128 (register lookups) and up to 255 (gathers).
TEST(Rans, EveryLevelWritesTheSameCode) {
  for (size_t count : {size_t{16}, size_t{8192}, size_t{100003}}) {
    for (unsigned top : {31u, 63u, 127u, 255u}) {
      std::vector<uint8_t> symbols = skewed_symbols(count, 7);
      for (size_t i = 0; i < count; i += 97) symbols[i] = static_cast<uint8_t>(top - i % 16);
      for (uint8_t& s : symbols) s = static_cast<uint8_t>(std::min<unsigned>(s, top));
      EXPECT_EQ(stream_at(SimdLevel::avx512, symbols), stream_at(SimdLevel::scalar, symbols))
          << count << " symbols up to " << top;
    }
  }
}

// The estimate the encoder chooses codings by stays close to the size StreamCodec writes (within
// 3%, and a few bytes of state flush on short streams).
TEST(Rans, EstimateIsCloseToTheWrittenSize) {
  for (size_t count : {size_t{300}, size_t{5000}, size_t{100000}}) {
    for (uint64_t seed : {1u, 2u}) {
      const std::vector<uint8_t> symbols = skewed_symbols(count, seed);
      Histogram hist;
      histogram_of(symbols.data(), symbols.size(), &hist);
      StreamCodec codec;
      std::vector<uint8_t> written;
      codec.write(symbols.data(), symbols.size(), StreamOptions{}, &written);
      EXPECT_NEAR(StreamCodec::estimate(hist, count), static_cast<double>(written.size()), 0.03 * written.size() + 8)
          << count << " symbols";
    }
  }
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
  EXPECT_EQ(codec.write(symbols.data(), symbols.size(), StreamOptions{}, &out), Coder::rans32);
  EXPECT_LT(out.size(), entropy_bits / 8 * 1.01);
}

TEST(Rans, RejectsTruncatedStreamsOfEitherStateCount) {
  for (size_t count : {size_t{1000}, size_t{10000}}) {  // 4 states, then 32
    const std::vector<uint8_t> symbols = skewed_symbols(count, 4);
    StreamCodec codec;
    std::vector<uint8_t> stream;
    EXPECT_EQ(codec.write(symbols.data(), symbols.size(), StreamOptions{}, &stream),
              count < 8192 ? Coder::rans : Coder::rans32);
    for (size_t cut = 0; cut < stream.size(); ++cut) {
      ByteReader reader(stream.data(), cut, "cut stream");
      const uint8_t* data;
      size_t size;
      EXPECT_FALSE(codec.read(&reader, symbols.size(), 0, &data, &size).is_ok()) << "cut at " << cut;
    }
  }
}

// Value packing contexts' token stream: symbols of several buckets (one bucket empty), each bucket
// with its own distribution, coded with a table per bucket.
struct BucketStream {
  std::vector<uint8_t> symbols, buckets;
  std::vector<Histogram> hists;
};

BucketStream bucket_stream(size_t count, unsigned tables, uint64_t seed) {
  BucketStream b;
  std::mt19937_64 rng(seed);
  std::geometric_distribution<int> geo(0.5);
  b.hists.assign(tables, Histogram{});
  for (size_t i = 0; i < count; ++i) {
    uint8_t bucket = static_cast<uint8_t>(rng() % tables);
    if (bucket == 1) bucket = 0;  // bucket 1 holds nothing
    const uint8_t symbol = static_cast<uint8_t>(std::min<int>(255, geo(rng) + 5 * bucket));
    b.symbols.push_back(symbol);
    b.buckets.push_back(bucket);
    ++b.hists[bucket][symbol];
  }
  return b;
}

std::vector<uint8_t> bucket_code_at(SimdLevel level, const BucketStream& b) {
  limit_simd(level);
  StreamCodec codec;
  std::vector<uint8_t> stream;
  codec.write_buckets(b.symbols.data(), b.buckets.data(), b.symbols.size(), b.hists.data(),
                      static_cast<unsigned>(b.hists.size()), &stream);
  limit_simd(SimdLevel::avx512_vbmi);
  return stream;
}

// Decodes the stream in slices of `slice` symbols; the status of the first failure, else ok.
Status decode_buckets_sliced(const std::vector<uint8_t>& stream, size_t cut, const BucketStream& b, size_t slice,
                             std::vector<uint8_t>* out) {
  StreamCodec codec;
  ByteReader reader(stream.data(), stream.size() - cut, "bucket stream");
  const uint8_t* data = nullptr;
  DCR_TRY(codec.open_buckets(&reader, b.symbols.size(), static_cast<unsigned>(b.hists.size()), 2, &data));
  for (size_t done = 0; done < b.symbols.size();) {
    done = std::min(b.symbols.size(), done + slice);
    DCR_TRY(codec.decode_buckets(2, done, b.buckets.data()));
  }
  out->assign(data, data + b.symbols.size());
  return Status::ok();
}

// Every SIMD level writes the scalar code, of 4 states below 8192 symbols and of 32 from there;
// it decodes back sliced anywhere (a receiver decodes as far as a block's changes reach), and a
// code short of its last byte fails.
TEST(Rans, BucketStreamsCodeAlikeAtEveryLevelAndDecodeSlicedAnywhere) {
  for (size_t count : {size_t{1}, size_t{100}, size_t{5000}, size_t{20011}}) {
    const BucketStream b = bucket_stream(count, 7, count);
    const std::vector<uint8_t> reference = bucket_code_at(SimdLevel::scalar, b);
    EXPECT_EQ(static_cast<Coder>(reference[0]), count < kWideRansSymbols ? Coder::rans : Coder::rans32) << count;
    EXPECT_EQ(bucket_code_at(SimdLevel::avx512, b), reference) << count << " symbols";
    for (SimdLevel level : {SimdLevel::avx512_vbmi, SimdLevel::scalar}) {
      limit_simd(level);
      for (size_t slice : {size_t{1}, size_t{7}, size_t{32}, size_t{33}, size_t{1000}, count}) {
        std::vector<uint8_t> decoded;
        const Status s = decode_buckets_sliced(reference, 0, b, slice, &decoded);
        EXPECT_TRUE(s.is_ok()) << count << " symbols, slices of " << slice << ": " << s.to_string();
        EXPECT_EQ(decoded, b.symbols) << count << " symbols, slices of " << slice;
        EXPECT_EQ(decode_buckets_sliced(reference, 1, b, slice, &decoded).code(), Code::corrupt)
            << count << " symbols, slices of " << slice;
      }
    }
    limit_simd(SimdLevel::avx512_vbmi);
  }
}

// A bucket stream must hold the frame's count of tokens, coded by rANS.
TEST(Rans, BucketStreamsOfTheWrongLengthOrCoderAreRefused) {
  const BucketStream b = bucket_stream(500, 3, 1);
  std::vector<uint8_t> stream = bucket_code_at(SimdLevel::avx512_vbmi, b);
  StreamCodec codec;
  const uint8_t* data;
  ByteReader longer(stream.data(), stream.size(), "bucket stream");
  EXPECT_EQ(codec.open_buckets(&longer, 501, 3, 2, &data).code(), Code::corrupt);
  stream[0] = static_cast<uint8_t>(Coder::raw);
  ByteReader raw(stream.data(), stream.size(), "bucket stream");
  const Status s = codec.open_buckets(&raw, 500, 3, 2, &data);
  EXPECT_EQ(s.code(), Code::corrupt);
  EXPECT_NE(s.message().find("is not rANS"), std::string::npos) << s.to_string();
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
