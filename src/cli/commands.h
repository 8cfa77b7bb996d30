// Entry points of the dcr subcommands; each parses its own options with Boost.Program_options.
// argv[0] is the subcommand name. Exit codes: 0 success, 1 failure, 2 bad usage.
#pragma once

namespace dcr::cli {

int run_bench(int argc, char** argv);
int run_convert(int argc, char** argv);
int run_export(int argc, char** argv);
int run_info(int argc, char** argv);
int run_keygen(int argc, char** argv);
int run_refit_command(int argc, char** argv);
int run_state(int argc, char** argv);
int run_project(int argc, char** argv);

}  // namespace dcr::cli
