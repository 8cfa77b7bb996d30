// The refit-time projection: scaling, lower bounds, calibration against the paper, and the errors of
// the benchmark JSON readers.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "dcr/project/projection.h"
#include "dcr/project/rates.h"

namespace dcr {
namespace {

const char* kCodecJson = R"({
  "benchmark": "codec", "model": "tiny", "frame_elements": 4194304,
  "records": [
    {"case": "adam 1.00%", "change_rate": 0.01, "bytes_per_changed_element": 1.6, "encode_gbps": 3.0,
     "apply_gbps": 3.0, "memcpy_gbps": 20.0, "wire_bytes": 1, "model_bytes": 1},
    {"case": "adam 3.00%", "change_rate": 0.03, "bytes_per_changed_element": 1.2, "encode_gbps": 2.0,
     "apply_gbps": 1.5, "memcpy_gbps": 20.0, "wire_bytes": 1, "model_bytes": 1},
    {"case": "dense step", "change_rate": 0.9, "bytes_per_changed_element": 0.7, "encode_gbps": 0.1,
     "apply_gbps": 0.1, "memcpy_gbps": 20.0, "wire_bytes": 1, "model_bytes": 1},
    {"case": "adam 5.00%", "change_rate": 0.05, "bytes_per_changed_element": 1.0, "encode_gbps": 1.0,
     "apply_gbps": 1.0, "memcpy_gbps": 20.0, "wire_bytes": 1, "model_bytes": 1}
  ]})";

const char* kRefitJson = R"({"model_bytes": 100, "steps": [
  {"kind": "full", "wire_bytes": 100, "stage_seconds": {"relay": 9.0, "commit": 9.0}},
  {"kind": "delta", "wire_bytes": 2000000000, "stage_seconds": {"relay": 0.5, "commit": 0.01}},
  {"kind": "delta", "wire_bytes": 2000000000, "stage_seconds": {"relay": 1.5, "commit": 0.03}},
  {"kind": "delta", "wire_bytes": 1000, "stage_seconds": {"relay": 0.0, "commit": 0.02}}]})";

MachineRates codec_rates() {
  MachineRates rates;
  const Status s = parse_codec_json(kCodecJson, "codec.json", "adam", &rates);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return rates;
}

std::string write_temp(const std::string& name, const std::string& content) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << content;
  return path;
}

TEST(Projection, FullTimeScalesLinearlyWithSize) {
  const Cluster cluster;
  const double base = full_refit_seconds(cluster, 0, 4194304);  // chunks only
  const double one = full_refit_seconds(cluster, 60e9, 4194304) - base;
  for (double k : {2.0, 8.0, 33.3}) {
    EXPECT_NEAR(full_refit_seconds(cluster, k * 60e9, 4194304) - base, k * one, 1e-9 * k * one);
  }
  EXPECT_NEAR(one, 60e9 / (20e9 / 8), 1e-9);  // 4 nodes x 5 Gbit/s
}

TEST(Projection, DeltaNeverBelowWireOverBandwidth) {
  const MachineRates rates = codec_rates();
  Cluster cluster;
  for (double fast : {0.0, 1e3}) {
    cluster.encode_gb_s_per_gpu = cluster.apply_gb_s_per_gpu = fast;
    for (double params : {1e9, 30e9, 1e12}) {
      for (double rate : {0.01, 0.02, 0.03, 0.05}) {
        Projection p;
        ASSERT_TRUE(project_refit(cluster, rates, params, rate, &p).is_ok());
        EXPECT_GE(p.delta_s, p.wire_bytes / aggregate_bytes_per_s(cluster));
        EXPECT_GT(p.full_s, p.delta_s);
      }
    }
  }
}

TEST(Projection, StagesFollowTheRates) {
  const MachineRates rates = codec_rates();
  Cluster cluster;
  Projection p;
  ASSERT_TRUE(project_refit(cluster, rates, 120e9, 0.03, &p).is_ok());
  EXPECT_DOUBLE_EQ(p.wire_bytes, 120e9 * 0.03 * 1.2);
  EXPECT_NEAR(p.stages.encode, 240e9 / 32 / 2e9, 1e-9);
  EXPECT_NEAR(p.stages.apply, 240e9 / 8 / 1.5e9, 1e-9);
  EXPECT_NEAR(p.stages.relay, p.wire_bytes / (20e9 / 2), 1e-9);  // memcpy / fanout without a refit JSON
  EXPECT_STREQ(bound_stage(p.stages), "apply");
  cluster.encode_gb_s_per_gpu = cluster.apply_gb_s_per_gpu = 1000;
  ASSERT_TRUE(project_refit(cluster, rates, 120e9, 0.03, &p).is_ok());
  EXPECT_STREQ(bound_stage(p.stages), "wire");
}

