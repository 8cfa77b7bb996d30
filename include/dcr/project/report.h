// The output of `dcr project`: assumptions, calibration, and one row per projected case, as tables
// on stdout and as JSON.
#pragma once

#include <string>
#include <vector>

#include "dcr/core/status.h"
#include "dcr/project/projection.h"

namespace dcr {

struct ProjectionReport {
  Cluster cluster;
  MachineRates rates;
  bool calibrated = false;
  std::vector<std::string> assumptions;
  std::vector<Projection> cases;
};

void print_projection(const ProjectionReport& report);
Status write_projection_json(const ProjectionReport& report, const std::string& path);

}  // namespace dcr
