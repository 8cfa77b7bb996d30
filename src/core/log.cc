#include "dcr/core/log.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace dcr {

namespace {
LogLevel read_level() {
  const char* env = std::getenv("DCR_LOG_LEVEL");
  if (env == nullptr) return LogLevel::info;
  if (std::strcmp(env, "error") == 0) return LogLevel::error;
  if (std::strcmp(env, "warn") == 0) return LogLevel::warn;
  if (std::strcmp(env, "debug") == 0) return LogLevel::debug;
  return LogLevel::info;
}
const char* level_name(LogLevel level) {
  switch (level) {
    case LogLevel::error: return "ERROR";
    case LogLevel::warn: return "WARN";
    case LogLevel::info: return "INFO";
    case LogLevel::debug: return "DEBUG";
  }
  return "?";
}
}  // namespace

bool log_subsystem_enabled(const char* subsystem) {
  static const std::string mask = [] {
    const char* env = std::getenv("DCR_LOG_SUBSYS");
    return env && *env && std::strcmp(env, "all") != 0 ? "," + std::string(env) + "," : std::string();
  }();
  return mask.empty() || mask.find("," + std::string(subsystem) + ",") != std::string::npos;
}

LogLevel log_level() {
  static const LogLevel level = read_level();
  return level;
}

void log_message(LogLevel level, const char* subsystem, const char* format, ...) {
  char line[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(line, sizeof(line), format, args);
  va_end(args);
  std::fprintf(stderr, "dcr %s [%s] %s\n", level_name(level), subsystem, line);
}

}  // namespace dcr
