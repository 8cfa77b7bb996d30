// Roles and the relay tree, computed without MPI from each rank's node.
#include <gtest/gtest.h>

#include <algorithm>

#include "dcr/refit/plan.h"
#include "dcr/refit/topology.h"

namespace dcr {
namespace {

RefitConfig config_of(int trainers, int relays, int fanout, int rollout_tp) {
  RefitConfig c;
  c.trainers = trainers;
  c.relays = relays;
  c.fanout = fanout;
  c.rollout_tp = rollout_tp;
  return c;
}

TEST(Topology, RolesFollowRankOrder) {
  Topology t;
  ASSERT_TRUE(make_topology_from_nodes(config_of(2, 1, 2, 2), 4, std::vector<int>(5, 0), &t).is_ok());
  EXPECT_EQ(t.role, Role::rollout);
  EXPECT_EQ(t.index, 1);
  EXPECT_EQ(t.rollouts, 2);
  EXPECT_EQ(t.depth, 1);
  EXPECT_EQ(t.relay_children[0], (std::vector<int>{3, 4}));
  EXPECT_EQ(t.describe(), "rank 4 (rollout 1)");
}

TEST(Topology, TreeOfDepthTwoPutsRolloutsUnderLeaves) {
  Topology t;
  // 1 trainer, 3 relays (root 0, leaves 1 and 2), 4 rollouts.
  ASSERT_TRUE(make_topology_from_nodes(config_of(1, 3, 2, 2), 0, std::vector<int>(8, 0), &t).is_ok());
  EXPECT_EQ(t.depth, 2);
  EXPECT_EQ(t.relay_parent, (std::vector<int>{-1, 0, 0}));
  EXPECT_EQ(t.relay_children[0], (std::vector<int>{2, 3}));  // the two leaf relays (world ranks)
  for (int i = 0; i < 4; ++i) EXPECT_NE(t.rollout_relay[i], 0);
  EXPECT_EQ(t.relay_subtree_rollouts[0].size(), 4u);
  EXPECT_EQ(t.relay_subtree_rollouts[1].size() + t.relay_subtree_rollouts[2].size(), 4u);
}

TEST(Topology, RolloutsPreferALeafRelayOnTheirNode) {
  // Ranks: trainer 0; relays 1, 2, 3; rollouts 4..7. Relay 2 (leaf 1) on node B, relay 3 (leaf 2)
  // on node A; rollouts 4, 5 on node A and 6, 7 on node B.
  const std::vector<int> node = {0, 0, 1, 0, 0, 0, 1, 1};
  Topology t;
  ASSERT_TRUE(make_topology_from_nodes(config_of(1, 3, 2, 2), 0, node, &t).is_ok());
  EXPECT_EQ(t.rollout_relay, (std::vector<int>{2, 2, 1, 1}));
}

TEST(Topology, AutoRelaysAreOnePerNode) {
  Topology t;
  ASSERT_TRUE(make_topology_from_nodes(config_of(1, -1, 2, 1), 0, {0, 0, 1, 1, 1, 2}, &t).is_ok());
  EXPECT_EQ(t.relays, 3);
}

TEST(Topology, ImpossibleJobsAreRefusedWithTheReason) {
  Topology t;
  Status s = make_topology_from_nodes(config_of(2, 1, 2, 2), 0, std::vector<int>(3, 0), &t);
  EXPECT_EQ(s.code(), Code::invalid_argument);
  EXPECT_NE(s.message().find("at least one rollout"), std::string::npos) << s.message();
  s = make_topology_from_nodes(config_of(2, 1, 2, 2), 0, std::vector<int>(6, 0), &t);
  EXPECT_NE(s.message().find("cannot form replicas"), std::string::npos) << s.message();
}

TEST(Plan, EveryRolloutGetsEachOfItsElementsFromExactlyOneFrame) {
  RefitConfig c = config_of(2, 1, 2, 2);
  Topology t;
  ASSERT_TRUE(make_topology_from_nodes(c, 0, std::vector<int>(5, 0), &t).is_ok());
  RefitPlan plan;
  ASSERT_TRUE(make_plan(c, t, &plan).is_ok());
  for (int i = 0; i < t.rollouts; ++i) {
    uint64_t held = 0, covered = 0;
    for (const LocalPiece& p : plan.rollout_holdings[i].pieces) held += p.box.elements();
    for (const auto& per_trainer : plan.frames) {
      for (const PlannedFrame& f : per_trainer) {
        if (std::binary_search(f.receivers.begin(), f.receivers.end(), i)) covered += f.box.elements();
      }
    }
    EXPECT_EQ(covered, held) << "rollout " << i;
  }
  EXPECT_EQ(plan.frames_for_relay(t, 0), plan.frames[0].size() + plan.frames[1].size());
  const PlannedFrame& f = plan.frames[1].front();
  ASSERT_NE(plan.receivers_of(f.box), nullptr);
  EXPECT_EQ(*plan.receivers_of(f.box), f.receivers);
  Box unknown = f.box;
  unknown.rows += 1;
  EXPECT_EQ(plan.receivers_of(unknown), nullptr);
}

}  // namespace
}  // namespace dcr
