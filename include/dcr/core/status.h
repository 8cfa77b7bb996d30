// One error model for all of dcr: functions that can fail return a Status; the first function that
// sees an error describes it (what, where, which value), callers add context and pass it up.
#pragma once

#include <string>
#include <utility>

namespace dcr {

enum class Code {
  ok = 0,
  invalid_argument,  // a caller or a config asked for something impossible
  corrupt,           // bytes that fail validation (frame, journal, file)
  base_mismatch,     // destination holds neither the base nor the target of a frame
  target_mismatch,   // bits after apply differ from the frame's target hash (apply was undone)
  io_error,
  not_found,
  unavailable,       // optional component absent (weights not fetched, no GPU), peer silent
  aborted,           // a joint commit decided not to commit
  internal,
};

const char* code_name(Code code);

class Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status ok() { return Status(); }

  bool is_ok() const { return code_ == Code::ok; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string to_string() const;
  // Prefixes context ("frame 12 of tensor 'wq': ") to the message; keeps the code.
  Status with_context(const std::string& context) const;

 private:
  Code code_ = Code::ok;
  std::string message_;
};

}  // namespace dcr

// Returns early with the failing Status of `expr`.
#define DCR_TRY(expr)                               \
  do {                                              \
    ::dcr::Status dcr_try_status_ = (expr);         \
    if (!dcr_try_status_.is_ok()) return dcr_try_status_; \
  } while (0)

// Returns a Status with `code` when `cond` is false; the message is built only on failure.
#define DCR_REQUIRE(cond, code, msg)                        \
  do {                                                      \
    if (!(cond)) return ::dcr::Status((code), (msg));       \
  } while (0)
