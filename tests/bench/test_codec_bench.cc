// `dcr bench codec` end to end on the tiny preset: every case applies bit-exactly, the change rates
// land where asked, dcr's bytes beat both reference encodings, and the JSON carries every key that
// the issue's table and perf/report.sh read. Speeds are only checked to be measured, never timed.
#include <gtest/gtest.h>

#include <cstdio>  // std::remove
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "dcr/bench/codec_bench.h"
#include "dcr/ckpt/safetensors.h"
#include "dcr/model/change_model.h"
#include "dcr/model/presets.h"

namespace dcr {
namespace {

CodecBenchOptions tiny_options() {
  CodecBenchOptions o;
  o.model = "tiny";
  o.weights = "none";
  o.rates = {1, 5};
  o.dense = false;
  o.uniform = true;
  o.repetitions = 1;
  o.frame_elements = 1 << 20;
  return o;
}

TEST(CodecBench, TinyModelAppliesBitExactlyAndBeatsBothReferenceEncodings) {
  CodecBenchReport report;
  const Status s = run_codec_bench(tiny_options(), &report);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  ASSERT_EQ(report.records.size(), 4u);  // adam 1%, adam 5%, uniform 3%, uniform 5%
  const double asked[] = {0.01, 0.05, 0.03, 0.05};
  for (size_t i = 0; i < report.records.size(); ++i) {
    const CodecBenchRecord& r = report.records[i];
    SCOPED_TRACE(r.name);
    EXPECT_TRUE(r.bitexact);
    EXPECT_NEAR(r.change_rate, asked[i], 0.2 * asked[i]);
    EXPECT_GT(r.wire_bytes, 0u);
    EXPECT_LT(r.wire_bytes, r.nemo_style_bytes);
    EXPECT_LT(r.wire_bytes, r.pulse_style_bytes);
    // The tiny preset's many small tensors each carry a frame header and tables (about 1.2x at 1%).
    EXPECT_LT(static_cast<double>(r.wire_bytes), 1.3 * r.entropy_bound_bytes);
    EXPECT_GT(r.encode_gbps, 0);
    EXPECT_GT(r.apply_gbps, 0);
    EXPECT_GT(r.memcpy_gbps, 0);
    EXPECT_GT(r.hash_gbps, 0);
  }
}

TEST(CodecBench, JsonCarriesEveryReportedKey) {
  CodecBenchOptions o = tiny_options();
  o.rates = {3};
  o.uniform = false;
  CodecBenchReport report;
  ASSERT_TRUE(run_codec_bench(o, &report).is_ok());
  const std::string path = ::testing::TempDir() + "dcr_codec_bench.json";
  ASSERT_TRUE(write_codec_bench_json(report, path).is_ok());
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json doc = nlohmann::json::parse(text.str());
  EXPECT_EQ(doc["model"], "tiny");
  ASSERT_EQ(doc["records"].size(), 1u);
  for (const char* key : {"change_rate", "wire_bytes", "entropy_bound_bytes", "ratio_to_bound", "nemo_style_bytes",
                          "pulse_style_bytes", "encode_gbps", "apply_gbps", "memcpy_gbps", "hash_gbps", "bitexact",
                          "memcpy_variation", "cpu_variation", "encode_threads"}) {
    EXPECT_TRUE(doc["records"][0].contains(key)) << key;
  }
  for (const char* key : {"encode_to_memcpy", "apply_to_memcpy"}) {
    const nlohmann::json& spread = doc["records"][0][key];
    EXPECT_LE(spread["min"].get<double>(), spread["median"].get<double>()) << key;
    EXPECT_LE(spread["median"].get<double>(), spread["max"].get<double>()) << key;
  }
  EXPECT_FALSE(doc["records"][0].contains("threaded_encode_gbps"));  // one encode thread asked for
  EXPECT_EQ(doc["records"][0]["bitexact"], true);
  std::remove(path.c_str());
}

// With encode threads the bench also encodes on them, frames in flight: the frames are the same
// bytes as one thread's (bit-exact says so), and each repetition pairs its speeds with a memcpy.
TEST(CodecBench, ThreadedEncodeWritesTheSameFramesAndPairsEachRepetition) {
  CodecBenchOptions o = tiny_options();
  o.rates = {3};
  o.uniform = false;
  o.repetitions = 3;
  o.encode_threads = 2;
  CodecBenchReport report;
  const Status s = run_codec_bench(o, &report);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  ASSERT_EQ(report.records.size(), 1u);
  const CodecBenchRecord& r = report.records[0];
  EXPECT_TRUE(r.bitexact);
  EXPECT_EQ(r.encode_threads, 2);
  EXPECT_GT(r.threaded_encode_gbps, 0);
  EXPECT_GT(r.threaded_memcpy_gbps, 0);
  for (const Spread& spread : {r.encode_ratio, r.apply_ratio, r.threaded_encode_ratio,
                               r.threaded_encode_to_threaded_memcpy}) {
    EXPECT_GT(spread.min, 0);
    EXPECT_LE(spread.min, spread.median);
    EXPECT_LE(spread.median, spread.max);
  }
  EXPECT_GE(r.memcpy_variation, 0);
  EXPECT_GE(r.cpu_variation, 0);
  o.encode_threads = 0;
  EXPECT_EQ(run_codec_bench(o, &report).code(), Code::invalid_argument);
}

// Three HF checkpoints of the tiny preset, 3% of values changed a step: `dir`/step-0..2.
void write_checkpoints(const std::filesystem::path& dir) {
  Manifest m;
  ASSERT_TRUE(make_preset("tiny", &m).is_ok());
  std::unique_ptr<ChangeModel> model;
  ASSERT_TRUE(ChangeModel::create(m, {}, &model).is_ok());
  for (int step = 0; step < 3; ++step) {
    if (step > 0) {
      ASSERT_TRUE(model->step(model->tune_lr(0.03)).is_ok());
    }
    const std::filesystem::path at = dir / ("step-" + std::to_string(step));
    std::filesystem::create_directories(at);
    std::ofstream(at / "config.json") << R"({"model_type": "dcr"})";  // the presets' family
    ASSERT_TRUE(write_safetensors((at / "model.safetensors").string(), m, model->snapshot()).is_ok());
  }
}

TEST(CodecBench, CheckpointPairsAreBenchedBitExactAgainstTheirBounds) {
  const std::filesystem::path dir = ::testing::TempDir() + "dcr_bench_ckpt_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  write_checkpoints(dir);
  CodecBenchOptions o = tiny_options();
  o.checkpoints = (dir / "step-*").string();
  o.contexts = true;
  CodecBenchReport report;
  const Status s = run_codec_bench(o, &report);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  ASSERT_EQ(report.records.size(), 2u);
  EXPECT_EQ(report.records[0].name, "step-0>step-1");
  for (const CodecBenchRecord& r : report.records) {
    SCOPED_TRACE(r.name);
    EXPECT_TRUE(r.bitexact);
    EXPECT_NEAR(r.change_rate, 0.03, 0.003);
    EXPECT_EQ(r.wire_bytes, r.header_bytes + r.position_bytes + r.value_bytes);
    EXPECT_LE(r.entropy_bound_exponent_bytes, r.entropy_bound_delta_bytes);
    EXPECT_LT(r.wire_bytes, r.nemo_style_bytes);
    EXPECT_LT(r.frames, 10u);  // the tiny preset's small tensors share bundles
  }
  o.checkpoints = (dir / "step-0").string();  // one checkpoint is no delta
  Status one = run_codec_bench(o, &report);
  EXPECT_EQ(one.code(), Code::invalid_argument);
  EXPECT_NE(one.message().find("a delta needs two"), std::string::npos) << one.to_string();
  std::filesystem::remove_all(dir);
}

TEST(CodecBench, ServedPairsCountWhatChangedBesideTheCheckpointDelta) {
  const std::filesystem::path dir = ::testing::TempDir() + "dcr_bench_fp8_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  write_checkpoints(dir);
  CodecBenchOptions o = tiny_options();
  o.checkpoints = (dir / "step-*").string();
  o.serve_quant = "fp8-block";
  CodecBenchReport report;
  const Status s = run_codec_bench(o, &report);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  ASSERT_EQ(report.records.size(), 4u);  // each pair as bf16, then as served
  Manifest tiny;
  ASSERT_TRUE(make_preset("tiny", &tiny).is_ok());
  uint64_t linear = 0;  // q, k, v, o, gate, up, down of every layer
  for (const TensorDesc& t : tiny.tensors) {
    if (t.shape.size() == 2 && t.name.find("embed") == std::string::npos && t.name.find("lm_head") == std::string::npos) {
      linear += t.numel();
    }
  }
  for (size_t i = 1; i < 4; i += 2) {
    const CodecBenchRecord& checkpoint = report.records[i - 1];
    const CodecBenchRecord& served = report.records[i];
    SCOPED_TRACE(served.name);
    EXPECT_EQ(served.name, checkpoint.name + " fp8-block");
    EXPECT_TRUE(served.bitexact);
    EXPECT_EQ(served.checkpoint_wire_bytes, checkpoint.wire_bytes);
    EXPECT_LT(served.wire_bytes, checkpoint.wire_bytes);
    EXPECT_TRUE(checkpoint.groups.empty());
    ASSERT_EQ(served.groups.size(), 3u);
    EXPECT_EQ(served.groups.at("fp8").elements, linear);
    EXPECT_EQ(served.groups.at("fp8").elements + served.groups.at("scales").elements + served.groups.at("as is").elements,
              served.elements);
    EXPECT_EQ(served.groups.at("fp8").changed + served.groups.at("scales").changed + served.groups.at("as is").changed,
              served.changed);
    EXPECT_GT(served.groups.at("fp8").changed, 0u);
    EXPECT_LT(served.groups.at("fp8").changed, checkpoint.changed);  // most one-ulp steps stay inside an E4M3 code
  }
  std::filesystem::remove_all(dir);
}

TEST(CodecBench, RefusesBadOptionsByName) {
  struct Bad {
    void (*set)(CodecBenchOptions*);
    const char* named;
  };
  const Bad cases[] = {
      {[](CodecBenchOptions* o) { o->frame_elements = 0; }, "--frame-elements"},
      {[](CodecBenchOptions* o) { o->repetitions = 0; }, "--reps"},
      {[](CodecBenchOptions* o) { o->rates = {100}; }, "change rates"},
      {[](CodecBenchOptions* o) { o->model = "huge"; }, "huge"},
      {[](CodecBenchOptions* o) { o->serve_quant = "fp8-block"; }, "give --checkpoints"},
  };
  for (const Bad& bad : cases) {
    CodecBenchOptions o = tiny_options();
    bad.set(&o);
    CodecBenchReport report;
    const Status s = run_codec_bench(o, &report);
    EXPECT_FALSE(s.is_ok()) << bad.named;
    EXPECT_NE(s.message().find(bad.named), std::string::npos) << s.message();
  }
}

}  // namespace
}  // namespace dcr
