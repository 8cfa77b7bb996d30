#include <gtest/gtest.h>

#include "ckpt/ckpt_support.h"
#include "dcr/ckpt/safetensors.h"

namespace dcr::test {
namespace {

class Safetensors : public CkptTest {
 protected:
  // Reads `bytes` as a safetensors file; returns the failure (the test fails if it loads).
  Status corrupt_read(const std::vector<uint8_t>& bytes) {
    write_bytes(file(), bytes);
    Manifest m;
    CanonicalBits b;
    const Status s = read_safetensors(file(), &m, &b);
    EXPECT_FALSE(s.is_ok()) << "a corrupt file loaded";
    EXPECT_NE(s.message().find(file()), std::string::npos) << "the error does not name the file: " << s.message();
    return s;
  }
  std::string file() const { return path("model.safetensors"); }
};

void expect_mentions(const Status& s, Code code, const std::vector<std::string>& words) {
  EXPECT_EQ(s.code(), code) << s.to_string();
  for (const std::string& w : words) EXPECT_NE(s.message().find(w), std::string::npos) << "'" << w << "' not in: " << s.message();
}

TEST_F(Safetensors, HandmadeFileLoadsBitExactlyInDataOrder) {
  write_bytes(file(), safetensors_bytes(handmade_header(), handmade_data()));
  Manifest m;
  CanonicalBits b;
  SafetensorsMetadata metadata;
  const Status s = read_safetensors(file(), &m, &b, &metadata);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  const std::vector<HandmadeTensor>& expected = handmade_tensors();
  ASSERT_EQ(m.tensors.size(), expected.size());
  ASSERT_EQ(b.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(m.tensors[i].name, expected[i].name);
    EXPECT_EQ(m.tensors[i].dtype, expected[i].dtype) << expected[i].name;
    EXPECT_EQ(m.tensors[i].shape, expected[i].shape) << expected[i].name;
    EXPECT_EQ(m.tensors[i].is_buffer, expected[i].is_buffer) << expected[i].name;
    EXPECT_EQ(b[i], expected[i].bytes) << expected[i].name;
  }
  EXPECT_EQ(metadata, (SafetensorsMetadata{{"format", "pt"}, {"note", "made by hand"}}));
}

TEST_F(Safetensors, BufferRuleIsByName) {
  EXPECT_TRUE(is_buffer_name("model.layers.0.self_attn.rotary_emb.inv_freq"));
  EXPECT_TRUE(is_buffer_name("optimizer.step_counter"));
  EXPECT_FALSE(is_buffer_name("step_counter.weight"));
  EXPECT_FALSE(is_buffer_name("model.embed_tokens.weight"));
}

TEST_F(Safetensors, HeaderLengthBeyondTheFileIsRefused) {
  const std::vector<uint8_t> data = handmade_data();
  const Status s = corrupt_read(safetensors_bytes(handmade_header(), data, handmade_header().size() + data.size() + 1));
  expect_mentions(s, Code::corrupt, {"header length"});
}

TEST_F(Safetensors, TruncatedDataIsRefusedNamingTheTensor) {
  std::vector<uint8_t> data = handmade_data();
  data.pop_back();
  expect_mentions(corrupt_read(safetensors_bytes(handmade_header(), data)), Code::corrupt, {"'q.e5m2'", "run past the end"});
}

TEST_F(Safetensors, OverlappingOffsetsAreRefused) {
  const std::string header = replaced(handmade_header(), R"("data_offsets":[54,57])", R"("data_offsets":[53,56])");
  expect_mentions(corrupt_read(safetensors_bytes(header, handmade_data())), Code::corrupt, {"'mask'", "overlap", "'ids'"});
}

TEST_F(Safetensors, HolesAndTrailingBytesAreRefused) {
  // mask moved one byte on: byte 54 belongs to no tensor.
  std::string header = replaced(handmade_header(), R"("data_offsets":[54,57])", R"("data_offsets":[55,58])");
  header = replaced(header, R"("data_offsets":[57,59])", R"("data_offsets":[58,60])");
  header = replaced(header, R"("data_offsets":[59,61])", R"("data_offsets":[60,62])");
  std::vector<uint8_t> data = handmade_data();
  data.push_back(0);
  expect_mentions(corrupt_read(safetensors_bytes(header, data)), Code::corrupt, {"'mask'", "hole"});
  data.push_back(0);
  expect_mentions(corrupt_read(safetensors_bytes(handmade_header(), data)), Code::corrupt, {"trailing bytes"});
}

TEST_F(Safetensors, OffsetsThatDisagreeWithDtypeAndShapeAreRefused) {
  const std::string header = replaced(handmade_header(), R"("shape":[3],"data_offsets":[54,57])", R"("shape":[4],"data_offsets":[54,57])");
  expect_mentions(corrupt_read(safetensors_bytes(header, handmade_data())), Code::corrupt, {"'mask'", "needs 4"});
}

TEST_F(Safetensors, UnknownDtypeIsRefusedNamingTheTensor) {
  for (const char* dtype : {"F17", "I16"}) {
    const std::string header = replaced(handmade_header(), R"("dtype":"I32")", std::string(R"("dtype":")") + dtype + "\"");
    expect_mentions(corrupt_read(safetensors_bytes(header, handmade_data())), Code::corrupt, {"'ids'", dtype, "unknown dtype"});
  }
}

TEST_F(Safetensors, BadJsonIsRefused) {
  const std::string header = replaced(handmade_header(), R"("ids":{)", R"("ids":{,)");
  expect_mentions(corrupt_read(safetensors_bytes(header, handmade_data())), Code::corrupt, {"not valid JSON"});
  expect_mentions(corrupt_read(safetensors_bytes("[1, 2]", {})), Code::corrupt, {"begin with '{'"});
}

TEST_F(Safetensors, MalformedHeaderEntriesAreRefused) {
  const std::string duplicate = replaced(handmade_header(), R"("ids":{)", R"("mask":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"ids":{)");
  expect_mentions(corrupt_read(safetensors_bytes(duplicate, handmade_data())), Code::corrupt, {"\"mask\" twice"});
  const std::string nested = replaced(handmade_header(), R"("dtype":"I32")", R"("dtype":"F32","dtype":"I32")");
  expect_mentions(corrupt_read(safetensors_bytes(nested, handmade_data())), Code::corrupt, {"\"dtype\" (in \"ids\") twice"});
  const std::string extra = replaced(handmade_header(), R"("shape":[3],)", R"("shape":[3],"offset":0,)");
  expect_mentions(corrupt_read(safetensors_bytes(extra, handmade_data())), Code::corrupt, {"'mask'", "unexpected key"});
  const std::string metadata = replaced(handmade_header(), R"("format":"pt")", R"("format":1)");
  expect_mentions(corrupt_read(safetensors_bytes(metadata, handmade_data())), Code::corrupt, {"__metadata__", "format"});
  const std::string negative = replaced(handmade_header(), R"("shape":[3])", R"("shape":[-3])");
  expect_mentions(corrupt_read(safetensors_bytes(negative, handmade_data())), Code::corrupt, {"'mask'", "shape"});
  expect_mentions(corrupt_read({1, 0, 0}), Code::corrupt, {"8-byte header length"});
}

TEST_F(Safetensors, EmptyTensorsAreRefusedAsUnsupported) {
  const std::string header = R"({"empty":{"dtype":"F32","shape":[0,4],"data_offsets":[0,0]}})";
  expect_mentions(corrupt_read(safetensors_bytes(header, {})), Code::invalid_argument, {"'empty'", "zero dimension"});
}

TEST_F(Safetensors, MissingFileIsNotFound) {
  Manifest m;
  CanonicalBits b;
  expect_mentions(read_safetensors(path("absent.safetensors"), &m, &b), Code::not_found, {"absent.safetensors"});
}

TEST_F(Safetensors, WriterPadsTheHeaderAndRoundTrips) {
  Manifest m;
  CanonicalBits b;
  every_dtype(&m, &b);
  ASSERT_TRUE(write_safetensors(file(), m, b, {{"format", "pt"}}).is_ok());
  EXPECT_FALSE(fs::exists(file() + ".tmp"));
  const std::vector<uint8_t> bytes = read_bytes(file());
  uint64_t length = 0;
  for (int i = 7; i >= 0; --i) length = length << 8 | bytes[i];
  EXPECT_EQ(length % 8, 0u);
  EXPECT_EQ(bytes[8], '{');
  EXPECT_EQ(bytes.size(), 8 + length + m.total_bytes());
  Manifest m2;
  CanonicalBits b2;
  SafetensorsMetadata metadata;
  const Status s = read_safetensors(file(), &m2, &b2, &metadata);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  expect_same_tensors(m2, b2, m, b);
  EXPECT_EQ(metadata.at("format"), "pt");
}

TEST_F(Safetensors, WriterRefusesBitsThatDoNotFitTheManifest) {
  Manifest m;
  CanonicalBits b;
  every_dtype(&m, &b);
  b[2].pop_back();
  const Status s = write_safetensors(file(), m, b);
  expect_mentions(s, Code::invalid_argument, {"'h.0.f32'", file()});
  EXPECT_FALSE(fs::exists(file()));
  EXPECT_FALSE(fs::exists(file() + ".tmp"));
}

}  // namespace
}  // namespace dcr::test
