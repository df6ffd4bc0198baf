// Incremental repair: after links or a switch go down, the repaired tables are complete where a legal path
// is left, loop-free, deadlock-free (CDG and AR CDG acyclic), AR members equal-cost; routes that did not
// cross the failure stay; the loads it keeps equal a recount; a change it cannot follow is declined with a
// reason.
#include "routing/repair.h"

#include <gtest/gtest.h>

#include <random>

#include "routing/engine.h"
#include "routing/route_checker.h"
#include "routing/turn_guard.h"
#include "tests/routing/generated_fabrics.h"

namespace ibsm::routing {
namespace {

using fabric::TopologyPtr;
using testing::generate;
using testing::routeWithLoads;
using testing::switchLinks;
using testing::takeDown;
using Routed = testing::RoutedWithLoads;
using tools::FabricSpec;
using tools::Shape;

// Repairs `before`'s routes for `after` and checks the result.
// cdg: the engine is deadlock-free; minimal: its routes are min-hop (not up/down on a mesh).
RepairResult repairAndCheck(const Topology& topo, const Routed& before, const Topology& after, bool cdg,
                            bool minimal, const std::string& what) {
  auto r = repairRoutes(topo, before.lids, before.tables, before.loads, after, before.lids);
  EXPECT_TRUE(r.ok()) << what << ": " << (r ? "" : r.error().message);
  if (!r) return {};
  CheckOptions co;
  co.checkCdg = co.checkArCdg = cdg;
  CheckReport rep = checkRoutes(after, before.lids, r->tables, co);
  EXPECT_EQ(rep.unreachable, 0u) << what << "\n" << formatReportText(rep);
  EXPECT_TRUE(rep.cdgAcyclic) << what;
  EXPECT_TRUE(rep.arCdgAcyclic) << what;
  EXPECT_EQ(rep.arMissingStatic, 0u) << what;
  if (minimal) {
    // Routes to CA LIDs are minimal. (A switch LID's way may run through an entry the engine filled with
    // min-hop's choice where no legal one exists, and be longer.)
    CheckReport ca = checkRoutes(after, testing::caLidsOnly(after, before.lids), r->tables, co);
    EXPECT_EQ(ca.arNotShortest, 0u) << what;
    EXPECT_EQ(ca.maxStretch, 0u) << what;
  }
  // The loads the repair keeps are the loads of its tables.
  PortLoads recount = computePortLoads(after, before.lids, r->tables);
  for (NodeIndex s : after.switches())
    for (size_t p = 1; p < recount[s].size(); ++p) {
      const fabric::Port& port = after.node(s).ports[p];
      if (!port.connected() || !after.node(port.peerNode).isSwitch()) continue;
      EXPECT_EQ(r->loads[s][p], recount[s][p]) << what << ": switch " << s << " port " << p;
    }
  // Only entries of destinations that crossed the failure changed, and `moved` counts them.
  // A switch whose row did not change still shares it with the old tables (nothing copied for it), and a
  // row that changed shares the blocks that did not.
  size_t moved = 0;
  const Rows<LftRow>& lft = r->tables.lft;  // read only: a write would clone the row
  for (NodeIndex s : after.switches()) {
    size_t here = 0;
    for (size_t lid = 0; lid < lft[s].size(); ++lid) {
      const bool changed = lft[s][lid] != before.tables.lft[s][lid];
      here += changed;
      if (lid % LftRow::kBlock == 0) {
        size_t blockChanged = 0;
        for (size_t l = lid; l < std::min(lft[s].size(), lid + LftRow::kBlock); ++l)
          blockChanged += lft[s][l] != before.tables.lft[s][l];
        EXPECT_EQ(blockChanged == 0, lft[s].sameBlock(lid / LftRow::kBlock, before.tables.lft[s]))
            << what << ": switch " << s << " block " << lid / LftRow::kBlock;
      }
    }
    EXPECT_EQ(here == 0, r->tables.lft.sameRow(s, before.tables.lft, s)) << what << ": switch " << s;
    moved += here;
  }
  EXPECT_EQ(moved, r->moved) << what;
  return std::move(*r);
}

class RepairEngines : public ::testing::TestWithParam<std::string> {};

TEST_P(RepairEngines, EveryLinkOfAThreeLevelFatTree) {
  TopologyPtr topo = generate(testing::fatTree(3, 8));
  ASSERT_TRUE(topo);
  Routed before = routeWithLoads(*topo, GetParam());
  for (auto link : switchLinks(*topo)) {
    TopologyPtr after = takeDown(*topo, {link});
    RepairResult r = repairAndCheck(*topo, before, *after, GetParam() != "minhop", true,
                                    "link " + std::to_string(link.first) + "/" + std::to_string(link.second));
    EXPECT_GT(r.destinations, 0u);
    EXPECT_LT(r.moved, before.lids.maxLid().value * topo->switches().size() / 10);
  }
}

INSTANTIATE_TEST_SUITE_P(Engines, RepairEngines, ::testing::Values("ftree", "updn", "minhop"),
                         [](const auto& info) { return info.param; });

class RepairMesh : public ::testing::TestWithParam<std::string> {};

TEST_P(RepairMesh, TwoFailuresInARow) {
  FabricSpec spec;
  spec.shape = Shape::kMesh;
  spec.switches = 24;
  spec.degree = 5;
  spec.hostsPerSwitch = 2;
  spec.seed = 7;
  TopologyPtr topo = generate(spec);
  ASSERT_TRUE(topo);
  Routed first = routeWithLoads(*topo, GetParam());
  std::mt19937 rng(3);
  auto links = switchLinks(*topo);
  std::shuffle(links.begin(), links.end(), rng);
  // Failures that keep the mesh connected with a legal path for every pair are repaired; the repair declines
  // (saying why) when a switch with hosts has no legal way left, and that is a from-scratch case.
  size_t repaired = 0;
  for (size_t i = 0; i + 1 < links.size() && repaired < 6; ++i) {
    TopologyPtr once = takeDown(*topo, {links[i]});
    auto r1 = repairRoutes(*topo, first.lids, first.tables, first.loads, *once, first.lids);
    if (!r1) {
      EXPECT_NE(r1.error().message.find("lost every legal way"), std::string::npos) << r1.error().message;
      continue;
    }
    Routed second{first.lids, r1->tables, r1->loads};
    TopologyPtr twice = takeDown(*once, {links[i + 1]});
    auto r2 = repairRoutes(*once, second.lids, second.tables, second.loads, *twice, second.lids);
    if (!r2) continue;
    repairAndCheck(*once, second, *twice, GetParam() == "updn", GetParam() == "minhop",
                   "links " + std::to_string(i) + ", +1");
    ++repaired;
  }
  EXPECT_GE(repaired, 3u);
}

INSTANTIATE_TEST_SUITE_P(Engines, RepairMesh, ::testing::Values("updn", "minhop"),
                         [](const auto& info) { return info.param; });

TEST(Repair, AWholeSwitchGoesDown) {
  TopologyPtr topo = generate(testing::fatTree(3, 8));
  Routed before = routeWithLoads(*topo, "ftree");
  const NodeIndex spine = *topo->findByDescription("spine-0");
  std::vector<std::pair<NodeIndex, uint8_t>> ports;
  for (unsigned p = 1; p < topo->node(spine).ports.size(); ++p)
    if (topo->node(spine).ports[p].connected()) ports.emplace_back(spine, static_cast<uint8_t>(p));
  TopologyPtr after = takeDown(*topo, ports);
  auto r = repairRoutes(*topo, before.lids, before.tables, before.loads, *after, before.lids);
  ASSERT_TRUE(r.ok()) << r.error().message;
  CheckReport rep = checkRoutes(*after, before.lids, r->tables);
  // Only the lost switch's own LID is out of reach (from every CA).
  EXPECT_EQ(rep.unreachable, topo->cas().size()) << formatReportText(rep);
  EXPECT_EQ(rep.noRoute, rep.unreachable);
  EXPECT_TRUE(rep.cdgAcyclic);
  EXPECT_TRUE(rep.arCdgAcyclic);
}

TEST(Repair, BalancedAfterASpineLinkOfALargeTree) {
  TopologyPtr topo = generate(testing::fatTree(3, 12));
  Routed before = routeWithLoads(*topo, "ftree");
  const NodeIndex leaf = *topo->findByDescription("leaf-0");
  uint8_t up = 0;
  for (unsigned p = 1; p < topo->node(leaf).ports.size() && !up; ++p)
    if (topo->node(topo->node(leaf).ports[p].peerNode).isSwitch()) up = static_cast<uint8_t>(p);
  const NodeIndex spine = topo->node(leaf).ports[up].peerNode;
  // The spine's first up-link (to a core).
  uint8_t core = 0;
  for (unsigned p = 1; p < topo->node(spine).ports.size() && !core; ++p) {
    const auto& port = topo->node(spine).ports[p];
    if (port.connected() && topo->node(port.peerNode).description.starts_with("core"))
      core = static_cast<uint8_t>(p);
  }
  for (auto link : {std::pair{leaf, up}, std::pair{spine, core}}) {
    TopologyPtr after = takeDown(*topo, {link});
    RepairResult r = repairAndCheck(*topo, before, *after, true, true, "balance");
    CheckReport rep = checkRoutes(*after, before.lids, r.tables);
    // The leaf's up-link: its hosts' traffic spreads over the leaf's other up-links, at the bound. A spine's
    // up-link: the spine's traffic spreads over its other up-links (the leaves keep sending to it; moving
    // them is the rebalancing run's work).
    const double limit = link.first == leaf ? 1.1 : 1.3;
    EXPECT_LE(static_cast<double>(rep.maxLoad), limit * static_cast<double>(rep.loadBound))
        << formatReportText(rep);
  }
}

// leaf-0 loses its link to level1-1 and leaf-1 its link to level1-0: their hosts have no legal way to that
// switch's LID, and ways that turn up at a leaf below the other one's lost switch close a cycle (they did
// before the repair asked routing/turn_guard.h). Both at once and one after the other (the second repair
// knows the first's turns from the tables): every route from a host, switch LIDs included, reaches its LID
// and the CDG stays acyclic.
TEST(Repair, HostsWaysToSwitchLidsStayAcyclicWhenTwoLeavesOfAPodLoseALink) {
  TopologyPtr topo = generate(testing::karyNTree(6, 3));
  Routed before = routeWithLoads(*topo, "ftree");
  const auto first = testing::linkBetween(*topo, "leaf-0", "level1-1");
  const auto second = testing::linkBetween(*topo, "leaf-1", "level1-0");
  ASSERT_NE(first.second, 0);
  ASSERT_NE(second.second, 0);
  TopologyPtr both = takeDown(*topo, {first, second});
  RepairResult r = repairAndCheck(*topo, before, *both, true, true, "both at once");
  EXPECT_FALSE(r.tables.downUpTurns.empty());

  TopologyPtr once = takeDown(*topo, {first});
  Routed mid{before.lids, repairAndCheck(*topo, before, *once, true, true, "the first").tables, {}};
  mid.loads = computePortLoads(*once, mid.lids, mid.tables);
  ASSERT_FALSE(mid.tables.downUpTurns.empty());
  TopologyPtr twice = takeDown(*once, {second});
  RepairResult last = repairAndCheck(*once, mid, *twice, true, true, "then the second");
  for (const DownUpTurn& t : mid.tables.downUpTurns)  // kept for later repairs
    EXPECT_TRUE(std::binary_search(last.tables.downUpTurns.begin(), last.tables.downUpTurns.end(), t));
}

// A repair hands out its new fabric's index; the next repair, given it for its old fabric, repairs as it
// does when it builds the index itself.
TEST(Repair, TheIndexItHandsOutServesTheNextRepair) {
  TopologyPtr topo = generate(testing::fatTree(3, 8));
  Routed before = routeWithLoads(*topo, "ftree");
  auto links = switchLinks(*topo);
  TopologyPtr once = takeDown(*topo, {links[0]});
  auto first = repairRoutes(*topo, before.lids, before.tables, before.loads, *once, before.lids);
  ASSERT_TRUE(first.ok()) << first.error().message;
  ASSERT_TRUE(first->index);
  EXPECT_EQ(first->index->graph.size(), once->switches().size());
  TopologyPtr twice = takeDown(*once, {links[links.size() / 2]});
  auto built = repairRoutes(*once, before.lids, first->tables, first->loads, *twice, before.lids);
  auto given = repairRoutes(*once, before.lids, first->tables, first->loads, *twice, before.lids, 2048, true,
                            first->index);
  ASSERT_TRUE(built.ok() && given.ok());
  EXPECT_GT(given->moved, 0u);
  EXPECT_EQ(given->moved, built->moved);
  EXPECT_EQ(given->tables.lft, built->tables.lft);
  EXPECT_EQ(given->loads, built->loads);
}

// The index of a changed fabric patched from the old one's is the one built afresh: links down at both ends
// or at one (a port's state alone), towards a switch or a CA, or unlinked as a re-discovery does.
TEST(Repair, APatchedIndexIsTheOneBuiltAfresh) {
  TopologyPtr topo = generate(testing::fatTree(3, 8));
  auto lids = assignLids(*topo, {}, 0);
  ASSERT_TRUE(lids.ok());
  const RepairIndex base(*topo, lids->lids);
  auto expectSame = [&](const fabric::Topology& changed, const std::string& what) {
    SCOPED_TRACE(what);
    auto patched = RepairIndex::patched(base, *topo, lids->lids, changed, lids->lids);
    const RepairIndex fresh(changed, lids->lids);
    const RoutingGraph &a = patched->graph, &b = fresh.graph;
    ASSERT_EQ(a.size(), b.size());
    ASSERT_EQ(a.arcCount(), b.arcCount());
    for (uint32_t s = 0; s < a.size(); ++s) {
      EXPECT_EQ(a.node(s), b.node(s));
      EXPECT_EQ(a.hosts(s), b.hosts(s));
      ASSERT_EQ(a.firstArc(s), b.firstArc(s));
    }
    for (uint32_t x = 0; x < a.arcCount(); ++x) {
      EXPECT_EQ(a.arc(x).to, b.arc(x).to);
      EXPECT_EQ(a.arc(x).port, b.arc(x).port);
      EXPECT_EQ(a.arc(x).reverse, b.arc(x).reverse);
    }
    for (uint32_t s = 0; s < a.size(); ++s)
      for (uint8_t p = 0; p <= a.maxPort(); ++p) EXPECT_EQ(patched->arcs(s, p), fresh.arcs(s, p));
    ASSERT_EQ(patched->exits.size(), fresh.exits.size());
    for (size_t l = 0; l < fresh.exits.size(); ++l) {
      EXPECT_EQ(patched->exits[l].sw, fresh.exits[l].sw) << "LID " << l;
      EXPECT_EQ(patched->exits[l].port, fresh.exits[l].port) << "LID " << l;
    }
  };
  const auto links = switchLinks(*topo);
  ASSERT_FALSE(links.empty());
  const fabric::NodeIndex ca = topo->cas().front();
  const fabric::Port& caPort = topo->node(ca).ports[1];
  const std::pair<fabric::NodeIndex, uint8_t> caLink{caPort.peerNode, caPort.peerPort.value};
  expectSame(*takeDown(*topo, {links[3]}), "a switch link down");
  expectSame(*takeDown(*topo, {caLink}), "a CA link down");
  auto oneEnd = [&](std::pair<fabric::NodeIndex, uint8_t> end) {
    fabric::Topology::AttrPatch patch;
    fabric::PortAttrs a = topo->node(end.first).ports[end.second].attrs;
    a.valid = true;
    a.state = fabric::PortState::kDown;
    patch.ports.emplace_back(end.first, fabric::PortNum{end.second}, a);
    return topo->withAttrs(patch);
  };
  expectSame(*oneEnd(links[5]), "one end of a switch link down");
  expectSame(*oneEnd(caLink), "a switch's port to a CA down");
  fabric::TopologyBuilder b(*topo);
  b.disconnect(links[7].first, fabric::PortNum{links[7].second});
  b.disconnect(caLink.first, fabric::PortNum{caLink.second});
  auto unlinked = std::move(b).build();
  ASSERT_TRUE(unlinked.ok());
  expectSame(**unlinked, "a switch link and a CA link unlinked");
}

TEST(Repair, ALinkThatComesUpKeepsEveryRoute) {
  TopologyPtr full = generate(testing::fatTree(2, 8));
  auto link = switchLinks(*full).front();
  TopologyPtr degraded = takeDown(*full, {link});
  Routed before = routeWithLoads(*degraded, "ftree");
  auto r = repairRoutes(*degraded, before.lids, before.tables, before.loads, *full, before.lids);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->destinations, 0u);
  EXPECT_EQ(r->moved, 0u);
  EXPECT_EQ(r->tables.lft, before.tables.lft);
}

TEST(Repair, DeclinesWhatItCannotFollow) {
  TopologyPtr topo = generate(testing::fatTree(2, 8));
  Routed before = routeWithLoads(*topo, "ftree");
  // Tables of an engine that promises no up/down order.
  RoutingTables noOrder = before.tables;
  noOrder.upKey.clear();
  auto r = repairRoutes(*topo, before.lids, noOrder, before.loads, *topo, before.lids);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("no up/down order"), std::string::npos) << r.error().message;
  // A bigger fabric: new switches.
  TopologyPtr bigger = generate(testing::fatTree(2, 12));
  auto lids = assignLids(*bigger, {}, 0);
  r = repairRoutes(*topo, before.lids, before.tables, before.loads, *bigger, lids->lids);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("is new"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace ibsm::routing
