#include "src/job/publisher_lease.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <sstream>
#include <vector>

#include "dcr/auth/keyring.h"
#include "dcr/core/log.h"
#include "src/core/clock.h"

namespace dcr {
namespace {

constexpr double kSettleS = 0.5;  // between putting the lease and reading it back (two starting at once)

struct Holder {
  std::string owner, host;
  long pid = 0;
  uint64_t beat = 0;
  std::string describe() const { return "pid " + std::to_string(pid) + " on host " + host; }
};

std::string host_name() {
  char name[256] = {};
  return ::gethostname(name, sizeof name - 1) == 0 ? name : "?";
}

std::string format(const Holder& h) {
  return "dcr-publisher 1\nowner " + h.owner + "\nhost " + h.host + "\npid " + std::to_string(h.pid) + "\nbeat " +
         std::to_string(h.beat) + "\n";
}

// false for anything that is not a whole lease (a damaged object holds no lease).
bool parse(const std::string& text, Holder* h) {
  std::istringstream in(text);
  std::string first, owner, host, pid, beat;
  std::getline(in, first);
  in >> owner >> h->owner >> host >> h->host >> pid >> h->pid >> beat >> h->beat;
  return first == "dcr-publisher 1" && owner == "owner" && host == "host" && pid == "pid" && beat == "beat" &&
         !in.fail() && !h->owner.empty();
}

Status read(ObjectStore& store, Holder* h, bool* held) {
  std::vector<uint8_t> bytes;
  bool found = false;
  DCR_TRY(store.get(PublisherLease::kKey, &bytes, &found));
  *held = found && parse(std::string(bytes.begin(), bytes.end()), h);
  return Status::ok();
}

Status write(ObjectStore& store, const Holder& h) {
  const std::string text = format(h);
  return store.put(PublisherLease::kKey, reinterpret_cast<const uint8_t*>(text.data()), text.size(), true);
}

bool gone_from_this_host(const Holder& h) {
  return h.host == host_name() && h.pid > 0 && ::kill(static_cast<pid_t>(h.pid), 0) != 0 && errno == ESRCH;
}

Status live_holder(const ObjectStore& store, const Holder& h) {
  return Status(Code::invalid_argument,
                "store '" + store.describe() + "' is being published by another publisher (" + h.describe() +
                    ", its lease renewed while this one waited): two publishers on one prefix would build on each "
                    "other's versions; stop the other, or publish to another prefix");
}

// Waits while the lease there may be alive: returns once it is free to take (absent, damaged, its
// holder gone from this host, or its beat still for kStaleS); refuses a lease whose beat moves.
Status wait_for_free(ObjectStore& store, const std::function<void(const std::string&)>& note) {
  Holder seen;
  bool held = false;
  DCR_TRY(read(store, &seen, &held));
  if (!held || gone_from_this_host(seen)) return Status::ok();
  note("dcr refit: store '" + store.describe() + "' is leased by a publisher (" + seen.describe() +
       "); waiting up to " + std::to_string(static_cast<int>(PublisherLease::kStaleS)) + " s to see whether it is alive");
  const auto start = Clock::now();
  while (seconds_since(start) < PublisherLease::kStaleS) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    Holder now;
    DCR_TRY(read(store, &now, &held));
    if (!held || gone_from_this_host(now)) return Status::ok();
    if (now.owner != seen.owner || now.beat != seen.beat) return live_holder(store, now);
  }
  return Status::ok();
}

}  // namespace

Status PublisherLease::take(const std::string& url, const std::function<void(const std::string&)>& note,
                            std::unique_ptr<PublisherLease>* out) {
  std::unique_ptr<PublisherLease> lease(new PublisherLease());
  DCR_TRY(open_store(url, StoreAccess::write, &lease->store_).with_context("--store"));
  ObjectStore& store = *lease->store_;
  DCR_TRY(wait_for_free(store, note));
  const Holder mine{new_publication_id(), host_name(), static_cast<long>(::getpid()), 0};
  DCR_TRY(write(store, mine));
  std::this_thread::sleep_for(std::chrono::duration<double>(kSettleS));
  Holder there;
  bool held = false;
  DCR_TRY(read(store, &there, &held));
  DCR_REQUIRE(held && there.owner == mine.owner, Code::invalid_argument,
              "store '" + store.describe() + "': another publisher (" + (held ? there.describe() : "unknown") +
                  ") took the lease at the same moment; two publishers on one prefix are refused");
  lease->owner_ = mine.owner;
  lease->renewer_ = std::thread([l = lease.get()] { l->renew_until_stopped(); });
  *out = std::move(lease);
  return Status::ok();
}

void PublisherLease::renew_until_stopped() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, std::chrono::duration<double>(kBeatS), [this] { return stop_; })) {
    lock.unlock();
    Holder there;
    bool held = false;
    Status st = read(*store_, &there, &held);
    const bool taken = st.is_ok() && held && there.owner != owner_;
    if (st.is_ok() && !taken) {
      st = write(*store_, Holder{owner_, host_name(), static_cast<long>(::getpid()), ++beat_});
    }
    if (!st.is_ok()) DCR_LOG(warn, "refit", "renewing the publisher lease: %s", st.to_string().c_str());
    lock.lock();
    if (taken) {
      lost_ = "store '" + store_->describe() + "': another publisher (" + there.describe() +
              ") took this publisher's lease; this one stops (two publishers on one prefix are refused)";
      return;
    }
  }
}

Status PublisherLease::check() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lost_.empty() ? Status::ok() : Status(Code::aborted, lost_);
}

PublisherLease::~PublisherLease() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (renewer_.joinable()) renewer_.join();
}

Status PublisherLease::release() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (renewer_.joinable()) renewer_.join();
  DCR_TRY(check());
  return store_->remove(kKey);
}

}  // namespace dcr
