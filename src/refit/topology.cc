#include "dcr/refit/topology.h"

#include <algorithm>
#include <unistd.h>

#include <cstring>

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
  if (rank < 0 || rank >= world_size) return "rank " + std::to_string(rank);
  const std::string host = rank < static_cast<int>(host_of_rank.size()) ? " on " + host_of_rank[rank] : "";
  return "rank " + std::to_string(rank) + " (" + role_name(role_of_rank[rank]) + " " +
         std::to_string(index_of_rank[rank]) + host + ")";
}

namespace {

// "a, b": the distinct hosts of `ranks`, in rank order.
std::string hosts_of(const std::vector<std::string>& host_of_rank, const std::vector<int>& ranks) {
  std::vector<std::string> hosts;
  for (int r : ranks) {
    if (r >= static_cast<int>(host_of_rank.size())) continue;
    if (std::find(hosts.begin(), hosts.end(), host_of_rank[r]) == hosts.end()) hosts.push_back(host_of_rank[r]);
  }
  std::string text;
  for (size_t i = 0; i < hosts.size(); ++i) text += (i ? ", " : "") + hosts[i];
  return text;
}

std::vector<int> trainer_ranks(int trainers) {
  std::vector<int> ranks(trainers);
  for (int i = 0; i < trainers; ++i) ranks[i] = i;
  return ranks;
}

}  // namespace

std::string Topology::describe_trainers() const {
  const std::string hosts = hosts_of(host_of_rank, trainer_ranks(trainers));
  return "the trainers (ranks 0-" + std::to_string(trainers - 1) + (hosts.empty() ? "" : " on " + hosts) + ")";
}

std::string Topology::describe_placement() const {
  if (host_of_rank.empty()) return "";
  std::vector<std::string> parts;
  if (trainers > 0) parts.push_back("trainers on " + hosts_of(host_of_rank, trainer_ranks(trainers)));
  std::string relay_text;
  for (int i = 0; i < relays; ++i) {
    relay_text += (i ? ", relay " : "relay ") + std::to_string(i) + (i == 0 ? " (root)" : "") + " on " + host_of_rank[relay_ranks[i]];
  }
  if (relays > 0) parts.push_back(relay_text);
  if (!rollout_ranks.empty()) parts.push_back("rollouts on " + hosts_of(host_of_rank, rollout_ranks));
  std::string text;
  for (size_t i = 0; i < parts.size(); ++i) text += (i ? "; " : "") + parts[i];
  return text;
}

std::string Topology::describe() const { return describe_rank(world_rank); }

