// --fault: trainer 0's link with a fault applied to the frames of one version as they are sent, so
// that the library's data path carries no test code. A decorator of the Transport, as
// RateLimitedTransport is: it changes frames, never the protocol.
#include <set>

#include "dcr/auth/seal.h"
#include "dcr/codec/frame.h"
#include "dcr/transport/forwarding.h"
#include "src/job/faults.h"

namespace dcr {
namespace {

class FrameFaultTransport : public ForwardingTransport {
 public:
  FrameFaultTransport(Transport* inner, FrameFault fault, std::function<const Keyring*()> keys, bool encrypt)
      : ForwardingTransport(inner), fault_(fault), keys_(std::move(keys)), encrypt_(encrypt) {}

  std::string name() const override { return inner()->name() + "+fault"; }

  Status send(int peer, uint32_t channel, SharedBytes message) override {
    FrameHeader h;
    if (!peek_frame_header(message->data(), message->size(), &h).is_ok() || h.target_version != fault_.version) {
      return inner()->send(peer, channel, std::move(message));
    }
    const bool first = passes_.insert(channel).second;  // each pass has its own channel
    std::vector<uint8_t> frame = *message;
    DCR_TRY(apply(first, h, &frame));
    return inner()->send(peer, channel, std::make_shared<const std::vector<uint8_t>>(std::move(frame)));
  }

 private:
  Status apply(bool first, const FrameHeader& h, std::vector<uint8_t>* frame) {
    switch (fault_.kind) {
      case FrameFault::wrong_base:
        return h.is_full() ? Status::ok() : rewrite_base(h.seal != Seal::none, frame);
      case FrameFault::corrupt:
        if (first && frame->size() > kFrameHeaderBytes) (*frame)[kFrameHeaderBytes] ^= 0x10;  // a flipped payload bit
        return Status::ok();
      case FrameFault::forge:
      case FrameFault::unsealed:
        return first ? forge(fault_.kind == FrameFault::forge, frame) : Status::ok();
      case FrameFault::none:
        break;
    }
    return Status::ok();
  }

  // A delta naming a base 1000 versions past its own (its base hash still the true base's), sealed
  // again as the trainer would have sealed it.
  Status rewrite_base(bool sealed, std::vector<uint8_t>* frame) {
    const Keyring* keys = keys_();
    if (sealed && keys) DCR_TRY(open_frame(*keys, frame));
    FrameHeader h;
    DCR_TRY(peek_frame_header(frame->data(), frame->size(), &h));
    h.base_version += 1000;
    write_frame_header(h, frame->data());
    return sealed && keys ? seal_frame(*keys, encrypt_, frame) : Status::ok();
  }

  // What an adversary without the key can send: the frame re-sealed under a made-up key that claims
  // the same key id (every XXH3 hash consistent), or the plain frame without a MAC.
  Status forge(bool seal_it, std::vector<uint8_t>* frame) {
    const Keyring* keys = keys_();
    if (keys == nullptr) return Status::ok();  // nothing sealed: nothing to forge
    DCR_TRY(open_frame(*keys, frame));
    if (!seal_it) return Status::ok();
    Key fake;
    fake.id = keys->sealing().id;
    for (size_t i = 0; i < fake.bytes.size(); ++i) fake.bytes[i] = static_cast<uint8_t>(0x5a ^ i);
    return seal_frame(Keyring::of({fake}).for_publication(keys->publication()), encrypt_, frame);
  }

  FrameFault fault_;
  std::function<const Keyring*()> keys_;
  bool encrypt_;
  std::set<uint32_t> passes_;  // channels whose first frame of the version went out
};

}  // namespace

std::unique_ptr<Transport> frame_fault_transport(Transport* inner, FrameFault fault,
                                                 std::function<const Keyring*()> keys, bool encrypt) {
  return std::make_unique<FrameFaultTransport>(inner, fault, std::move(keys), encrypt);
}

}  // namespace dcr
