#include "dcr/core/number_list.h"

#include <sstream>

namespace dcr {

Status parse_number_list(const std::string& text, const std::string& option, double limit, std::vector<double>* out) {
  out->clear();
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    double value = 0;
    // Plain decimal only: strtod would also read hex ("0x10" as 16), "inf" and "nan".
    const bool decimal = item.find_first_not_of("0123456789.eE+-") == std::string::npos;
    if (decimal) try {
      value = std::stod(item, &used);
    } catch (const std::exception&) {
    }
    std::ostringstream range;
    range << "(0, " << limit << ")";
    DCR_REQUIRE(used != 0 && used == item.size() && value > 0 && value < limit, Code::invalid_argument,
                option + ": '" + item + "' is not a number in " + range.str());
    out->push_back(value);
  }
  DCR_REQUIRE(!out->empty(), Code::invalid_argument, option + " is empty");
  return Status::ok();
}

}  // namespace dcr
