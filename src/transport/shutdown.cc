#include "src/transport/shutdown.h"

#include <chrono>
#include <thread>

#include "dcr/core/log.h"
#include "src/transport/describe.h"

namespace dcr {
namespace {

using Clock = std::chrono::steady_clock;

bool past(Clock::time_point start, double seconds) {
  return std::chrono::duration<double>(Clock::now() - start).count() > seconds;
}

// Takes every message that has arrived; returns how many.
size_t drop_arrived(Transport& t) {
  Message scratch;
  size_t dropped = 0;
  for (bool got = true; got;) {
    got = false;
    if (!t.try_receive(kAnyPeer, kAnyChannel, &scratch, &got).is_ok()) break;
    dropped += got;
  }
  return dropped;
}

}  // namespace

bool barrier_dropping(Transport& t, MPI_Comm comm, double timeout_s, size_t* dropped) {
  MPI_Request request;
  MPI_Ibarrier(comm, &request);
  const Clock::time_point start = Clock::now();
  for (int done = 0; !done; std::this_thread::yield()) {
    *dropped += drop_arrived(t);
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (!done && past(start, timeout_s)) return false;
  }
  *dropped += drop_arrived(t);
  return true;
}

bool settle_for_shutdown(Transport& t, MPI_Comm comm, double sends_timeout_s, double ranks_timeout_s) {
  size_t dropped = 0;
  const Clock::time_point start = Clock::now();
  while (t.sends_in_flight() > 0 && !past(start, sends_timeout_s)) {
    dropped += drop_arrived(t);
    std::this_thread::yield();
  }
  const bool sent = t.sends_in_flight() == 0;
  if (!sent)
    DCR_LOG(warn, "transport", "rank %d: %s shutdown: %zu sends to %s still in flight after %.0f s",
            t.rank(), t.name().c_str(), t.sends_in_flight(),
            describe_ranks(t.peers_with_sends_in_flight()).c_str(), sends_timeout_s);
  if (!barrier_dropping(t, comm, ranks_timeout_s, &dropped))
    DCR_LOG(error, "transport", "rank %d: %s shutdown: other ranks did not reach it within %.0f s",
            t.rank(), t.name().c_str(), ranks_timeout_s);
  if (dropped > 0)
    DCR_LOG(warn, "transport", "rank %d: %s shutdown: dropped %zu messages nobody received", t.rank(),
            t.name().c_str(), dropped);
  return sent;
}

}  // namespace dcr
