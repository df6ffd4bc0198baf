// Down-up turns of the hosts' ways to switch LIDs (routing/turn_guard.h): the guard refuses a turn that
// closes a chain of turns, and the engine chain's fill keeps the channel dependency graph of every route from
// a host, switch LIDs included, acyclic on degraded fat trees.
#include "routing/turn_guard.h"

#include <gtest/gtest.h>

#include "routing/engine.h"
#include "routing/route_checker.h"
#include "tests/routing/fabric_sketch.h"
#include "tests/routing/generated_fabrics.h"

namespace ibsm::routing {
namespace {

using fabric::NodeIndex;
using testing::generate;

//   spine0  spine1  spine2      (key 0: the tops)
//      \  \ /  \ /  /
//   leaf0   leaf1   leaf2       (key 1), every leaf cabled to every spine, one host each
TEST(TurnGuard, RefusesATurnThatClosesAChainOfTurns) {
  auto topo = testing::makeFatTree2(3, 3, 1);
  const RoutingGraph g(*topo);
  std::vector<uint32_t> key(topo->size(), 1);
  std::vector<uint32_t> spine;
  for (const char* name : {"spine0", "spine1", "spine2"}) {
    const NodeIndex n = *topo->findByDescription(name);
    key[n] = 0;
    spine.push_back(g.indexOf(n));
  }
  using Turns = std::vector<std::pair<uint32_t, uint32_t>>;
  TurnGuard guard(g, key, {});
  // Down from spine0 into a leaf, up to spine1: spine1's tops and spine0's do not meet.
  EXPECT_TRUE(guard.admit(Turns{{spine[0], spine[1]}}));
  EXPECT_TRUE(guard.has(spine[0], spine[1]));
  EXPECT_TRUE(guard.admit(Turns{{spine[1], spine[2]}}));
  // Back to where the chain started: a cycle, and so is the way back and a U-turn.
  EXPECT_FALSE(guard.allows(Turns{{spine[2], spine[0]}}));
  EXPECT_FALSE(guard.admit(Turns{{spine[2], spine[0]}}));
  EXPECT_FALSE(guard.admit(Turns{{spine[1], spine[0]}}));
  EXPECT_FALSE(guard.admit(Turns{{spine[2], spine[2]}}));
  EXPECT_FALSE(guard.has(spine[2], spine[0]));
  // Two turns admitted together only when both together close nothing.
  EXPECT_FALSE(guard.admit(Turns{{spine[0], spine[2]}, {spine[2], spine[1]}}));
  EXPECT_FALSE(guard.has(spine[0], spine[2]));
  EXPECT_TRUE(guard.admit(Turns{{spine[0], spine[2]}}));
  // What is admitted is kept by GUID: a guard built from it refuses the same.
  const std::vector<DownUpTurn> kept = guard.turns();
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_TRUE(std::is_sorted(kept.begin(), kept.end()));
  TurnGuard again(g, key, kept);
  EXPECT_TRUE(again.has(spine[1], spine[2]));
  EXPECT_FALSE(again.admit(Turns{{spine[2], spine[0]}}));
}

// Degraded trees where the hosts of a leaf that lost an up-link have no legal way to some switches (the
// level-1 switch it lost and those above it): the fill before the guard closed cycles on every one of these
// (two such leaves of a pod each reaching the other's lost switch through it). Every route from a host, to
// every LID, switch LIDs included, now keeps the CDG acyclic and reaches its LID.
TEST(FillSwitchLidHoles, HostsWaysOnDegradedTreesCloseNoCycle) {
  struct Case {
    tools::FabricSpec spec;
    unsigned removed;
    uint64_t seed;
  };
  for (const Case& c : {Case{testing::karyNTree(6, 3), 4, 3}, Case{testing::karyNTree(6, 3), 8, 1},
                        Case{testing::fatTree(3, 12), 4, 1}, Case{testing::fatTree(3, 12), 8, 2}}) {
    tools::FabricSpec spec = c.spec;
    spec.removeLinks = c.removed;
    spec.seed = c.seed;
    auto topo = generate(spec);
    ASSERT_TRUE(topo);
    const LidAssignment lids = testing::assignOrDie(*topo);
    auto routed = computeChain({"ftree"}, *topo, lids, {});
    ASSERT_TRUE(routed.ok()) << routed.error().message;
    SCOPED_TRACE(std::to_string(c.removed) + " links removed, seed " + std::to_string(c.seed));
    CheckReport rep = checkRoutes(*topo, lids, routed->tables);
    EXPECT_TRUE(rep.ok()) << formatReportText(rep);
    EXPECT_FALSE(routed->tables.downUpTurns.empty());  // the case needs ways that turn
    EXPECT_GT(routed->switchLidsFilled, 0u);
  }
}

// Where no admitted way is left (a small tree that lost a third of its links), the hosts keep no way to that
// switch LID rather than one that closes a cycle; every CA LID stays reachable.
TEST(FillSwitchLidHoles, LeavesAHostWithoutAWayRatherThanCloseACycle) {
  tools::FabricSpec spec = testing::fatTree(2, 12);
  spec.removeLinks = 24;
  spec.seed = 2;
  auto topo = generate(spec);
  ASSERT_TRUE(topo);
  const LidAssignment lids = testing::assignOrDie(*topo);
  auto routed = computeChain({"ftree"}, *topo, lids, {});
  ASSERT_TRUE(routed.ok()) << routed.error().message;
  CheckReport all = checkRoutes(*topo, lids, routed->tables);
  EXPECT_TRUE(all.cdgAcyclic && all.arCdgAcyclic) << formatReportText(all);
  EXPECT_GT(all.noRoute, 0u);                             // the case needs a refusal
  EXPECT_EQ(all.unreachableToSwitches, all.unreachable);  // the report says they are management pairs
  CheckOptions co;
  co.checkCdg = co.checkArCdg = false;
  CheckReport ca = checkRoutes(*topo, testing::caLidsOnly(*topo, lids), routed->tables, co);
  EXPECT_EQ(ca.unreachable, 0u) << formatReportText(ca);
}

}  // namespace
}  // namespace ibsm::routing
