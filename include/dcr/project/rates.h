// Reads the stage rates a projection starts from: the records of `dcr bench codec --json` and,
// optionally, the steps of `dcr refit --json`. Errors name the file, the record and the key.
#pragma once

#include <string>

#include "dcr/core/status.h"
#include "dcr/project/projection.h"

namespace dcr {

// Keeps the codec records whose case starts with `case_prefix` (e.g. "adam"), by change rate.
Status parse_codec_json(const std::string& text, const std::string& source, const std::string& case_prefix,
                        MachineRates* rates);
// Relay rate (wire bytes / relay seconds over the delta steps) and the median commit time.
Status parse_refit_json(const std::string& text, const std::string& source, MachineRates* rates);

Status load_codec_json(const std::string& path, const std::string& case_prefix, MachineRates* rates);
Status load_refit_json(const std::string& path, MachineRates* rates);

}  // namespace dcr
