// Internal: the command-line parsing every dcr subcommand shares.
#pragma once

#include <boost/program_options.hpp>

#include "dcr/core/status.h"

namespace dcr {

// Parses the command line, then the INI file named by --config where `desc` has that option and
// it was given (command-line values win), into `vm`, and notifies. Errors name what is wrong:
// not_found for a config file that cannot be opened, invalid_argument for anything else (a word no
// option takes, such as the rest of an unquoted glob the shell expanded, included).
Status parse_program_options(int argc, char** argv, const boost::program_options::options_description& desc,
                             boost::program_options::variables_map* vm);

// For `dcr <command> IN OUT [options]`: parses `desc` and the two positional paths. Returns true to
// go on; false with *exit_code 0 after printing --help, or 2 after printing `usage_error` (or the
// parser's message, or "expects IN and OUT" in the words of `paths`) and the help.
bool parse_in_out(int argc, char** argv, const boost::program_options::options_description& desc,
                  const std::string& command, const std::string& paths, std::string* in, std::string* out,
                  int* exit_code);

// A boolean option: the bare switch (`--verify`) means true, and it still takes a value
// (`--verify false`, `--verify=0`, `verify = off` in an INI file). Default: *value.
boost::program_options::typed_value<bool>* switch_value(bool* value);

// Prints "dcr <command>: <message>" and the help to stderr; returns 2 (bad usage).
int usage_error(const std::string& command, const std::string& message,
                const boost::program_options::options_description& desc);

}  // namespace dcr
