// HF checkpoint directories: sharded and single-file checkpoints memory-mapped, tensors found in
// their shards, and each kind of damage refused naming the file and the tensor; a shard cut short
// under a read reported naming it; what list_checkpoints makes of each kind of match.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "dcr/ckpt/hf_checkpoint.h"
#include "dcr/ckpt/safetensors.h"

namespace dcr {
namespace {

namespace fs = std::filesystem;

TensorDesc bf16(const std::string& name, std::vector<int64_t> shape) { return TensorDesc{name, DType::bf16, shape, false}; }

std::vector<uint8_t> bytes_of(const TensorDesc& t, uint8_t seed) {
  std::vector<uint8_t> b(t.nbytes());
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(seed + i * 7);
  return b;
}

class HfCheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dcr_hf_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    write_text("config.json", R"({"model_type": "llama", "num_attention_heads": 2})");
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write_text(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  // Two shards: a = {embed, norm}, b = {q}; the index names all three.
  void write_sharded() {
    write_shard("model-00001-of-00002.safetensors", {bf16("model.embed_tokens.weight", {4, 3}), bf16("model.norm.weight", {3})}, 1);
    write_shard("model-00002-of-00002.safetensors", {bf16("model.layers.0.self_attn.q_proj.weight", {3, 3})}, 9);
    write_text("model.safetensors.index.json",
               R"({"metadata": {}, "weight_map": {"model.embed_tokens.weight": "model-00001-of-00002.safetensors",
                   "model.norm.weight": "model-00001-of-00002.safetensors",
                   "model.layers.0.self_attn.q_proj.weight": "model-00002-of-00002.safetensors"}})");
  }
  void write_shard(const std::string& name, const std::vector<TensorDesc>& tensors, uint8_t seed) {
    Manifest m;
    CanonicalBits bits;
    for (const TensorDesc& t : tensors) {
      m.tensors.push_back(t);
      bits.push_back(bytes_of(t, seed++));
    }
    ASSERT_TRUE(write_safetensors((dir_ / name).string(), m, bits).is_ok());
  }
  Status open(std::unique_ptr<HfCheckpoint>* c) { return HfCheckpoint::open(dir_.string(), c); }
  void expect_refused(Code code, const std::vector<std::string>& words) {
    std::unique_ptr<HfCheckpoint> c;
    const Status s = open(&c);
    EXPECT_EQ(s.code(), code) << s.to_string();
    for (const std::string& w : words) EXPECT_NE(s.message().find(w), std::string::npos) << s.message();
  }

  fs::path dir_;
};

TEST_F(HfCheckpointTest, ShardedCheckpointMapsEveryTensorInShardOrder) {
  write_sharded();
  EXPECT_TRUE(hf_checkpoint_complete(dir_.string()));
  std::unique_ptr<HfCheckpoint> c;
  ASSERT_TRUE(open(&c).is_ok());
  ASSERT_EQ(c->manifest().tensors.size(), 3u);
  EXPECT_EQ(c->manifest().tensors[0].name, "model.embed_tokens.weight");
  EXPECT_EQ(c->manifest().tensors[2].name, "model.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(c->config().at("model_type"), "llama");
  for (uint32_t id = 0; id < 3; ++id) {
    const TensorDesc& t = c->manifest().tensors[id];
    const std::vector<uint8_t> expected = bytes_of(t, static_cast<uint8_t>(id == 2 ? 9 : 1 + id));
    EXPECT_EQ(std::vector<uint8_t>(c->tensor(id), c->tensor(id) + t.nbytes()), expected) << t.name;
  }
  EXPECT_GT(c->resident_bytes(), 0u);  // touched just now
}

TEST_F(HfCheckpointTest, SingleFileCheckpoint) {
  EXPECT_FALSE(hf_checkpoint_complete(dir_.string()));
  write_shard("model.safetensors", {bf16("lm_head.weight", {2, 2})}, 3);
  EXPECT_TRUE(hf_checkpoint_complete(dir_.string()));
  std::unique_ptr<HfCheckpoint> c;
  ASSERT_TRUE(open(&c).is_ok());
  EXPECT_EQ(c->manifest().tensors.size(), 1u);
  EXPECT_EQ(c->tensor(0)[0], 3);
}

TEST_F(HfCheckpointTest, RefusesDamageNamingFileAndTensor) {
  write_sharded();
  write_text("config.json", "{\"model_type\": ");
  expect_refused(Code::invalid_argument, {"config.json", "not valid JSON"});
  fs::remove(dir_ / "config.json");
  expect_refused(Code::not_found, {"config.json"});
  write_text("config.json", "{}");
  fs::remove(dir_ / "model-00002-of-00002.safetensors");
  expect_refused(Code::not_found, {"model-00002-of-00002.safetensors", "does not exist"});
}

TEST_F(HfCheckpointTest, RefusesAnIndexThatDisagreesWithItsShards) {
  write_sharded();
  // The index places norm in the second shard, which does not hold it.
  write_text("model.safetensors.index.json",
             R"({"weight_map": {"model.embed_tokens.weight": "model-00001-of-00002.safetensors",
                 "model.norm.weight": "model-00002-of-00002.safetensors",
                 "model.layers.0.self_attn.q_proj.weight": "model-00002-of-00002.safetensors"}})");
  expect_refused(Code::corrupt, {"model.norm.weight", "model-00001-of-00002.safetensors", "places in"});
  // The index names a tensor no shard holds.
  write_sharded();
  write_text("model.safetensors.index.json",
             R"({"weight_map": {"model.embed_tokens.weight": "model-00001-of-00002.safetensors",
                 "model.norm.weight": "model-00001-of-00002.safetensors", "extra.weight": "model-00002-of-00002.safetensors",
                 "model.layers.0.self_attn.q_proj.weight": "model-00002-of-00002.safetensors"}})");
  expect_refused(Code::corrupt, {"extra.weight", "does not hold it"});
  write_text("model.safetensors.index.json", R"({"weight_map": {"a": "../escape.safetensors"}})");
  expect_refused(Code::invalid_argument, {"outside the checkpoint"});
}

