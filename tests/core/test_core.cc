#include <vector>
#include <gtest/gtest.h>

#include "dcr/core/dtype.h"
#include "dcr/core/hash.h"
#include "dcr/core/tensor.h"

namespace dcr {
namespace {

TEST(Hash, IncrementalEqualsOneShot) {
  std::vector<uint8_t> data(10000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7);
  Hasher h;
  h.update(data.data(), 3);
  h.update(data.data() + 3, 5000);
  h.update(data.data() + 5003, data.size() - 5003);
  EXPECT_EQ(h.digest(), hash64(data.data(), data.size()));
  data[9999] ^= 1;
  EXPECT_NE(h.digest(), hash64(data.data(), data.size()));
}

TEST(DType, ParsesNamesAndRejectsUnknownOnes) {
  DType d;
  EXPECT_TRUE(parse_dtype("f8_e4m3", &d).is_ok());
  EXPECT_EQ(d, DType::f8_e4m3);
  EXPECT_EQ(dtype_width(DType::i64), 8u);
  const Status s = parse_dtype("bfloat17", &d);
  EXPECT_EQ(s.code(), Code::invalid_argument);
  EXPECT_NE(s.message().find("bfloat17"), std::string::npos);
}

TEST(Manifest, HashBindsNamesShapesAndDtypes) {
  Manifest a{{{"w", DType::bf16, {4, 8}}, {"b", DType::f32, {8}}}};
  Manifest b = a;
  EXPECT_EQ(a.hash(), b.hash());
  b.tensors[0].shape = {8, 4};
  EXPECT_NE(a.hash(), b.hash());
  b = a;
  b.tensors[1].dtype = DType::i32;
  EXPECT_NE(a.hash(), b.hash());
  EXPECT_EQ(a.total_bytes(), 4u * 8 * 2 + 8 * 4);
  Manifest dup{{{"w", DType::bf16, {1}}, {"w", DType::bf16, {1}}}};
  EXPECT_EQ(dup.validate().code(), Code::invalid_argument);
}

}  // namespace
}  // namespace dcr
