// Shared pieces of the checkpoint tests: a temporary directory per test, file helpers, a safetensors
// file built byte by byte from the published format, and a manifest of every dtype.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "dcr/core/tensor.h"
#include "dcr/layout/shard.h"

namespace dcr::test {

namespace fs = std::filesystem;

class CkptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dcr_ckpt_" + std::to_string(getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

inline void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// `text` with the first occurrence of `from` replaced by `to` (fails the test when `from` is absent).
inline std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "'" << from << "' is not in the text";
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// A safetensors file as the format defines it: 8-byte little-endian header length, the header
// text, then the data buffer.
inline std::vector<uint8_t> safetensors_bytes(const std::string& header, const std::vector<uint8_t>& data,
                                              uint64_t header_length) {
  std::vector<uint8_t> file;
  for (int i = 0; i < 8; ++i) file.push_back(static_cast<uint8_t>(header_length >> (8 * i)));
  file.insert(file.end(), header.begin(), header.end());
  file.insert(file.end(), data.begin(), data.end());
  return file;
}
inline std::vector<uint8_t> safetensors_bytes(const std::string& header, const std::vector<uint8_t>& data) {
  return safetensors_bytes(header, data, header.size());
}

// The handmade file: JSON keys deliberately not in data order, odd (unaligned) offsets, header
// padded with spaces. Tensors in data order, with the little-endian bytes of their values:
struct HandmadeTensor {
  const char* name;
  DType dtype;
  std::vector<int64_t> shape;
  bool is_buffer;
  std::vector<uint8_t> bytes;
};

inline const std::vector<HandmadeTensor>& handmade_tensors() {
  static const std::vector<HandmadeTensor> tensors = {
      // BF16 1.0 (0x3f80), -2.0 (0xc000), NaN with payload (0x7fc1), -0.0 (0x8000)
      {"embed.weight", DType::bf16, {2, 2}, false, {0x80, 0x3f, 0x00, 0xc0, 0xc1, 0x7f, 0x00, 0x80}},
      // F16 1.0 (0x3c00), -0.0 (0x8000), signalling NaN with payload (0x7d01)
      {"h.0.attn.scale", DType::f16, {3}, false, {0x00, 0x3c, 0x00, 0x80, 0x01, 0x7d}},
      // F32 signalling NaN with payload (0x7fa00001), -0.0 (0x80000000)
      {"h.0.mlp.w", DType::f32, {1, 2}, false, {0x01, 0x00, 0xa0, 0x7f, 0x00, 0x00, 0x00, 0x80}},
      // F64 -0.0 (0x8000000000000000), 1.5 (0x3ff8000000000000)
      {"rotary.inv_freq", DType::f64, {2}, true,
       {0, 0, 0, 0, 0, 0, 0, 0x80, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f}},
      // I64 scalar -2
      {"optimizer.step_counter", DType::i64, {}, true, {0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
      // I32 0x12345678, -1
      {"ids", DType::i32, {2}, false, {0x78, 0x56, 0x34, 0x12, 0xff, 0xff, 0xff, 0xff}},
      {"mask", DType::u8, {3}, false, {0x01, 0x00, 0xff}},
      // F8_E4M3 NaN (0x7f), -0 (0x80)
      {"q.e4m3", DType::f8_e4m3, {2}, false, {0x7f, 0x80}},
      // F8_E5M2 NaN (0x7e), 1.0 (0x3c)
      {"q.e5m2", DType::f8_e5m2, {2, 1}, false, {0x7e, 0x3c}},
  };
  return tensors;
}

inline std::string handmade_header() {
  return R"({"__metadata__":{"format":"pt","note":"made by hand"},)"
         R"("q.e5m2":{"dtype":"F8_E5M2","shape":[2,1],"data_offsets":[59,61]},)"
         R"("mask":{"dtype":"U8","shape":[3],"data_offsets":[54,57]},)"
         R"("embed.weight":{"dtype":"BF16","shape":[2,2],"data_offsets":[0,8]},)"
         R"("rotary.inv_freq":{"shape":[2],"dtype":"F64","data_offsets":[22,38]},)"
         R"("h.0.mlp.w":{"dtype":"F32","shape":[1,2],"data_offsets":[14,22]},)"
         R"("optimizer.step_counter":{"dtype":"I64","shape":[],"data_offsets":[38,46]},)"
         R"("h.0.attn.scale":{"dtype":"F16","shape":[3],"data_offsets":[8,14]},)"
         R"("q.e4m3":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[57,59]},)"
         R"("ids":{"dtype":"I32","shape":[2],"data_offsets":[46,54]}}     )";
}

inline std::vector<uint8_t> handmade_data() {
  std::vector<uint8_t> data;
  for (const HandmadeTensor& t : handmade_tensors()) data.insert(data.end(), t.bytes.begin(), t.bytes.end());
  return data;
}

// Every dtype, special values first, a '/' in a name, a scalar and two buffers (named so that the
// safetensors buffer rule agrees).
inline void every_dtype(Manifest* manifest, CanonicalBits* bits) {
  manifest->tensors = {
      {"model/embed.weight", DType::bf16, {3, 5}, false}, {"h.0.f16", DType::f16, {4}, false},
      {"h.0.f32", DType::f32, {2, 3}, false},             {"rotary.inv_freq", DType::f64, {4}, true},
      {"q.e4m3", DType::f8_e4m3, {7}, false},             {"q.e5m2", DType::f8_e5m2, {2, 2, 2}, false},
      {"ids", DType::i32, {3}, false},                    {"optimizer.step_counter", DType::i64, {}, true},
      {"mask", DType::u8, {5}, false},
  };
  const std::vector<std::vector<uint8_t>> special = {
      {0xc1, 0x7f, 0x00, 0x80},                          // bf16 NaN payload, -0
      {0x01, 0x7d, 0x00, 0x80},                          // f16 signalling NaN, -0
      {0x01, 0x00, 0xa0, 0x7f, 0x00, 0x00, 0x00, 0x80},  // f32 signalling NaN, -0
      {1, 0, 0, 0, 0, 0, 0xf8, 0x7f, 0, 0, 0, 0, 0, 0, 0, 0x80},  // f64 NaN payload, -0
      {0x7f, 0x80}, {0x7e, 0x80}, {}, {}, {}};
  bits->clear();
  uint64_t state = 0x9e3779b97f4a7c15ull;
  for (size_t i = 0; i < manifest->tensors.size(); ++i) {
    std::vector<uint8_t> b(manifest->tensors[i].nbytes());
    for (uint8_t& byte : b) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      byte = static_cast<uint8_t>(state >> 56);
    }
    std::copy(special[i].begin(), special[i].end(), b.begin());
    bits->push_back(std::move(b));
  }
}

inline void expect_same_tensors(const Manifest& m, const CanonicalBits& b, const Manifest& expected_m,
                                const CanonicalBits& expected_b) {
  ASSERT_EQ(m.tensors.size(), expected_m.tensors.size());
  ASSERT_EQ(b.size(), expected_b.size());
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    const TensorDesc& t = m.tensors[i];
    const TensorDesc& e = expected_m.tensors[i];
    EXPECT_EQ(t.name, e.name);
    EXPECT_EQ(t.dtype, e.dtype) << t.name;
    EXPECT_EQ(t.shape, e.shape) << t.name;
    EXPECT_EQ(t.is_buffer, e.is_buffer) << t.name;
    EXPECT_EQ(b[i], expected_b[i]) << "bytes of " << t.name;
  }
  EXPECT_EQ(m.hash(), expected_m.hash());
}

}  // namespace dcr::test