TEST_F(HfCheckpointTest, CheckUnchangedNamesAShardCutShortUnderTheRead) {
  write_sharded();
  std::unique_ptr<HfCheckpoint> c;
  ASSERT_TRUE(open(&c).is_ok());
  EXPECT_TRUE(c->check_unchanged().is_ok());
  const std::string shard = (dir_ / "model-00002-of-00002.safetensors").string();
  ASSERT_EQ(::truncate(shard.c_str(), 0), 0);  // a trainer saving it again (O_TRUNC) as it is read
  const TensorDesc& q = c->manifest().tensors[2];
  std::vector<uint8_t> copy(q.nbytes());
  std::memcpy(copy.data(), c->tensor(2), copy.size());  // no SIGBUS
  const Status st = c->check_unchanged();
  EXPECT_EQ(st.code(), Code::io_error) << st.to_string();
  EXPECT_NE(st.message().find("checkpoint file '" + shard + "' changed while it was being read"), std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("pages vanished"), std::string::npos) << st.message();
}

// list_checkpoints over DIR/step-*: what each kind of match does.
class ListCheckpointsTest : public HfCheckpointTest {
 protected:
  void SetUp() override {
    HfCheckpointTest::SetUp();
    for (const char* step : {"step-0000", "step-0001", "step-0010"}) fs::create_directories(dir_ / step);
  }
  Status list(std::vector<std::string>* dirs, const std::string& tail = "step-*") {
    return list_checkpoints((dir_ / tail).string(), dirs);
  }
};

TEST_F(ListCheckpointsTest, DirectoriesAndSymlinksToThemInNaturalOrderFilesSkipped) {
  fs::create_directory_symlink(dir_ / "step-0010", dir_ / "step-0002");
  std::ofstream(dir_ / "step-STOP") << "";  // a file among the matches: not a checkpoint
  fs::create_symlink(dir_ / "step-STOP", dir_ / "step-0003");
  std::vector<std::string> dirs;
  ASSERT_TRUE(list(&dirs).is_ok());
  const std::vector<std::string> expected = {(dir_ / "step-0000").string(), (dir_ / "step-0001").string(),
                                             (dir_ / "step-0002").string(), (dir_ / "step-0010").string()};
  EXPECT_EQ(dirs, expected);
  ASSERT_TRUE(list(&dirs, "step-*/").is_ok());  // a trailing slash lists the same
  EXPECT_EQ(dirs, expected);
  const Status none = list(&dirs, "nothing-*");
  EXPECT_EQ(none.code(), Code::not_found) << none.to_string();
}

TEST_F(ListCheckpointsTest, RefusesADanglingSymlinkNamingIt) {
  fs::create_symlink(dir_ / "moved-away", dir_ / "step-0002");
  for (const char* tail : {"step-*", "step-*/"}) {  // glob alone would drop it from "step-*/"
    std::vector<std::string> dirs;
    const Status st = list(&dirs, tail);
    EXPECT_EQ(st.code(), Code::invalid_argument) << st.to_string();
    EXPECT_NE(st.message().find("'" + (dir_ / "step-0002").string() + "' is a dangling symlink"), std::string::npos)
        << st.message();
    EXPECT_NE(st.message().find("moved-away"), std::string::npos) << st.message();
  }
}

TEST_F(ListCheckpointsTest, RefusesASymlinkLoopNamingIt) {
  fs::create_symlink(dir_ / "step-0003", dir_ / "step-0002");
  fs::create_symlink(dir_ / "step-0002", dir_ / "step-0003");
  std::vector<std::string> dirs;
  const Status st = list(&dirs);
  EXPECT_EQ(st.code(), Code::invalid_argument) << st.to_string();
  EXPECT_NE(st.message().find("is a symlink loop"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find((dir_ / "step-000").string()), std::string::npos) << st.message();
}

TEST(HfCheckpointNames, NaturalOrderAndManifestDifferences) {
  EXPECT_TRUE(natural_less("step-9", "step-10"));
  EXPECT_FALSE(natural_less("step-10", "step-9"));
  EXPECT_TRUE(natural_less("step-0009", "step-10"));
  EXPECT_TRUE(natural_less("a", "b"));
  Manifest a, b;
  a.tensors = {bf16("x", {2, 2}), bf16("y", {3})};
  b.tensors = {bf16("y", {3}), bf16("x", {2, 2})};
  EXPECT_EQ(manifest_difference(a, b), "");  // order does not matter: tensors are found by name
  b.tensors[1].shape = {2, 3};
  EXPECT_EQ(manifest_difference(a, b), "tensor 'x' changed shape from [2, 2] to [2, 3]");
  b.tensors[1] = TensorDesc{"x", DType::f32, {2, 2}, false};
  EXPECT_NE(manifest_difference(a, b).find("changed dtype"), std::string::npos);
  b.tensors.pop_back();
  EXPECT_EQ(manifest_difference(a, b), "tensor 'x' is gone");
}

}  // namespace
}  // namespace dcr
