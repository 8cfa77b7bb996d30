// Levelled logging to stderr: the one way the library reports what it does (it never prints to
// stdout). DCR_LOG_LEVEL (error, warn, info, debug; default info) and DCR_LOG_SUBSYS (a comma list
// of subsystems such as refit,recovery,journal,ckpt; default all) are read once.
#pragma once

#include <cstdarg>

namespace dcr {

enum class LogLevel { error = 0, warn = 1, info = 2, debug = 3 };

LogLevel log_level();
bool log_subsystem_enabled(const char* subsystem);
void log_message(LogLevel level, const char* subsystem, const char* format, ...)
    __attribute__((format(printf, 3, 4)));

}  // namespace dcr

#define DCR_LOG(level, subsystem, ...)                                        \
  do {                                                                        \
    if (::dcr::LogLevel::level <= ::dcr::log_level() &&                       \
        ::dcr::log_subsystem_enabled(subsystem))                              \
      ::dcr::log_message(::dcr::LogLevel::level, subsystem, __VA_ARGS__);     \
  } while (0)
