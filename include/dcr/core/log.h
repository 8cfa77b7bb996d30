// Levelled logging to stderr; the level comes from DCR_LOG_LEVEL (error, warn, info, debug) once.
#pragma once

#include <cstdarg>

namespace dcr {

enum class LogLevel { error = 0, warn = 1, info = 2, debug = 3 };

LogLevel log_level();
void log_message(LogLevel level, const char* subsystem, const char* format, ...)
    __attribute__((format(printf, 3, 4)));

}  // namespace dcr

#define DCR_LOG(level, subsystem, ...)                                        \
  do {                                                                        \
    if (::dcr::LogLevel::level <= ::dcr::log_level())                         \
      ::dcr::log_message(::dcr::LogLevel::level, subsystem, __VA_ARGS__);     \
  } while (0)
