// Internal: the command-line parsing every dcr subcommand shares.
#pragma once

#include <boost/program_options.hpp>

#include "dcr/core/status.h"

namespace dcr {

// Parses the command line, then the INI file named by --config where `desc` has that option and
// it was given (command-line values win), into `vm`, and notifies. Errors name what is wrong:
// not_found for a config file that cannot be opened, invalid_argument for anything else.
Status parse_program_options(int argc, char** argv, const boost::program_options::options_description& desc,
                             boost::program_options::variables_map* vm);

}  // namespace dcr
