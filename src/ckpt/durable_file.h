// Crash-safe replacement of a file: write everything to temp_path(path), then commit_file.
#pragma once

#include <string>

#include "dcr/core/status.h"

namespace dcr {

std::string temp_path(const std::string& path);  // "<path>.tmp"

// fsyncs `tmp`, renames it over `path` and fsyncs the directory; removes `tmp` on failure.
Status commit_file(const std::string& tmp, const std::string& path);

}  // namespace dcr
