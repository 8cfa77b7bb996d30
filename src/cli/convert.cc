// `dcr convert IN OUT`: converts a checkpoint between safetensors and the canonical HDF5 checkpoint,
// bit for bit (formats chosen by extension).
#include <boost/program_options.hpp>

#include <cstdio>
#include <string>

#include "dcr/ckpt/checkpoint.h"
#include "dcr/model/change_model.h"
#include "dcr/model/presets.h"
#include "src/cli/commands.h"
#include "src/cli/program_options.h"

namespace po = boost::program_options;

namespace dcr::cli {

namespace {
Status write_preset(const std::string& name, const std::string& out, uint64_t version) {
  Manifest manifest;
  DCR_TRY(make_preset(name, &manifest));
  ChangeModelOptions options;
  options.seed = 1;
  std::unique_ptr<ChangeModel> model;
  DCR_TRY(ChangeModel::create(manifest, options, &model));
  return save_checkpoint(out, manifest, model->snapshot(), version);
}
}  // namespace

int run_convert(int argc, char** argv) {
  std::string in, out;
  uint64_t version = 0;
  po::options_description desc(
      "usage: dcr convert IN OUT [options]\n\n"
      "Converts a checkpoint bit for bit between safetensors (.safetensors) and the canonical HDF5 checkpoint\n"
      "(.h5 or .hdf5: one dataset per tensor under /tensors, '/' in names stored as '|', each verified by hash\n"
      "on reading). Either direction, or to the same format. IN may also be preset:NAME: the embedded model's\n"
      "initial weights (seeded change model), to try the tools without a checkpoint of one's own.\n\noptions");
  desc.add_options()
      ("help,h", "show this help")
      ("version", po::value(&version)->default_value(version), "version recorded in an HDF5 output (base is 0)");
  int exit_code = 0;
  if (!parse_in_out(argc, argv, desc, "convert", "IN and OUT", &in, &out, &exit_code)) return exit_code;
  const Status s = in.rfind("preset:", 0) == 0 ? write_preset(in.substr(7), out, version)
                                                : convert_checkpoint(in, out, version);
  if (!s.is_ok()) {
    std::fprintf(stderr, "dcr convert: %s\n", s.to_string().c_str());
    return 1;
  }
  std::printf("converted %s -> %s\n", in.c_str(), out.c_str());
  return 0;
}

}  // namespace dcr::cli