TEST(Projection, CodecRatesInterpolateAndRefuseOutsideTheMeasuredRange) {
  const MachineRates rates = codec_rates();
  ASSERT_EQ(rates.codec.size(), 3u);  // the dense step is not an "adam" case
  CodecPoint p;
  ASSERT_TRUE(codec_at(rates, 0.03, &p).is_ok());
  EXPECT_EQ(p.name, "adam 3.00%");
  ASSERT_TRUE(codec_at(rates, 0.04, &p).is_ok());
  EXPECT_NEAR(p.bytes_per_change, 1.1, 1e-12);
  EXPECT_NEAR(p.encode_gb_s, 1.5, 1e-12);
  ASSERT_TRUE(codec_at(rates, 0.0501, &p).is_ok());  // within the slack at the ends
  const Status s = codec_at(rates, 0.10, &p);
  EXPECT_EQ(s.code(), Code::invalid_argument);
  EXPECT_NE(s.message().find("1.00% .. 5.00%"), std::string::npos) << s.message();
}

TEST(Projection, TreeLevels) {
  EXPECT_EQ(tree_levels(1, 2), 1);
  EXPECT_EQ(tree_levels(7, 2), 3);
  EXPECT_EQ(tree_levels(8, 2), 4);
  EXPECT_EQ(tree_levels(3, 1), 3);
  EXPECT_EQ(tree_levels(8, 8), 2);
}

TEST(Calibration, ReproducesThePapersFullFigures) {
  Cluster cluster;
  ASSERT_TRUE(calibrate(paper_full_figures(), true, 4194304, &cluster).is_ok());
  for (const FullFigure& f : paper_full_figures()) {
    EXPECT_NEAR(full_refit_seconds(cluster, f.model_bytes, 4194304), f.seconds, 0.01 * f.seconds) << f.label;
  }
  EXPECT_GT(cluster.full_overhead_s, 0);
  EXPECT_LT(cluster.aggregate_gbit_s, nominal_aggregate_gbit_s(cluster));
}

TEST(Calibration, BandwidthAloneMatchesOneFigureExactly) {
  Cluster cluster;
  const std::vector<FullFigure> one = {{"x", 100e9, 400}};
  ASSERT_TRUE(calibrate(one, false, 4194304, &cluster).is_ok());
  EXPECT_EQ(cluster.full_overhead_s, 0);
  EXPECT_NEAR(full_refit_seconds(cluster, 100e9, 4194304), 400, 1e-6);
  EXPECT_EQ(calibrate(one, true, 4194304, &cluster).code(), Code::invalid_argument);
  const std::vector<FullFigure> shrinking = {{"a", 100e9, 400}, {"b", 200e9, 300}};
  EXPECT_EQ(calibrate(shrinking, true, 4194304, &cluster).code(), Code::invalid_argument);
}

TEST(Rates, RefitJsonGivesRelayRateAndMedianCommit) {
  MachineRates rates = codec_rates();
  const Status s = parse_refit_json(kRefitJson, "refit.json", &rates);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_NEAR(rates.relay_gb_s, (4e9 + 1000) / 2.0 / 1e9, 1e-12);
  EXPECT_DOUBLE_EQ(rates.commit_s, 0.02);
  Projection p;
  ASSERT_TRUE(project_refit(Cluster(), rates, 30e9, 0.03, &p).is_ok());
  EXPECT_DOUBLE_EQ(p.stages.commit, 0.02);
  EXPECT_NEAR(p.stages.relay, p.wire_bytes / (rates.relay_gb_s * 1e9), 1e-9);
}

TEST(Rates, BadJsonNamesTheFile) {
  MachineRates rates;
  const std::string path = write_temp("bad_codec.json", "{\"records\": [");
  const Status s = load_codec_json(path, "adam", &rates);
  EXPECT_EQ(s.code(), Code::corrupt);
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("not valid JSON"), std::string::npos) << s.message();
  const Status missing = load_refit_json(::testing::TempDir() + "no_such_file.json", &rates);
  EXPECT_EQ(missing.code(), Code::io_error);
  EXPECT_NE(missing.message().find("no_such_file.json"), std::string::npos);
}

TEST(Rates, MissingKeyNamesTheKeyAndRecord) {
  MachineRates rates;
  std::string text = kCodecJson;
  const std::string key = "\"encode_gbps\": 2.0,";
  text.erase(text.find(key), key.size());
  const Status s = parse_codec_json(text, "codec.json", "adam", &rates);
  EXPECT_EQ(s.code(), Code::corrupt);
  EXPECT_NE(s.message().find("'codec.json' record 1 ('adam 3.00%') has no 'encode_gbps'"), std::string::npos)
      << s.message();
  const Status refit = parse_refit_json(R"({"steps": [{"kind": "delta", "wire_bytes": 5}]})", "refit.json", &rates);
  EXPECT_NE(refit.message().find("'refit.json' step 0 has no 'stage_seconds'"), std::string::npos) << refit.message();
  const Status no_steps = parse_refit_json(R"({"job": 1})", "refit.json", &rates);
  EXPECT_NE(no_steps.message().find("has no 'steps'"), std::string::npos) << no_steps.message();
}

TEST(Rates, UnknownCaseListsTheCases) {
  MachineRates rates;
  const Status s = parse_codec_json(kCodecJson, "codec.json", "uniform", &rates);
  EXPECT_EQ(s.code(), Code::not_found);
  EXPECT_NE(s.message().find("'dense step'"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace dcr
