#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "dcr/model/change_model.h"
#include "dcr/model/half.h"
#include "dcr/model/presets.h"
#include "dcr/model/real_weights.h"

namespace dcr {
namespace {

namespace fs = std::filesystem;

void write_file(const fs::path& path, const void* data, size_t bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
}

void write_text(const fs::path& path, const std::string& text) { write_file(path, text.data(), text.size()); }

void append(std::vector<uint8_t>* bytes, const void* data, size_t size) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  bytes->insert(bytes->end(), p, p + size);
}

// A small package: group 1 spans two bin files (split mid-value) and holds an f32 tensor, an int32
// constant and an f16-quantized tensor; group 2 holds a tensor of dtype float16.
constexpr const char* kModelJson = R"({"format": "graph-model", "weightsManifest": [
  {"paths": ["g1-a.bin", "g1-b.bin"], "weights": [
    {"name": "conv/kernel", "shape": [2, 3], "dtype": "float32"},
    {"name": "axes", "shape": [2], "dtype": "int32"},
    {"name": "conv/bias", "shape": [3], "dtype": "float32",
     "quantization": {"dtype": "float16", "original_dtype": "float32"}}]},
  {"paths": ["g2.bin"], "weights": [{"name": "head", "shape": [1, 2], "dtype": "float16"}]}]})";

class TfjsLoader : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dcr_real_weights_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    const float kernel[6] = {0.5f, -1.25f, 3.0f, 1e-30f, -0.0f, 2.5f};
    const int32_t axes[2] = {1, 2};
    const uint16_t bias[3] = {0x3c00, 0xc000, 0x7bff};  // 1, -2, 65504
    append(&group1_, kernel, sizeof(kernel));
    append(&group1_, axes, sizeof(axes));
    append(&group1_, bias, sizeof(bias));
    write_group1(group1_.size());
    const uint16_t head[2] = {0x3800, 0x0001};  // 0.5, 2^-24
    write_file(dir_ / "g2.bin", head, sizeof(head));
    write_text(dir_ / "model.json", kModelJson);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes the first `bytes` bytes of group 1, split after byte 10 across its two files.
  void write_group1(size_t bytes) {
    write_file(dir_ / "g1-a.bin", group1_.data(), 10);
    write_file(dir_ / "g1-b.bin", group1_.data() + 10, bytes - 10);
  }

  std::string model_json() const { return (dir_ / "model.json").string(); }

  fs::path dir_;
  std::vector<uint8_t> group1_;
};

