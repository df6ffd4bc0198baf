// Minimal-change rebalancing after a repair: from the repaired routes, few entries move and the max link load
// falls to (near) the lower bound; every route keeps its length and stays up*/down* (CDG acyclic), AR groups
// hold the LFT port, the loads it returns equal a recount and `moved` counts the entries that differ; a link
// that comes back is taken into use; tables without an up/down order are declined. After a single link
// failure on a full fat tree the shifts stay at most 2-congested, as the repair left them; where the repair
// lost them (a whole switch), the moves chase the load alone.
#include "routing/rebalance.h"

#include <gtest/gtest.h>

#include "routing/engine.h"
#include "routing/pattern_checker.h"
#include "routing/repair.h"
#include "routing/route_checker.h"
#include "tests/routing/generated_fabrics.h"

namespace ibsm::routing {
namespace {

using fabric::TopologyPtr;
using testing::generate;
using testing::routeWithLoads;
using testing::switchLinks;
using testing::takeDown;
using Routed = testing::RoutedWithLoads;

// Rebalances `r` on `topo` and checks what every rebalance promises.
RebalanceResult rebalanceAndCheck(const Topology& topo, const Routed& r, bool cdg, const std::string& what,
                                  const RebalanceOptions& options = {}) {
  auto b = rebalanceRoutes(topo, r.lids, r.tables, r.loads, options);
  EXPECT_TRUE(b.ok()) << what << ": " << (b ? "" : b.error().message);
  if (!b) return {};
  EXPECT_LE(b->maxLoadAfter, b->maxLoadBefore) << what;
  CheckOptions co;
  co.checkCdg = co.checkArCdg = cdg;
  CheckReport rep = checkRoutes(topo, r.lids, b->tables, co);
  EXPECT_EQ(rep.unreachable, 0u) << what << "\n" << formatReportText(rep);
  EXPECT_TRUE(rep.cdgAcyclic) << what;
  EXPECT_TRUE(rep.arCdgAcyclic) << what;
  EXPECT_EQ(rep.arMissingStatic, 0u) << what;
  EXPECT_EQ(rep.maxLoad, b->maxLoadAfter) << what;
  // No route to a CA got longer (the repaired ones are minimal, so these are too).
  LidAssignment caLids = r.lids;
  for (NodeIndex s : topo.switches()) caLids.set(s, PortNum{0}, LidRange{Lid{0}, 0});
  EXPECT_EQ(checkRoutes(topo, caLids, b->tables, co).maxStretch, 0u) << what;
  // The loads it returns are its tables'.
  PortLoads recount = computePortLoads(topo, r.lids, b->tables);
  for (NodeIndex s : topo.switches())
    for (size_t p = 1; p < recount[s].size(); ++p)
      if (topo.node(s).ports[p].connected() && topo.node(topo.node(s).ports[p].peerNode).isSwitch()) {
        EXPECT_EQ(b->loads[s][p], recount[s][p]) << what << ": switch " << s << " port " << p;
      }
  // `moved` counts the entries that differ.
  size_t moved = 0;
  const Rows<LftRow>& lft = b->tables.lft;  // read only: a write would clone the row
  for (NodeIndex s : topo.switches())
    for (size_t lid = 0; lid < lft[s].size(); ++lid) moved += lft[s][lid] != r.tables.lft[s][lid];
  EXPECT_EQ(moved, b->moved) << what;
  return std::move(*b);
}

// The repaired routes of `link` taken down, as the daemon has them before its rebalancing run.
Routed repaired(const Topology& topo, const Routed& before, const Topology& after, size_t* moved = nullptr) {
  auto r = repairRoutes(topo, before.lids, before.tables, before.loads, after, before.lids);
  EXPECT_TRUE(r.ok()) << (r ? "" : r.error().message);
  if (!r) return {};
  if (moved) *moved = r->moved;
  return {before.lids, std::move(r->tables), std::move(r->loads)};
}

// The failure the issue measures at 11,664 hosts, on 432: a spine switch's up-link to a core. The repair
// spreads the spine's traffic over its other up-links, which then carry more than the bound; moving some
// leaves' routes to the other spines of the pod brings the max to within 2% of the lower bound, moving at
// most three times the entries the repair moved.
TEST(Rebalance, AfterASpineUpLinkOfAThreeLevelTree) {
  TopologyPtr topo = generate(testing::fatTree(3, 12));
  ASSERT_TRUE(topo);
  Routed before = routeWithLoads(*topo, "ftree");
  const auto [spine, core] = testing::coreLink(*topo, "spine-0");
  ASSERT_NE(core, 0);
  TopologyPtr after = takeDown(*topo, {{spine, core}});
  size_t repairMoved = 0;
  Routed r = repaired(*topo, before, *after, &repairMoved);
  RebalanceResult b = rebalanceAndCheck(*after, r, true, "spine up-link");
  const uint64_t bound = loadLowerBound(*after, r.lids);
  EXPECT_EQ(b.target, bound);
  std::printf("repair moved %zu, rebalance moved %zu: max load %llu -> %llu, lower bound %llu\n", repairMoved,
              b.moved, static_cast<unsigned long long>(b.maxLoadBefore),
              static_cast<unsigned long long>(b.maxLoadAfter), static_cast<unsigned long long>(bound));
  EXPECT_GT(b.maxLoadBefore, bound * 102 / 100);  // the repair alone is not balanced
  EXPECT_LE(b.maxLoadAfter, bound * 102 / 100);
  EXPECT_GT(b.moved, 0u);
  EXPECT_LE(b.moved, 3 * repairMoved);
}

// Shifts (rank i to rank i + t, hosts in name order, as a job scheduler numbers them) after a single link
// failure on a full fat tree: ftree's D-mod-K routes put one flow of each shift on a link, the repair at most
// two. The rebalance moves leaves' routes off a spine's remaining up-links to the pod's other spines; moved
// without regard to shifts, consecutive destinations of several leaves land on one link (up to 6 flows of a
// shift on --fat-tree 3 --radix 12 with spine-7:8 down). It must keep every shift at most 2-congested and
// still bring the max load to within 2% of the lower bound, moving at most three times the entries the
// repair moved.
TEST(Rebalance, KeepsShiftsWithinTwoAfterASingleLinkFailure) {
  TopologyPtr topo = generate(testing::fatTree(3, 12));
  ASSERT_TRUE(topo);
  Routed before = routeWithLoads(*topo, "ftree");
  // (switch, port): spine up-links (the case the rebalance acts on), a core's down-link, a leaf up-link.
  for (auto [name, port] : {std::pair{"spine-7", 8}, std::pair{"spine-0", 7}, std::pair{"core-3", 5},
                            std::pair{"spine-20", 11}, std::pair{"leaf-5", 8}}) {
    const std::string what = std::string(name) + ":" + std::to_string(port);
    const auto node = topo->findByDescription(name);
    ASSERT_TRUE(node) << what;
    TopologyPtr after = takeDown(*topo, {{*node, static_cast<uint8_t>(port)}});
    size_t repairMoved = 0;
    Routed r = repaired(*topo, before, *after, &repairMoved);
    const PatternReport rep = checkPattern(*after, r.lids, r.tables, {});
    ASSERT_LE(rep.maxCongestion, 2u) << what << ": the repair alone";
    RebalanceResult b = rebalanceAndCheck(*after, r, true, what);
    const uint64_t bound = loadLowerBound(*after, r.lids);
    const PatternReport reb = checkPattern(*after, r.lids, b.tables, {});
    std::printf(
        "%s: max load %llu -> %llu (bound %llu), max congestion %u -> %u, mean bandwidth %.4f -> "
        "%.4f, moved %zu + %zu\n",
        what.c_str(), static_cast<unsigned long long>(b.maxLoadBefore),
        static_cast<unsigned long long>(b.maxLoadAfter), static_cast<unsigned long long>(bound),
        rep.maxCongestion, reb.maxCongestion, rep.meanBandwidth, reb.meanBandwidth, repairMoved, b.moved);
    EXPECT_EQ(reb.unrouted, 0u) << what;
    EXPECT_LE(b.shiftShare, 2u) << what << ": the rule applies";
    EXPECT_LE(reb.maxCongestion, 2u) << what;
    EXPECT_LE(b.maxLoadAfter * 100, bound * 102) << what;
    EXPECT_LE(b.moved, 3 * repairMoved) << what;
  }
}

// A whole spine switch lost: its pod's leaves each lose an up-link, the repair piles their routes onto the
// other spines and already puts more than 2 flows of a shift on the loaded links (7 here). The moves chase
// the load alone (its result says why), and then the shift polish brings every shift back to 2 for a few
// percent of load: 432 hosts is within its budget.
TEST(Rebalance, ChasesTheLoadAloneWhereTheRepairDidNotKeepTheShiftsThenPolishesThem) {
  TopologyPtr topo = generate(testing::fatTree(3, 12));
  ASSERT_TRUE(topo);
  Routed before = routeWithLoads(*topo, "ftree");
  const auto spine = topo->findByDescription("spine-0");
  ASSERT_TRUE(spine);
  std::vector<std::pair<NodeIndex, uint8_t>> links;
  for (uint8_t p = 1; p <= topo->node(*spine).numPorts; ++p)
    if (topo->node(*spine).ports[p].connected()) links.emplace_back(*spine, p);
  TopologyPtr after = takeDown(*topo, links);
  LidAssignment lids = before.lids;  // the lost switch's LID leaves the fabric with it
  lids.set(*spine, PortNum{0}, LidRange{Lid{0}, 0});
  auto rep = repairRoutes(*topo, before.lids, before.tables, before.loads, *after, lids);
  ASSERT_TRUE(rep.ok()) << rep.error().message;
  const Routed r{lids, std::move(rep->tables), std::move(rep->loads)};
  EXPECT_GT(checkPattern(*after, r.lids, r.tables, {}).maxCongestion, 2u);
  RebalanceResult b = rebalanceAndCheck(*after, r, true, "whole spine");
  RebalanceOptions loadOnly;
  loadOnly.maxShiftShare = 0;
  RebalanceResult l = rebalanceAndCheck(*after, r, true, "whole spine, load alone", loadOnly);
  EXPECT_GT(b.shiftShare, 2u);
  EXPECT_EQ(l.shiftShare, 0u);
  EXPECT_GT(checkPattern(*after, r.lids, l.tables, {}).maxCongestion, 2u);
  EXPECT_LE(checkPattern(*after, r.lids, b.tables, {}).maxCongestion, 2u);
  EXPECT_LE(b.maxLoadAfter * 100, loadLowerBound(*after, lids) * 105);
  EXPECT_GT(b.moved, l.moved);
}

// A LID that left the fabric (a whole switch lost): the repair that a rebalance follows keeps its entries
// (they lead only to ports whose link is down) and is otherwise the same; the rebalance clears them, AR
// groups included, and counts them apart from the routes it gives back.
TEST(Rebalance, ClearsTheEntriesOfALidThatLeftWhichTheRepairKept) {
  TopologyPtr topo = generate(testing::fatTree(3, 8));
  ASSERT_TRUE(topo);
  Routed before = routeWithLoads(*topo, "ftree");
  const NodeIndex spine = *topo->findByDescription("spine-0");
  const uint16_t gone = before.lids.base(spine, PortNum{0}).value;
  std::vector<std::pair<NodeIndex, uint8_t>> links;
  for (uint8_t p = 1; p <= topo->node(spine).numPorts; ++p)
    if (topo->node(spine).ports[p].connected()) links.emplace_back(spine, p);
  TopologyPtr after = takeDown(*topo, links);
  LidAssignment lids = before.lids;
  lids.set(spine, PortNum{0}, LidRange{Lid{0}, 0});
  auto cleared = repairRoutes(*topo, before.lids, before.tables, before.loads, *after, lids);
  auto kept = repairRoutes(*topo, before.lids, before.tables, before.loads, *after, lids, 2048, false);
  ASSERT_TRUE(cleared.ok() && kept.ok());
  EXPECT_EQ(kept->loads, cleared->loads);
  size_t stale = 0;
  const Rows<LftRow>& kl = kept->tables.lft;
  const Rows<LftRow>& cl = cleared->tables.lft;
  for (NodeIndex s : after->switches()) {
    EXPECT_EQ(cl[s][gone], kNoPort) << "switch " << s;
    EXPECT_EQ(kl[s][gone], before.tables.lft[s][gone]) << "switch " << s;
    stale += kl[s][gone] != kNoPort;
    for (size_t lid = 1; lid < kl[s].size(); ++lid)
      if (lid != gone) {
        EXPECT_EQ(kl[s][lid], cl[s][lid]) << "switch " << s << " LID " << lid;
      }
  }
  ASSERT_GT(stale, 0u);
  EXPECT_EQ(kept->moved + stale, cleared->moved);
  const Routed r{lids, std::move(kept->tables), std::move(kept->loads)};
  RebalanceResult b = rebalanceAndCheck(*after, r, true, "whole spine, entries kept");
  EXPECT_EQ(b.cleared, stale);
  const Rows<LftRow>& bl = b.tables.lft;
  for (NodeIndex s : after->switches()) {
    EXPECT_EQ(bl[s][gone], kNoPort) << "switch " << s;
    if (!b.tables.ar.empty() && gone < b.tables.ar[s].lidToGroup.size()) {
      EXPECT_EQ(b.tables.ar[s].lidToGroup[gone], ArTable::kNoGroup) << "switch " << s;
    }
  }
}

class RebalanceEngines : public ::testing::TestWithParam<std::string> {};

TEST_P(RebalanceEngines, AfterEveryLinkOfAThreeLevelFatTree) {
  TopologyPtr topo = generate(testing::fatTree(3, 8));
  ASSERT_TRUE(topo);
  Routed before = routeWithLoads(*topo, GetParam());
  for (auto link : switchLinks(*topo)) {
    TopologyPtr after = takeDown(*topo, {link});
    rebalanceAndCheck(*after, repaired(*topo, before, *after), GetParam() != "minhop",
                      "link " + std::to_string(link.first) + "/" + std::to_string(link.second));
  }
}

INSTANTIATE_TEST_SUITE_P(Engines, RebalanceEngines, ::testing::Values("ftree", "updn", "minhop"),
                         [](const auto& info) { return info.param; });

// A link back up: the repair leaves it unused, the rebalance gives the switches that lost their way to some
// LIDs with it a route again and moves traffic onto it, back to within 5% of the max load the full tree had
// (single moves from the degraded routes do not always find the engine's perfect balance).
TEST(Rebalance, TakesALinkThatCameBackIntoUse) {
  TopologyPtr full = generate(testing::fatTree(3, 8));
  ASSERT_TRUE(full);
  Routed original = routeWithLoads(*full, "ftree");
  const uint64_t originalMax = checkRoutes(*full, original.lids, original.tables).maxLoad;
  const auto [spine, core] = testing::coreLink(*full, "spine-0");
  ASSERT_NE(core, 0);
  TopologyPtr degraded = takeDown(*full, {{spine, core}});
  Routed down = repaired(*full, original, *degraded);
  RebalanceResult b = rebalanceAndCheck(*degraded, down, true, "down");
  Routed balanced{down.lids, std::move(b.tables), std::move(b.loads)};
  Routed up = repaired(*degraded, balanced, *full);
  const uint64_t link = up.loads[spine][core];
  EXPECT_EQ(link, 0u);  // the repair keeps every route
  RebalanceResult back = rebalanceAndCheck(*full, up, true, "up");
  EXPECT_GT(back.loads[spine][core], 0u);
  EXPECT_LE(back.maxLoadAfter, b.maxLoadAfter);
  EXPECT_LE(back.maxLoadAfter, originalMax * 105 / 100);
}

// The routes a link that came back makes minimal again are counted as restored (ibsmd writes them whatever
// the load gain): min-hop's routes are as short as on the full tree again.
TEST(Rebalance, CountsTheRoutesALinkThatCameBackMakesMinimalAgain) {
  TopologyPtr full = generate(testing::fatTree(3, 8));
  ASSERT_TRUE(full);
  Routed original = routeWithLoads(*full, "minhop");
  const auto [spine, core] = testing::coreLink(*full, "spine-0");
  TopologyPtr degraded = takeDown(*full, {{spine, core}});
  Routed down = repaired(*full, original, *degraded);
  // min-hop promises no deadlock freedom: no CDG check
  RebalanceResult b = rebalanceAndCheck(*degraded, down, false, "down");
  EXPECT_EQ(b.restored, 0u);
  Routed balanced{down.lids, std::move(b.tables), std::move(b.loads)};
  Routed up = repaired(*degraded, balanced, *full);
  EXPECT_GT(checkRoutes(*full, up.lids, up.tables).maxStretch, 0u);
  RebalanceResult back = rebalanceAndCheck(*full, up, false, "up");
  EXPECT_GT(back.restored, 0u);
  EXPECT_LE(back.restored, back.moved);
  EXPECT_EQ(checkRoutes(*full, up.lids, back.tables).maxStretch, 0u);
}

// At the target no route to a CA moves. The routes to switch LIDs the repair left (a shortest path's next hop
// where a switch lost its legal way, so no hole) are made plain shortest paths again, as the engine chain
// does for switch LIDs: every switch reaches every switch LID, and no row without a change is copied.
TEST(Rebalance, NothingMovesAtTheTarget) {
  TopologyPtr topo = generate(testing::fatTree(3, 8));
  Routed before = routeWithLoads(*topo, "ftree");
  TopologyPtr after = takeDown(*topo, {switchLinks(*topo).front()});
  Routed r = repaired(*topo, before, *after);
  RebalanceOptions o;
  o.target = checkRoutes(*after, r.lids, r.tables).maxLoad;
  RebalanceResult b = rebalanceAndCheck(*after, r, true, "at target", o);
  EXPECT_EQ(b.maxLoadAfter, b.maxLoadBefore);
  size_t holesBefore = 0;
  for (NodeIndex s : after->switches()) {
    bool changed = false;
    for (NodeIndex t : after->switches()) {
      const Lid lid = r.lids.base(t, PortNum{0});
      if (s == t) continue;
      holesBefore += r.tables.port(s, lid) == kNoPort;
      EXPECT_NE(b.tables.port(s, lid), kNoPort) << after->node(s).description << " to " << lid.value;
      changed = changed || b.tables.port(s, lid) != r.tables.port(s, lid);
    }
    for (NodeIndex c : after->cas())
      EXPECT_EQ(b.tables.port(s, r.lids.base(c, PortNum{1})), r.tables.port(s, r.lids.base(c, PortNum{1})));
    if (!changed) {
      EXPECT_TRUE(b.tables.lft.sameRow(s, r.tables.lft, s)) << after->node(s).description;
    }
  }
  EXPECT_EQ(holesBefore, 0u);
}

TEST(Rebalance, DeclinesRoutesWithoutAnOrder) {
  TopologyPtr topo = generate(testing::fatTree(2, 8));
  Routed before = routeWithLoads(*topo, "ftree");
  before.tables.upKey.clear();
  auto b = rebalanceRoutes(*topo, before.lids, before.tables, before.loads);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message.find("no up/down order"), std::string::npos) << b.error().message;
}

}  // namespace
}  // namespace ibsm::routing
