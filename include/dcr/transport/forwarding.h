// A Transport that passes every call to another one (which must outlive it): the base of the
// decorators that change one thing on a link, such as a fault injected into the frames
// (src/job/frame_faults.cc) or a test keeping a copy of what is sent. They override what they
// change and inherit the rest.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "dcr/transport/transport.h"

namespace dcr {

class ForwardingTransport : public Transport {
 public:
  explicit ForwardingTransport(Transport* inner) : inner_(inner) {}

  std::string name() const override { return inner_->name(); }
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  Status send(int peer, uint32_t channel, SharedBytes message) override {
    return inner_->send(peer, channel, std::move(message));
  }
  size_t sends_in_flight() const override { return inner_->sends_in_flight(); }
  std::vector<int> peers_with_sends_in_flight() const override { return inner_->peers_with_sends_in_flight(); }
  Status progress() override { return inner_->progress(); }
  Status try_receive(int from, uint32_t channel, Message* out, bool* received) override {
    return inner_->try_receive(from, channel, out, received);
  }

 protected:
  Transport* inner() const { return inner_; }

 private:
  Transport* inner_;
};

}  // namespace dcr
