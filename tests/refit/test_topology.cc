// Roles and the relay tree, computed without MPI from each rank's node.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "dcr/model/presets.h"
#include "dcr/refit/plan.h"
#include "dcr/refit/topology.h"

namespace dcr {
namespace {

// A plan of the `tiny` preset's tensors (a plan refits the manifest its caller gives it).
RefitPlan tiny() {
  RefitPlan plan;
  EXPECT_TRUE(make_preset("tiny", &plan.model).is_ok());
  return plan;
}

// The plan of `tiny` for `c` on 5 ranks of one node (*t: their topology).
RefitPlan plan_on_five_ranks(const RefitOptions& c, Topology* t) {
  RefitPlan plan = tiny();
  EXPECT_TRUE(make_topology_from_nodes(c, 0, std::vector<int>(5, 0), t).is_ok());
  EXPECT_TRUE(make_plan(c, *t, &plan).is_ok());
  return plan;
}

RefitOptions config_of(int trainers, int relays, int fanout, int rollout_tp) {
  RefitOptions c;
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
  EXPECT_EQ(t.relay_ranks, (std::vector<int>{1, 2, 5}));
  EXPECT_EQ(t.rollout_ranks, (std::vector<int>{3, 4}));
}

// Two trainer nodes and two rollout nodes of 4 ranks each, placed node by node (--map-by
// ppr:4:node): no relay on a trainer node, one on each rollout node (its first rank), and each
// rollout under the relay on its own node.
TEST(Topology, AutoRelaysGoToRolloutNodesOnlyWhereverTheyAreInRankOrder) {
  const std::vector<int> node = {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3};
  Topology t;
  ASSERT_TRUE(make_topology_from_nodes(config_of(8, -1, 2, 1), 12, node, &t).is_ok());
  EXPECT_EQ(t.relays, 2);
  EXPECT_EQ(t.relay_ranks, (std::vector<int>{8, 12}));
  EXPECT_EQ(t.rollout_ranks, (std::vector<int>{9, 10, 11, 13, 14, 15}));
  EXPECT_EQ(t.role, Role::relay);
  EXPECT_EQ(t.index, 1);
  EXPECT_EQ(t.rollout_relay, (std::vector<int>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(t.relay_children[0], (std::vector<int>{12, 9, 10, 11}));  // the other relay, then its rollouts
  EXPECT_EQ(t.describe_rank(13), "rank 13 (rollout 3)");
  EXPECT_EQ(t.describe_rank(12), "rank 12 (relay 1)");
  EXPECT_EQ(t.describe_rank(7), "rank 7 (trainer 7)");
}

// Eight rollout nodes, one relay each, fanout 2: a tree of depth 4 (1 + 2 + 4 + 1 relays), the
// WAN (trainers to the root relay) carrying each frame once.
TEST(Topology, AutoRelayTreeDepthGrowsWithTheLogOfTheNodes) {
  std::vector<int> node(2, 0);
  for (int n = 1; n <= 8; ++n) node.insert(node.end(), 3, n);
  Topology t;
  ASSERT_TRUE(make_topology_from_nodes(config_of(2, -1, 2, 2), 0, node, &t).is_ok());
  EXPECT_EQ(t.relays, 8);
  EXPECT_EQ(t.rollouts, 16);
  EXPECT_EQ(t.depth, 4);
  for (int i = 0; i < t.rollouts; ++i) EXPECT_EQ(node[t.relay_rank(t.rollout_relay[i])], node[t.rollout_rank(i)]);
}

// With host names (gathered by make_topology), messages and the job's placement line say where a
// rank runs.
TEST(Topology, HostNamesNameWhereEachRankRuns) {
  const std::vector<int> node = {0, 0, 1, 1, 1, 2, 2, 2};
  Topology t;
  ASSERT_TRUE(make_topology_from_nodes(config_of(2, -1, 2, 2), 0, node, &t).is_ok());
  EXPECT_EQ(t.describe_placement(), "");
  t.host_of_rank = {"n00", "n00", "n01", "n01", "n01", "n02", "n02", "n02"};
  EXPECT_EQ(t.describe_rank(5), "rank 5 (relay 1 on n02)");
  EXPECT_EQ(t.describe_trainers(), "the trainers (ranks 0-1 on n00)");
  EXPECT_EQ(t.describe_placement(), "trainers on n00; relay 0 (root) on n01, relay 1 on n02; rollouts on n01, n02");
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
  Topology t;
  const RefitPlan plan = plan_on_five_ranks(config_of(2, 1, 2, 2), &t);
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

// A publisher job (trainers only) and a follower job (relays and rollouts only) plan exactly the
// frames the one job would: the follower applies what the publisher cut, box for box.
TEST(Plan, PublishAndFollowJobsPlanTheOneJobsFrames) {
  RefitOptions one = config_of(2, 1, 2, 2);
  Topology t;
  const RefitPlan expected = plan_on_five_ranks(one, &t);

  RefitOptions publish = one;
  publish.role = JobRole::publish;
  publish.rollouts = 2;
  ASSERT_TRUE(check_refit_options(publish).is_ok());
  Topology p;
  ASSERT_TRUE(make_topology_from_nodes(publish, 1, std::vector<int>(2, 0), &p).is_ok());
  EXPECT_EQ(p.role, Role::trainer);
  EXPECT_EQ(p.index, 1);
  const Status wrong = make_topology_from_nodes(publish, 0, std::vector<int>(5, 0), &p);
  EXPECT_NE(wrong.message().find("trainer ranks only: launch 2 ranks"), std::string::npos) << wrong.message();

  RefitOptions follow = one;
  follow.role = JobRole::follow;
  Topology f;
  ASSERT_TRUE(make_topology_from_nodes(follow, 2, std::vector<int>(3, 0), &f).is_ok());
  EXPECT_EQ(f.role, Role::rollout);
  EXPECT_EQ(f.index, 1);
  EXPECT_EQ(f.relay_rank(0), 0);

  for (const auto& [config, topology] : {std::make_pair(publish, p), std::make_pair(follow, f)}) {
    RefitPlan plan = tiny();
    ASSERT_TRUE(make_plan(config, topology, &plan).is_ok());
    ASSERT_EQ(plan.frames.size(), expected.frames.size()) << job_role_name(config.role);
    for (size_t trainer = 0; trainer < plan.frames.size(); ++trainer) {
      ASSERT_EQ(plan.frames[trainer].size(), expected.frames[trainer].size());
      for (size_t i = 0; i < plan.frames[trainer].size(); ++i) {
        const PlannedFrame &a = plan.frames[trainer][i], &b = expected.frames[trainer][i];
        EXPECT_TRUE(a.box.tensor == b.box.tensor && a.box.row0 == b.box.row0 && a.box.rows == b.box.rows &&
                    a.box.col0 == b.box.col0 && a.box.cols == b.box.cols && a.receivers == b.receivers)
            << job_role_name(config.role) << " frame " << i << " of trainer " << trainer;
      }
    }
  }
}

// Boxes under --bundle-below elements with the same receivers and dtype share bundle frames; every
// box of the plain plan is in exactly one frame of the bundled plan, with its receivers.
TEST(Plan, SmallBoxesShareBundlesByReceiversAndDtype) {
  RefitOptions c = config_of(2, 1, 2, 2);
  Topology t;
  ASSERT_TRUE(make_topology_from_nodes(c, 0, std::vector<int>(5, 0), &t).is_ok());
  RefitPlan plain = tiny(), bundled = tiny();
  c.bundle_below = 0;
  ASSERT_TRUE(make_plan(c, t, &plain).is_ok());
  c.bundle_below = 1 << 16;
  ASSERT_TRUE(make_plan(c, t, &bundled).is_ok());
  std::set<uint64_t> ids;
  for (int trainer = 0; trainer < 2; ++trainer) {
    std::map<std::tuple<uint32_t, uint64_t, uint64_t>, std::vector<int>> want, got;
    for (const PlannedFrame& f : plain.frames[trainer]) {
      EXPECT_FALSE(f.bundle());
      want[{f.box.tensor, f.box.row0, f.box.col0}] = f.receivers;
    }
    size_t bundles = 0;
    for (const PlannedFrame& f : bundled.frames[trainer]) {
      uint64_t elements = 0;
      for (const Box& part : f.parts) {
        EXPECT_TRUE(got.emplace(std::make_tuple(part.tensor, part.row0, part.col0), f.receivers).second);
        elements += part.elements();
        if (!f.bundle()) continue;
        EXPECT_LT(part.elements(), c.bundle_below);
        EXPECT_EQ(bundled.manifest.tensors[part.tensor].dtype, bundled.manifest.tensors[f.parts[0].tensor].dtype);
      }
      EXPECT_EQ(f.box.elements(), elements);
      if (!f.bundle()) continue;
      ++bundles;
      EXPECT_GE(f.parts.size(), 2u);
      EXPECT_LE(elements, c.frame_elements);
      EXPECT_TRUE(ids.insert(f.box.row0).second) << "bundle id " << f.box.row0 << " twice";
      ASSERT_NE(bundled.receivers_of(f.box), nullptr);
      EXPECT_EQ(*bundled.receivers_of(f.box), f.receivers);
    }
    EXPECT_EQ(got, want) << "trainer " << trainer;
    EXPECT_GT(bundles, 0u);
    EXPECT_LT(bundled.frames[trainer].size(), plain.frames[trainer].size());
  }
}

}  // namespace
}  // namespace dcr
