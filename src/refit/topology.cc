#include "dcr/refit/topology.h"

#include <algorithm>

namespace dcr {

const char* role_name(Role role) {
  switch (role) {
    case Role::trainer: return "trainer";
    case Role::relay: return "relay";
    case Role::rollout: return "rollout";
  }
  return "?";
}

std::string Topology::describe_rank(int rank) const {
  if (rank < trainers) return "rank " + std::to_string(rank) + " (trainer " + std::to_string(rank) + ")";
  if (rank < trainers + relays) return "rank " + std::to_string(rank) + " (relay " + std::to_string(rank - trainers) + ")";
  return "rank " + std::to_string(rank) + " (rollout " + std::to_string(rank - trainers - relays) + ")";
}

std::string Topology::describe() const { return describe_rank(world_rank); }

namespace {

int count_nodes(const std::vector<int>& node_of_rank) {
  std::vector<int> nodes = node_of_rank;
  std::sort(nodes.begin(), nodes.end());
  return static_cast<int>(std::unique(nodes.begin(), nodes.end()) - nodes.begin());
}

// Leaf relays (no relay children) in index order.
std::vector<int> leaf_relays(const Topology& t, int fanout) {
  std::vector<int> leaves;
  for (int r = 0; r < t.relays; ++r) {
    if (fanout * r + 1 >= t.relays) leaves.push_back(r);
  }
  return leaves;
}

void build_tree(const RefitConfig& config, const std::vector<int>& node_of_rank, Topology* t) {
  const int k = config.fanout;
  t->relay_parent.assign(t->relays, -1);
  t->relay_children.assign(t->relays, {});
  t->relay_subtree_rollouts.assign(t->relays, {});
  t->depth = 0;
  for (int r = 0; r < t->relays; ++r) {
    if (r > 0) {
      t->relay_parent[r] = (r - 1) / k;
      t->relay_children[(r - 1) / k].push_back(t->relay_rank(r));
    }
    int level = 1;
    for (int p = r; p > 0; p = (p - 1) / k) ++level;
    t->depth = std::max(t->depth, level);
  }
  // Rollouts go under leaf relays: one on the rollout's node when there is one, else round robin.
  const std::vector<int> leaves = leaf_relays(*t, k);
  t->rollout_relay.assign(t->rollouts, 0);
  for (int i = 0; i < t->rollouts; ++i) {
    int chosen = leaves[i % leaves.size()];
    for (size_t n = 0; n < leaves.size(); ++n) {
      const int candidate = leaves[(i + n) % leaves.size()];
      if (node_of_rank[t->relay_rank(candidate)] == node_of_rank[t->rollout_rank(i)]) {
        chosen = candidate;
        break;
      }
    }
    t->rollout_relay[i] = chosen;
    t->relay_children[chosen].push_back(t->rollout_rank(i));
    for (int r = chosen; r >= 0; r = t->relay_parent[r]) t->relay_subtree_rollouts[r].push_back(i);
  }
}

}  // namespace

Status make_topology_from_nodes(const RefitConfig& config, int world_rank, const std::vector<int>& node_of_rank,
                                Topology* out) {
  Topology t;
  t.world_rank = world_rank;
  t.world_size = static_cast<int>(node_of_rank.size());
  t.trainers = config.trainers;
  t.relays = config.relays > 0 ? config.relays : std::max(1, count_nodes(node_of_rank));
  t.rollouts = t.world_size - t.trainers - t.relays;
  DCR_REQUIRE(t.rollouts >= 1, Code::invalid_argument,
              "the job has " + std::to_string(t.world_size) + " ranks but needs " + std::to_string(t.trainers) +
                  " trainers + " + std::to_string(t.relays) + " relays + at least one rollout");
  DCR_REQUIRE(t.rollouts % config.rollout_tp == 0, Code::invalid_argument,
              std::to_string(t.rollouts) + " rollout ranks cannot form replicas of --rollout-tp " +
                  std::to_string(config.rollout_tp) + " (launch a multiple of it)");
  if (world_rank < t.trainers) {
    t.role = Role::trainer;
    t.index = world_rank;
  } else if (world_rank < t.trainers + t.relays) {
    t.role = Role::relay;
    t.index = world_rank - t.trainers;
  } else {
    t.role = Role::rollout;
    t.index = world_rank - t.trainers - t.relays;
  }
  build_tree(config, node_of_rank, &t);
  *out = std::move(t);
  return Status::ok();
}

Status make_topology(const RefitConfig& config, MPI_Comm world, Topology* out) {
  int rank = 0, size = 0;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  // Node id = the lowest world rank sharing this rank's node.
  MPI_Comm node_comm;
  MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node_comm);
  int node_leader = rank;
  MPI_Allreduce(&rank, &node_leader, 1, MPI_INT, MPI_MIN, node_comm);
  MPI_Comm_free(&node_comm);
  std::vector<int> node_of_rank(size);
  MPI_Allgather(&node_leader, 1, MPI_INT, node_of_rank.data(), 1, MPI_INT, world);
  return make_topology_from_nodes(config, rank, node_of_rank, out);
}

}  // namespace dcr
