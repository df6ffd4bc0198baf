#include "routing/stabilize.h"

#include <gtest/gtest.h>

#include "routing/engine.h"
#include "routing/route_checker.h"
#include "tools/fabric_gen/generator.h"

namespace ibsm::routing {
namespace {

// A 4-ary 3-tree loses one switch-to-switch link: only the routes that used it may move, and the result is
// still complete and loop-free.
TEST(Stabilize, OnlyBrokenRoutesMove) {
  tools::FabricSpec full;
  full.shape = tools::Shape::kKaryNTree;
  auto before = tools::generateFabric(full);
  ASSERT_TRUE(before);
  tools::FabricSpec cut = full;
  cut.removeLinks = 1;
  cut.seed = 4;
  auto after = tools::generateFabric(cut);
  ASSERT_TRUE(after);

  auto oldLids = assignLids(**before, {}, 0);
  ASSERT_TRUE(oldLids);
  auto newLids = assignLids(**after, oldLids->guid2lid, 0);
  ASSERT_TRUE(newLids);
  Options o;
  auto oldTables = makeEngine("minhop")->compute(**before, oldLids->lids, o);
  auto fresh = makeEngine("minhop")->compute(**after, newLids->lids, o);
  ASSERT_TRUE(oldTables && fresh);

  // Entries whose old port no longer leads anywhere: the only ones that must move.
  size_t broken = 0, freshMoved = 0;
  const fabric::Topology& t = **after;
  for (NodeIndex s : t.switches()) {
    NodeIndex o = *(*before)->findNode(t.node(s).guid);
    for (size_t lid = 1; lid < fresh->lft[s].size(); ++lid) {
      uint8_t was = oldTables->lft[o][lid];
      if (was != kNoPort && was != 0 && !t.node(s).ports[was].connected()) ++broken;
      freshMoved += fresh->lft[s][lid] != was;
    }
  }
  ASSERT_GT(broken, 0u);
  RoutingTables stable = *fresh;
  StabilizeStats st = keepStableRoutes(**before, oldLids->lids, *oldTables, t, newLids->lids, stable);
  EXPECT_GT(st.kept, 0u);
  EXPECT_LT(st.moved, freshMoved);  // fewer changes than a fresh computation
  EXPECT_GE(st.moved, broken);      // but every broken one moved
  CheckOptions co;
  co.checkAr = co.checkArCdg = false;
  CheckReport rep = checkRoutes(t, newLids->lids, stable, co);
  EXPECT_EQ(rep.unreachable, 0u) << formatReportText(rep);
  EXPECT_EQ(rep.deadLink, 0u);
  EXPECT_EQ(rep.maxStretch, 0u);  // still shortest paths
}

}  // namespace
}  // namespace ibsm::routing
