#include "src/transport/describe.h"

#include <sstream>

#include "dcr/transport/transport.h"

namespace dcr {

std::string describe_peer(int peer) {
  return peer == kAnyPeer ? std::string("any rank") : "rank " + std::to_string(peer);
}

std::string describe_channel(uint32_t channel) {
  return channel == kAnyChannel ? std::string("any channel") : "channel " + std::to_string(channel);
}

std::string describe_ranks(const std::vector<int>& ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text;
}

Status receive_timeout(int rank, int from, uint32_t channel, double timeout_s) {
  std::ostringstream text;
  text << "rank " << rank << ": no message from " << describe_peer(from) << " on "
       << describe_channel(channel) << " within " << timeout_s << " s";
  return Status(Code::unavailable, text.str());
}

}  // namespace dcr
