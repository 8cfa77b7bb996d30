// Who is who in the SPMD job, and the relay tree. World ranks [0, T) are trainers, the next R
// relays, the rest rollouts. Relays form a k-ary tree (relay 0 is the root, which the trainers send
// to); every rollout hangs under a leaf relay, preferring one on its own node.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "dcr/core/status.h"
#include "dcr/refit/config.h"

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

  int trainer_rank(int i) const { return i; }
  int relay_rank(int i) const { return trainers + i; }
  int rollout_rank(int i) const { return trainers + relays + i; }
  std::string describe() const;  // "rank 4 (rollout 1)"
  std::string describe_rank(int world_rank) const;
};

// Builds the topology of `world` (collective: gathers node ids). Errors name what does not fit.
Status make_topology(const RefitConfig& config, MPI_Comm world, Topology* out);

// The same from node ids of every world rank (no MPI), for unit tests.
Status make_topology_from_nodes(const RefitConfig& config, int world_rank, const std::vector<int>& node_of_rank,
                                Topology* out);

}  // namespace dcr
