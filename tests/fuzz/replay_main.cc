// Runs a fuzz target over its built-in seeds and every file in the given directories (a corpus,
// crash files), so builds without libFuzzer exercise the harness under ctest. With --write-seeds
// DIR it writes the seeds as files instead (the libFuzzer corpus). Each target defines
// dcr_fuzz_seeds() beside LLVMFuzzerTestOneInput.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
std::vector<std::vector<uint8_t>> dcr_fuzz_seeds();

int main(int argc, char** argv) {
  const std::vector<std::vector<uint8_t>> seeds = dcr_fuzz_seeds();
  if (argc == 3 && std::string(argv[1]) == "--write-seeds") {
    std::filesystem::create_directories(argv[2]);
    for (size_t i = 0; i < seeds.size(); ++i) {
      std::ofstream out(std::string(argv[2]) + "/seed-" + std::to_string(i), std::ios::binary);
      out.write(reinterpret_cast<const char*>(seeds[i].data()), seeds[i].size());
    }
    std::printf("wrote %zu seeds to %s\n", seeds.size(), argv[2]);
    return 0;
  }
  size_t inputs = 0;
  for (const auto& frame : seeds) {
    LLVMFuzzerTestOneInput(frame.data(), frame.size());
    ++inputs;
  }
  for (int i = 1; i < argc; ++i) {
    for (const auto& entry : std::filesystem::directory_iterator(argv[i])) {
      std::ifstream in(entry.path(), std::ios::binary);
      std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
      ++inputs;
    }
  }
  std::printf("replayed %zu inputs\n", inputs);
  return inputs > 0 ? 0 : 1;
}