namespace {

// Relay world ranks: the R after the trainers, or (R = -1) the lowest non-trainer rank per node.
std::vector<int> choose_relays(int trainers, int relays, const std::vector<int>& node_of_rank) {
  const int size = static_cast<int>(node_of_rank.size());
  std::vector<int> chosen;
  if (relays > 0) {
    for (int r = trainers; r < std::min(size, trainers + relays); ++r) chosen.push_back(r);
    return chosen;
  }
  std::vector<int> nodes_seen;
  for (int r = trainers; r < size; ++r) {
    if (std::find(nodes_seen.begin(), nodes_seen.end(), node_of_rank[r]) != nodes_seen.end()) continue;
    nodes_seen.push_back(node_of_rank[r]);
    chosen.push_back(r);
  }
  return chosen;
}

void assign_roles(int trainers, const std::vector<int>& relay_ranks, Topology* t) {
  t->role_of_rank.assign(t->world_size, Role::rollout);
  t->index_of_rank.assign(t->world_size, 0);
  t->relay_ranks = relay_ranks;
  t->rollout_ranks.clear();
  for (int r = 0; r < t->world_size; ++r) {
    const auto relay = std::find(relay_ranks.begin(), relay_ranks.end(), r);
    if (r < trainers) {
      t->role_of_rank[r] = Role::trainer;
      t->index_of_rank[r] = r;
    } else if (relay != relay_ranks.end()) {
      t->role_of_rank[r] = Role::relay;
      t->index_of_rank[r] = static_cast<int>(relay - relay_ranks.begin());
    } else {
      t->index_of_rank[r] = static_cast<int>(t->rollout_ranks.size());
      t->rollout_ranks.push_back(r);
    }
  }
}

// Leaf relays (no relay children) in index order.
std::vector<int> leaf_relays(const Topology& t, int fanout) {
  std::vector<int> leaves;
  for (int r = 0; r < t.relays; ++r) {
    if (fanout * r + 1 >= t.relays) leaves.push_back(r);
  }
  return leaves;
}

void build_tree(const RefitOptions& config, const std::vector<int>& node_of_rank, Topology* t) {
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
  // A rollout hangs under a relay on its own node (a leaf first), else under the leaves round robin.
  const std::vector<int> leaves = leaf_relays(*t, k);
  t->rollout_relay.assign(t->rollouts, 0);
  for (int i = 0; i < t->rollouts; ++i) {
    const int node = node_of_rank[t->rollout_rank(i)];
    int chosen = leaves[i % leaves.size()];
    for (size_t n = 0; n < leaves.size(); ++n) {
      const int candidate = leaves[(i + n) % leaves.size()];
      if (node_of_rank[t->relay_rank(candidate)] == node) {
        chosen = candidate;
        break;
      }
    }
    if (node_of_rank[t->relay_rank(chosen)] != node) {
      for (int r = 0; r < t->relays; ++r) {
        if (node_of_rank[t->relay_rank(r)] == node) {
          chosen = r;
          break;
        }
      }
    }
    t->rollout_relay[i] = chosen;
    t->relay_children[chosen].push_back(t->rollout_rank(i));
    for (int r = chosen; r >= 0; r = t->relay_parent[r]) t->relay_subtree_rollouts[r].push_back(i);
  }
}

// A publisher job (--role publish) is its trainers only: it cuts frames for the serving layouts it
// promises (RefitOptions::serve_tp, serve_ep), whatever rollouts follow them.
Status publisher_topology(const RefitOptions& config, Topology t, Topology* out) {
  DCR_REQUIRE(t.world_size == config.trainers, Code::invalid_argument,
              "a --role publish job is its trainer ranks only: launch " + std::to_string(config.trainers) +
                  " ranks (--trainers), not " + std::to_string(t.world_size));
  t.trainers = config.trainers;
  t.rollouts = 0;
  t.role_of_rank.assign(t.world_size, Role::trainer);
  t.index_of_rank.resize(t.world_size);
  for (int r = 0; r < t.world_size; ++r) t.index_of_rank[r] = r;
  t.role = Role::trainer;
  t.index = t.world_rank;
  *out = std::move(t);
  return Status::ok();
}

}  // namespace

Status make_topology_from_nodes(const RefitOptions& config, int world_rank, const std::vector<int>& node_of_rank,
                                Topology* out) {
  Topology t;
  t.world_rank = world_rank;
  t.world_size = static_cast<int>(node_of_rank.size());
  if (config.role == JobRole::publish) return publisher_topology(config, std::move(t), out);
  t.trainers = config.role == JobRole::follow ? 0 : config.trainers;  // a follower job has no trainer ranks
  const std::vector<int> relay_ranks = choose_relays(t.trainers, config.relays, node_of_rank);
  t.relays = config.relays > 0 ? config.relays : std::max(1, static_cast<int>(relay_ranks.size()));
  t.rollouts = t.world_size - t.trainers - t.relays;
  DCR_REQUIRE(t.rollouts >= 1, Code::invalid_argument,
              "the job has " + std::to_string(t.world_size) + " ranks but needs " + std::to_string(t.trainers) +
                  " trainers + " + std::to_string(t.relays) + " relays + at least one rollout" +
                  (config.relays < 0 ? " (--relays -1: one relay per node holding non-trainer ranks)" : ""));
  DCR_REQUIRE(t.rollouts % config.rollout_tp == 0, Code::invalid_argument,
              std::to_string(t.rollouts) + " rollout ranks cannot form replicas of --rollout-tp " +
                  std::to_string(config.rollout_tp) + " (launch a multiple of it)");
  assign_roles(t.trainers, relay_ranks, &t);
  t.role = t.role_of_rank[world_rank];
  t.index = t.index_of_rank[world_rank];
  build_tree(config, node_of_rank, &t);
  *out = std::move(t);
  return Status::ok();
}

namespace {

// Every rank's host name, so that errors name where a peer runs.
std::vector<std::string> gather_host_names(Collective& control) {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  const std::string mine(name);
  std::vector<std::string> hosts;
  for (const std::vector<uint8_t>& b : control.all_gather(std::vector<uint8_t>(mine.begin(), mine.end()))) {
    hosts.emplace_back(b.begin(), b.end());
  }
  return hosts;
}

}  // namespace

Status make_topology(const RefitOptions& config, Collective& control, Topology* out) {
  DCR_TRY(make_topology_from_nodes(config, control.rank(), control.node_of_rank(), out));
  out->host_of_rank = gather_host_names(control);
  return Status::ok();
}

}  // namespace dcr
