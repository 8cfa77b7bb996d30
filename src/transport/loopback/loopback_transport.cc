// The in-process loopback group: one inbox (a queue under a mutex) per rank; a send copies the
// bytes into the receiver's inbox, so it is complete when send returns.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>

#include "dcr/transport/transport.h"
#include "src/transport/describe.h"

namespace dcr {
namespace {

struct Inbox {
  std::mutex mutex;
  std::condition_variable arrived;
  std::deque<Message> messages;
};

bool matches(const Message& m, int from, uint32_t channel) {
  return (from == kAnyPeer || m.peer == from) && (channel == kAnyChannel || m.channel == channel);
}

// Moves the first message matching (from, channel) out of `inbox`; the caller holds its mutex.
bool take(Inbox& inbox, int from, uint32_t channel, Message* out) {
  auto it = std::find_if(inbox.messages.begin(), inbox.messages.end(),
                         [&](const Message& m) { return matches(m, from, channel); });
  if (it == inbox.messages.end()) return false;
  *out = std::move(*it);
  inbox.messages.erase(it);
  return true;
}

class LoopbackTransport : public Transport {
 public:
  LoopbackTransport(int rank, std::shared_ptr<std::vector<Inbox>> inboxes)
      : rank_(rank), inboxes_(std::move(inboxes)) {}

  std::string name() const override { return "loopback"; }
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(inboxes_->size()); }
  size_t sends_in_flight() const override { return 0; }
  std::vector<int> peers_with_sends_in_flight() const override { return {}; }
  Status progress() override { return Status::ok(); }

  Status send(int peer, uint32_t channel, SharedBytes message) override {
    DCR_TRY(check_send(peer, channel, message));
    Inbox& inbox = (*inboxes_)[peer];
    {
      std::lock_guard<std::mutex> lock(inbox.mutex);
      inbox.messages.push_back(Message{rank_, channel, *message});
    }
    inbox.arrived.notify_all();
    return Status::ok();
  }

  Status try_receive(int from, uint32_t channel, Message* out, bool* received) override {
    DCR_TRY(check_receive(from, channel));
    Inbox& inbox = (*inboxes_)[rank_];
    std::lock_guard<std::mutex> lock(inbox.mutex);
    *received = take(inbox, from, channel, out);
    return Status::ok();
  }

  // Sleeps on the inbox instead of polling.
  Status receive(int from, uint32_t channel, Message* out, double timeout_s) override {
    DCR_TRY(check_receive(from, channel));
    Inbox& inbox = (*inboxes_)[rank_];
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(timeout_s));
    std::unique_lock<std::mutex> lock(inbox.mutex);
    const bool found = inbox.arrived.wait_until(lock, deadline, [&] { return take(inbox, from, channel, out); });
    return found ? Status::ok() : receive_timeout(rank_, from, channel, timeout_s);
  }

 private:
  int rank_;
  std::shared_ptr<std::vector<Inbox>> inboxes_;
};

}  // namespace

std::vector<std::unique_ptr<Transport>> make_loopback_group(int size) {
  auto inboxes = std::make_shared<std::vector<Inbox>>(static_cast<size_t>(std::max(size, 0)));
  std::vector<std::unique_ptr<Transport>> group;
  for (int r = 0; r < size; ++r) group.push_back(std::make_unique<LoopbackTransport>(r, inboxes));
  return group;
}

}  // namespace dcr
