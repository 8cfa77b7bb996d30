// `dcr project`: refit time for large models on the paper's clusters, projected from stage rates
// measured on this machine (`dcr bench codec --json`, optionally `dcr refit --json`).
#include <boost/program_options.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "dcr/project/rates.h"
#include "dcr/project/report.h"
#include "dcr/core/number_list.h"
#include "src/cli/commands.h"
#include "src/cli/program_options.h"

namespace po = boost::program_options;

namespace dcr::cli {

namespace {

struct ProjectOptions {
  std::string codec_json, codec_case = "adam", refit_json, json;
  std::string params_b = "30,120,1000", change_rates = "3,5";
  bool calibrate = false, fit_overhead = true;
  Cluster cluster;
};

// "30,120,1000" -> {30, 120, 1000}; every value in (0, limit).
std::vector<double> parse_list(const std::string& option, const std::string& text, double limit) {
  std::vector<double> values;
  const Status s = parse_number_list(text, option, limit, &values);
  if (!s.is_ok()) throw std::invalid_argument(s.message());
  return values;
}

po::options_description describe(ProjectOptions* o) {
  Cluster& c = o->cluster;
  po::options_description desc(
      "dcr project: project full and delta refit time for large models on a training -> rollout cluster pair\n"
      "from stage rates measured on this machine. Link rates are Gbit/s, codec rates GB/s of model bytes.\n\noptions");
  desc.add_options()
      ("help,h", "show this help")
      ("codec-json", po::value(&o->codec_json)->required(), "output of `dcr bench codec --json` (required)")
      ("codec-case", po::value(&o->codec_case)->default_value(o->codec_case),
       "use the codec records whose case starts with this (adam: the realistic change model)")
      ("refit-json", po::value(&o->refit_json), "output of `dcr refit --json`: relay forwarding and commit rates")
      ("params-b", po::value(&o->params_b)->default_value(o->params_b), "model sizes in billions of parameters")
      ("bytes-per-param", po::value(&c.bytes_per_param)->default_value(c.bytes_per_param), "bytes per parameter")
      ("change-rates", po::value(&o->change_rates)->default_value(o->change_rates), "changed percent per step")
      ("train-nodes", po::value(&c.train_nodes)->default_value(c.train_nodes), "training nodes")
      ("gpus-per-node", po::value(&c.gpus_per_node)->default_value(c.gpus_per_node), "GPUs per node")
      ("rollout-nodes", po::value(&c.rollout_nodes)->default_value(c.rollout_nodes), "rollout nodes")
      ("replica-gpus", po::value(&c.replica_gpus)->default_value(c.replica_gpus),
       "rollout GPUs that hold one copy of the model (each applies 1/this of it)")
      ("node-gbps", po::value(&c.node_gbit_s)->default_value(c.node_gbit_s), "inter-cluster Gbit/s per node")
      ("aggregate-gbps", po::value(&c.aggregate_gbit_s)->default_value(c.aggregate_gbit_s),
       "effective aggregate inter-cluster Gbit/s (0: min(train, rollout nodes) x --node-gbps)")
      ("fanout", po::value(&c.fanout)->default_value(c.fanout), "children per relay")
      ("encode-gbps-per-gpu", po::value(&c.encode_gb_s_per_gpu)->default_value(c.encode_gb_s_per_gpu),
       "GB/s one training GPU encodes (0: one CPU core's rate from --codec-json)")
      ("apply-gbps-per-gpu", po::value(&c.apply_gb_s_per_gpu)->default_value(c.apply_gb_s_per_gpu),
       "GB/s one rollout GPU applies (0: one CPU core's rate from --codec-json)")
      ("calibrate", po::bool_switch(&o->calibrate),
       "fit the aggregate bandwidth (and overhead) to the paper's full refits (120B: 750 s, 1T: 87.5 min) and "
       "add the paper's delta cases (120B at 3% and 5%, 1T at 3%) beside its figures")
      ("fit-overhead", switch_value(&o->fit_overhead),
       "with --calibrate: also fit a fixed full-refit overhead")
      ("json", po::value(&o->json), "also write the projection as JSON to this file");
  return desc;
}

// The --params-b x --change-rates grid, plus the paper's delta cases when calibrating.
std::vector<std::pair<double, double>> cases(const ProjectOptions& o) {
  std::vector<std::pair<double, double>> list;
  for (double b : parse_list("--params-b", o.params_b, 1e6)) {
    for (double rate : parse_list("--change-rates", o.change_rates, 100)) list.emplace_back(b * 1e9, rate / 100);
  }
  if (o.calibrate) {
    for (const DeltaFigure& f : paper_delta_figures()) {
      const bool listed = std::any_of(list.begin(), list.end(), [&](const std::pair<double, double>& c) {
        return paper_delta_for(c.first, c.second) == &f;
      });
      if (!listed) list.emplace_back(f.params, f.change_rate);
    }
  }
  std::sort(list.begin(), list.end());
  return list;
}

Status build_report(const ProjectOptions& o, const std::vector<std::pair<double, double>>& list,
                    ProjectionReport* report) {
  report->cluster = o.cluster;
  DCR_TRY(check_cluster(report->cluster));
  DCR_TRY(load_codec_json(o.codec_json, o.codec_case, &report->rates));
  if (!o.refit_json.empty()) DCR_TRY(load_refit_json(o.refit_json, &report->rates));
  if (o.calibrate) {
    DCR_TRY(calibrate(paper_full_figures(), o.fit_overhead, report->rates.frame_elements, &report->cluster));
  }
  report->calibrated = o.calibrate;
  report->assumptions = assumptions(report->cluster, report->rates, o.calibrate);
  for (const auto& [params, rate] : list) {
    Projection p;
    DCR_TRY(project_refit(report->cluster, report->rates, params, rate, &p));
    report->cases.push_back(p);
  }
  return Status::ok();
}

}  // namespace

int run_project(int argc, char** argv) {
  ProjectOptions o;
  const po::options_description desc = describe(&o);
  std::vector<std::pair<double, double>> list;
  try {
    po::variables_map vm;
    po::store(po::parse_command_line(argc, argv, desc), vm);
    if (vm.count("help")) {
      std::cout << desc << "\n";
      return 0;
    }
    po::notify(vm);
    list = cases(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dcr project: %s\n\n", e.what());
    std::cerr << desc << "\n";
    return 2;
  }
  ProjectionReport report;
  Status s = build_report(o, list, &report);
  if (s.is_ok()) {
    print_projection(report);
    if (!o.json.empty()) s = write_projection_json(report, o.json);
  }
  if (!s.is_ok()) {
    std::fprintf(stderr, "dcr project: %s\n", s.to_string().c_str());
    return 1;
  }
  return 0;
}

}  // namespace dcr::cli
