#include "src/cli/program_options.h"

#include "src/core/files.h"

#include <fstream>
#include <string>

namespace dcr {

namespace po = boost::program_options;

Status parse_program_options(int argc, char** argv, const po::options_description& desc, po::variables_map* vm) {
  try {
    po::store(po::parse_command_line(argc, argv, desc), *vm);
    if (vm->count("config")) {
      const std::string path = (*vm)["config"].as<std::string>();
      DCR_TRY(files::check_regular_file(path, 1 << 20, nullptr).with_context("config file"));
      std::ifstream file(path);
      DCR_REQUIRE(file.good(), Code::not_found, "cannot open config file '" + path + "'");
      po::store(po::parse_config_file(file, desc), *vm);
    }
    po::notify(*vm);
  } catch (const std::exception& e) {
    return Status(Code::invalid_argument, e.what());
  }
  return Status::ok();
}

}  // namespace dcr
