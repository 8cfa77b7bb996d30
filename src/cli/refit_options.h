// Internal to the cli: parsing `dcr refit`'s options.
#pragma once

#include "src/job/config.h"

namespace dcr {

// Parses argv (argv[0] is the subcommand) and checks the result. Prints --help and sets *exit_now
// when asked.
Status parse_refit_config(int argc, char** argv, RefitConfig* config, bool* exit_now);

}  // namespace dcr
