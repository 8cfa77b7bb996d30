// `dcr export CHECKPOINT DIR --rollout-tp N [--rollout-ep M]`: the vLLM sharded-state files of one
// serving TP group, straight from a full HF checkpoint (the files a rollout publishes with
// `dcr refit --serve-dir`, so the two can be compared byte for byte).
#include <boost/program_options.hpp>

#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <string>

#include "dcr/ckpt/serving_files.h"
#include "src/cli/commands.h"

namespace po = boost::program_options;

namespace dcr::cli {

int run_export(int argc, char** argv) {
  std::string in, out, family;
  int tp = 1, ep = 1;
  po::options_description desc(
      "usage: dcr export CHECKPOINT DIR --rollout-tp N [options]\n\n"
      "Writes DIR/model-rank-<r>-part-0.safetensors for r in [0, N): each serving rank's parameters under\n"
      "vLLM's names and shapes (fused qkv_proj / gate_up_proj, experts.w13_weight / w2_weight, padded\n"
      "vocabulary), read from the HF checkpoint directory CHECKPOINT (config.json + model.safetensors or its\n"
      "index). The rules come from configs/models (README: supported families).\n\noptions");
  desc.add_options()
      ("help,h", "show this help")
      ("rollout-tp", po::value(&tp)->default_value(tp), "serving tensor-parallel degree")
      ("rollout-ep", po::value(&ep)->default_value(ep), "serving expert-parallel degree (divides --rollout-tp)")
      ("model-family", po::value(&family), "family name or JSON path (default: from config.json)");
  po::options_description files;
  files.add_options()("in", po::value(&in), "checkpoint")("out", po::value(&out), "output directory");
  po::options_description all;
  all.add(desc).add(files);
  po::positional_options_description positions;
  positions.add("in", 1).add("out", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(positions).run(), vm);
    if (vm.count("help")) {
      std::cout << desc << "\n";
      return 0;
    }
    po::notify(vm);
    if (in.empty() || out.empty()) throw std::invalid_argument("expects CHECKPOINT and DIR");
    if (tp < 1 || ep < 1 || tp % ep != 0) throw std::invalid_argument("--rollout-ep must divide --rollout-tp (both >= 1)");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dcr export: %s\n\n", e.what());
    std::cerr << desc << "\n";
    return 2;
  }
  const Status s = export_serving_shards(in, out, tp, ep, family);
  if (!s.is_ok()) {
    std::fprintf(stderr, "dcr export: %s\n", s.to_string().c_str());
    return 1;
  }
  std::printf("exported %s -> %s (%d serving ranks)\n", in.c_str(), out.c_str(), tp);
  return 0;
}

}  // namespace dcr::cli
