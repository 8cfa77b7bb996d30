// RateLimitedTransport: per-peer token buckets in front of any transport.
#include "dcr/transport/rate_limit.h"

#include <algorithm>
#include <cmath>
#include <string>


namespace dcr {

RateLimitedTransport::RateLimitedTransport(Transport* inner, RateLimit limit)
    : inner_(inner), limit_(std::move(limit)), buckets_(static_cast<size_t>(inner->size())) {
  if (!(limit_.bytes_per_s > 0) || !std::isfinite(limit_.bytes_per_s)) {
    config_ = Status(Code::invalid_argument, "rank " + std::to_string(rank()) + ": rate limit of " +
                                                 std::to_string(limit_.bytes_per_s) +
                                                 " bytes/s is not a positive rate");
  }
  for (int peer = 0; peer < size(); ++peer) {
    Bucket& b = buckets_[peer];
    b.limited = limit_.peers.empty() ||
                std::find(limit_.peers.begin(), limit_.peers.end(), peer) != limit_.peers.end();
    b.tokens = static_cast<double>(limit_.burst_bytes);
    b.refilled = Clock::now();
  }
  for (int peer : limit_.peers) {
    if ((peer < 0 || peer >= size()) && config_.is_ok())
      config_ = Status(Code::invalid_argument, "rank " + std::to_string(rank()) +
                                                   ": cannot rate-limit rank " + std::to_string(peer) +
                                                   ", the group has ranks 0.." + std::to_string(size() - 1));
  }
}

RateLimitedTransport::RateLimitedTransport(std::unique_ptr<Transport> inner, RateLimit limit)
    : RateLimitedTransport(inner.get(), std::move(limit)) {
  owned_ = std::move(inner);
}

std::string RateLimitedTransport::name() const { return inner_->name() + "+rate_limit"; }

Status RateLimitedTransport::send(int peer, uint32_t channel, SharedBytes message) {
  DCR_TRY(config_);
  DCR_TRY(check_send(peer, channel, message));
  Bucket& b = buckets_[peer];
  if (!b.limited) return inner_->send(peer, channel, std::move(message));
  if (b.held.empty()) refill(&b, true);
  b.held.push_back(Held{channel, std::move(message)});
  return post_due(peer);
}

// The tokens the link has earned since the last refill: while messages wait it is busy carrying
// them; an idle link banks at most a burst.
void RateLimitedTransport::refill(Bucket* b, bool idle) const {
  const Clock::time_point now = Clock::now();
  b->tokens += std::chrono::duration<double>(now - b->refilled).count() * limit_.bytes_per_s;
  if (idle) b->tokens = std::min(b->tokens, static_cast<double>(limit_.burst_bytes));
  b->refilled = now;
}

size_t RateLimitedTransport::sends_in_flight() const {
  size_t held = 0;
  for (const Bucket& b : buckets_) held += b.held.size();
  return held + inner_->sends_in_flight();
}

std::vector<int> RateLimitedTransport::peers_with_sends_in_flight() const {
  std::vector<int> peers = inner_->peers_with_sends_in_flight();
  for (int peer = 0; peer < size(); ++peer)
    if (!buckets_[peer].held.empty()) peers.push_back(peer);
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  return peers;
}

Status RateLimitedTransport::progress() {
  DCR_TRY(post_all_due());
  return inner_->progress();
}

Status RateLimitedTransport::try_receive(int from, uint32_t channel, Message* out, bool* received) {
  DCR_TRY(post_all_due());
  return inner_->try_receive(from, channel, out, received);
}

// Refills `peer`'s bucket and posts each held message once the tokens cover all of it: a message
// reaches the inner transport when the emulated link has carried its last byte.
Status RateLimitedTransport::post_due(int peer) {
  Bucket& b = buckets_[peer];
  if (b.held.empty()) return Status::ok();
  refill(&b, false);
  while (!b.held.empty()) {
    const double bytes = static_cast<double>(b.held.front().message->size());
    if (b.tokens < bytes) break;
    b.tokens -= bytes;
    Held next = std::move(b.held.front());
    b.held.pop_front();
    DCR_TRY(inner_->send(peer, next.channel, std::move(next.message)));
  }
  return Status::ok();
}

Status RateLimitedTransport::post_all_due() {
  for (int peer = 0; peer < size(); ++peer) DCR_TRY(post_due(peer));
  return Status::ok();
}

}  // namespace dcr
