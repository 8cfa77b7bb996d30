// Who is who in the SPMD job, and the relay tree. World ranks [0, T) are trainers. With R relays
// given, the next R ranks relay; with R = -1 ("one per node"), the lowest non-trainer rank of every
// node that holds non-trainer ranks relays, so a trainer-only node gets none and each rollout node
// one, wherever the launcher put the ranks. The remaining ranks roll out, in rank order. Relays form
// a k-ary tree (relay 0 is the root, which the trainers send to); every rollout hangs under a
// relay on its own node (a leaf if one is there), else under the leaves round robin.
#pragma once

#include <string>
#include <vector>

#include "dcr/core/status.h"
#include "dcr/refit/collective.h"
#include "dcr/refit/options.h"

namespace dcr {

enum class Role { trainer, relay, rollout };
const char* role_name(Role role);

struct Topology {
  int world_rank = 0;
  int world_size = 0;
  int trainers = 0, relays = 0, rollouts = 0;
  Role role = Role::trainer;
  int index = 0;  // rank within the role
  // Tree: parent of each relay (-1 for the root), children world ranks of each relay.
  std::vector<int> relay_parent;
  std::vector<std::vector<int>> relay_children;  // world ranks: relays and rollouts
  std::vector<int> rollout_relay;                // the relay index each rollout hangs under
  std::vector<std::vector<int>> relay_subtree_rollouts;  // rollout indices below each relay
  int depth = 0;                                 // relay levels
  std::vector<int> relay_ranks, rollout_ranks;   // world rank of each relay and rollout
  std::vector<Role> role_of_rank;                // by world rank
  std::vector<int> index_of_rank;                // by world rank: its index within its role
  std::vector<std::string> host_of_rank;         // by world rank: its host name (empty in unit tests)

  int trainer_rank(int i) const { return i; }
  int relay_rank(int i) const { return relay_ranks[i]; }
  int rollout_rank(int i) const { return rollout_ranks[i]; }
  std::string describe() const;  // "rank 4 (rollout 1 on node7)"; without host names "rank 4 (rollout 1)"
  std::string describe_rank(int world_rank) const;
  std::string describe_trainers() const;  // "the trainers (ranks 0-5 on node1, node2)"
  // "trainers on n00, n01; relay 0 (root) on n02, relay 1 on n03; rollouts on n02, n03"; empty
  // without host names.
  std::string describe_placement() const;
};

// Builds the topology of the job `control` spans (collective: gathers node ids and host names).
// Errors name what does not fit.
Status make_topology(const RefitOptions& config, Collective& control, Topology* out);

// The same from node ids of every world rank (no MPI), for unit tests.
Status make_topology_from_nodes(const RefitOptions& config, int world_rank, const std::vector<int>& node_of_rank,
                                Topology* out);

}  // namespace dcr
