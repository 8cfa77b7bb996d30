// Every element width x position coding x value mode x packing round-trips bit-exactly, and the
// codec applied in place gives exactly the target bytes (checked by hash and by byte comparison).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <tuple>

#include "dcr/codec/decoder.h"
#include "dcr/codec/encoder.h"
#include "dcr/core/hash.h"
#include "support/random_data.h"

namespace dcr {
namespace {

struct Case {
  std::vector<uint8_t> base, target;
  unsigned width;
};

// Applies a frame encoded with `options` to a copy of base; expects the target bytes exactly.
void expect_exact(const Case& c, const EncodeOptions& options, const std::string& label) {
  const uint64_t count = c.base.size() / c.width;
  FrameEncoder encoder(options);
  std::vector<uint8_t> frame;
  EncodeStats stats;
  ASSERT_TRUE(encoder.encode_delta(test::flat(7, c.base.data(), count, c.width), test::flat(7, c.target.data(), count, c.width),
                                   {3, 4}, &frame, &stats).is_ok()) << label;
  if (options.pos_coding) {
    EXPECT_EQ(stats.pos_coding, *options.pos_coding) << label;
  }
  if (options.value_mode) {
    EXPECT_EQ(stats.value_mode, *options.value_mode) << label;
  }

  FrameDecoder decoder;
  DecodedFrame decoded;
  const Region base = test::flat(7, c.base.data(), count, c.width);
  ASSERT_TRUE(decoder.decode(frame.data(), frame.size(), count, &decoded, &base).is_ok()) << label;
  EXPECT_EQ(decoded.header.changed, stats.changed);

  std::vector<uint8_t> dst = c.base;
  ApplyOutcome outcome;
  const Status s = decoder.apply(frame.data(), frame.size(), test::flat(7, dst.data(), count, c.width), 3, &outcome);
  ASSERT_TRUE(s.is_ok()) << label << ": " << s.to_string();
  EXPECT_EQ(outcome, count == 0 || c.base == c.target ? ApplyOutcome::already_applied : ApplyOutcome::applied);
  EXPECT_EQ(hash64(dst.data(), dst.size()), hash64(c.target.data(), c.target.size())) << label;
  EXPECT_TRUE(dst == c.target) << label;
}

using Param = std::tuple<unsigned, PosCoding, ValueMode, ValuePacking>;

std::string param_name(const Param& p) {
  std::string name = "w" + std::to_string(std::get<0>(p)) + "_" + pos_coding_name(std::get<1>(p)) + "_" +
                     value_mode_name(std::get<2>(p)) + "_" + value_packing_name(std::get<3>(p));
  for (char& ch : name) if (ch == '-') ch = '_';
  return name;
}

class RoundTrip : public ::testing::TestWithParam<Param> {};

TEST_P(RoundTrip, SparseDenseEmptyAndSingleElementRangesAreBitExact) {
  const auto [width, pos, mode, packing] = GetParam();
  EncodeOptions options;
  options.pos_coding = pos;
  options.value_mode = mode;
  options.value_packing = packing;
  options.sign_magnitude = mode != ValueMode::delta_tc;
  if (packing == ValuePacking::contexts) options.context_shift = static_cast<uint8_t>(width == 1 ? 3 : 8 * width - 9);
  const double fractions[] = {0.0, 0.01, 0.3, 1.0};
  for (uint64_t count : {0ull, 1ull, 7ull, 64ull, 1000ull, 65537ull}) {
    for (double fraction : fractions) {
      for (bool wild : {false, true}) {
        Case c;
        c.width = width;
        c.base = test::random_bytes(count * width, count * 31 + width);
        c.target = test::perturb(c.base, width, fraction, count + 17, wild);
        const uint64_t changed = [&] {
          uint64_t n = 0;
          for (uint64_t i = 0; i < count; ++i) n += std::memcmp(&c.base[i * width], &c.target[i * width], width) != 0;
          return n;
        }();
        if (pos == PosCoding::all && changed != count) continue;  // 'all' is only valid then
        expect_exact(c, options, "count " + std::to_string(count) + " fraction " + std::to_string(fraction));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllCodings, RoundTrip,
    ::testing::Combine(::testing::Values(1u, 2u, 4u, 8u),
                       ::testing::Values(PosCoding::all, PosCoding::bitmap, PosCoding::gaps_varint,
                                         PosCoding::gaps_token),
                       ::testing::Values(ValueMode::xor_mask, ValueMode::overwrite, ValueMode::delta_sm,
                                         ValueMode::delta_tc),
                       ::testing::Values(ValuePacking::planes, ValuePacking::tokens, ValuePacking::words)),
    [](const ::testing::TestParamInfo<Param>& info) { return param_name(info.param); });

// Position coding gaps-joint comes only with value packing joint.
INSTANTIATE_TEST_SUITE_P(
    JointCoding, RoundTrip,
    ::testing::Combine(::testing::Values(1u, 2u, 4u, 8u), ::testing::Values(PosCoding::gaps_joint),
                       ::testing::Values(ValueMode::xor_mask, ValueMode::overwrite, ValueMode::delta_sm,
                                         ValueMode::delta_tc),
                       ::testing::Values(ValuePacking::joint)),
    [](const ::testing::TestParamInfo<Param>& info) { return param_name(info.param); });

// Value packing contexts takes the ordered deltas of any position coding but gaps-joint.
INSTANTIATE_TEST_SUITE_P(
    ContextCoding, RoundTrip,
    ::testing::Combine(::testing::Values(1u, 2u, 4u, 8u),
                       ::testing::Values(PosCoding::all, PosCoding::bitmap, PosCoding::gaps_varint,
                                         PosCoding::gaps_token),
                       ::testing::Values(ValueMode::delta_sm, ValueMode::delta_tc),
                       ::testing::Values(ValuePacking::contexts)),
    [](const ::testing::TestParamInfo<Param>& info) { return param_name(info.param); });

template <typename T>
std::vector<uint8_t> bytes_of(const std::vector<T>& values) {
  std::vector<uint8_t> out(values.size() * sizeof(T));
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

TEST(RoundTripSpecial, NanPayloadsSignedZerosAndDenormalsSurviveEveryMode) {
  const float qnan = std::numeric_limits<float>::quiet_NaN();
  uint32_t payload_nan_bits = 0x7fc12345u, neg_nan_bits = 0xffa00001u;
  float payload_nan, neg_nan;
  std::memcpy(&payload_nan, &payload_nan_bits, 4);
  std::memcpy(&neg_nan, &neg_nan_bits, 4);
  const float denorm = std::numeric_limits<float>::denorm_min();
  const std::vector<float> base = {0.0f, -0.0f, qnan, payload_nan, denorm, -denorm, 1.0f,
                                   std::numeric_limits<float>::infinity(), 3.0f, neg_nan};
  const std::vector<float> target = {-0.0f, 0.0f, payload_nan, neg_nan, -denorm, 2 * denorm, 1.0f,
                                     -std::numeric_limits<float>::infinity(), qnan, 0.0f};
  Case c{bytes_of(base), bytes_of(target), 4};
  for (ValueMode mode : {ValueMode::xor_mask, ValueMode::overwrite, ValueMode::delta_sm, ValueMode::delta_tc}) {
    EncodeOptions options;
    options.value_mode = mode;
    expect_exact(c, options, value_mode_name(mode));
  }
  EncodeOptions chosen;
  expect_exact(c, chosen, "chosen by size");
}

TEST(RoundTripSpecial, RangeBoundariesAndNonZeroFirstElement) {
  // A destination tensor of 1000 bf16 elements; the frame covers [600, 1000) and changes its
  // first and last element only; elements outside the range must stay untouched.
  const unsigned width = 2;
  std::vector<uint8_t> tensor = test::random_bytes(1000 * width, 5);
  std::vector<uint8_t> target = tensor;
  target[600 * width] ^= 1;
  target[999 * width + 1] ^= 0x80;
  FrameEncoder encoder;
  std::vector<uint8_t> frame;
  ASSERT_TRUE(encoder.encode_delta(test::flat(9, &tensor[600 * width], 400, width, 600),
                                   test::flat(9, &target[600 * width], 400, width, 600), {1, 2}, &frame).is_ok());
  FrameDecoder decoder;
  ApplyOutcome outcome;
  ASSERT_TRUE(decoder.apply(frame.data(), frame.size(), test::flat(9, tensor.data(), 1000, width), 1, &outcome).is_ok());
  EXPECT_EQ(tensor, target);
}

TEST(RoundTripSpecial, FullFramesApplyOverAnyDestination) {
  const unsigned width = 2;
  const std::vector<uint8_t> target = test::random_bytes(5000 * width, 6);
  FrameEncoder encoder;
  std::vector<uint8_t> frame;
  ASSERT_TRUE(encoder.encode_full(test::flat(1, target.data(), 5000, width), 8, &frame).is_ok());
  std::vector<uint8_t> garbage = test::random_bytes(5000 * width, 7);
  FrameDecoder decoder;
  ApplyOutcome outcome;
  ASSERT_TRUE(decoder.apply(frame.data(), frame.size(), test::flat(1, garbage.data(), 5000, width), 2, &outcome).is_ok());
  EXPECT_EQ(garbage, target);
  EXPECT_EQ(outcome, ApplyOutcome::applied);
}

TEST(RoundTripSpecial, SizeChoicePrefersOrderedDeltasForSmallFloatSteps) {
  Case c;
  c.width = 2;
  c.base = test::random_bytes(200000 * 2, 8);
  c.target = test::perturb(c.base, 2, 0.03, 9);
  FrameEncoder encoder;
  std::vector<uint8_t> frame;
  EncodeStats stats;
  ASSERT_TRUE(encoder.encode_delta(test::flat(0, c.base.data(), 200000, 2), test::flat(0, c.target.data(), 200000, 2),
                                   {0, 1}, &frame, &stats).is_ok());
  EXPECT_TRUE(stats.pos_coding == PosCoding::gaps_token || stats.pos_coding == PosCoding::gaps_joint);
  EXPECT_EQ(stats.value_mode, ValueMode::delta_sm);
  expect_exact(c, EncodeOptions{}, "chosen");
  EncodeOptions exhaustive;
  exhaustive.exhaustive = true;
  expect_exact(c, exhaustive, "exhaustive");
}

// Mostly steps of one ulp, as most of a bf16 training step's changes are, in a box long enough for
// the other changes (the escapes) to fill streams for the 32-state coder: the encoder takes
// gaps-joint, whose bytes stay within joint_slack of the separate tokens it would take by bytes alone.
TEST(RoundTripSpecial, OneUlpStepsTakeGapsJointWithinItsSlack) {
  constexpr uint64_t kCount = 1000000;
  Case c;
  c.width = 2;
  c.base = test::random_bytes(kCount * 2, 8);
  c.target = c.base;
  std::mt19937_64 rng(9);
  for (uint64_t i = 0; i < kCount; ++i) {
    if (rng() % 100 >= 3) continue;
    const uint64_t step = rng() % 10 < 7 ? 1 : 2 + rng() % 4;  // 30% escape: more than 8192 of them
    const uint64_t key = sm_key(load_word(c.base.data(), i, 2), 2) + ((rng() & 1) ? step : 0x10000 - step);
    store_word(c.target.data(), i, 2, sm_unkey(key & 0xffff, 2));
  }
  const Region b = test::flat(0, c.base.data(), kCount, 2), t = test::flat(0, c.target.data(), kCount, 2);
  std::vector<uint8_t> preferred, smallest;
  EncodeStats stats;
  ASSERT_TRUE(FrameEncoder().encode_delta(b, t, {0, 1}, &preferred, &stats).is_ok());
  EXPECT_EQ(stats.pos_coding, PosCoding::gaps_joint);
  EXPECT_EQ(stats.value_packing, ValuePacking::joint);
  EncodeOptions by_bytes;  // no preference: the smaller of gaps-joint and separate tokens
  by_bytes.joint_slack = 0;
  ASSERT_TRUE(FrameEncoder(by_bytes).encode_delta(b, t, {0, 1}, &smallest, &stats).is_ok());
  EXPECT_LE(preferred.size(), smallest.size() * (1 + EncodeOptions{}.joint_slack));
  expect_exact(c, EncodeOptions{}, "preferred");
  expect_exact(c, by_bytes, "by bytes");
  // A tenth of the box has too few escapes for the 32-state coder: separate tokens encode faster.
  const Region short_base = test::flat(0, c.base.data(), kCount / 10, 2);
  const Region short_target = test::flat(0, c.target.data(), kCount / 10, 2);
  ASSERT_TRUE(FrameEncoder().encode_delta(short_base, short_target, {0, 1}, &preferred, &stats).is_ok());
  EXPECT_EQ(stats.pos_coding, PosCoding::gaps_token);
}

TEST(RoundTripSpecial, GapsJointAndJointPackingAreForcedOnlyTogether) {
  const std::vector<uint8_t> base = test::random_bytes(3000 * 2, 5);
  const std::vector<uint8_t> target = test::perturb(base, 2, 0.05, 6);
  const Region b = test::flat(0, base.data(), 3000, 2), t = test::flat(0, target.data(), 3000, 2);
  std::vector<uint8_t> frame;
  EncodeOptions mixed;
  mixed.pos_coding = PosCoding::gaps_joint;
  mixed.value_packing = ValuePacking::tokens;
  Status status = FrameEncoder(mixed).encode_delta(b, t, {0, 1}, &frame);
  EXPECT_EQ(status.code(), Code::invalid_argument);
  EXPECT_NE(status.message().find("gaps-joint"), std::string::npos) << status.to_string();
  mixed.pos_coding = PosCoding::bitmap;
  mixed.value_packing = ValuePacking::joint;
  EXPECT_EQ(FrameEncoder(mixed).encode_delta(b, t, {0, 1}, &frame).code(), Code::invalid_argument);

  // A reader refuses a header that pairs them otherwise, even behind a valid header checksum.
  EncodeOptions joint;
  joint.pos_coding = PosCoding::gaps_joint;
  ASSERT_TRUE(FrameEncoder(joint).encode_delta(b, t, {0, 1}, &frame).is_ok());
  FrameHeader header;
  ASSERT_TRUE(parse_frame_header(frame.data(), frame.size(), &header).is_ok());
  EXPECT_EQ(header.value_packing, ValuePacking::joint);
  header.value_packing = ValuePacking::tokens;
  write_frame_header(header, frame.data());
  FrameDecoder decoder;
  DecodedFrame decoded;
  status = decoder.decode(frame.data(), frame.size(), 3000, &decoded);
  EXPECT_EQ(status.code(), Code::corrupt);
  EXPECT_NE(status.message().find("gaps-joint"), std::string::npos) << status.to_string();
}

}  // namespace
}  // namespace dcr

namespace dcr {
namespace {

TEST(RoundTripSpecial, OneEncoderAndDecoderServeFramesOfEveryShapeInTurn) {
  // Scratch buffers are reused across frames; no choice may leak from one frame into the next.
  FrameEncoder encoder;
  FrameDecoder decoder;
  const struct { unsigned width; uint64_t count; double fraction; } shapes[] = {
      {2, 100000, 0.03}, {8, 1, 1.0}, {4, 5000, 0.5}, {2, 3, 1.0}, {1, 70000, 0.001}, {8, 2, 0.0}, {2, 100000, 0.9}};
  for (const auto& shape : shapes) {
    const std::vector<uint8_t> base = test::random_bytes(shape.count * shape.width, shape.count);
    const std::vector<uint8_t> target = test::perturb(base, shape.width, shape.fraction, 3);
    std::vector<uint8_t> frame, dst = base;
    ASSERT_TRUE(encoder.encode_delta(test::flat(0, base.data(), shape.count, shape.width),
                                     test::flat(0, target.data(), shape.count, shape.width), {0, 1}, &frame).is_ok());
    ApplyOutcome outcome;
    const Status s = decoder.apply(frame.data(), frame.size(), test::flat(0, dst.data(), shape.count, shape.width), 0,
                                   &outcome);
    ASSERT_TRUE(s.is_ok()) << shape.count << ": " << s.to_string();
    EXPECT_EQ(dst, target);
  }
}

}  // namespace
}  // namespace dcr

namespace dcr {
namespace {

TEST(RoundTripSpecial, BoxesReadFromAndAppliedIntoStridedBuffersAreExact) {
  // Canonical tensor 5 is [64, 100] bf16. The frame covers rows [3, 40) x cols [10, 60): a column
  // slice, as a row-parallel serving shard holds it. The trainer reads it from its canonical copy
  // (pitch 100); the receiver keeps the same box inside a fused buffer with pitch 77.
  const unsigned w = 2;
  const Box tensor{5, 0, 64, 0, 100}, frame_box{5, 3, 37, 10, 50};
  const std::vector<uint8_t> base = test::random_bytes(64 * 100 * w, 21);
  const std::vector<uint8_t> target = test::perturb(base, w, 0.05, 22);
  Region base_box, target_box;
  ASSERT_TRUE(sub_region(dense_region(tensor, w, base.data()), frame_box, &base_box).is_ok());
  ASSERT_TRUE(sub_region(dense_region(tensor, w, target.data()), frame_box, &target_box).is_ok());
  FrameEncoder encoder;
  std::vector<uint8_t> frame;
  ASSERT_TRUE(encoder.encode_delta(base_box, target_box, {1, 2}, &frame).is_ok());

  // The receiver's buffer: 40 rows of pitch 77, the box's rows start at buffer row 2, column 20.
  const uint64_t pitch = 77;
  std::vector<uint8_t> buffer = test::random_bytes(40 * pitch * w, 23);
  for (uint64_t r = 0; r < frame_box.rows; ++r) {
    std::memcpy(&buffer[((r + 2) * pitch + 20) * w], &base[((r + 3) * 100 + 10) * w], frame_box.cols * w);
  }
  const std::vector<uint8_t> untouched = buffer;
  const Region dst{frame_box, w, &buffer[(2 * pitch + 20) * w], pitch};
  FrameDecoder decoder;
  ApplyOutcome outcome;
  const Status s = decoder.apply(frame.data(), frame.size(), dst, 1, &outcome);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_EQ(outcome, ApplyOutcome::applied);
  for (uint64_t i = 0; i < 40 * pitch; ++i) {
    const uint64_t r = i / pitch, c = i % pitch;
    const bool inside = r >= 2 && r < 2 + frame_box.rows && c >= 20 && c < 20 + frame_box.cols;
    const uint8_t* expect = inside ? &target[((r - 2 + 3) * 100 + (c - 20 + 10)) * w] : &untouched[i * w];
    ASSERT_EQ(std::memcmp(&buffer[i * w], expect, w), 0) << "row " << r << " col " << c;
  }
  ASSERT_TRUE(decoder.apply(frame.data(), frame.size(), dst, 1, &outcome).is_ok());
  EXPECT_EQ(outcome, ApplyOutcome::already_applied);
  // A destination that holds only part of the box is refused.
  Region partial = dst;
  partial.box.cols -= 1;
  EXPECT_EQ(decoder.apply(frame.data(), frame.size(), partial, 1, &outcome).code(), Code::invalid_argument);
}

}  // namespace
}  // namespace dcr

namespace dcr {
namespace {

TEST(RoundTripSpecial, AForcedPackingAloneChoosesAModeThatPacksThatWay) {
  const std::vector<uint8_t> base = test::random_bytes(5000 * 2, 31);
  const std::vector<uint8_t> target = test::perturb(base, 2, 0.1, 32);
  for (ValuePacking packing : {ValuePacking::planes, ValuePacking::tokens, ValuePacking::words, ValuePacking::joint}) {
    EncodeOptions options;
    options.value_packing = packing;
    FrameEncoder encoder(options);
    std::vector<uint8_t> frame, dst = base;
    EncodeStats stats;
    ASSERT_TRUE(encoder.encode_delta(test::flat(0, base.data(), 5000, 2), test::flat(0, target.data(), 5000, 2), {0, 1},
                                     &frame, &stats).is_ok());
    EXPECT_EQ(stats.value_packing, packing);
    FrameDecoder decoder;
    ApplyOutcome outcome;
    ASSERT_TRUE(decoder.apply(frame.data(), frame.size(), test::flat(0, dst.data(), 5000, 2), 0, &outcome).is_ok());
    EXPECT_EQ(dst, target);
  }
}

}  // namespace
}  // namespace dcr

namespace dcr {
namespace {

// bf16 weights of many magnitudes after one AdamW-like step: each moves by about the same absolute
// amount, so small ones move many ulps and large ones one, and the ulp delta follows the exponent.
void magnitude_step(uint64_t count, std::vector<uint16_t>* base, std::vector<uint16_t>* target) {
  std::mt19937_64 rng(5);
  std::normal_distribution<float> normal;
  std::uniform_real_distribution<float> unit;
  base->resize(count);
  target->resize(count);
  for (uint64_t i = 0; i < count; ++i) {
    const float w = normal(rng) * 0.02f;
    const float step = unit(rng) < 0.05f ? (unit(rng) < 0.5f ? -1e-4f : 1e-4f) : 0.0f;
    (*base)[i] = f32_to_bf16_rne(w);
    (*target)[i] = f32_to_bf16_rne(bf16_to_f32((*base)[i]) + step);
  }
}

TEST(RoundTripSpecial, ExponentContextsWinOnMagnitudeDependentSteps) {
  const uint64_t count = 200000;
  std::vector<uint16_t> base, target;
  magnitude_step(count, &base, &target);
  const Region b = test::flat(0, base.data(), count, 2), t = test::flat(0, target.data(), count, 2);
  EncodeOptions plain, by_exponent;
  set_dtype(DType::bf16, &plain);
  set_dtype(DType::bf16, &by_exponent);
  by_exponent.contexts = true;
  std::vector<uint8_t> without, with;
  EncodeStats stats;
  ASSERT_TRUE(FrameEncoder(plain).encode_delta(b, t, {0, 1}, &without).is_ok());
  ASSERT_TRUE(FrameEncoder(by_exponent).encode_delta(b, t, {0, 1}, &with, &stats).is_ok());
  EXPECT_EQ(stats.value_packing, ValuePacking::contexts);
  EXPECT_LT(with.size(), without.size());
  std::vector<uint16_t> dst = base;
  FrameDecoder decoder;
  ApplyOutcome outcome;
  ASSERT_TRUE(decoder.apply(with.data(), with.size(), test::flat(0, dst.data(), count, 2), 0, &outcome).is_ok());
  EXPECT_EQ(dst, target);
}

// The context rule (the refit's --contexts auto) is asked before the tables are chosen, with the
// frame's changes and its bytes without contexts; a no keeps the faster coding, a yes gives the
// frame --contexts true gives. Both apply bit for bit.
TEST(RoundTripSpecial, ContextRuleDecidesEachFrame) {
  const uint64_t count = 200000;
  std::vector<uint16_t> base, target;
  magnitude_step(count, &base, &target);
  const Region b = test::flat(0, base.data(), count, 2), t = test::flat(0, target.data(), count, 2);
  EncodeOptions forced;
  set_dtype(DType::bf16, &forced);
  forced.contexts = true;
  std::vector<uint8_t> reference;
  ASSERT_TRUE(FrameEncoder(forced).encode_delta(b, t, {0, 1}, &reference).is_ok());
  for (bool answer : {false, true}) {
    EncodeOptions ruled = forced;
    ContextQuestion asked;
    ruled.context_rule = [&](const ContextQuestion& q) { return asked = q, answer; };
    std::vector<uint8_t> frame;
    EncodeStats stats;
    ASSERT_TRUE(FrameEncoder(ruled).encode_delta(b, t, {0, 1}, &frame, &stats).is_ok());
    EXPECT_EQ(asked.changed, stats.changed);
    EXPECT_GT(asked.plain_bytes, static_cast<double>(reference.size()));
    EXPECT_GT(asked.encode_s, 0);
    EXPECT_EQ(stats.contexts_declined, !answer);
    EXPECT_EQ(stats.value_packing == ValuePacking::contexts, answer);
    if (answer) {
      EXPECT_EQ(frame, reference);
    }
    std::vector<uint16_t> dst = base;
    FrameDecoder decoder;
    ApplyOutcome outcome;
    ASSERT_TRUE(decoder.apply(frame.data(), frame.size(), test::flat(0, dst.data(), count, 2), 0, &outcome).is_ok());
    EXPECT_EQ(dst, target) << "rule answered " << answer;
  }
}

// A receiver's decoder goes from frame to frame: a gaps-joint frame after a contexts frame (a
// refit's --contexts auto mixes them) decodes and applies as it does on a fresh decoder.
TEST(RoundTripSpecial, JointFrameAfterAContextsFrameOnOneDecoder) {
  const uint64_t count = 200000;
  std::vector<uint16_t> base, target;
  magnitude_step(count, &base, &target);
  const Region b = test::flat(0, base.data(), count, 2), t = test::flat(0, target.data(), count, 2);
  EncodeOptions with_contexts, joint;
  with_contexts.value_packing = ValuePacking::contexts;
  with_contexts.context_shift = 7;
  joint.pos_coding = PosCoding::gaps_joint;
  std::vector<uint8_t> first, second;
  ASSERT_TRUE(FrameEncoder(with_contexts).encode_delta(b, t, {0, 1}, &first).is_ok());
  ASSERT_TRUE(FrameEncoder(joint).encode_delta(b, t, {0, 1}, &second).is_ok());
  FrameDecoder decoder;
  DecodedFrame decoded;
  ASSERT_TRUE(decoder.decode(first.data(), first.size(), count, &decoded, &b).is_ok());
  ASSERT_TRUE(decoder.decode(second.data(), second.size(), count, &decoded, &b).is_ok());
  EXPECT_EQ(decoded.header.pos_coding, PosCoding::gaps_joint);
  for (const std::vector<uint8_t>* frame : {&first, &second, &first, &second}) {
    std::vector<uint16_t> dst = base;
    ApplyOutcome outcome;
    ASSERT_TRUE(decoder.apply(frame->data(), frame->size(), test::flat(0, dst.data(), count, 2), 0, &outcome).is_ok());
    EXPECT_EQ(dst, target);
  }
}

TEST(RoundTripSpecial, ContextFramesDecodeOnlyAgainstTheirBase) {
  const uint64_t count = 5000;
  std::vector<uint16_t> base, target;
  magnitude_step(count, &base, &target);
  EncodeOptions options;
  options.value_packing = ValuePacking::contexts;
  options.context_shift = 7;
  std::vector<uint8_t> frame;
  ASSERT_TRUE(FrameEncoder(options)
                  .encode_delta(test::flat(0, base.data(), count, 2), test::flat(0, target.data(), count, 2), {0, 1},
                                &frame)
                  .is_ok());
  FrameDecoder decoder;
  DecodedFrame decoded;
  const Status alone = decoder.decode(frame.data(), frame.size(), count, &decoded);
  EXPECT_EQ(alone.code(), Code::invalid_argument);
  EXPECT_NE(alone.message().find("base bits"), std::string::npos) << alone.to_string();
  const Region b = test::flat(0, base.data(), count, 2);
  ASSERT_TRUE(decoder.decode(frame.data(), frame.size(), count, &decoded, &b).is_ok());
  // Without a shift the encoder cannot name the contexts.
  options.context_shift.reset();
  EXPECT_EQ(FrameEncoder(options)
                .encode_delta(test::flat(0, base.data(), count, 2), test::flat(0, target.data(), count, 2), {0, 1},
                              &frame)
                .code(),
            Code::invalid_argument);
}

}  // namespace
}  // namespace dcr
