// Every vectorised path writes exactly the bytes of its scalar twin: frames encoded at each SIMD
// level this CPU runs are compared byte for byte, and each one applies back to the target.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <utility>

#include "dcr/codec/decoder.h"
#include "dcr/codec/encoder.h"
#include "dcr/codec/simd.h"
#include "dcr/core/hash.h"
#include "support/random_data.h"

namespace dcr {
namespace {

// Frames as the encoder chooses them, or forced to gaps-joint, or to value packing contexts.
enum class Packing { chosen, joint, contexts };

std::vector<uint8_t> encode_at(SimdLevel level, const Region& base, const Region& target, bool sign_magnitude,
                               bool joint = false, Packing packing = Packing::chosen) {
  limit_simd(level);
  EncodeOptions options;
  options.sign_magnitude = sign_magnitude;
  if (joint) options.pos_coding = PosCoding::gaps_joint;
  if (packing == Packing::contexts) {
    options.value_packing = ValuePacking::contexts;
    options.context_shift = static_cast<uint8_t>(8 * base.width - 9);  // bf16 and f32: the exponent
  }
  FrameEncoder encoder(options);
  std::vector<uint8_t> frame;
  const Status status = encoder.encode_delta(base, target, {3, 4}, &frame);
  limit_simd(SimdLevel::avx512_vbmi);
  EXPECT_TRUE(status.is_ok()) << status.to_string();
  return frame;
}

struct Case {
  unsigned width;
  uint64_t count;
  double fraction;
  bool wild;  // random new values (large deltas) instead of optimizer-like steps
};

class SimdTwins : public ::testing::TestWithParam<Case> {};

TEST_P(SimdTwins, WriteTheSameFramesAsTheScalarCode) {
  if (simd_level() == SimdLevel::scalar) GTEST_SKIP() << "this CPU runs only the scalar code";
  const Case c = GetParam();
  const std::vector<uint8_t> base = test::random_bytes(c.count * c.width, c.count + c.width);
  std::vector<uint8_t> target = test::perturb(base, c.width, c.fraction, 7, c.wild);
  // The box's first and last elements change too: the vector loops must leave the ends right.
  for (uint64_t i : {uint64_t{0}, c.count - 1}) target[i * c.width] ^= 0x01;
  const Region b = test::flat(0, base.data(), c.count, c.width), t = test::flat(0, target.data(), c.count, c.width);
  for (const auto& [sign_magnitude, joint] : {std::pair{true, false}, std::pair{false, false}, std::pair{true, true}}) {
    const std::vector<uint8_t> reference = encode_at(SimdLevel::scalar, b, t, sign_magnitude, joint);
    for (SimdLevel level : {SimdLevel::avx2, SimdLevel::avx512, SimdLevel::avx512_vbmi}) {
      if (level > simd_level()) continue;
      EXPECT_EQ(encode_at(level, b, t, sign_magnitude, joint), reference)
          << "level " << static_cast<int>(level) << ", width " << c.width << ", " << c.count << " elements"
          << (joint ? ", gaps-joint" : "");
    }
    std::vector<uint8_t> dst = base;
    FrameDecoder decoder;
    ApplyOutcome outcome;
    ASSERT_TRUE(decoder.apply(reference.data(), reference.size(), test::flat(0, dst.data(), c.count, c.width), 3,
                              &outcome).is_ok());
    EXPECT_EQ(dst, target);
  }
}

struct Decoded {
  bool ok;
  std::vector<uint32_t> positions;
  std::vector<uint64_t> words;
  bool operator==(const Decoded& o) const { return ok == o.ok && positions == o.positions && words == o.words; }
};

Decoded decode_at(SimdLevel level, const std::vector<uint8_t>& frame) {
  limit_simd(level);
  FrameDecoder decoder;
  DecodedFrame d;
  const bool ok = decoder.decode(frame.data(), frame.size(), 1u << 24, &d).is_ok();
  limit_simd(SimdLevel::avx512_vbmi);
  return ok ? Decoded{true, d.positions, d.words} : Decoded{false, {}, {}};
}

// A copy of `frame` with payload bit `bit` flipped and both checksums recomputed, so the decoder
// gets past them to the streams.
std::vector<uint8_t> flipped(const std::vector<uint8_t>& frame, uint64_t bit) {
  std::vector<uint8_t> out = frame;
  out[kFrameHeaderBytes + bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
  FrameHeader header;
  EXPECT_TRUE(peek_frame_header(out.data(), out.size(), &header).is_ok());
  header.payload_hash = hash64(out.data() + kFrameHeaderBytes, out.size() - kFrameHeaderBytes);
  write_frame_header(header, out.data());
  return out;
}

// The decoders too: the same positions and words from every level, and the same verdict on
// frames with payload bits flipped behind valid checksums.
TEST_P(SimdTwins, DecodeAsTheScalarCodeDoes) {
  if (simd_level() == SimdLevel::scalar) GTEST_SKIP() << "this CPU runs only the scalar code";
  const Case c = GetParam();
  const std::vector<uint8_t> base = test::random_bytes(c.count * c.width, c.count + c.width);
  const std::vector<uint8_t> target = test::perturb(base, c.width, c.fraction, 8, c.wild);
  for (bool joint : {false, true}) {
    const std::vector<uint8_t> frame = encode_at(simd_level(), test::flat(0, base.data(), c.count, c.width),
                                                 test::flat(0, target.data(), c.count, c.width), true, joint);
    const Decoded reference = decode_at(SimdLevel::scalar, frame);
    ASSERT_TRUE(reference.ok);
    const uint64_t payload_bits = 8 * (frame.size() - kFrameHeaderBytes);
    for (SimdLevel level : {SimdLevel::avx2, SimdLevel::avx512, SimdLevel::avx512_vbmi}) {
      if (level > simd_level()) continue;
      EXPECT_EQ(decode_at(level, frame), reference) << "level " << static_cast<int>(level) << (joint ? ", gaps-joint" : "");
      for (uint64_t k = 0; k < 100 && payload_bits > 0; ++k) {
        const std::vector<uint8_t> bad = flipped(frame, (k * 7919 + 13) % payload_bits);
        EXPECT_EQ(decode_at(level, bad), decode_at(SimdLevel::scalar, bad))
            << "level " << static_cast<int>(level) << ", flip " << k << (joint ? ", gaps-joint" : "");
      }
    }
  }
}

// What applying a frame at a SIMD level leaves: the error code (ok where applied) and the bytes.
std::pair<Code, std::vector<uint8_t>> apply_at(SimdLevel level, const std::vector<uint8_t>& frame,
                                               std::vector<uint8_t> bits, uint64_t count, unsigned width) {
  limit_simd(level);
  FrameDecoder decoder;
  ApplyOutcome outcome;
  const Status status = decoder.apply(frame.data(), frame.size(), test::flat(0, bits.data(), count, width), 3, &outcome);
  limit_simd(SimdLevel::avx512_vbmi);
  return {status.code(), std::move(bits)};
}

// bf16 weights whose steps grow as their exponent shrinks, as an optimizer's do: value packing
// contexts then splits their tokens into many buckets. `fraction` of them change.
std::pair<std::vector<uint8_t>, std::vector<uint8_t>> exponent_steps(uint64_t count, double fraction, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> base(2 * count), target(2 * count);
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t r = rng();
    const unsigned exponent = 100 + r % 30;
    const uint16_t magnitude = static_cast<uint16_t>(exponent << 7 | (r >> 8 & 0x7f));
    const uint16_t old_bits = static_cast<uint16_t>(magnitude | (r >> 16 & 1) << 15);
    uint16_t new_bits = old_bits;
    if (static_cast<double>(rng() % 1000000) < fraction * 1e6) {
      const uint16_t step = static_cast<uint16_t>(1 + rng() % (1u << (130 - exponent) / 5));
      new_bits = static_cast<uint16_t>((rng() & 1 ? magnitude + step : magnitude - step) | (old_bits & 0x8000));
    }
    std::memcpy(&base[2 * i], &old_bits, 2);
    std::memcpy(&target[2 * i], &new_bits, 2);
  }
  return {base, target};
}

// Value packing contexts: the vector coder of tokens by their buckets' tables writes the scalar
// frame, and the vector decoder applies it as the scalar one does, on damaged frames too (a wrong
// rule, a damaged table, bits flipped behind valid checksums).
TEST_P(SimdTwins, ContextsEncodeAndApplyAsTheScalarCode) {
  if (simd_level() == SimdLevel::scalar) GTEST_SKIP() << "this CPU runs only the scalar code";
  const Case c = GetParam();
  if (c.width != 2) GTEST_SKIP() << "bf16 weights";
  const auto [base, target] = exponent_steps(c.count, c.fraction, c.count + 3);
  const Region b = test::flat(0, base.data(), c.count, c.width), t = test::flat(0, target.data(), c.count, c.width);
  const std::vector<uint8_t> reference = encode_at(SimdLevel::scalar, b, t, true, false, Packing::contexts);
  FrameHeader header;
  ASSERT_TRUE(parse_frame_header(reference.data(), reference.size(), &header).is_ok());
  ASSERT_EQ(header.value_packing, ValuePacking::contexts);
  ASSERT_EQ(apply_at(SimdLevel::scalar, reference, base, c.count, c.width), std::pair(Code::ok, target));
  const uint64_t payload_bits = 8 * (reference.size() - kFrameHeaderBytes);
  for (SimdLevel level : {SimdLevel::avx2, SimdLevel::avx512, SimdLevel::avx512_vbmi}) {
    if (level > simd_level()) continue;
    EXPECT_EQ(encode_at(level, b, t, true, false, Packing::contexts), reference) << "level " << static_cast<int>(level);
    EXPECT_EQ(apply_at(level, reference, base, c.count, c.width), std::pair(Code::ok, target));
    for (uint64_t k = 0; k < 40 && payload_bits > 0; ++k) {
      const std::vector<uint8_t> bad = flipped(reference, (k * 7919 + 13) % payload_bits);
      EXPECT_EQ(apply_at(level, bad, base, c.count, c.width), apply_at(SimdLevel::scalar, bad, base, c.count, c.width))
          << "level " << static_cast<int>(level) << ", flip " << k;
    }
  }
}

// Gaps so long that four of their extra-bit fields overflow a 64-bit put (the vector tokeniser then
// puts them in pairs), among short ones.
TEST(SimdTwinsSparse, VeryLongGapsWriteTheSameFrames) {
  if (simd_level() == SimdLevel::scalar) GTEST_SKIP() << "this CPU runs only the scalar code";
  constexpr uint64_t kCount = 3000001;
  const std::vector<uint8_t> base = test::random_bytes(kCount * 2, 9);
  std::vector<uint8_t> target = base;
  for (uint64_t k = 1; k <= 4; ++k) target[2 * (k * 600007)] ^= 0x10;  // four gaps of 17 extra bits
  for (uint64_t k = 0; k < 40; ++k) target[2 * (kCount - 1 - 7 * k)] ^= 0x01;  // and short gaps
  const Region b = test::flat(0, base.data(), kCount, 2), t = test::flat(0, target.data(), kCount, 2);
  const std::vector<uint8_t> reference = encode_at(SimdLevel::scalar, b, t, true);
  EXPECT_EQ(encode_at(simd_level(), b, t, true), reference);
  std::vector<uint8_t> dst = base;
  FrameDecoder decoder;
  ApplyOutcome outcome;
  ASSERT_TRUE(decoder.apply(reference.data(), reference.size(), test::flat(0, dst.data(), kCount, 2), 3, &outcome).is_ok());
  EXPECT_TRUE(dst == target);
}

// A bundle's boxes scanned where they lie (every run but the last a whole number of 64-byte
// stripes), tokenised as the scan goes with each run's changes at their place in the bundle: the
// same frames as the scalar code, at a rate the scan-time tokeniser keeps up with and at one it
// leaves to the scan's end, with change counts that are no whole number of groups.
TEST(SimdTwinsBundle, ScanTimeTokensWriteTheSameFrames) {
  if (simd_level() < SimdLevel::avx512_vbmi) GTEST_SKIP() << "this CPU has no AVX512-VBMI: no fused scan";
  const std::vector<Box> boxes = {{0, 0, 1, 0, 70016}, {1, 0, 1, 0, 4096}, {2, 0, 1, 0, 50001}};
  for (double fraction : {0.03, 0.6}) {
    for (bool sign_magnitude : {true, false}) {
      SCOPED_TRACE(std::to_string(fraction) + (sign_magnitude ? ", sign-magnitude" : ", two's complement"));
      std::vector<std::vector<uint8_t>> base, target;
      std::vector<Region> bases, targets;
      for (const Box& box : boxes) {
        base.push_back(test::random_bytes(box.elements() * 2, box.tensor + 20));
        target.push_back(test::perturb(base.back(), 2, fraction, box.tensor + 30));
        bases.push_back(dense_region(box, 2, base.back().data()));
        targets.push_back(dense_region(box, 2, target.back().data()));
      }
      EncodeOptions options;
      options.sign_magnitude = sign_magnitude;
      std::vector<uint8_t> frames[2];
      for (int k = 0; k < 2; ++k) {
        limit_simd(k == 0 ? SimdLevel::scalar : SimdLevel::avx512_vbmi);
        ASSERT_TRUE(FrameEncoder(options).encode_bundle(bases, targets, {3, 4}, &frames[k]).is_ok());
      }
      limit_simd(SimdLevel::avx512_vbmi);
      EXPECT_EQ(frames[1], frames[0]);
      std::vector<std::vector<uint8_t>> dst = base;
      std::vector<Region> dsts;
      for (size_t i = 0; i < boxes.size(); ++i) dsts.push_back(dense_region(boxes[i], 2, dst[i].data()));
      ApplyOutcome outcome;
      ASSERT_TRUE(FrameDecoder().apply_bundle(frames[1].data(), frames[1].size(), dsts, 3, &outcome).is_ok());
      EXPECT_EQ(dst, target);
    }
  }
}

// The scan that hashes what it reads (scan_hash.h) gives XXH3 itself for every length class:
// short inputs (up to 240 bytes), one byte past, whole and partial 1 KiB blocks and 64-byte
// stripes, and boxes spanning several encoder blocks.
TEST(SimdHash, TheScanHashesEqualXxh3ForEveryLengthClass) {
  if (simd_level() < SimdLevel::avx512_vbmi) GTEST_SKIP() << "this CPU has no AVX512-VBMI: the scan does not hash";
  std::vector<uint64_t> counts;
  for (uint64_t c = 1; c <= 140; ++c) counts.push_back(c);
  for (uint64_t c : {480u, 511u, 512u, 513u, 544u, 1024u, 1056u, 16384u, 16385u, 32768u, 40000u, 65536u, 70001u}) {
    counts.push_back(c);
  }
  for (uint64_t count : counts) {
    const std::vector<uint8_t> base = test::random_bytes(count * 2, count);
    const std::vector<uint8_t> target = test::perturb(base, 2, 0.05, count + 1);
    const std::vector<uint8_t> frame =
        encode_at(SimdLevel::avx512_vbmi, test::flat(0, base.data(), count, 2), test::flat(0, target.data(), count, 2), true);
    FrameHeader header;
    ASSERT_TRUE(parse_frame_header(frame.data(), frame.size(), &header).is_ok());
    EXPECT_EQ(header.base_hash, hash64(base.data(), base.size())) << count << " elements";
    EXPECT_EQ(header.target_hash, hash64(target.data(), target.size())) << count << " elements";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Codec, SimdTwins,
    ::testing::Values(Case{2, 1, 1.0, false}, Case{2, 17, 0.5, false}, Case{2, 33, 1.0, true},
                      Case{2, 3001, 0.03, false}, Case{2, 70001, 0.01, false}, Case{2, 70001, 0.05, true},
                      Case{2, 200003, 0.0005, false}, Case{2, 400000, 0.03, false}, Case{2, 50000, 0.9, false}, Case{1, 3001, 0.05, false},
                      Case{4, 3001, 0.05, true}, Case{8, 3001, 0.05, false}));

}  // namespace
}  // namespace dcr
