// Adopting the tables the switches hold (after a takeover or a restart): valid held routes stay even where a
// fresh engine run differs (the tables a repair left), invalid entries (a loop, a dead port, a hop that
// breaks the up/down order) take the fresh engine's, and the result is complete and deadlock-free.
#include "routing/adopt.h"

#include <gtest/gtest.h>

#include "routing/engine.h"
#include "routing/repair.h"
#include "routing/route_checker.h"
#include "tests/routing/generated_fabrics.h"

namespace ibsm::routing {
namespace {

using fabric::TopologyPtr;
using testing::generate;
using testing::takeDown;

using Routed = testing::RoutedWithLoads;
using testing::routeWithLoads;

// The first switch port (from the top of the tree, spine side) that leads to another switch.
std::pair<NodeIndex, uint8_t> aSpineLink(const Topology& topo) {
  const NodeIndex spine = *topo.findByDescription("spine-0");
  for (unsigned p = 1; p < topo.node(spine).ports.size(); ++p)
    if (topo.node(spine).ports[p].connected()) return {spine, static_cast<uint8_t>(p)};
  ADD_FAILURE() << "spine-0 has no link";
  return {spine, 1};
}

void expectSound(const Topology& topo, const LidAssignment& lids, const RoutingTables& t) {
  CheckOptions co;
  co.checkAr = co.checkArCdg = false;
  CheckReport rep = checkRoutes(topo, lids, t, co);
  EXPECT_GT(rep.pairs, 0u);
  EXPECT_EQ(rep.unreachable, 0u) << formatReportText(rep);
  EXPECT_TRUE(rep.cdgAcyclic);
}

size_t differences(const Topology& topo, const RoutingTables& a, const RoutingTables& b) {
  size_t n = 0;
  for (NodeIndex s : topo.switches())
    for (size_t lid = 0; lid < std::max(a.lft[s].size(), b.lft[s].size()); ++lid)
      n += a.port(s, fabric::Lid{static_cast<uint16_t>(lid)}) !=
           b.port(s, fabric::Lid{static_cast<uint16_t>(lid)});
  return n;
}

TEST(Adopt, TheEnginesOwnTablesStayAsTheyAre) {
  TopologyPtr topo = generate(testing::fatTree(3, 8));
  Routed r = routeWithLoads(*topo, "ftree");
  AdoptResult a = adoptHeldTables(*topo, r.lids, r.tables, r.tables.lft);
  EXPECT_TRUE(a.why.empty()) << a.why;
  EXPECT_EQ(a.kept, 0u);
  EXPECT_EQ(a.replaced, 0u);
  EXPECT_EQ(differences(*topo, a.tables, r.tables), 0u);
  EXPECT_EQ(a.tables.upKey, r.tables.upKey);
}

// After a spine link failed, the repair moved some routes; a restart's fresh ftree run routes otherwise. The
// repaired routes are all valid: every one stays, nothing would be written.
class AdoptRepaired : public ::testing::TestWithParam<std::string> {};

TEST_P(AdoptRepaired, KeepsEveryRouteARepairLeft) {
  TopologyPtr topo = generate(testing::fatTree(3, 8));
  Routed before = routeWithLoads(*topo, GetParam());
  auto [sw, port] = aSpineLink(*topo);
  TopologyPtr after = takeDown(*topo, {{sw, port}});
  PortLoads loads = computePortLoads(*topo, before.lids, before.tables);
  auto repaired = repairRoutes(*topo, before.lids, before.tables, loads, *after, before.lids);
  ASSERT_TRUE(repaired.ok()) << repaired.error().message;
  Routed fresh = routeWithLoads(*after, GetParam());
  ASSERT_GT(differences(*after, fresh.tables, repaired->tables), 0u) << "the test needs tables that differ";

  // Where a repair left a switch without a legal way to another switch's LID (no port: the rebalancing run
  // fills it), the fresh engine's entry fills the hole; every other entry stays.
  size_t holes = 0;
  for (NodeIndex s : after->switches())
    for (uint16_t l = 1; l <= before.lids.maxLid().value; ++l) {
      const fabric::Lid lid{l};
      if (repaired->tables.port(s, lid) == kNoPort && fresh.tables.port(s, lid) != kNoPort) {
        EXPECT_TRUE(after->node(before.lids.owner(lid).node).isSwitch()) << "switch " << s << " LID " << l;
        ++holes;
      }
    }
  AdoptResult a = adoptHeldTables(*after, before.lids, fresh.tables, repaired->tables.lft);
  EXPECT_TRUE(a.why.empty()) << a.why;
  EXPECT_EQ(a.replaced, holes);
  EXPECT_EQ(a.destinationsRejected, 0u);
  EXPECT_EQ(differences(*after, a.tables, repaired->tables), holes);
  EXPECT_GT(a.kept, 0u);
  expectSound(*after, before.lids, a.tables);
  EXPECT_EQ(a.tables.upKey, fresh.tables.upKey);  // later repairs use the fresh engine's order
  EXPECT_EQ(a.tables.engine, fresh.tables.engine);
}

INSTANTIATE_TEST_SUITE_P(Engines, AdoptRepaired, ::testing::Values("ftree", "updn", "minhop"),
                         [](const auto& info) { return info.param; });

// Held tables with three kinds of damage: a port that leads nowhere, a loop between two switches and, on a
// leaf, a route that goes up where it could go down (legal neither for ftree nor as a shortest path). Only
// those entries are replaced; the rest of the held tables stay.
// leaf-0 lost its link to level1-1 and leaf-1 its link to level1-0, and the held tables route their hosts to
// those switches so: leaf-0 -> level1-0 -> leaf-2 -> level1-1 and leaf-1 -> level1-1 -> leaf-3 ->
// level1-0, two down-up turns that close a cycle with the hosts' own routes between leaf-2 and leaf-3
// (routing/turn_guard.h). Both held ways are valid hop by hop
// (no legal way exists there); the adopted tables keep at most one of them and stay deadlock-free.
TEST(Adopt, HeldWaysToSwitchLidsThatCloseACycleAreNotBothKept) {
  TopologyPtr topo = generate(testing::karyNTree(6, 3));
  const auto lost0 = testing::linkBetween(*topo, "leaf-0", "level1-1");
  const auto lost1 = testing::linkBetween(*topo, "leaf-1", "level1-0");
  TopologyPtr after = takeDown(*topo, {lost0, lost1});
  Routed fresh = routeWithLoads(*after, "ftree");
  Rows<LftRow> held = fresh.tables.lft;
  auto hold = [&](const char* at, const char* toward, const char* lidOf) {
    const auto [n, port] = testing::linkBetween(*after, at, toward);
    const uint16_t lid = fresh.lids.base(*after->findByDescription(lidOf), PortNum{0}).value;
    held[n][lid] = port;
  };
  hold("leaf-0", "level1-0", "level1-1");
  hold("level1-0", "leaf-2", "level1-1");
  hold("leaf-1", "level1-1", "level1-0");
  hold("level1-1", "leaf-3", "level1-0");
  RoutingTables both = fresh.tables;
  both.lft = held;
  ASSERT_FALSE(checkRoutes(*after, fresh.lids, both).cdgAcyclic) << "the held ways must close a cycle";

  AdoptResult a = adoptHeldTables(*after, fresh.lids, fresh.tables, held);
  EXPECT_TRUE(a.why.empty()) << a.why;
  CheckReport rep = checkRoutes(*after, fresh.lids, a.tables);
  EXPECT_TRUE(rep.ok()) << formatReportText(rep);
}

TEST(Adopt, InvalidEntriesTakeTheFreshEnginesAndTheRestStays) {
  TopologyPtr topo = generate(testing::fatTree(3, 8));
  Routed r = routeWithLoads(*topo, "ftree");
  Rows<LftRow> held = r.tables.lft;
  const NodeIndex leaf0 = *topo->findByDescription("leaf-0");
  const NodeIndex leaf1 = *topo->findByDescription("leaf-1");
  // A CA LID cabled to leaf-1, and one cabled to leaf-0.
  auto caLidAt = [&](NodeIndex leaf) {
    for (unsigned p = 1; p < topo->node(leaf).ports.size(); ++p) {
      const fabric::Port& port = topo->node(leaf).ports[p];
      if (port.connected() && !topo->node(port.peerNode).isSwitch())
        return r.lids.base(port.peerNode, port.peerPort).value;
    }
    return uint16_t{0};
  };
  const uint16_t far = caLidAt(leaf1), near = caLidAt(leaf0);
  ASSERT_NE(far, 0);
  ASSERT_NE(near, 0);
  // A port that leads nowhere near: a host's.
  uint8_t hostPort = 0;
  for (unsigned p = 1; p < topo->node(leaf0).ports.size(); ++p) {
    const fabric::Port& port = topo->node(leaf0).ports[p];
    if (port.connected() && !topo->node(port.peerNode).isSwitch()) hostPort = static_cast<uint8_t>(p);
  }
  ASSERT_NE(hostPort, 0);
  held[leaf0][far] = hostPort;
  // A loop: the switch leaf-0 sends `far` to sends it back to leaf-0.
  const uint16_t other = static_cast<uint16_t>(far + 1);
  const uint8_t up = r.tables.port(leaf0, fabric::Lid{other});
  const fabric::Port& upPort = topo->node(leaf0).ports[up];
  ASSERT_TRUE(topo->node(upPort.peerNode).isSwitch());
  held[upPort.peerNode][other] = upPort.peerPort.value;
  // A hop up on leaf-0 for a LID of its own CAs (it must go straight down).
  held[leaf0][near] = up;

  AdoptResult a = adoptHeldTables(*topo, r.lids, r.tables, held);
  EXPECT_TRUE(a.why.empty()) << a.why;
  EXPECT_EQ(a.replaced, 3u);
  EXPECT_EQ(differences(*topo, a.tables, r.tables), 0u);
  expectSound(*topo, r.lids, a.tables);
}

// A legal detour through another spine stays; only its illegal neighbour goes.
TEST(Adopt, ALegalAlternativeStays) {
  TopologyPtr topo = generate(testing::fatTree(2, 8));
  Routed r = routeWithLoads(*topo, "ftree");
  const NodeIndex leaf0 = *topo->findByDescription("leaf-0");
  const NodeIndex leaf1 = *topo->findByDescription("leaf-1");
  uint16_t lid = 0;
  for (unsigned p = 1; p < topo->node(leaf1).ports.size() && !lid; ++p) {
    const fabric::Port& port = topo->node(leaf1).ports[p];
    if (port.connected() && !topo->node(port.peerNode).isSwitch())
      lid = r.lids.base(port.peerNode, port.peerPort).value;
  }
  ASSERT_NE(lid, 0);
  const uint8_t was = r.tables.port(leaf0, fabric::Lid{lid});
  uint8_t alt = 0;
  for (unsigned p = 1; p < topo->node(leaf0).ports.size() && !alt; ++p) {
    const fabric::Port& port = topo->node(leaf0).ports[p];
    if (p != was && port.connected() && topo->node(port.peerNode).isSwitch()) alt = static_cast<uint8_t>(p);
  }
  ASSERT_NE(alt, 0);
  Rows<LftRow> held = r.tables.lft;
  held[leaf0][lid] = alt;
  AdoptResult a = adoptHeldTables(*topo, r.lids, r.tables, held);
  EXPECT_EQ(a.kept, 1u);
  EXPECT_EQ(a.replaced, 0u);
  EXPECT_EQ(a.tables.port(leaf0, fabric::Lid{lid}), alt);
  expectSound(*topo, r.lids, a.tables);
}

// A freshly booted switch holds one block (LinearFDBTop 0): what it holds there counts, and the LIDs past it
// take the fresh engine's entries without a look.
TEST(Adopt, ShortHeldRowsCountOnlyTheirOwnLids) {
  TopologyPtr topo = generate(testing::fatTree(3, 8));
  Routed r = routeWithLoads(*topo, "ftree");
  ASSERT_GT(r.lids.maxLid().value, LftRow::kBlock);
  Rows<LftRow> held;
  held.resize(topo->size());
  size_t unset = 0;  // entries of the first block the fresh engine gives a port: all to be written
  for (NodeIndex s : topo->switches()) {
    held[s].assign(LftRow::kBlock, kNoPort);
    for (size_t lid = 0; lid < LftRow::kBlock; ++lid)
      unset += r.tables.port(s, fabric::Lid{static_cast<uint16_t>(lid)}) != kNoPort;
  }
  AdoptResult a = adoptHeldTables(*topo, r.lids, r.tables, held);
  EXPECT_TRUE(a.why.empty()) << a.why;
  EXPECT_EQ(a.kept, 0u);
  EXPECT_EQ(a.replaced, unset);
  EXPECT_EQ(differences(*topo, a.tables, r.tables), 0u);
}

// Unknown rows (a switch not read back) take the fresh engine's entries.
TEST(Adopt, UnreadSwitchesTakeTheFreshTables) {
  TopologyPtr topo = generate(testing::fatTree(2, 8));
  Routed r = routeWithLoads(*topo, "updn");
  Rows<LftRow> held;
  held.resize(topo->size());
  AdoptResult a = adoptHeldTables(*topo, r.lids, r.tables, held);
  EXPECT_EQ(a.kept, 0u);
  EXPECT_EQ(a.replaced, 0u);
  EXPECT_EQ(differences(*topo, a.tables, r.tables), 0u);
}

// Engines whose deadlock freedom rests on their own SLs/VLs keep their fresh tables.
TEST(Adopt, EnginesWithoutAnOrderKeepTheirFreshTables) {
  TopologyPtr topo = generate(testing::mesh(12, 4, 5));
  Options o;
  o.vlLayers = 8;
  Routed r = routeWithLoads(*topo, "dfsp", o);
  ASSERT_EQ(r.tables.lft.size(), topo->size());
  Rows<LftRow> held = r.tables.lft;
  const NodeIndex s = topo->switches().front();
  held[s][1] = held[s][1] == 1 ? 2 : 1;
  AdoptResult a = adoptHeldTables(*topo, r.lids, r.tables, held);
  EXPECT_FALSE(a.why.empty());
  EXPECT_EQ(a.kept, 0u);
  EXPECT_EQ(differences(*topo, a.tables, r.tables), 0u);
}

}  // namespace
}  // namespace ibsm::routing
