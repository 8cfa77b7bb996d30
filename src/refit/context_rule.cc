#include "src/refit/context_rule.h"

#include <algorithm>

namespace dcr {

namespace {
// Sends held up less than this tell nothing about the link: it kept up with the encoders.
constexpr double kLeastHeldS = 1e-4;
}  // namespace

void ContextRule::start(ContextMode mode, double given_gbps, int encode_threads) {
  mode_ = mode;
  given_ = given_gbps > 0;
  link_bytes_per_s_ = given_gbps * 1e9 / 8;
  encode_threads_ = std::max(1, encode_threads);
}

void ContextRule::observe_sends(uint64_t bytes, double send_s) {
  if (given_ || bytes == 0) return;
  link_bytes_per_s_ = static_cast<double>(bytes) / std::max(send_s, kLeastHeldS);
}

void ContextRule::observe_apply(double apply_s, uint64_t changed, int trainers) {
  if (changed > 0) apply_s_per_change_ = apply_s * trainers / static_cast<double>(changed);
}

void ContextRule::prepare(EncodeOptions* options) const {
  options->contexts = mode_ != ContextMode::off;
  options->context_rule = nullptr;
  if (mode_ == ContextMode::automatic) options->context_rule = [this](const ContextQuestion& q) { return take(q); };
}

bool ContextRule::take(const ContextQuestion& q) const {
  if (link_bytes_per_s_ <= 0) return true;  // nothing known of the link: the slow-link choice
  const double link_s = q.plain_bytes / link_bytes_per_s_;
  const double encode_s = q.encode_s / encode_threads_;
  const double apply_s = static_cast<double>(q.changed) * apply_s_per_change_;
  return link_s > kSlowdown * std::max(encode_s, apply_s);
}

const char* ContextRule::link_source() const {
  if (given_) return "given";
  return link_bytes_per_s_ > 0 ? "measured" : "unknown";
}

}  // namespace dcr
