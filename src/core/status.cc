#include "dcr/core/status.h"

namespace dcr {

const char* code_name(Code code) {
  switch (code) {
    case Code::ok: return "ok";
    case Code::invalid_argument: return "invalid argument";
    case Code::corrupt: return "corrupt";
    case Code::base_mismatch: return "base mismatch";
    case Code::target_mismatch: return "target mismatch";
    case Code::io_error: return "I/O error";
    case Code::not_found: return "not found";
    case Code::unavailable: return "unavailable";
    case Code::aborted: return "aborted";
    case Code::internal: return "internal error";
  }
  return "unknown";
}

std::string Status::to_string() const {
  if (is_ok()) return "ok";
  return std::string(code_name(code_)) + ": " + message_;
}

Status Status::with_context(const std::string& context) const {
  if (is_ok()) return *this;
  return Status(code_, context + ": " + message_);
}

}  // namespace dcr
