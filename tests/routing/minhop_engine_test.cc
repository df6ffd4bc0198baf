#include <gtest/gtest.h>

#include <map>
#include <set>

#include "routing/engine.h"
#include "routing/route_checker.h"
#include "tests/routing/fabric_sketch.h"

namespace ibsm::routing {
namespace {

using fabric::Topology;
using fabric::TopologyPtr;
using testing::FabricSketch;

RoutingTables route(const Topology& topo, const LidAssignment& lids, Options opt = {}) {
  auto t = makeMinHopEngine()->compute(topo, lids, opt);
  EXPECT_TRUE(t.ok()) << t.error().message;
  return t.ok() ? *t : RoutingTables{};
}

// Complete, loop-free, every pair on a shortest path; AR members all shortest.
CheckReport expectPerfect(const Topology& topo, uint8_t lmc = 0) {
  LidAssignment lids = testing::assignOrDie(topo, lmc);
  RoutingTables t = route(topo, lids);
  CheckOptions co;
  co.allLids = true;
  co.checkArCdg = false;
  CheckReport r = checkRoutes(topo, lids, t, co);
  EXPECT_GT(r.pairs, 0u);
  EXPECT_EQ(r.unreachable, 0u) << formatReportText(r);
  EXPECT_EQ(r.loops, 0u);
  EXPECT_EQ(r.maxStretch, 0u);
  EXPECT_EQ(r.arNotShortest, 0u);
  EXPECT_EQ(r.arMissingStatic, 0u);
  return r;
}

TEST(MinHop, TwoLevelFatTreeIsCompleteMinimalAndDeadlockFree) {
  // 4 leaves x 4 spines, 4 hosts per leaf (leaf i port 1..4 up to spines, 5..8 hosts).
  auto topo = testing::makeFatTree2(4, 4, 4);
  CheckReport r = expectPerfect(*topo);
  EXPECT_TRUE(r.cdgAcyclic);
  EXPECT_EQ(r.maxHops, 4u);
  EXPECT_EQ(r.switches, 8u);
  EXPECT_EQ(r.destinations, 16u + 8u);
}

TEST(MinHop, MeshTorusAndRandomMeshesAreCompleteAndMinimal) {
  expectPerfect(*testing::makeGrid(3, 3, 2, /*wrap=*/false));
  expectPerfect(*testing::makeGrid(4, 4, 1, /*wrap=*/true));
  expectPerfect(*testing::makeGrid(5, 3, 1, /*wrap=*/true), /*lmc=*/2);
  for (uint32_t seed = 1; seed <= 5; ++seed) expectPerfect(*testing::makeRandomMesh(20, 25, seed));
}

TEST(MinHop, TorusRoutesHaveCreditLoops) {
  // Min-hop on a ring is not deadlock-free on one VL; the checker must see the cycle.
  auto topo = testing::makeGrid(6, 1, 1, /*wrap=*/true);
  CheckReport r = expectPerfect(*topo);
  EXPECT_FALSE(r.cdgAcyclic);
  EXPECT_GE(r.cdgCycle.size(), 3u);
}

TEST(MinHop, BalancesEqualHopPortsOnATree) {
  //   spine0  spine1  spine2  spine3
  //      \\\\   ||||   ////          every leaf linked once to every spine (ports 1..4)
  //   leaf0  leaf1  leaf2  leaf3      4 hosts each (ports 5..8)
  auto topo = testing::makeFatTree2(4, 4, 4);
  LidAssignment lids = testing::assignOrDie(*topo);
  RoutingTables t = route(*topo, lids);
  for (NodeIndex leaf = 0; leaf < 4; ++leaf) {
    std::map<uint8_t, int> perPort;
    for (NodeIndex ca : topo->cas()) {
      const auto& port = topo->node(ca).ports[1];
      if (port.peerNode == leaf) continue;
      ++perPort[t.port(leaf, lids.base(ca, PortNum{1}))];
    }
    ASSERT_EQ(perPort.size(), 4u) << "leaf " << leaf;
    for (auto [port, n] : perPort) {
      EXPECT_GE(port, 1);
      EXPECT_LE(port, 4);
      EXPECT_EQ(n, 3) << "leaf " << leaf << " port " << int(port);
    }
  }
  CheckReport r = checkRoutes(*topo, lids, t);
  EXPECT_EQ(r.switchLinks, 32u);
  EXPECT_EQ(r.reachable, 16u * 15u + 16u * 8u);
  // Each leaf->spine link carries 4 sources x 3 destinations. Every leaf picks the same spine for a given
  // destination (they all see the destinations in the same order), so each spine->leaf link carries the
  // 3 other leaves x 4 sources for one destination.
  EXPECT_EQ(r.maxLoad, 12u);
  EXPECT_EQ(r.minLoad, 12u);
}

TEST(MinHop, PrefersADifferentNeighbourSwitchOnTies) {
  //        spineA     spineB
  //        ||   \\    /
  //        ||    leaf1 -- h1a, h1b
  //        ||   /
  //        leaf0 -- h0         leaf0: ports 1,2 to spineA, port 3 to spineB
  // (spineA--leaf1 two links, spineB--leaf1 one link)
  FabricSketch f;
  NodeIndex a = f.addSwitch("spineA", 8), b = f.addSwitch("spineB", 8);
  NodeIndex l0 = f.addSwitch("leaf0", 8), l1 = f.addSwitch("leaf1", 8);
  f.link(l0, 1, a, 1);
  f.link(l0, 2, a, 2);
  f.link(l0, 3, b, 1);
  f.link(l1, 1, a, 3);
  f.link(l1, 2, a, 4);
  f.link(l1, 3, b, 2);
  NodeIndex h0 = f.addCa("h0"), h1a = f.addCa("h1a"), h1b = f.addCa("h1b");
  f.link(h0, 1, l0, 4);
  f.link(h1a, 1, l1, 4);
  f.link(h1b, 1, l1, 5);
  auto topo = f.build();
  LidAssignment lids = testing::assignOrDie(*topo);
  RoutingTables t = route(*topo, lids);
  uint8_t pa = t.port(l0, lids.base(h1a, PortNum{1}));
  uint8_t pb = t.port(l0, lids.base(h1b, PortNum{1}));
  // One destination through spineA (port 1 or 2), the other through spineB (port 3).
  EXPECT_EQ(std::set<bool>({pa == 3, pb == 3}), (std::set<bool>{false, true})) << int(pa) << " " << int(pb);
  expectPerfect(*topo);
}

TEST(MinHop, ParallelLinksShareTheLoad) {
  //   leaf0 ==== leaf1      two parallel links (ports 1, 2), 4 hosts on each leaf
  FabricSketch f;
  NodeIndex l0 = f.addSwitch("leaf0", 8), l1 = f.addSwitch("leaf1", 8);
  f.link(l0, 1, l1, 1);
  f.link(l0, 2, l1, 2);
  std::vector<NodeIndex> remote;
  for (int i = 0; i < 4; ++i) {
    NodeIndex h = f.addCa("a" + std::to_string(i));
    f.link(h, 1, l0, 3 + i);
    NodeIndex g = f.addCa("b" + std::to_string(i));
    f.link(g, 1, l1, 3 + i);
    remote.push_back(g);
  }
  auto topo = f.build();
  LidAssignment lids = testing::assignOrDie(*topo);
  RoutingTables t = route(*topo, lids);
  std::map<uint8_t, int> perPort;
  for (NodeIndex g : remote) ++perPort[t.port(l0, lids.base(g, PortNum{1}))];
  EXPECT_EQ(perPort, (std::map<uint8_t, int>{{1, 2}, {2, 2}}));
  CheckReport r = checkRoutes(*topo, lids, t);
  // 4 sources x 2 CA destinations per link and direction (routes to switch LIDs are not load).
  EXPECT_EQ(r.maxLoad, 8u);
  EXPECT_EQ(r.minLoad, 8u);
}

TEST(MinHop, LmcLidsOfOnePortTakeDifferentSpines) {
  auto topo = testing::makeFatTree2(3, 2, 2);
  LidAssignment lids = testing::assignOrDie(*topo, 2);
  RoutingTables t = route(*topo, lids);
  for (NodeIndex leaf = 0; leaf < 3; ++leaf)
    for (NodeIndex ca : topo->cas()) {
      if (topo->node(ca).ports[1].peerNode == leaf) continue;
      LidRange r = lids.range(ca, PortNum{1});
      ASSERT_EQ(r.count(), 4);
      std::map<uint8_t, int> ports;
      for (unsigned k = 0; k < r.count(); ++k)
        ++ports[t.port(leaf, Lid{static_cast<uint16_t>(r.base.value + k)})];
      EXPECT_EQ(ports.size(), 2u) << topo->node(ca).description;
      for (auto [p, n] : ports) EXPECT_EQ(n, 2);
    }
  expectPerfect(*topo, 2);
}

TEST(MinHop, MultiPortHcasAndSwitchLidsAreRouted) {
  //   sw0 ---- sw1 ---- sw2
  //    |  \          /   |
  //   h0   +-- dual --+  h2        dual: port 1 to sw0, port 2 to sw2
  FabricSketch f;
  NodeIndex s0 = f.addSwitch("sw0", 8), s1 = f.addSwitch("sw1", 8), s2 = f.addSwitch("sw2", 8);
  f.link(s0, s1);
  f.link(s1, s2);
  NodeIndex h0 = f.addCa("h0"), h2 = f.addCa("h2"), dual = f.addCa("dual", 2);
  f.link(h0, 1, s0, f.nextPort(s0));
  f.link(h2, 1, s2, f.nextPort(s2));
  f.link(dual, 1, s0, f.nextPort(s0));
  f.link(dual, 2, s2, f.nextPort(s2));
  auto topo = f.build();
  LidAssignment lids = testing::assignOrDie(*topo);
  RoutingTables t = route(*topo, lids);
  // Own LID -> port 0; LID of a CA port linked to the switch -> that port.
  EXPECT_EQ(t.port(s1, lids.base(s1, PortNum{0})), 0);
  EXPECT_EQ(t.port(s0, lids.base(dual, PortNum{1})), topo->node(dual).ports[1].peerPort.value);
  EXPECT_EQ(t.port(s0, lids.base(dual, PortNum{2})), 1);  // towards sw1
  EXPECT_EQ(t.port(s2, lids.base(s0, PortNum{0})), 1);
  expectPerfect(*topo);
}

TEST(MinHop, DisconnectedPartsGetNoPort) {
  //   sw0 -- h0        sw1 -- h1      (no link between the switches)
  FabricSketch f;
  NodeIndex s0 = f.addSwitch("sw0", 4), s1 = f.addSwitch("sw1", 4);
  NodeIndex h0 = f.addCa("h0"), h1 = f.addCa("h1");
  f.link(h0, 1, s0, 1);
  f.link(h1, 1, s1, 1);
  auto topo = f.build();
  LidAssignment lids = testing::assignOrDie(*topo);
  RoutingTables t = route(*topo, lids);
  EXPECT_EQ(t.port(s0, lids.base(h1, PortNum{1})), kNoPort);
  EXPECT_EQ(t.port(s0, lids.base(s1, PortNum{0})), kNoPort);
  EXPECT_EQ(t.port(s0, lids.base(h0, PortNum{1})), 1);
  EXPECT_EQ(t.port(s0, Lid{0}), kNoPort);
  CheckReport r = checkRoutes(*topo, lids, t);
  EXPECT_EQ(r.reachable, 2u);  // each host reaches its own switch only
  EXPECT_EQ(r.noRoute, 4u);    // the other host and the other switch
  EXPECT_EQ(r.examples.size(), 4u);
  EXPECT_FALSE(r.ok());
}

TEST(MinHop, DownLinksAreAvoided) {
  //   sw0 ---- sw1          ports 1 (Down) and 2 (Active) in parallel
  //    |        |
  //   h0       h1
  FabricSketch f;
  NodeIndex s0 = f.addSwitch("sw0", 4), s1 = f.addSwitch("sw1", 4);
  f.link(s0, 1, s1, 1);
  f.link(s0, 2, s1, 2);
  f.node(s0).ports[1].attrs.valid = true;
  f.node(s0).ports[1].attrs.state = fabric::PortState::kDown;
  NodeIndex h0 = f.addCa("h0"), h1 = f.addCa("h1");
  f.link(h0, 1, s0, 3);
  f.link(h1, 1, s1, 3);
  auto topo = f.build();
  LidAssignment lids = testing::assignOrDie(*topo);
  RoutingTables t = route(*topo, lids);
  EXPECT_EQ(t.port(s0, lids.base(h1, PortNum{1})), 2);
  EXPECT_EQ(t.port(s1, lids.base(h0, PortNum{1})), 2);  // the far end's state counts too
  expectPerfect(*topo);
}

TEST(MinHop, FabricWithoutSwitches) {
  //   a (port 1) ---- (port 1) b
  FabricSketch f;
  NodeIndex a = f.addCa("a"), b = f.addCa("b");
  f.link(a, 1, b, 1);
  auto topo = f.build();
  LidAssignment lids = testing::assignOrDie(*topo);
  RoutingTables t = route(*topo, lids);
  ASSERT_EQ(t.lft.size(), 2u);
  EXPECT_TRUE(t.lft[a].empty());
  EXPECT_TRUE(t.lft[b].empty());
  EXPECT_EQ(checkRoutes(*topo, lids, t).unreachable, 0u);
}

TEST(MinHop, ResultDoesNotDependOnThreads) {
  auto topo = testing::makeRandomMesh(40, 60, 11);
  LidAssignment lids = testing::assignOrDie(*topo, 1);
  Options one, four;
  four.threads = 4;
  RoutingTables a = route(*topo, lids, one), b = route(*topo, lids, four);
  EXPECT_EQ(a.lft, b.lft);
  ASSERT_EQ(a.ar.size(), b.ar.size());
  for (size_t i = 0; i < a.ar.size(); ++i) {
    EXPECT_EQ(a.ar[i].groups, b.ar[i].groups);
    EXPECT_EQ(a.ar[i].lidToGroup, b.ar[i].lidToGroup);
  }
}

TEST(MinHop, ArGroupsAreTheEqualHopPorts) {
  auto topo = testing::makeFatTree2(3, 3, 2);
  LidAssignment lids = testing::assignOrDie(*topo);
  RoutingTables t = route(*topo, lids);
  ASSERT_EQ(t.ar.size(), topo->size());
  // Leaf 0 -> a host on leaf 1: all three spine ports.
  NodeIndex remote = fabric::kNoNode;
  for (NodeIndex ca : topo->cas())
    if (topo->node(ca).ports[1].peerNode == 1) remote = ca;
  Lid lid = lids.base(remote, PortNum{1});
  const ArTable& at = t.ar[0];
  ASSERT_LT(lid.value, at.lidToGroup.size());
  ASSERT_NE(at.lidToGroup[lid.value], ArTable::kNoGroup);
  PortMask want;
  want.set(1).set(2).set(3);
  EXPECT_EQ(at.groups[at.lidToGroup[lid.value]], want);
  // A host on leaf 0 itself has a single port: no group.
  Lid local = lids.base(topo->cas()[0], PortNum{1});
  EXPECT_EQ(at.lidToGroup[local.value], ArTable::kNoGroup);
  Options noAr;
  noAr.computeAr = false;
  EXPECT_TRUE(route(*topo, lids, noAr).ar.empty());
  // Fat-tree AR alternatives keep the CDG acyclic.
  CheckReport r = checkRoutes(*topo, lids, t);
  EXPECT_TRUE(r.arCdgChecked);
  EXPECT_TRUE(r.arCdgAcyclic);
  EXPECT_EQ(r.arNotShortest, 0u);
  EXPECT_GT(r.arEntries, 0u);
}

}  // namespace
}  // namespace ibsm::routing
