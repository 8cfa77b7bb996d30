// The safe in-place apply: idempotent, refuses wrong bases and wrong destinations, never applies
// an XOR twice, and restores the range when verification fails.
#include <gtest/gtest.h>

#include "dcr/codec/decoder.h"
#include "dcr/codec/encoder.h"
#include "dcr/codec/scan.h"
#include "dcr/core/hash.h"
#include "support/random_data.h"

namespace dcr {
namespace {

constexpr unsigned kWidth = 2;
constexpr uint64_t kCount = 4096;

struct Fixture {
  std::vector<uint8_t> base = test::random_bytes(kCount * kWidth, 11);
  std::vector<uint8_t> target = test::perturb(base, kWidth, 0.05, 12);
  std::vector<uint8_t> frame;
  explicit Fixture(ValueMode mode = ValueMode::xor_mask) {
    EncodeOptions options;
    options.value_mode = mode;
    FrameEncoder encoder(options);
    EXPECT_TRUE(encoder.encode_delta(view(&base), view(&target), {5, 6}, &frame).is_ok());
  }
  static Region view(std::vector<uint8_t>* bits) { return test::flat(2, bits->data(), kCount, kWidth); }
};

TEST(Apply, SecondApplyIsANoOpSoAnXorIsNeverAppliedTwice) {
  Fixture f(ValueMode::xor_mask);
  std::vector<uint8_t> dst = f.base;
  FrameDecoder decoder;
  ApplyOutcome outcome;
  ASSERT_TRUE(decoder.apply(f.frame.data(), f.frame.size(), f.view(&dst), 5, &outcome).is_ok());
  EXPECT_EQ(outcome, ApplyOutcome::applied);
  for (int retry = 0; retry < 3; ++retry) {
    ASSERT_TRUE(decoder.apply(f.frame.data(), f.frame.size(), f.view(&dst), 5, &outcome).is_ok());
    EXPECT_EQ(outcome, ApplyOutcome::already_applied);
  }
  EXPECT_EQ(dst, f.target);
}

// Every value mode, with the foreign bits where the frame changes nothing and where it changes an
// element (an overwrite would reach the target bits from there: the base must still be checked).
TEST(Apply, RefusesADestinationHoldingNeitherBaseNorTargetAndWritesNothing) {
  for (ValueMode mode : {ValueMode::xor_mask, ValueMode::overwrite, ValueMode::delta_sm, ValueMode::delta_tc}) {
    Fixture f(mode);
    auto first_where = [&](bool changed) {
      uint64_t i = 0;
      while ((load_word(f.base.data(), i, kWidth) != load_word(f.target.data(), i, kWidth)) != changed) ++i;
      return i;
    };
    for (uint64_t element : {first_where(false), first_where(true)}) {
      std::vector<uint8_t> dst = f.base;
      dst[kWidth * element] ^= 0x40;  // a partial or foreign write
      const std::vector<uint8_t> before = dst;
      FrameDecoder decoder;
      ApplyOutcome outcome;
      const Status s = decoder.apply(f.frame.data(), f.frame.size(), f.view(&dst), 5, &outcome);
      EXPECT_EQ(s.code(), Code::base_mismatch) << value_mode_name(mode) << " element " << element;
      EXPECT_NE(s.message().find("full frame"), std::string::npos) << s.message();
      EXPECT_EQ(dst, before);
    }
  }
}

TEST(Apply, RefusesADeltaOnAnotherBaseVersion) {
  Fixture f;
  std::vector<uint8_t> dst = f.base;
  FrameDecoder decoder;
  ApplyOutcome outcome;
  const Status s = decoder.apply(f.frame.data(), f.frame.size(), f.view(&dst), 4, &outcome);
  EXPECT_EQ(s.code(), Code::base_mismatch);
  EXPECT_NE(s.message().find("version 5"), std::string::npos) << s.message();
  EXPECT_EQ(dst, f.base);
}

TEST(Apply, RefusesWrongTensorWidthOrOutOfRangeDestinations) {
  Fixture f;
  std::vector<uint8_t> dst = f.base;
  FrameDecoder decoder;
  ApplyOutcome outcome;
  Region wrong_tensor = f.view(&dst);
  wrong_tensor.box.tensor = 3;
  EXPECT_EQ(decoder.apply(f.frame.data(), f.frame.size(), wrong_tensor, 5, &outcome).code(), Code::invalid_argument);
  Region wrong_width = f.view(&dst);
  wrong_width.width = 4;
  wrong_width.box.cols = kCount / 2;
  EXPECT_EQ(decoder.apply(f.frame.data(), f.frame.size(), wrong_width, 5, &outcome).code(), Code::invalid_argument);
  Region too_short = f.view(&dst);
  too_short.box.cols = kCount - 1;
  EXPECT_EQ(decoder.apply(f.frame.data(), f.frame.size(), too_short, 5, &outcome).code(), Code::invalid_argument);
  Region shifted = f.view(&dst);
  shifted.box.col0 = 1;
  EXPECT_EQ(decoder.apply(f.frame.data(), f.frame.size(), shifted, 5, &outcome).code(), Code::invalid_argument);
  Region other_row = f.view(&dst);
  other_row.box.row0 = 1;
  EXPECT_EQ(decoder.apply(f.frame.data(), f.frame.size(), other_row, 5, &outcome).code(), Code::invalid_argument);
  EXPECT_EQ(dst, f.base);
}

TEST(Apply, EveryValueModeIsIdempotentAndExact) {
  for (ValueMode mode : {ValueMode::xor_mask, ValueMode::overwrite, ValueMode::delta_sm, ValueMode::delta_tc}) {
    Fixture f(mode);
    std::vector<uint8_t> dst = f.base;
    FrameDecoder decoder;
    ApplyOutcome outcome;
    for (int i = 0; i < 2; ++i) {
      ASSERT_TRUE(decoder.apply(f.frame.data(), f.frame.size(), f.view(&dst), 5, &outcome).is_ok());
    }
    EXPECT_EQ(hash64(dst.data(), dst.size()), hash64(f.target.data(), f.target.size())) << value_mode_name(mode);
  }
}

// Apply hashes long boxes block by block (16Ki elements). XXH3's last stripe is the box's last 64
// bytes, which reach back into the previous block when the last block is shorter: changes there
// are scattered before the last block is hashed, and must not move the "before" hash.
TEST(Apply, BoxesEndingJustPastABlockApplyAndRefuseExactly) {
  for (uint64_t count : {uint64_t{16384 + 1}, uint64_t{16384 + 20}, uint64_t{32768 + 31}, uint64_t{600}}) {
    std::vector<uint8_t> base = test::random_bytes(count * kWidth, 21);
    std::vector<uint8_t> target = base;
    for (uint64_t i = count - 40; i < count; i += 3) target[i * kWidth] ^= 0x5a;  // across the boundary
    target[0] ^= 1;
    std::vector<uint8_t> frame;
    FrameEncoder encoder;
    ASSERT_TRUE(encoder.encode_delta(test::flat(2, base.data(), count, kWidth),
                                     test::flat(2, target.data(), count, kWidth), {5, 6}, &frame).is_ok());
    std::vector<uint8_t> dst = base;
    FrameDecoder decoder;
    ApplyOutcome outcome;
    ASSERT_TRUE(decoder.apply(frame.data(), frame.size(), test::flat(2, dst.data(), count, kWidth), 5, &outcome).is_ok())
        << count;
    EXPECT_EQ(outcome, ApplyOutcome::applied);
    EXPECT_EQ(dst, target) << count;
    dst[(count - 1) * kWidth] ^= 0x80;  // neither base nor target: refused, left as it was
    const std::vector<uint8_t> foreign = dst;
    EXPECT_EQ(decoder.apply(frame.data(), frame.size(), test::flat(2, dst.data(), count, kWidth), 5, &outcome).code(),
              Code::base_mismatch);
    EXPECT_EQ(dst, foreign) << count;
  }
}

}  // namespace
}  // namespace dcr

