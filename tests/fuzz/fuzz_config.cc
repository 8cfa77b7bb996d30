// libFuzzer target for the INI configuration `dcr refit --config FILE` reads: every input, as a
// config file, must end in a RefitConfig or a Status naming what is wrong (then, for a parsed
// config, check_refit_config's verdict), never a crash, an escaping exception or a hang.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "src/job/config.h"
#include "fuzz/fuzz_support.h"
#include "src/cli/refit_options.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = dcr::test::fuzz_file(".ini", data, size);
  std::string arg0 = "refit", arg1 = "--config";
  std::vector<char*> argv = {arg0.data(), arg1.data(), const_cast<char*>(path.c_str())};
  dcr::RefitConfig config;
  bool exit_now = false;
  if (dcr::parse_refit_config(static_cast<int>(argv.size()), argv.data(), &config, &exit_now).is_ok()) {
    (void)dcr::check_refit_config(config);
  }
  return 0;
}

// The shipped configurations.
std::vector<std::vector<uint8_t>> dcr_fuzz_seeds() {
  std::vector<std::vector<uint8_t>> seeds;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(DCR_SOURCE_DIR) + "/configs")) {
    if (entry.path().extension() == ".ini") seeds.push_back(dcr::test::file_bytes(entry.path().string()));
  }
  return seeds;
}