TEST_F(TfjsLoader, ReadsNamesShapesAndValuesInOrder) {
  RealWeights w;
  const Status s = load_tfjs_weights(model_json(), &w);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  ASSERT_EQ(w.tensors.size(), 3u);
  EXPECT_EQ(w.tensors[0].name, "conv/kernel");
  EXPECT_EQ(w.tensors[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(w.tensors[1].name, "conv/bias");
  EXPECT_EQ(w.tensors[1].offset, 6u);
  EXPECT_EQ(w.tensors[1].count, 3u);
  EXPECT_EQ(w.tensors[2].name, "head");
  EXPECT_EQ(w.tensors[2].shape, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(w.tensors[2].offset, 9u);
  EXPECT_EQ(w.skipped, (std::vector<std::string>{"axes"}));
  const std::vector<float> expected = {0.5f, -1.25f, 3.0f, 1e-30f, -0.0f, 2.5f, 1.0f, -2.0f, 65504.0f,
                                       0.5f, std::ldexp(1.0f, -24)};
  ASSERT_EQ(w.values.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(std::memcmp(&w.values[i], &expected[i], 4), 0) << i;  // bit-exact, -0 included
  }
}

TEST_F(TfjsLoader, MissingModelJsonIsNamed) {
  RealWeights w;
  const std::string path = (dir_ / "absent.json").string();
  const Status s = load_tfjs_weights(path, &w);
  EXPECT_EQ(s.code(), Code::not_found);
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
}

TEST_F(TfjsLoader, BadJsonIsNamed) {
  write_text(dir_ / "model.json", "{\"weightsManifest\": [");
  RealWeights w;
  const Status s = load_tfjs_weights(model_json(), &w);
  EXPECT_EQ(s.code(), Code::corrupt);
  EXPECT_NE(s.message().find(model_json()), std::string::npos) << s.message();
}

TEST_F(TfjsLoader, ShortBinIsNamed) {
  write_group1(group1_.size() - 1);
  RealWeights w;
  const Status s = load_tfjs_weights(model_json(), &w);
  EXPECT_EQ(s.code(), Code::corrupt);
  EXPECT_NE(s.message().find("g1-b.bin"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("conv/bias"), std::string::npos) << s.message();
  EXPECT_TRUE(w.values.empty());  // nothing half-loaded
}

TEST_F(TfjsLoader, MissingBinIsNamed) {
  fs::remove(dir_ / "g2.bin");
  RealWeights w;
  Status s = load_tfjs_weights(model_json(), &w);
  EXPECT_EQ(s.code(), Code::not_found);
  EXPECT_NE(s.message().find("g2.bin"), std::string::npos) << s.message();

  fs::create_directory(dir_ / "g2.bin");  // a directory is not a bin file either
  s = load_tfjs_weights(model_json(), &w);
  EXPECT_EQ(s.code(), Code::not_found);
  EXPECT_NE(s.message().find("g2.bin"), std::string::npos) << s.message();
}

TEST_F(TfjsLoader, RejectsOtherStoredTypes) {
  write_text(dir_ / "model.json", R"({"weightsManifest": [{"paths": ["g2.bin"], "weights": [
    {"name": "q", "shape": [4], "dtype": "float32",
     "quantization": {"dtype": "uint8", "scale": 0.1, "min": -1}}]}]})");
  RealWeights w;
  const Status s = load_tfjs_weights(model_json(), &w);
  EXPECT_EQ(s.code(), Code::invalid_argument);
  EXPECT_NE(s.message().find("'q'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("uint8"), std::string::npos) << s.message();
}

TEST_F(TfjsLoader, RejectsMalformedManifests) {
  RealWeights w;
  write_text(dir_ / "model.json", R"({"modelTopology": {}})");
  Status s = load_tfjs_weights(model_json(), &w);
  EXPECT_EQ(s.code(), Code::corrupt);
  EXPECT_NE(s.message().find("weightsManifest"), std::string::npos) << s.message();

  write_text(dir_ / "model.json", R"({"weightsManifest": [{"paths": ["g2.bin"], "weights": [
    {"name": "x", "shape": "wide", "dtype": "float32"}]}]})");
  s = load_tfjs_weights(model_json(), &w);
  EXPECT_EQ(s.code(), Code::corrupt);
  EXPECT_NE(s.message().find(model_json()), std::string::npos) << s.message();

  write_text(dir_ / "model.json", R"({"weightsManifest": [{"paths": ["g2.bin"], "weights": [
    {"name": "x", "shape": [-1], "dtype": "float32"}]}]})");
  EXPECT_EQ(load_tfjs_weights(model_json(), &w).code(), Code::corrupt);
}

// Sets DCR_WEIGHTS_DIR for one test and restores it afterwards.
class WeightsDirOverride {
 public:
  explicit WeightsDirOverride(const std::string& dir) {
    const char* old = std::getenv("DCR_WEIGHTS_DIR");
    had_old_ = old != nullptr;
    if (had_old_) old_ = old;
    setenv("DCR_WEIGHTS_DIR", dir.c_str(), 1);
  }
  ~WeightsDirOverride() {
    if (had_old_) {
      setenv("DCR_WEIGHTS_DIR", old_.c_str(), 1);
    } else {
      unsetenv("DCR_WEIGHTS_DIR");
    }
  }

