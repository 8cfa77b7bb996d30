// Block FP8 (include/dcr/layout/fp8_block.h): the E4M3 conversion on every code, its ties,
// subnormals and saturation, and the block quantizer against an independent numpy quantizer.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "dcr/core/dtype.h"
#include "dcr/layout/fp8_block.h"

namespace dcr {
namespace {

bool is_nan_code(int code) { return (code & 0x7F) == 0x7F; }

TEST(E4m3, EveryFiniteCodeRoundTripsAndValuesAscend) {
  for (int code = 0; code < 256; ++code) {
    if (is_nan_code(code)) {
      EXPECT_TRUE(std::isnan(e4m3_to_f32(static_cast<uint8_t>(code))));
      continue;
    }
    EXPECT_EQ(f32_to_e4m3_sat(e4m3_to_f32(static_cast<uint8_t>(code))), code) << code;
    const int magnitude = code & 0x7F;
    if (magnitude > 0) {  // each magnitude code is above the one before it
      EXPECT_LT(std::fabs(e4m3_to_f32(static_cast<uint8_t>(magnitude - 1))), std::fabs(e4m3_to_f32(static_cast<uint8_t>(code))));
    }
  }
  EXPECT_EQ(e4m3_to_f32(0x7E), 448.0f);
  EXPECT_EQ(e4m3_to_f32(0x01), std::ldexp(1.0f, -9));  // the smallest subnormal
  EXPECT_EQ(e4m3_to_f32(0x08), std::ldexp(1.0f, -6));  // the smallest normal
}

TEST(E4m3, MidpointsGoToTheEvenCodeAndTheRestToTheNearest) {
  for (int code = 0; code < 0x7E; ++code) {
    const float lo = e4m3_to_f32(static_cast<uint8_t>(code)), hi = e4m3_to_f32(static_cast<uint8_t>(code + 1));
    const float mid = (lo + hi) / 2;  // exact: both are short binary fractions
    EXPECT_EQ(f32_to_e4m3_sat(mid), code % 2 == 0 ? code : code + 1) << "between codes " << code << " and " << code + 1;
    EXPECT_EQ(f32_to_e4m3_sat(std::nextafter(mid, lo)), code);
    EXPECT_EQ(f32_to_e4m3_sat(std::nextafter(mid, hi)), code + 1);
    EXPECT_EQ(f32_to_e4m3_sat(-std::nextafter(mid, hi)), 0x80 | (code + 1));
  }
}

TEST(E4m3, SaturatesAt448KeepsSignedZerosAndNaN) {
  for (float big : {448.0f, 449.0f, 464.0f, 480.0f, 1e30f, INFINITY}) {
    EXPECT_EQ(f32_to_e4m3_sat(big), 0x7E) << big;
    EXPECT_EQ(f32_to_e4m3_sat(-big), 0xFE) << big;
  }
  EXPECT_EQ(f32_to_e4m3_sat(0.0f), 0x00);
  EXPECT_EQ(f32_to_e4m3_sat(-0.0f), 0x80);
  EXPECT_EQ(f32_to_e4m3_sat(std::ldexp(1.0f, -11)), 0x00);  // a quarter of the smallest subnormal
  EXPECT_EQ(f32_to_e4m3_sat(std::ldexp(1.0f, -10)), 0x00);  // half of it: the tie goes to even (zero)
  EXPECT_EQ(f32_to_e4m3_sat(std::nanf("")), 0x7F);
  EXPECT_EQ(f32_to_e4m3_sat(-std::nanf("")), 0xFF);
}

TEST(Fp8Block, ScaleIsAmaxOver448AndOneForAZeroBlock) {
  EXPECT_EQ(fp8_block_scale(448.0f), 1.0f);
  EXPECT_EQ(fp8_block_scale(0.0f), 1.0f);
  EXPECT_EQ(fp8_block_scale(1.0f), 1.0f / 448.0f);
}

// A matrix with edge blocks (300 x 260: 3 x 3 blocks, the last ones partial), blocks of very
// different magnitudes, an all-zero block (with negative zeros), and a block where one element is
// far above the rest (its neighbours quantize to zero or subnormals).
std::vector<uint16_t> test_matrix(uint64_t rows, uint64_t cols) {
  std::mt19937 rng(34);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<uint16_t> w(rows * cols);
  for (uint64_t r = 0; r < rows; ++r) {
    for (uint64_t c = 0; c < cols; ++c) {
      const float magnitude = std::ldexp(1.0f, static_cast<int>((r / 128) * 3 + (c / 128)) * 4 - 20);
      w[r * cols + c] = f32_to_bf16_rne(normal(rng) * magnitude);
    }
  }
  for (uint64_t r = 128; r < 256; ++r) {
    for (uint64_t c = 0; c < 128; ++c) w[r * cols + c] = (r + c) % 2 ? 0x8000 : 0x0000;  // all-zero block
  }
  w[5 * cols + 200] = f32_to_bf16_rne(3e4f);  // one outlier in block (0, 1)
  return w;
}

TEST(Fp8Block, MatchesAnIndependentNumpyQuantizer) {
  const uint64_t rows = 300, cols = 260;
  const std::vector<uint16_t> w = test_matrix(rows, cols);
  std::vector<uint8_t> codes(rows * cols);
  std::vector<float> scales(3 * 3);
  ASSERT_TRUE(quantize_fp8_block(w.data(), rows, cols, codes.data(), scales.data()).is_ok());
  EXPECT_EQ(scales[3], 1.0f);  // the all-zero block
  EXPECT_EQ(codes[128 * cols + 1], 0x80);

  const std::string dir = std::filesystem::temp_directory_path() / ("dcr-fp8-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto write = [&dir](const char* name, const void* data, size_t bytes) {
    std::ofstream(dir + "/" + name, std::ios::binary).write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
  };
  write("weight.bf16", w.data(), w.size() * 2);
  write("dcr.e4m3", codes.data(), codes.size());
  write("dcr.scales", scales.data(), scales.size() * 4);
  const std::string command = "/usr/bin/python3 " DCR_SOURCE_DIR "/tests/layout/fp8_block_reference.py " + dir + " " +
                              std::to_string(rows) + " " + std::to_string(cols);
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  std::filesystem::remove_all(dir);
}

TEST(Fp8Block, ABlockWithANonFiniteValueIsRefusedNamingIt) {
  std::vector<uint16_t> w(130 * 4, f32_to_bf16_rne(1.0f));
  w[129 * 4 + 2] = 0x7F80;  // +inf, in the second block row
  std::vector<uint8_t> codes(w.size());
  std::vector<float> scales(2);
  const Status s = quantize_fp8_block(w.data(), 130, 4, codes.data(), scales.data());
  EXPECT_EQ(s.code(), Code::invalid_argument);
  EXPECT_NE(s.message().find("block at row 128, column 0 holds a non-finite value (element [129, 2])"),
            std::string::npos) << s.message();
}

}  // namespace
}  // namespace dcr
