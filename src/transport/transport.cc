// The blocking calls every backend shares: receive and wait_sends as progress loops with a deadline.
#include "dcr/transport/transport.h"

#include <algorithm>
#include <chrono>
#include <sstream>
#include <thread>

#include "src/transport/backoff.h"
#include "src/transport/describe.h"

namespace dcr {
namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point deadline_after(double timeout_s) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(timeout_s));
}

// Waiting ranks often share cores with working ones (relays and rollouts beside trainers, or an
// oversubscribed node): after 256 quick polls they sleep 10 us doubling to 200 us.
Backoff idle_backoff() { return Backoff(256, std::chrono::microseconds(10), std::chrono::microseconds(200)); }

}  // namespace

Status Transport::wait_sends(double timeout_s) {
  const Clock::time_point deadline = deadline_after(timeout_s);
  Backoff backoff = idle_backoff();
  while (sends_in_flight() > 0) {
    DCR_TRY(progress());
    if (sends_in_flight() == 0) break;
    if (Clock::now() >= deadline) {
      std::ostringstream text;
      text << "rank " << rank() << ": " << sends_in_flight() << " sends to "
           << describe_ranks(peers_with_sends_in_flight()) << " still in flight after " << timeout_s
           << " s";
      return Status(Code::unavailable, text.str());
    }
    backoff.idle();
  }
  return Status::ok();
}

Status Transport::receive(int from, uint32_t channel, Message* out, double timeout_s) {
  DCR_TRY(check_receive(from, channel));
  const Clock::time_point deadline = deadline_after(timeout_s);
  Backoff backoff = idle_backoff();
  for (;;) {
    bool received = false;
    DCR_TRY(try_receive(from, channel, out, &received));
    if (received) return Status::ok();
    if (Clock::now() >= deadline) return receive_timeout(rank(), from, channel, timeout_s);
    backoff.idle();
  }
}

Status Transport::check_send(int peer, uint32_t channel, const SharedBytes& message) const {
  DCR_REQUIRE(peer >= 0 && peer < size(), Code::invalid_argument,
              "rank " + std::to_string(rank()) + ": cannot send to rank " + std::to_string(peer) +
                  ", the group has ranks 0.." + std::to_string(size() - 1));
  DCR_REQUIRE(channel != kAnyChannel, Code::invalid_argument,
              "rank " + std::to_string(rank()) + ": cannot send to rank " + std::to_string(peer) +
                  " on kAnyChannel, which is reserved for receiving");
  DCR_REQUIRE(message != nullptr, Code::invalid_argument,
              "rank " + std::to_string(rank()) + ": send to rank " + std::to_string(peer) +
                  " on channel " + std::to_string(channel) + " has no message (null pointer)");
  return Status::ok();
}

Status Transport::check_receive(int from, uint32_t channel) const {
  DCR_REQUIRE(from == kAnyPeer || (from >= 0 && from < size()), Code::invalid_argument,
              "rank " + std::to_string(rank()) + ": cannot receive from rank " + std::to_string(from) +
                  ", the group has ranks 0.." + std::to_string(size() - 1));
  return Status::ok();
}

}  // namespace dcr
