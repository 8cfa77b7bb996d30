// Tables and JSON of `dcr project`.
#include "dcr/project/report.h"

#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

namespace dcr {

namespace {

struct NamedStage {
  const char* name;
  double Stages::*seconds;
};
const NamedStage kStages[] = {{"encode", &Stages::encode}, {"wire", &Stages::wire},     {"relay", &Stages::relay},
                              {"apply", &Stages::apply},   {"chunks", &Stages::chunks}, {"commit", &Stages::commit}};

std::string size_label(double params) {
  char text[32];
  if (params >= 1e12) {
    std::snprintf(text, sizeof(text), "%gT", params / 1e12);
  } else {
    std::snprintf(text, sizeof(text), "%gB", params / 1e9);
  }
  return text;
}

std::string paper_label(const Projection& p) {
  const DeltaFigure* f = paper_delta_for(p.params, p.change_rate);
  if (!f) return "-";
  char text[32];
  if (f->low_s == f->high_s) {
    std::snprintf(text, sizeof(text), "%g", f->low_s);
  } else {
    std::snprintf(text, sizeof(text), "%g-%g", f->low_s, f->high_s);
  }
  return text;
}

void print_calibration(const ProjectionReport& r) {
  const Cluster& c = r.cluster;
  std::printf("\ncalibration (full refit = overhead + model bytes / aggregate bandwidth + one chunk per level):\n");
  std::printf("  effective aggregate %.3f Gbit/s (%.1f%% of the nominal %g Gbit/s), fixed overhead %.1f s\n",
              c.aggregate_gbit_s, 100 * c.aggregate_gbit_s / nominal_aggregate_gbit_s(c), nominal_aggregate_gbit_s(c),
              c.full_overhead_s);
  std::printf("  %-10s %9s %9s %9s %8s\n", "figure", "model GB", "paper s", "dcr s", "error");
  for (const FullFigure& f : paper_full_figures()) {
    const double s = full_refit_seconds(c, f.model_bytes, r.rates.frame_elements);
    std::printf("  %-10s %9.1f %9.1f %9.1f %+7.2f%%\n", f.label.c_str(), f.model_bytes / 1e9, f.seconds, s,
                100 * (s - f.seconds) / f.seconds);
  }
}

void print_summary(const ProjectionReport& r) {
  std::printf("\nprojection%s:\n", r.calibrated ? " (calibrated bandwidth; paper: its delta refit figures)" : "");
  std::printf("  %-6s %7s %9s %9s %9s %9s %12s %8s %7s\n", "model", "changed", "model GB", "wire GB", "full s",
              "delta s", "paper s", "speedup", "bound");
  for (const Projection& p : r.cases) {
    std::printf("  %-6s %6g%% %9.1f %9.3f %9.1f %9.2f %12s %7.1fx %7s\n", size_label(p.params).c_str(),
                100 * p.change_rate, p.model_bytes / 1e9, p.wire_bytes / 1e9, p.full_s, p.delta_s,
                r.calibrated ? paper_label(p).c_str() : "-", p.full_s / p.delta_s, bound_stage(p.stages));
  }
}

void print_stages(const ProjectionReport& r) {
  std::printf("\nstage seconds (share of the delta refit; encode, wire, relay and apply overlap, so shares do not "
              "add up to 100%%):\n  %-6s %7s", "model", "changed");
  for (const NamedStage& s : kStages) std::printf(" %16s", s.name);
  std::printf("\n");
  for (const Projection& p : r.cases) {
    std::printf("  %-6s %6g%%", size_label(p.params).c_str(), 100 * p.change_rate);
    for (const NamedStage& s : kStages) {
      const double seconds = p.stages.*s.seconds;
      std::printf(" %9.3f (%3.0f%%)", seconds, 100 * seconds / p.delta_s);
    }
    std::printf("\n");
  }
}

void print_rates(const ProjectionReport& r) {
  std::printf("\nstage rates (from %s%s%s):\n", r.rates.codec_source.c_str(), r.rates.refit_source.empty() ? "" : " and ",
              r.rates.refit_source.c_str());
  std::printf("  %-6s %7s %9s %12s %12s %10s  %s\n", "model", "changed", "B/change", "enc GB/s/GPU", "app GB/s/GPU",
              "relay GB/s", "codec records");
  for (const Projection& p : r.cases) {
    std::printf("  %-6s %6g%% %9.3f %12.3f %12.3f %10.3f  %s\n", size_label(p.params).c_str(), 100 * p.change_rate,
                p.codec.bytes_per_change, p.encode_gb_s, p.apply_gb_s, p.relay_gb_s, p.codec.name.c_str());
  }
}

nlohmann::json case_json(const Projection& p) {
  nlohmann::json stages = nlohmann::json::object();
  for (const NamedStage& s : kStages) {
    stages[s.name] = {{"seconds", p.stages.*s.seconds}, {"share", p.stages.*s.seconds / p.delta_s}};
  }
  const DeltaFigure* paper = paper_delta_for(p.params, p.change_rate);
  return {{"params", p.params}, {"change_rate", p.change_rate}, {"model_bytes", p.model_bytes},
          {"wire_bytes", p.wire_bytes}, {"full_seconds", p.full_s}, {"delta_seconds", p.delta_s},
          {"speedup", p.full_s / p.delta_s}, {"bound", bound_stage(p.stages)}, {"stages", stages},
          {"rates", {{"codec_records", p.codec.name}, {"bytes_per_changed_element", p.codec.bytes_per_change},
                     {"encode_gb_s_per_gpu", p.encode_gb_s}, {"apply_gb_s_per_gpu", p.apply_gb_s},
                     {"relay_gb_s", p.relay_gb_s}}},
          {"paper_delta_seconds", paper ? nlohmann::json::array({paper->low_s, paper->high_s}) : nlohmann::json()}};
}

nlohmann::json calibration_json(const ProjectionReport& r) {
  if (!r.calibrated) return nullptr;
  nlohmann::json figures = nlohmann::json::array();
  for (const FullFigure& f : paper_full_figures()) {
    figures.push_back({{"label", f.label}, {"model_bytes", f.model_bytes}, {"paper_seconds", f.seconds},
                       {"dcr_seconds", full_refit_seconds(r.cluster, f.model_bytes, r.rates.frame_elements)}});
  }
  return {{"aggregate_gbit_s", r.cluster.aggregate_gbit_s}, {"full_overhead_s", r.cluster.full_overhead_s},
          {"figures", figures}};
}

nlohmann::json cluster_json(const Cluster& c) {
  return {{"bytes_per_param", c.bytes_per_param}, {"train_nodes", c.train_nodes}, {"gpus_per_node", c.gpus_per_node},
          {"rollout_nodes", c.rollout_nodes}, {"replica_gpus", c.replica_gpus}, {"fanout", c.fanout},
          {"node_gbit_s", c.node_gbit_s}, {"aggregate_gbit_s", aggregate_bytes_per_s(c) * 8 / 1e9},
          {"tree_levels", tree_levels(c.rollout_nodes, c.fanout)}};
}

}  // namespace

void print_projection(const ProjectionReport& r) {
  std::printf("dcr project: refit time for large models from stage rates measured on this machine\n\nassumptions:\n");
  for (const std::string& line : r.assumptions) std::printf("  - %s\n", line.c_str());
  if (r.calibrated) print_calibration(r);
  print_summary(r);
  print_stages(r);
  print_rates(r);
}

Status write_projection_json(const ProjectionReport& r, const std::string& path) {
  nlohmann::json cases = nlohmann::json::array();
  for (const Projection& p : r.cases) cases.push_back(case_json(p));
  const nlohmann::json doc = {{"assumptions", r.assumptions}, {"cluster", cluster_json(r.cluster)},
                              {"calibration", calibration_json(r)},
                              {"sources", {{"codec", r.rates.codec_source}, {"refit", r.rates.refit_source}}},
                              {"cases", cases}};
  std::ofstream out(path);
  DCR_REQUIRE(out.good(), Code::io_error, "cannot write the projection to '" + path + "'");
  out << doc.dump(2) << "\n";
  return out.good() ? Status::ok() : Status(Code::io_error, "writing '" + path + "' failed");
}

}  // namespace dcr
