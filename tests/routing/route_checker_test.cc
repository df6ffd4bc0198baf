#include "routing/route_checker.h"

#include <gtest/gtest.h>

#include "routing/engine.h"
#include "tests/routing/fabric_sketch.h"

namespace ibsm::routing {
namespace {

using fabric::Topology;
using fabric::TopologyPtr;
using testing::FabricSketch;

// Empty tables (every entry kNoPort) sized for the LIDs.
RoutingTables emptyTables(const Topology& topo, const LidAssignment& lids) {
  RoutingTables t;
  t.engine = "hand";
  t.lft.resize(topo.size());
  for (NodeIndex s : topo.switches()) t.lft[s].assign(lids.maxLid().value + 1u, kNoPort);
  return t;
}

void setRoute(RoutingTables& t, NodeIndex sw, Lid lid, uint8_t port) {
  t.lft[sw][lid.value] = port;
}

bool anyExampleHas(const CheckReport& r, const std::string& what) {
  for (const auto& e : r.examples)
    if (e.find(what) != std::string::npos) return true;
  return false;
}

//   h0 --(3) sw0 (1)---(1) sw1 (3)-- h1        sw0 port 2 is unlinked
struct Line {
  TopologyPtr topo;
  NodeIndex s0, s1, h0, h1;
  LidAssignment lids;
};
Line makeLine(uint8_t lmc = 0) {
  FabricSketch f;
  Line l;
  l.s0 = f.addSwitch("sw0", 4);
  l.s1 = f.addSwitch("sw1", 4);
  l.h0 = f.addCa("h0");
  l.h1 = f.addCa("h1");
  f.link(l.s0, 1, l.s1, 1);
  f.link(l.h0, 1, l.s0, 3);
  f.link(l.h1, 1, l.s1, 3);
  l.topo = f.build();
  l.lids = testing::assignOrDie(*l.topo, lmc);
  return l;
}

// Correct tables for the line, written by hand.
RoutingTables lineTables(const Line& l) {
  RoutingTables t = emptyTables(*l.topo, l.lids);
  for (unsigned k = 0; k < l.lids.range(l.h0, PortNum{1}).count(); ++k) {
    setRoute(t, l.s0, Lid{static_cast<uint16_t>(l.lids.base(l.h0, PortNum{1}).value + k)}, 3);
    setRoute(t, l.s1, Lid{static_cast<uint16_t>(l.lids.base(l.h0, PortNum{1}).value + k)}, 1);
    setRoute(t, l.s0, Lid{static_cast<uint16_t>(l.lids.base(l.h1, PortNum{1}).value + k)}, 1);
    setRoute(t, l.s1, Lid{static_cast<uint16_t>(l.lids.base(l.h1, PortNum{1}).value + k)}, 3);
  }
  setRoute(t, l.s0, l.lids.base(l.s0, PortNum{0}), 0);
  setRoute(t, l.s1, l.lids.base(l.s0, PortNum{0}), 1);
  setRoute(t, l.s0, l.lids.base(l.s1, PortNum{0}), 1);
  setRoute(t, l.s1, l.lids.base(l.s1, PortNum{0}), 0);
  return t;
}

TEST(RouteChecker, CorrectTablesPass) {
  Line l = makeLine();
  CheckReport r = checkRoutes(*l.topo, l.lids, lineTables(l));
  EXPECT_EQ(r.sources, 2u);
  EXPECT_EQ(r.destinations, 4u);
  EXPECT_EQ(r.pairs, 6u);
  EXPECT_EQ(r.reachable, 6u);
  EXPECT_EQ(r.unreachable, 0u);
  EXPECT_EQ(r.maxHops, 3u);
  // h0->sw0 1, h0->sw1 2, h0->h1 3 (and the same from h1).
  EXPECT_DOUBLE_EQ(r.meanHops, 2.0);
  EXPECT_EQ(r.maxStretch, 0u);
  EXPECT_EQ(r.switchLinks, 2u);
  EXPECT_EQ(r.maxLoad, 1u);  // h0->h1 over sw0->sw1 (h0->sw1 is management traffic, not load)
  EXPECT_EQ(r.minLoad, 1u);
  EXPECT_TRUE(r.cdgAcyclic);
  EXPECT_EQ(r.cdgEdges, 0u);
  EXPECT_TRUE(r.ok());
  EXPECT_FALSE(r.arChecked);
}

TEST(RouteChecker, CatchesMissingEntry) {
  Line l = makeLine();
  RoutingTables t = lineTables(l);
  setRoute(t, l.s1, l.lids.base(l.h1, PortNum{1}), kNoPort);
  CheckReport r = checkRoutes(*l.topo, l.lids, t);
  EXPECT_EQ(r.noRoute, 1u);  // h0 -> h1 (h1 does not send to itself)
  EXPECT_EQ(r.unreachable, 1u);
  EXPECT_FALSE(r.ok());
  ASSERT_EQ(r.examples.size(), 1u);
  EXPECT_TRUE(anyExampleHas(r, "no LFT entry at switch 0x0000000000005001 'sw1'")) << r.examples[0];
  EXPECT_TRUE(anyExampleHas(r, "from 'h0' port 1")) << r.examples[0];
}

TEST(RouteChecker, CatchesLoop) {
  Line l = makeLine();
  RoutingTables t = lineTables(l);
  setRoute(t, l.s1, l.lids.base(l.h1, PortNum{1}), 1);  // bounce back to sw0, which sends it to sw1 again
  CheckReport r = checkRoutes(*l.topo, l.lids, t);
  EXPECT_EQ(r.loops, 1u);
  EXPECT_TRUE(anyExampleHas(r, "loop through"));
  // The ping-pong between the two directions of one cable is a CDG cycle too.
  EXPECT_FALSE(r.cdgAcyclic);
  EXPECT_EQ(r.cdgCycle.size(), 2u);
  EXPECT_FALSE(r.ok());
}

TEST(RouteChecker, CatchesDeadAndMissingPorts) {
  Line l = makeLine();
  RoutingTables t = lineTables(l);
  setRoute(t, l.s0, l.lids.base(l.h1, PortNum{1}), 2);  // unlinked port
  setRoute(t, l.s0, l.lids.base(l.s1, PortNum{0}), 9);  // past the switch's 4 ports
  CheckReport r = checkRoutes(*l.topo, l.lids, t);
  EXPECT_EQ(r.deadLink, 2u);
  EXPECT_TRUE(anyExampleHas(r, "dead or missing egress port at switch 0x0000000000005000 'sw0' port 2"));
  EXPECT_TRUE(anyExampleHas(r, "port 9"));
}

TEST(RouteChecker, CatchesMisdelivery) {
  Line l = makeLine();
  RoutingTables t = lineTables(l);
  setRoute(t, l.s0, l.lids.base(l.s1, PortNum{0}), 0);  // sw0 keeps sw1's LID
  setRoute(t, l.s1, l.lids.base(l.h0, PortNum{1}), 3);  // sw1 hands h0's LID to h1
  CheckReport r = checkRoutes(*l.topo, l.lids, t);
  EXPECT_EQ(r.misdelivered, 2u);
  EXPECT_EQ(r.reachable, 4u);
}

TEST(RouteChecker, DownLinkRoutesAreDead) {
  Line l = makeLine();
  // Same fabric, but sw1's end of the inter-switch cable reports Down.
  fabric::TopologyBuilder b;
  for (NodeIndex i = 0; i < l.topo->size(); ++i) {
    fabric::Node n = l.topo->node(i);
    for (auto& p : n.ports) p.peerNode = fabric::kNoNode;
    if (i == l.s1) {
      n.ports[1].attrs.valid = true;
      n.ports[1].attrs.state = fabric::PortState::kDown;
    }
    ASSERT_TRUE(b.addNode(n).ok());
  }
  for (const auto& k : l.topo->links()) ASSERT_TRUE(b.connect(k.a, k.portA, k.b, k.portB).ok());
  auto down = *std::move(b).build();
  CheckReport r = checkRoutes(*down, l.lids, lineTables(l));
  EXPECT_EQ(r.deadLink, 4u);  // everything that crosses the cable
  EXPECT_EQ(r.switchLinks, 0u);
}

//   sw0 ---- sw1
//     \      /          triangle, one host per switch; all traffic clockwise 0 -> 1 -> 2 -> 0
//      sw2
struct Ring {
  TopologyPtr topo;
  NodeIndex s[3], h[3];
  LidAssignment lids;
};
Ring makeRing() {
  FabricSketch f;
  Ring g;
  for (int i = 0; i < 3; ++i) g.s[i] = f.addSwitch("sw" + std::to_string(i), 4);
  for (int i = 0; i < 3; ++i) f.link(g.s[i], 1, g.s[(i + 1) % 3], 2);  // port 1 clockwise, port 2 back
  for (int i = 0; i < 3; ++i) {
    g.h[i] = f.addCa("h" + std::to_string(i));
    f.link(g.h[i], 1, g.s[i], 3);
  }
  g.topo = f.build();
  g.lids = testing::assignOrDie(*g.topo);
  return g;
}
RoutingTables ringTables(const Ring& g, bool clockwiseOnly) {
  RoutingTables t = emptyTables(*g.topo, g.lids);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      Lid host = g.lids.base(g.h[j], PortNum{1}), sw = g.lids.base(g.s[j], PortNum{0});
      uint8_t towards = 1;
      // Otherwise shortest: the counter-clockwise neighbour directly over port 2.
      if (!clockwiseOnly && (j - i + 3) % 3 == 2) towards = 2;
      setRoute(t, g.s[i], host, i == j ? 3 : towards);
      setRoute(t, g.s[i], sw, i == j ? 0 : towards);
    }
  return t;
}

TEST(RouteChecker, CatchesChannelDependencyCycleAndStretch) {
  Ring g = makeRing();
  CheckReport r = checkRoutes(*g.topo, g.lids, ringTables(g, /*clockwiseOnly=*/true));
  EXPECT_EQ(r.unreachable, 0u);
  EXPECT_FALSE(r.cdgAcyclic);
  EXPECT_EQ(r.cdgCycle.size(), 3u);
  EXPECT_EQ(r.maxStretch, 1u);  // the two-hop way round to the counter-clockwise neighbour
  EXPECT_GT(r.stretchedPairs, 0u);
  EXPECT_FALSE(r.ok());
  std::string text = formatReportText(r);
  EXPECT_NE(text.find("CYCLE"), std::string::npos);
  EXPECT_NE(formatReportJson(r).find("\"cdgAcyclic\":false"), std::string::npos);

  CheckReport ok = checkRoutes(*g.topo, g.lids, ringTables(g, /*clockwiseOnly=*/false));
  EXPECT_EQ(ok.unreachable, 0u);
  EXPECT_TRUE(ok.cdgAcyclic);
  EXPECT_EQ(ok.maxStretch, 0u);
  EXPECT_TRUE(ok.ok());
}

// sw_i -> h_(i+1): shortest is port 1 (one hop clockwise); the AR alternative port 2 goes the long way
// round, where sw_(i-1) sends it on counter-clockwise (port 2) too. Every alternative adds a dependency
// ccw(i) -> ccw(i-1), and the three close a cycle the static routes do not have.
RoutingTables ringWithLongWayAr(const Ring& g) {
  RoutingTables t = ringTables(g, /*clockwiseOnly=*/false);
  t.ar.resize(g.topo->size());
  PortMask both;
  both.set(1).set(2);
  for (int i = 0; i < 3; ++i) {
    ArTable& at = t.ar[g.s[i]];
    at.lidToGroup.assign(g.lids.maxLid().value + 1u, ArTable::kNoGroup);
    at.groups.push_back(both);
    at.lidToGroup[g.lids.base(g.h[(i + 1) % 3], PortNum{1}).value] = 0;
  }
  return t;
}

TEST(RouteChecker, ArMembersMustBeShortestAndKeepTheCdgAcyclic) {
  Ring g = makeRing();
  RoutingTables t = ringWithLongWayAr(g);
  CheckReport r = checkRoutes(*g.topo, g.lids, t);
  EXPECT_TRUE(r.arChecked);
  EXPECT_EQ(r.arEntries, 3u);
  EXPECT_EQ(r.arMembers, 6u);
  EXPECT_EQ(r.arNotShortest, 3u);
  EXPECT_TRUE(anyExampleHas(r, "port 2 is 3 hops away, shortest is 2"));
  EXPECT_TRUE(r.cdgAcyclic);
  EXPECT_TRUE(r.arCdgChecked);
  EXPECT_FALSE(r.arCdgAcyclic);
  EXPECT_EQ(r.arCdgCycle.size(), 3u);
  EXPECT_FALSE(r.ok());

  CheckOptions noArCdg;
  noArCdg.checkArCdg = false;
  CheckReport r2 = checkRoutes(*g.topo, g.lids, t, noArCdg);
  EXPECT_FALSE(r2.arCdgChecked);
  EXPECT_TRUE(r2.arCdgAcyclic);
}

// With path SLs the AR check is VL-aware too: a packet keeps its SL on the alternative, so each alternative's
// dependency is on the VL of its path's SL, and the ring's cycle exists only when all three share one VL.
TEST(RouteChecker, ArCdgIsPerVlWhenPathsCarrySls) {
  Ring g = makeRing();
  RoutingTables t = ringWithLongWayAr(g);
  t.slLayers = 2;
  t.sl.resize(g.topo->size());
  for (NodeIndex s : g.s) t.sl[s].assign(g.lids.maxLid().value + 1u, 0);
  CheckReport r = checkRoutes(*g.topo, g.lids, t);
  EXPECT_TRUE(r.arCdgChecked && r.arCdgVlAware);
  EXPECT_FALSE(r.arCdgAcyclic);
  ASSERT_EQ(r.arCdgCycle.size(), 3u);
  for (const LinkRef& l : r.arCdgCycle) EXPECT_EQ(l.vl, 0u);
  EXPECT_NE(formatReportText(r).find("VL 0"), std::string::npos);

  // sw0's host sends to h1 on SL 1: its alternative's dependency moves to VL 1, and the chain on VL 0 is
  // open.
  t.sl[g.s[0]][g.lids.base(g.h[1], PortNum{1}).value] = 1;
  r = checkRoutes(*g.topo, g.lids, t);
  EXPECT_TRUE(r.arCdgVlAware);
  EXPECT_TRUE(r.arCdgAcyclic) << formatReportText(r);
  EXPECT_EQ(r.arCdgEdges, 3u);
  EXPECT_TRUE(r.cdgAcyclic);

  // The VL is the one the SL-to-VL tables give: all on VL 0, the cycle is back.
  SlToVlMap allVl0;
  for (NodeIndex n : g.s)
    for (unsigned in = 0; in <= 4; ++in)
      for (unsigned out = 0; out <= 4; ++out) allVl0.set(n, 4, in, out, SlToVlMap::Table{});
  CheckOptions co;
  co.slToVl = &allVl0;
  EXPECT_FALSE(checkRoutes(*g.topo, g.lids, t, co).arCdgAcyclic);
}

// A member beyond the shortest passes only within the tables' arStretch (over its next switch's own route)
// and only where the VL-aware AR CDG vouches for it: the ring's long way round, one hop longer, passes with
// arStretch 1 once sw0's host sends on SL 1, and is rejected with arStretch 0, without the AR CDG, or when
// every path is on SL 0 and the members' dependencies close the cycle (unsafe non-minimal members).
TEST(RouteChecker, ArMembersBeyondTheShortestNeedTheStretchAndAnAcyclicVlCdg) {
  Ring g = makeRing();
  RoutingTables t = ringWithLongWayAr(g);
  t.arStretch = 1;
  t.slLayers = 2;
  t.sl.resize(g.topo->size());
  for (NodeIndex s : g.s) t.sl[s].assign(g.lids.maxLid().value + 1u, 0);
  CheckReport unsafe = checkRoutes(*g.topo, g.lids, t);
  EXPECT_EQ(unsafe.arStretched, 3u);
  EXPECT_EQ(unsafe.arNotShortest, 0u);
  EXPECT_FALSE(unsafe.arCdgAcyclic);
  EXPECT_FALSE(unsafe.ok());

  t.sl[g.s[0]][g.lids.base(g.h[1], PortNum{1}).value] = 1;
  CheckReport safe = checkRoutes(*g.topo, g.lids, t);
  EXPECT_EQ(safe.arStretched, 3u);
  EXPECT_TRUE(safe.ok()) << formatReportText(safe);
  EXPECT_NE(formatReportText(safe).find("3 within the AR stretch"), std::string::npos);
  EXPECT_NE(formatReportJson(safe).find("\"arStretched\":3"), std::string::npos);

  CheckOptions noArCdg;
  noArCdg.checkArCdg = false;
  CheckReport unvouched = checkRoutes(*g.topo, g.lids, t, noArCdg);
  EXPECT_EQ(unvouched.arStretched, 0u);
  EXPECT_EQ(unvouched.arNotShortest, 3u);

  t.arStretch = 0;
  CheckReport minimal = checkRoutes(*g.topo, g.lids, t);
  EXPECT_EQ(minimal.arNotShortest, 3u);
  EXPECT_TRUE(anyExampleHas(minimal, "port 2 is 3 hops away, shortest is 2"));
  EXPECT_FALSE(minimal.ok());
}

TEST(RouteChecker, AllLidsChecksEveryLidOfAnLmcRange) {
  Line l = makeLine(/*lmc=*/2);
  RoutingTables t = lineTables(l);
  // Break one non-base LID of h1's range.
  setRoute(t, l.s0, Lid{static_cast<uint16_t>(l.lids.base(l.h1, PortNum{1}).value + 3)}, kNoPort);
  CheckReport base = checkRoutes(*l.topo, l.lids, t);
  EXPECT_EQ(base.destinations, 4u);
  EXPECT_EQ(base.unreachable, 0u);
  CheckOptions all;
  all.allLids = true;
  CheckReport r = checkRoutes(*l.topo, l.lids, t, all);
  EXPECT_EQ(r.destinations, 2u + 4u + 4u);
  EXPECT_EQ(r.noRoute, 1u);
}

TEST(RouteChecker, ShortOrMissingTablesAreNoRoutes) {
  Line l = makeLine();
  RoutingTables t;  // nothing at all
  CheckReport r = checkRoutes(*l.topo, l.lids, t);
  EXPECT_EQ(r.pairs, 6u);
  EXPECT_EQ(r.noRoute, 6u);
  EXPECT_EQ(r.examples.size(), 5u);  // capped at maxExamples
  RoutingTables shortT = lineTables(l);
  shortT.lft[l.s0].resize(2, kNoPort);
  CheckReport r2 = checkRoutes(*l.topo, l.lids, shortT);
  EXPECT_GT(r2.noRoute, 0u);
}

TEST(RouteChecker, CaLinkedToCa) {
  //   a (port 1) ---- (port 1) b      no switch at all
  FabricSketch f;
  NodeIndex a = f.addCa("a"), b = f.addCa("b");
  f.link(a, 1, b, 1);
  auto topo = f.build();
  LidAssignment lids = testing::assignOrDie(*topo);
  CheckReport r = checkRoutes(*topo, lids, RoutingTables{});
  EXPECT_EQ(r.pairs, 2u);
  EXPECT_EQ(r.reachable, 2u);
  EXPECT_EQ(r.maxHops, 1u);
}

TEST(RouteChecker, ReportDoesNotDependOnThreads) {
  auto topo = testing::makeGrid(4, 3, 2, /*wrap=*/true);
  LidAssignment lids = testing::assignOrDie(*topo, 1);
  auto t = makeMinHopEngine()->compute(*topo, lids, {});
  ASSERT_TRUE(t.ok());
  // Damage a few entries so examples are produced.
  for (NodeIndex s : topo->switches()) t->lft[s][5 + s] = kNoPort;
  CheckOptions one, many;
  one.allLids = many.allLids = true;
  many.threads = 3;
  CheckReport a = checkRoutes(*topo, lids, *t, one), b = checkRoutes(*topo, lids, *t, many);
  EXPECT_EQ(formatReportJson(a), formatReportJson(b));
  EXPECT_GT(a.noRoute, 0u);
}

TEST(RouteChecker, JsonEscapes) {
  CheckReport r;
  r.engine = "a\"b\\c\n";
  r.examples.push_back("tab\there");
  std::string j = formatReportJson(r);
  EXPECT_NE(j.find("\"engine\":\"a\\\"b\\\\c\\u000a\""), std::string::npos) << j;
  EXPECT_NE(j.find("tab\\u0009here"), std::string::npos);
  EXPECT_EQ(j.front(), '{');
  EXPECT_EQ(j.back(), '}');
}

}  // namespace
}  // namespace ibsm::routing
