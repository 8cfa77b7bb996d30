// Internal to the refit: what a publisher job and its follow jobs share in the store besides the
// versions. LAYOUT (JSON) is the publication's description: the model (its manifest, config.json
// and model family file), the publisher's training layout and frame cut, and the serving layouts
// it promises (every frame lies inside one serving piece of each). A follower needs nothing else
// besides its own serving layout, which must be promised (refused otherwise, naming the promised
// ones). It also holds the publication's identity: a random id fixed when its first publisher
// starts, which every manifest names and every seal and MAC binds (auth/keyring.h), so nothing of
// another publication is ever taken for this one's. CLOSED names the publisher's last version.
// With a key file both carry an HMAC-SHA-256 tag.
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

// The publication's description from the publisher's options and plan.
nlohmann::json store_layout(const RefitOptions& options, const RefitPlan& plan);

// Publisher: writes LAYOUT with a new publication id when there is none, or checks the one there
// (another description: invalid_argument naming the fields and the remedy, a fresh prefix; a tag
// that fails: corrupt) and keeps its id. *publication: the id. `keys`: the job's ring, or null.
Status put_layout(const FrameSpool& spool, const Keyring* keys, const nlohmann::json& mine, std::string* publication);
// Follower: LAYOUT as the store holds it, checked (not_found while no publisher has written one).
Status read_layout(const FrameSpool& spool, const Keyring* keys, nlohmann::json* layout);
// Follower: takes the publication's options (trainers, training layout, frame cut, served form,
// promised layouts) into *options and its model into *plan (manifest, config.json, family), and
// checks that this job's serving layout (--rollout-tp, --rollout-ep, --serve-quant) is promised:
// invalid_argument naming the promised layouts and the publisher option that adds one otherwise.
// `store` names the store in messages.
Status adopt_layout(const nlohmann::json& layout, const std::string& store, RefitOptions* options, RefitPlan* plan);
// Follower, after make_plan: its frames are the publication's (their count and hash).
Status check_plan(const nlohmann::json& layout, const RefitPlan& plan);

// CLOSED: "dcr-closed 1 / publication ID / last V / [mac KEY TAG] / end HASH" (text lines), put
// by the publisher after its last version. `keys`: the ring bound to the publication, or null.
Status put_closed(const FrameSpool& spool, const Keyring* keys, uint64_t last);
// *last: the version CLOSED names, kNoVersion when there is none; corrupt naming the object for one
// that is damaged, of another publication, or whose tag fails.
Status read_closed(const FrameSpool& spool, const Keyring* keys, uint64_t* last);

}  // namespace dcr
