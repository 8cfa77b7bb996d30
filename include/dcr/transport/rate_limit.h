// Link emulation: a Transport that holds back sends to chosen peers so that each such link carries
// at most `bytes_per_s`. Sends wait in a per-peer queue, in order; each is posted to the inner
// transport when the emulated link would have carried its last byte (a token bucket per peer that
// fills at `bytes_per_s`, full at start; an idle link banks at most `burst_bytes`).
#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "dcr/transport/transport.h"

namespace dcr {

struct RateLimit {
  double bytes_per_s = 0;           // must be > 0
  size_t burst_bytes = 0;           // what an idle link may bank; 0: each message takes size / rate
  std::vector<int> peers;           // limited peers; empty: every peer
};

class RateLimitedTransport : public Transport {
 public:
  // Wraps `inner`, which must outlive this object.
  RateLimitedTransport(Transport* inner, RateLimit limit);
  // Wraps and owns `inner`.
  RateLimitedTransport(std::unique_ptr<Transport> inner, RateLimit limit);

  std::string name() const override;
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  Status send(int peer, uint32_t channel, SharedBytes message) override;
  size_t sends_in_flight() const override;
  std::vector<int> peers_with_sends_in_flight() const override;
  Status progress() override;
  Status try_receive(int from, uint32_t channel, Message* out, bool* received) override;

 private:
  using Clock = std::chrono::steady_clock;
  struct Held {
    uint32_t channel;
    SharedBytes message;
  };
  struct Bucket {
    bool limited = false;
    double tokens = 0;
    Clock::time_point refilled;
    std::deque<Held> held;
  };

  void refill(Bucket* b, bool idle) const;
  Status post_due(int peer);
  Status post_all_due();

  std::unique_ptr<Transport> owned_;
  Transport* inner_;
  RateLimit limit_;
  Status config_;  // not ok when `limit` was impossible; every send then returns it
  std::vector<Bucket> buckets_;  // one per peer rank
};

}  // namespace dcr
