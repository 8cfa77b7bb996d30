// dcr: one command-line program with subcommands.
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "src/cli/commands.h"

namespace {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(int argc, char** argv);
};

const Command kCommands[] = {
    {"refit", "the SPMD refit job: trainers -> relay tree -> rollouts (run under mpirun)", dcr::cli::run_refit_command},
    {"state", "each rank's committed version in a refit state directory", dcr::cli::run_state},
    {"bench", "benchmarks: 'dcr bench codec' (frame sizes, entropy bounds, GB/s)", dcr::cli::run_bench},
    {"project", "refit time for large models projected from rates measured here (--calibrate: vs the paper)", dcr::cli::run_project},
    {"convert", "convert a checkpoint between safetensors and HDF5 (.safetensors, .h5/.hdf5), bit for bit", dcr::cli::run_convert},
    {"export", "vLLM sharded-state serving files of every TP rank, from a full HF checkpoint", dcr::cli::run_export},
    {"keygen", "a job key file for authenticated (and encrypted) frames, or the next key appended to one", dcr::cli::run_keygen},
    {"info", "build configuration and library versions (MPI, UCX, HDF5, zstd, CUDA)", dcr::cli::run_info},
};

void print_usage(FILE* out) {
  std::fprintf(out,
               "dcr %s - delta-compressed refit of LLM policy weights\n\n"
               "usage: dcr <command> [options]    (dcr <command> --help for its options)\n\ncommands:\n",
               DCR_VERSION);
  for (const Command& c : kCommands) std::fprintf(out, "  %-8s %s\n", c.name, c.summary);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    print_usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (std::strcmp(argv[1], "--version") == 0) {
    std::printf("dcr %s\n", DCR_VERSION);
    return 0;
  }
  for (const Command& c : kCommands) {
    if (argv[1] != std::string(c.name)) continue;
    // Errors are Statuses; an exception reaching here is a bug or exhausted memory, reported as such
    // rather than by std::terminate's SIGABRT.
    try {
      return c.run(argc - 1, argv + 1);
    } catch (const std::bad_alloc&) {
      std::fprintf(stderr, "dcr %s: out of memory (an allocation failed); the input asks for more than this machine has\n",
                   c.name);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "dcr %s: internal error: %s\n", c.name, e.what());
    }
    return 1;
  }
  std::fprintf(stderr, "dcr: unknown command '%s'\n\n", argv[1]);
  print_usage(stderr);
  return 2;
}
