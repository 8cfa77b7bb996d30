// Internal to the refit: what a publisher job and its follow jobs share in the store besides the
// versions. LAYOUT (JSON) holds what both must agree on (the publisher cuts frames for the
// follower's serving layout, so a follower launched with other layout options, or against another
// model, is refused at start-up naming each difference) and the publication's identity: a random
// id fixed when its first publisher starts, which every manifest names and every seal and MAC
// binds (auth/keyring.h), so nothing of another publication is ever taken for this one's. CLOSED
// names the publisher's last version. With a key file both carry an HMAC-SHA-256 tag.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "dcr/auth/keyring.h"
#include "dcr/refit/commit.h"
#include "dcr/refit/options.h"
#include "dcr/refit/plan.h"
#include "dcr/spool/frame_spool.h"

namespace dcr {

constexpr const char* kLayoutKey = "LAYOUT";
constexpr const char* kClosedKey = "CLOSED";

// The layout options, the model's manifest hash and a hash of every planned frame (box, receivers).
nlohmann::json store_layout(const RefitOptions& options, const RefitPlan& plan);

// Publisher: writes LAYOUT with a new publication id when there is none, or checks the one there
// (another layout: invalid_argument naming the fields and the remedy, a fresh prefix; a tag that
// fails: corrupt) and keeps its id. *publication: the id. `keys`: the job's ring, or null.
Status put_layout(const FrameSpool& spool, const Keyring* keys, const nlohmann::json& mine, std::string* publication);
// Follower: checks LAYOUT against its own (not_found while no publisher has written one).
Status check_layout(const FrameSpool& spool, const Keyring* keys, const nlohmann::json& mine, std::string* publication);

// CLOSED: "dcr-closed 1 / publication ID / last V / [mac KEY TAG] / end HASH" (text lines), put
// by the publisher after its last version. `keys`: the ring bound to the publication, or null.
Status put_closed(const FrameSpool& spool, const Keyring* keys, uint64_t last);
// *last: the version CLOSED names, kNoVersion when there is none; corrupt naming the object for one
// that is damaged, of another publication, or whose tag fails.
Status read_closed(const FrameSpool& spool, const Keyring* keys, uint64_t* last);

}  // namespace dcr
