// "0.5,1,3,5" -> {0.5, 1, 3, 5}: percentages in (0, 100), as the --rates options take them.
#pragma once

#include <string>
#include <vector>

#include "dcr/core/status.h"

namespace dcr {

// `option` names the option in the error ("--rates: 'x' is not a percentage in (0, 100)").
Status parse_percent_list(const std::string& text, const std::string& option, std::vector<double>* out);

}  // namespace dcr
