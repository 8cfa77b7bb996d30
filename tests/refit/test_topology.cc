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

// The frames of a plan as (trainer, box, parts) with receivers left out: what the store holds.
std::vector<std::tuple<size_t, Box, std::vector<Box>>> frames_of(const RefitPlan& plan) {
  std::vector<std::tuple<size_t, Box, std::vector<Box>>> out;
  for (size_t t = 0; t < plan.frames.size(); ++t) {
    for (const PlannedFrame& f : plan.frames[t]) out.emplace_back(t, f.box, f.parts);
  }
  return out;
}

// A publisher job (trainers only) and a follower job (relays and rollouts only, with the promise
// the store hands it): the follower plans the publisher's frames box for box, each reaching the
// rollouts the one job's would.
TEST(Plan, PublishAndFollowJobsPlanTheOneJobsFrames) {
  RefitOptions one = config_of(2, 1, 2, 2);
  one.bundle_below = 0;  // plain frames: the one job's receivers are found by box
  Topology t;
  const RefitPlan expected = plan_on_five_ranks(one, &t);

  RefitOptions publish = one;
  publish.role = JobRole::publish;
  ASSERT_TRUE(check_refit_options(publish).is_ok());
  Topology p;
  ASSERT_TRUE(make_topology_from_nodes(publish, 1, std::vector<int>(2, 0), &p).is_ok());
  EXPECT_EQ(p.role, Role::trainer);
  EXPECT_EQ(p.index, 1);
  EXPECT_EQ(p.rollouts, 0);
  const Status wrong = make_topology_from_nodes(publish, 0, std::vector<int>(5, 0), &p);
  EXPECT_NE(wrong.message().find("trainer ranks only: launch 2 ranks"), std::string::npos) << wrong.message();

  RefitOptions follow = one;
  follow.role = JobRole::follow;
  follow.serve_tp = {2};
  Topology f;
  ASSERT_TRUE(make_topology_from_nodes(follow, 2, std::vector<int>(3, 0), &f).is_ok());
  EXPECT_EQ(f.role, Role::rollout);
  EXPECT_EQ(f.index, 1);
  EXPECT_EQ(f.relay_rank(0), 0);

  RefitPlan published = tiny(), followed = tiny();
  ASSERT_TRUE(make_plan(publish, p, &published).is_ok());
  ASSERT_TRUE(make_plan(follow, f, &followed).is_ok());
  EXPECT_TRUE(frames_of(published) == frames_of(expected));
  EXPECT_TRUE(frames_of(followed) == frames_of(expected));
  for (const auto& per_trainer : followed.frames) {
    for (const PlannedFrame& frame : per_trainer) {
      const std::vector<int>* want = expected.receivers_of(frame.box);
      ASSERT_NE(want, nullptr);
      EXPECT_EQ(frame.receivers, *want) << frame.box.describe();
    }
  }
}

// One publication promising TP 1, 2 and 4: every follower of a promised layout plans the
// publisher's frames, each lying whole inside one piece of every rank that receives it; the
// single-layout plan cuts fewer frames. (EP followers: tests/objstore/fleet.sh.)
TEST(Plan, OnePublicationServesEveryPromisedLayout) {
  for (const char* preset : {"tiny", "small"}) {
    RefitPlan model;
    ASSERT_TRUE(make_preset(preset, &model.model).is_ok());
    RefitOptions publish = config_of(2, 1, 2, 2);
    publish.role = JobRole::publish;
    publish.serve_tp = {1, 2, 4};
    Topology p;
    ASSERT_TRUE(make_topology_from_nodes(publish, 0, std::vector<int>(2, 0), &p).is_ok());
    RefitPlan published = model;
    ASSERT_TRUE(make_plan(publish, p, &published).is_ok()) << preset;
    EXPECT_EQ(published.cut_layouts.size(), 3u);
    for (const ServeShape shape : published.cut_layouts) {
      RefitOptions follow = publish;
      follow.role = JobRole::follow;
      follow.rollout_tp = shape.tp;
      follow.rollout_ep = shape.ep;
      Topology f;
      ASSERT_TRUE(make_topology_from_nodes(follow, 0, std::vector<int>(1 + 2 * shape.tp, 0), &f).is_ok());
      RefitPlan followed = model;
      ASSERT_TRUE(make_plan(follow, f, &followed).is_ok()) << preset << " TP " << shape.tp;
      EXPECT_TRUE(frames_of(followed) == frames_of(published)) << preset << " TP " << shape.tp << " EP " << shape.ep;
      for (const auto& per_trainer : followed.frames) {
        for (const PlannedFrame& frame : per_trainer) {
          EXPECT_FALSE(frame.receivers.empty());
          for (int r : frame.receivers) {
            for (const Box& part : frame.parts) {
              const Holdings& h = followed.rollout_holdings[r];
              const bool inside = std::any_of(h.pieces.begin(), h.pieces.end(),
                                              [&](const LocalPiece& piece) { return piece.box.contains(part); });
              EXPECT_TRUE(inside) << part.describe() << " at rollout " << r << " of TP " << shape.tp;
            }
          }
        }
      }
    }
    RefitOptions single = publish;
    single.serve_tp = {2};
    RefitPlan one = model;
    ASSERT_TRUE(make_plan(single, p, &one).is_ok());
    EXPECT_LT(frames_of(one).size(), frames_of(published).size()) << preset;
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
