// Internal to the refit: what a publisher job and its follow jobs must agree on, kept in the store
// as the object LAYOUT (JSON). The publisher cuts frames for the follower's serving layout, so a
// follower launched with other layout options (or against another model) is refused at start-up
// naming each difference, rather than failing on its first frame.
#pragma once

#include <nlohmann/json.hpp>

#include "dcr/refit/plan.h"
#include "dcr/spool/frame_spool.h"

namespace dcr {

constexpr const char* kLayoutKey = "LAYOUT";
constexpr const char* kClosedKey = "CLOSED";  // the publisher finished: its last version, in decimal

// The layout options, the model's manifest hash and a hash of every planned frame (box, receivers).
nlohmann::json store_layout(const RefitConfig& config, const RefitPlan& plan);

// Publisher: writes LAYOUT, or checks the one there (another layout: invalid_argument naming the
// fields and the remedy, a fresh prefix).
Status put_layout(const FrameSpool& spool, const nlohmann::json& mine);
// Follower: checks LAYOUT against its own (not_found while no publisher has written one).
Status check_layout(const FrameSpool& spool, const nlohmann::json& mine);

}  // namespace dcr
