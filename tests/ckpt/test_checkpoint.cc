#include <gtest/gtest.h>

#include "ckpt/ckpt_support.h"
#include "dcr/ckpt/checkpoint.h"
#include "dcr/ckpt/hdf5_checkpoint.h"
#include "dcr/ckpt/safetensors.h"

namespace dcr::test {
namespace {

using Checkpoint = CkptTest;

TEST_F(Checkpoint, ChoosesTheFormatByExtension) {
  Manifest m;
  CanonicalBits b;
  every_dtype(&m, &b);
  for (const char* name : {"a.safetensors", "a.h5", "a.hdf5"}) {
    ASSERT_TRUE(save_checkpoint(path(name), m, b, 3).is_ok()) << name;
    Manifest m2;
    CanonicalBits b2;
    const Status s = load_checkpoint(path(name), &m2, &b2);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    expect_same_tensors(m2, b2, m, b);
  }
  // HDF5's signature follows dcr's 512-byte seal (an HDF5 user block).
  const std::vector<uint8_t> seal = {'D', 'C', 'R', 'S'}, hdf5_signature = {0x89, 'H', 'D', 'F'};
  const std::vector<uint8_t> bytes = read_bytes(path("a.h5"));
  ASSERT_GT(bytes.size(), 516u);
  EXPECT_EQ(std::vector<uint8_t>(bytes.begin(), bytes.begin() + 4), seal);
  EXPECT_EQ(std::vector<uint8_t>(bytes.begin() + 512, bytes.begin() + 516), hdf5_signature);
  uint64_t version = 0;
  ASSERT_TRUE(read_hdf5_checkpoint(path("a.hdf5"), &m, &b, &version).is_ok());
  EXPECT_EQ(version, 3u);
}

TEST_F(Checkpoint, UnknownExtensionAndMissingFileAreClear) {
  Manifest m;
  CanonicalBits b;
  Status s = load_checkpoint(path("model.bin"), &m, &b);
  EXPECT_EQ(s.code(), Code::invalid_argument) << s.to_string();
  EXPECT_NE(s.message().find("'.bin'"), std::string::npos) << s.message();
  for (const char* name : {"absent.safetensors", "absent.h5"}) {
    s = load_checkpoint(path(name), &m, &b);
    EXPECT_EQ(s.code(), Code::not_found) << s.to_string();
    EXPECT_NE(s.message().find(path(name)), std::string::npos) << s.message();
  }
}

TEST_F(Checkpoint, ConvertSafetensorsToHdf5AndBackIsBitExact) {
  write_bytes(path("in.safetensors"), safetensors_bytes(handmade_header(), handmade_data()));
  Status s = convert_checkpoint(path("in.safetensors"), path("mid.h5"), 4);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  s = convert_checkpoint(path("mid.h5"), path("out.safetensors"), 0);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  Manifest in_m, out_m;
  CanonicalBits in_b, out_b;
  ASSERT_TRUE(read_safetensors(path("in.safetensors"), &in_m, &in_b).is_ok());
  ASSERT_TRUE(read_safetensors(path("out.safetensors"), &out_m, &out_b).is_ok());
  expect_same_tensors(out_m, out_b, in_m, in_b);
  for (size_t i = 0; i < out_b.size(); ++i) EXPECT_EQ(out_b[i], handmade_tensors()[i].bytes) << out_m.tensors[i].name;
}

TEST_F(Checkpoint, ConvertOfADcrWrittenFileReproducesItsBytes) {
  Manifest m;
  CanonicalBits b;
  every_dtype(&m, &b);
  ASSERT_TRUE(write_safetensors(path("a.safetensors"), m, b).is_ok());
  ASSERT_TRUE(convert_checkpoint(path("a.safetensors"), path("a.h5"), 1).is_ok());
  ASSERT_TRUE(convert_checkpoint(path("a.h5"), path("b.safetensors"), 0).is_ok());
  EXPECT_EQ(read_bytes(path("a.safetensors")), read_bytes(path("b.safetensors")));
}

TEST_F(Checkpoint, CheckRefusesBitsThatDoNotFit) {
  Manifest m;
  CanonicalBits b;
  every_dtype(&m, &b);
  b.pop_back();
  EXPECT_EQ(check_checkpoint(m, b).code(), Code::invalid_argument);
  every_dtype(&m, &b);
  b[0].push_back(0);
  const Status s = check_checkpoint(m, b);
  EXPECT_EQ(s.code(), Code::invalid_argument);
  EXPECT_NE(s.message().find("'model/embed.weight'"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace dcr::test
