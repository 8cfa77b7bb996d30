// `dcr export CHECKPOINT DIR --rollout-tp N [--rollout-ep M] [--serve-quant fp8-block]`: the vLLM sharded-state files of one
// serving TP group, straight from a full HF checkpoint (the files a rollout publishes with
// `dcr refit --serve-dir`, so the two can be compared byte for byte).
#include <boost/program_options.hpp>

#include <cstdio>
#include <string>

#include "dcr/ckpt/serving_files.h"
#include "src/cli/commands.h"
#include "src/cli/program_options.h"

namespace po = boost::program_options;

namespace dcr::cli {

int run_export(int argc, char** argv) {
  std::string in, out, family, quant_name = "none";
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
      ("model-family", po::value(&family), "family name or JSON path (default: from config.json)")
      ("serve-quant", po::value(&quant_name)->default_value(quant_name),
       "none, or fp8-block: linear weights as float8 e4m3 with weight_scale_inv per 128 x 128 block (README)");
  int exit_code = 0;
  if (!parse_in_out(argc, argv, desc, "export", "CHECKPOINT and DIR", &in, &out, &exit_code)) return exit_code;
  if (tp < 1 || ep < 1 || tp % ep != 0) return usage_error("export", "--rollout-ep must divide --rollout-tp (both >= 1)", desc);
  ServeQuant quant = ServeQuant::none;
  if (!parse_serve_quant(quant_name, &quant).is_ok()) return usage_error("export", "--serve-quant is none or fp8-block", desc);
  const Status s = export_serving_shards(in, out, tp, ep, family, quant);
  if (!s.is_ok()) {
    std::fprintf(stderr, "dcr export: %s\n", s.to_string().c_str());
    return 1;
  }
  std::printf("exported %s -> %s (%d serving ranks)\n", in.c_str(), out.c_str(), tp);
  return 0;
}

}  // namespace dcr::cli
