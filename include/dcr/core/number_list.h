// "0.5,1,3,5" -> {0.5, 1, 3, 5}: the comma-separated lists options take (--rates, --params-b, ...).
#pragma once

#include <string>
#include <vector>

#include "dcr/core/status.h"

namespace dcr {

// Every value must lie in (0, limit); `option` names the option in the error
// ("--rates: 'x' is not a number in (0, 100)").
Status parse_number_list(const std::string& text, const std::string& option, double limit, std::vector<double>* out);

}  // namespace dcr
