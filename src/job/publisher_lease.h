// Internal to the refit: the one publisher of a store prefix (--role publish). Two publishers on
// one prefix would each build on versions the other wrote and publish a chain no follower can
// apply, so trainer 0 of a publisher job holds a lease, the object PUBLISHER:
//   dcr-publisher 1 / owner <random id> / host <name> / pid <pid> / beat <n>
// and renews it (beat n+1) on a thread every kBeatS seconds. A starting publisher takes the lease
// when there is none, when its holder was a process of this host that is gone (a publisher killed
// and run again), or when its beat has not moved for kStaleS seconds on the starter's own clock
// (its holder died on another host); a lease whose beat moves belongs to a live publisher, and the
// start is refused naming it. Clocks of two hosts are never compared. A holder that finds another
// owner in the object (it was taken while it stalled) stops publishing.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "dcr/core/status.h"
#include "dcr/store/object_store.h"

namespace dcr {

class PublisherLease {
 public:
  static constexpr double kBeatS = 2, kStaleS = 15;
  static constexpr const char* kKey = "PUBLISHER";

  // Takes the lease of the store `url` names (its own connection: the renewing thread's), waiting
  // up to kStaleS for a silent holder; `note` says what it waits for. invalid_argument naming the
  // live holder.
  static Status take(const std::string& url, const std::function<void(const std::string&)>& note,
                     std::unique_ptr<PublisherLease>* out);
  ~PublisherLease();  // stops renewing; the object stays (release() removes it)

  // ok while this publisher holds the lease; aborted naming the publisher that took it.
  Status check() const;
  // Stops renewing and removes the object (the publisher finished; the next may start at once).
  Status release();

 private:
  PublisherLease() = default;
  void renew_until_stopped();

  std::unique_ptr<ObjectStore> store_;
  std::string owner_;  // this publisher's id in the lease
  uint64_t beat_ = 0;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::string lost_;  // why the lease was lost ("" while held)
  std::thread renewer_;
};

}  // namespace dcr