namespace dcr {
namespace {

TEST(Apply, AFrameWhosePayloadMissesItsTargetIsUndoneAndReported) {
  // A frame that claims base -> target but carries the changes of base -> other: apply must verify
  // the target hash, put every old bit back, and say so.
  Fixture f;
  const std::vector<uint8_t> other = test::perturb(f.base, kWidth, 0.05, 99);
  std::vector<uint8_t> lying;
  FrameEncoder encoder;
  std::vector<uint8_t> other_bits = other;
  ASSERT_TRUE(encoder.encode_delta(Fixture::view(&f.base), Fixture::view(&other_bits), {5, 6}, &lying).is_ok());
  FrameHeader header;
  ASSERT_TRUE(parse_frame_header(lying.data(), lying.size(), &header).is_ok());
  FrameHeader honest;
  ASSERT_TRUE(parse_frame_header(f.frame.data(), f.frame.size(), &honest).is_ok());
  header.target_hash = honest.target_hash;
  write_frame_header(header, lying.data());

  std::vector<uint8_t> dst = f.base;
  FrameDecoder decoder;
  ApplyOutcome outcome;
  const Status s = decoder.apply(lying.data(), lying.size(), f.view(&dst), 5, &outcome);
  EXPECT_EQ(s.code(), Code::target_mismatch);
  EXPECT_NE(s.message().find("restored"), std::string::npos);
  EXPECT_EQ(dst, f.base);
}

}  // namespace
}  // namespace dcr
