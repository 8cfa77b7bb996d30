// Wording shared by the transport backends' error messages.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dcr/core/status.h"

namespace dcr {

// "rank 3" or "any rank".
std::string describe_peer(int peer);
// "channel 7" or "any channel".
std::string describe_channel(uint32_t channel);
// "ranks 1, 2" (or "rank 1").
std::string describe_ranks(const std::vector<int>& ranks);
// Code::unavailable "rank R: no message from rank X on channel Y within Ns".
Status receive_timeout(int rank, int from, uint32_t channel, double timeout_s);

}  // namespace dcr