 private:
  bool had_old_ = false;
  std::string old_;
};

TEST_F(TfjsLoader, FindsPackagesUnderTheWeightsDir) {
  WeightsDirOverride override_dir(dir_.string());
  EXPECT_EQ(default_weights_dir(), dir_.string());
  std::string path;
  Status s = find_real_weights("esrgan-medium", &path);
  EXPECT_EQ(s.code(), Code::unavailable);
  EXPECT_NE(s.message().find("scripts/fetch_weights.sh"), std::string::npos) << s.message();

  fs::create_directories(dir_ / "esrgan-medium/package/models/x4");
  write_text(dir_ / "esrgan-medium/package/models/x4/model.json", kModelJson);
  ASSERT_TRUE(find_real_weights("esrgan-medium", &path).is_ok());
  EXPECT_EQ(path, (dir_ / "esrgan-medium/package/models/x4/model.json").string());

  s = find_real_weights("resnet", &path);
  EXPECT_EQ(s.code(), Code::invalid_argument);
  EXPECT_NE(s.message().find("faceres-deep"), std::string::npos) << s.message();
}

// The fetched npm packages (scripts/fetch_weights.sh); skipped when they are absent.
bool load_package(const std::string& package, RealWeights* w) {
  std::string path;
  const Status found = find_real_weights(package, &path);
  if (!found.is_ok()) return false;
  const Status s = load_tfjs_weights(path, w);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return s.is_ok();
}

TEST(RealPackage, EsrganMedium) {
  RealWeights w;
  if (!load_package("esrgan-medium", &w)) {
    GTEST_SKIP() << "esrgan-medium not fetched; run scripts/fetch_weights.sh";
  }
  EXPECT_EQ(w.tensors.size(), 56u);
  EXPECT_EQ(w.values.size(), 704611u);  // 2818444 bytes of f32
  EXPECT_EQ(w.tensors[0].name, "F_0/kernel");
  EXPECT_EQ(w.tensors[0].shape, (std::vector<int64_t>{3, 3, 64, 64}));
  for (float v : w.values) ASSERT_TRUE(std::isfinite(v));
}

TEST(RealPackage, FaceresInF32AndF16) {
  RealWeights deep, half;
  if (!load_package("faceres-deep", &deep) || !load_package("faceres", &half)) {
    GTEST_SKIP() << "human-models not fetched; run scripts/fetch_weights.sh";
  }
  EXPECT_EQ(deep.tensors.size(), 127u);
  EXPECT_EQ(deep.skipped.size(), 1u);  // an int32 reduction-axes constant
  ASSERT_EQ(half.tensors.size(), deep.tensors.size());
  for (size_t t = 0; t < deep.tensors.size(); ++t) {
    EXPECT_EQ(half.tensors[t].name, deep.tensors[t].name);
    EXPECT_EQ(half.tensors[t].shape, deep.tensors[t].shape);
  }
  for (float v : half.values) ASSERT_EQ(f16_to_f32(f32_to_f16_rne(v)), v);  // widened from f16
}

TEST(RealPackage, SeedsAChangeModel) {
  RealWeights w;
  if (!load_package("esrgan-medium", &w)) {
    GTEST_SKIP() << "esrgan-medium not fetched; run scripts/fetch_weights.sh";
  }
  Manifest m;
  ASSERT_TRUE(make_preset("tiny", &m).is_ok());
  ChangeModelOptions options;
  options.seed = 3;
  options.pool = &w;
  std::unique_ptr<ChangeModel> model;
  ASSERT_TRUE(ChangeModel::create(m, options, &model).is_ok());
  EXPECT_EQ(model->master(0)[0], w.values[0]);
  const auto before = model->snapshot();
  ASSERT_TRUE(model->step(model->tune_lr(0.01)).is_ok());
  EXPECT_NEAR(model->changed_fraction(before) / 0.01, 1.0, 0.10);
}

}  // namespace
}  // namespace dcr
