// Dragonfly routing (dfly): groups detected from the switch graph alone, declined otherwise; at most a local,
// a global and a local hop; 2 VLs from the switches' (input, output) tables, which the VL-aware route checker
// proves deadlock-free where the same paths on one VL are not.
#include <gtest/gtest.h>

#include <map>

#include "routing/dfly_vls.h"
#include "routing/engine.h"
#include "routing/pattern_checker.h"
#include "routing/route_checker.h"
#include "routing/sl_to_vl.h"
#include "tests/routing/fabric_sketch.h"
#include "tests/routing/generated_fabrics.h"

namespace ibsm::routing {
namespace {

using testing::dragonfly;
using testing::generate;
using testing::route;
using testing::Routed;

// dfly's routes with its detours through third groups (Options::dflySpread), 8 VLs offered.
auto spreadRoutes(const fabric::Topology& topo, const LidAssignment& lids, uint8_t vls = 8) {
  Options o;
  o.vlLayers = vls;
  o.dflySpread = true;
  return makeEngine("dfly")->compute(topo, lids, o);
}

// `groups` groups of `routers` switches linked all-to-all (the first two switches of group 0 by two parallel
// links when `parallelLocal`), `perPair` global links between every two groups (from router (y + j) mod
// routers of group x to router (x + j) mod routers of group y), one host per switch.
fabric::TopologyPtr makeDragonfly(unsigned groups, unsigned routers, unsigned perPair, bool parallelLocal,
                                  bool dropLocal = false) {
  testing::FabricSketch f;
  std::vector<std::vector<NodeIndex>> sw(groups);
  for (unsigned g = 0; g < groups; ++g)
    for (unsigned r = 0; r < routers; ++r) {
      sw[g].push_back(f.addSwitch("dfly-" + std::to_string(g) + "-" + std::to_string(r)));
      f.link(f.addCa("host-" + std::to_string(g) + "-" + std::to_string(r)), 1, sw[g][r],
             f.nextPort(sw[g][r]));
    }
  for (unsigned g = 0; g < groups; ++g)
    for (unsigned a = 0; a < routers; ++a)
      for (unsigned b = a + 1; b < routers; ++b) {
        if (dropLocal && g == 1 && a == 0 && b == 1) continue;
        f.link(sw[g][a], sw[g][b]);
        if (parallelLocal && g == 0 && a == 0 && b == 1) f.link(sw[g][a], sw[g][b]);
      }
  for (unsigned x = 0; x < groups; ++x)
    for (unsigned y = x + 1; y < groups; ++y)
      for (unsigned j = 0; j < perPair; ++j) f.link(sw[x][(y + j) % routers], sw[y][(x + j) % routers]);
  return f.build();
}

// The generator's dragonflies (a * h + 1 groups, one global link per group pair) and a hand-made one with two
// global links per group pair: every pair reachable in at most one stretch hop (local, global, local where a
// path through a third group would be shorter), acyclic on 2 VLs, cyclic on one, every path on SL 0; and a
// max link load no higher than dfsp's.
TEST(DflyEngine, DragonfliesAreDeadlockFreeOnTwoVls) {
  std::vector<fabric::TopologyPtr> fabrics = {generate(dragonfly(4, 2)), generate(dragonfly(3, 1, 1)),
                                              generate(dragonfly(6, 3, 1)), makeDragonfly(4, 4, 2, false)};
  for (const auto& topo : fabrics) {
    ASSERT_TRUE(topo);
    SCOPED_TRACE(topo->switches().size());
    Routed r = route(*topo, "dfly", 8);
    ASSERT_TRUE(r.tables.ok()) << r.tables.error().message;
    EXPECT_EQ(r.tables->slLayers, 2u);
    EXPECT_TRUE(r.tables->sl.empty());
    CheckReport c = checkRoutes(*topo, r.lids, *r.tables);
    EXPECT_TRUE(c.ok()) << formatReportText(c);
    EXPECT_EQ(c.cdgVls, 2u);
    EXPECT_LE(c.maxStretch, 1u);
    EXPECT_LE(c.maxHops, 5u);  // host, local, global, local, host

    RoutingTables flat = *r.tables;
    flat.slToVl = SlToVlMap{0};
    EXPECT_FALSE(checkRoutes(*topo, r.lids, flat).cdgAcyclic);

    Routed dfsp = route(*topo, "dfsp", 8);
    ASSERT_TRUE(dfsp.tables.ok()) << dfsp.tables.error().message;
    EXPECT_LE(c.maxLoad, checkRoutes(*topo, dfsp.lids, *dfsp.tables).maxLoad);
  }
}

// Options::dflySpread: detours through third groups for collective traffic, deadlock-free on at most 4 VLs
// by the VL-aware checker, every path at most two global hops, and all shifts of the hosts better served
// than by the minimal routes (13 groups x 4 routers x 2 hosts: 0.501 against 0.253; 9 x 4 x 2: 0.438
// against 0.271); with 2 VLs minimal.
TEST(DflyEngine, SpreadRoutesThroughThirdGroupsRaiseShiftBandwidthDeadlockFree) {
  for (const auto& spec : {dragonfly(4, 3), dragonfly(4, 2)}) {
    auto topo = generate(spec);
    ASSERT_TRUE(topo);
    SCOPED_TRACE(topo->switches().size());
    auto lids = assignLids(*topo, {}, 0);
    ASSERT_TRUE(lids.ok());
    auto spread = spreadRoutes(*topo, lids->lids);
    ASSERT_TRUE(spread.ok()) << spread.error().message;
    EXPECT_TRUE(spread->dflySpread);
    EXPECT_FALSE(spread->sl.empty());
    EXPECT_LE(spread->slLayers, 4u);
    CheckReport c = checkRoutes(*topo, lids->lids, *spread);
    EXPECT_TRUE(c.ok()) << formatReportText(c);
    EXPECT_LE(c.cdgVls, 4u);
    EXPECT_LE(c.maxHops, 6u);  // host, global, local, global, local, host
    Routed minimal = route(*topo, "dfly", 8);
    ASSERT_TRUE(minimal.tables.ok());
    PatternOptions po;
    po.threads = 2;
    const PatternReport a = checkPattern(*topo, lids->lids, *spread, {}, po);
    const PatternReport m = checkPattern(*topo, minimal.lids, *minimal.tables, {}, po);
    EXPECT_EQ(a.unrouted, 0u);
    EXPECT_GT(a.meanBandwidth, 1.5 * m.meanBandwidth) << formatPatternText(a) << formatPatternText(m);

    auto two = spreadRoutes(*topo, lids->lids, 2);  // too few VLs for detours: minimal
    ASSERT_TRUE(two.ok());
    EXPECT_FALSE(two->dflySpread);
    EXPECT_EQ(two->lft, minimal.tables->lft);
  }
}

// The spread routes against OpenSM's best deadlock-free engine on these fabrics (dfsssp, its tables read back
// from ibsim; docs/BENCHMARKS.md, "Collective traffic"): at least 1.25x its mean flow bandwidth over all
// shifts at no more all-pairs max link load than it (the figures pinned are ours, measured: 88 / 0.438,
// 102 / 0.501, 456 / 0.307; dfsssp: 94 / 0.338, 110 / 0.355, 507 / 0.189), on 3 VLs (dfsssp: 4-5), and the
// VL-aware channel dependency graph of the scheme acyclic where the same paths on one VL close a cycle.
TEST(DflyEngine, SpreadRoutesBeatDfssspAtNoMoreLoad) {
  struct Case {
    tools::FabricSpec spec;
    uint64_t maxLoad;      // ours, with a little room; dfsssp's is higher
    double meanBandwidth;  // 1.25x dfsssp's
  };
  const Case cases[] = {{dragonfly(4, 2), 90, 1.25 * 0.338},       // 9 groups x 4 routers x 2 hosts
                        {dragonfly(4, 3), 104, 1.25 * 0.355},      // 13 x 4 x 2
                        {dragonfly(6, 3, 3), 470, 1.25 * 0.189}};  // 19 x 6 x 3
  for (const Case& k : cases) {
    auto topo = generate(k.spec);
    ASSERT_TRUE(topo);
    SCOPED_TRACE(topo->switches().size());
    auto lids = assignLids(*topo, {}, 0);
    ASSERT_TRUE(lids.ok());
    auto spread = spreadRoutes(*topo, lids->lids);
    ASSERT_TRUE(spread.ok()) << spread.error().message;
    CheckReport c = checkRoutes(*topo, lids->lids, *spread);
    EXPECT_TRUE(c.ok()) << formatReportText(c);
    EXPECT_TRUE(c.cdgAcyclic) << formatReportText(c);
    EXPECT_LE(c.cdgVls, 3u);
    EXPECT_LE(spread->slLayers, 3u);
    EXPECT_LE(c.maxLoad, k.maxLoad) << formatReportText(c);
    PatternOptions po;
    po.threads = 2;
    const PatternReport a = checkPattern(*topo, lids->lids, *spread, {}, po);
    EXPECT_EQ(a.unrouted, 0u);
    EXPECT_GE(a.meanBandwidth, k.meanBandwidth) << formatPatternText(a);

    RoutingTables flat = *spread;
    flat.slToVl = SlToVlMap{0};
    flat.sl.clear();
    flat.slLayers = 1;
    EXPECT_FALSE(checkRoutes(*topo, lids->lids, flat).cdgAcyclic);
  }
}

// The spread routes do not depend on the order in which the switches were discovered: the same dragonfly
// of 5 groups x 3 routers x 2 hosts built in two orders (same GUIDs, cabled on the same ports) gets the same
// port and SL for every (switch, host).
TEST(DflyEngine, SpreadRoutesDoNotDependOnDiscoveryOrder) {
  constexpr unsigned kGroups = 5, kRouters = 3, kSwitches = kGroups * kRouters;
  auto build = [](bool reversed) {
    testing::FabricSketch f;
    std::vector<NodeIndex> sw(kSwitches);
    for (unsigned n = 0; n < kSwitches; ++n) {
      const unsigned i = reversed ? kSwitches - 1 - n : n;
      sw[i] = f.addSwitch("dfly-" + std::to_string(i / kRouters) + "-" + std::to_string(i % kRouters), 8);
      f.node(sw[i]).guid = fabric::Guid{0x6000u + i};
      for (unsigned h = 0; h < 2; ++h) {
        const NodeIndex ca = f.addCa("host-" + std::to_string(2 * i + h));
        f.node(ca).guid = fabric::Guid{0x7000u + 0x10u * (2 * i + h)};
        f.node(ca).ports[1].guid = fabric::Guid{f.node(ca).guid.value + 1};
        f.link(ca, 1, sw[i], 1 + h);
      }
    }
    std::vector<unsigned> next(kSwitches, 3);  // the next free switch port
    auto link = [&](unsigned a, unsigned b) { f.link(sw[a], next[a]++, sw[b], next[b]++); };
    for (unsigned g = 0; g < kGroups; ++g)
      for (unsigned a = 0; a < kRouters; ++a)
        for (unsigned b = a + 1; b < kRouters; ++b) link(g * kRouters + a, g * kRouters + b);
    for (unsigned x = 0; x < kGroups; ++x)
      for (unsigned y = x + 1; y < kGroups; ++y)
        link(x * kRouters + y % kRouters, y * kRouters + x % kRouters);
    return f.build();
  };
  std::map<std::pair<uint64_t, uint64_t>, std::pair<unsigned, unsigned>> seen[2];
  size_t detours = 0;
  for (int k = 0; k < 2; ++k) {
    auto topo = build(k == 1);
    ASSERT_TRUE(topo);
    auto lids = assignLids(*topo, {}, 0);
    ASSERT_TRUE(lids.ok());
    auto t = spreadRoutes(*topo, lids->lids);
    ASSERT_TRUE(t.ok()) << t.error().message;
    for (NodeIndex s : topo->switches())
      for (NodeIndex c : topo->cas()) {
        const fabric::Lid lid = lids->lids.base(c, fabric::PortNum{1});
        seen[k][{topo->node(s).guid.value, topo->node(c).guid.value}] = {t->port(s, lid), t->pathSl(s, lid)};
        detours += k == 0 && t->pathSl(s, lid) > 0;
      }
  }
  EXPECT_GT(detours, 0u);
  EXPECT_EQ(seen[0], seen[1]);
}

// Two global links per group pair: both carry routes (the destinations of the pair are spread over them).
TEST(DflyEngine, GlobalLinksOfAGroupPairShareItsDestinations) {
  auto topo = makeDragonfly(3, 3, 2, false);
  ASSERT_TRUE(topo);
  Routed r = route(*topo, "dfly", 2);
  ASSERT_TRUE(r.tables.ok()) << r.tables.error().message;
  CheckReport c = checkRoutes(*topo, r.lids, *r.tables);
  EXPECT_TRUE(c.ok()) << formatReportText(c);
  EXPECT_GT(c.minLoad, 0u) << formatReportText(c);
}

// AR groups: only the parallel links to the LFT port's neighbour (here two local links), which the checker
// finds on shortest paths and acyclic per VL; without parallel links there are none.
TEST(DflyEngine, ArGroupsAreTheParallelLinks) {
  auto parallel = makeDragonfly(3, 3, 1, true);
  ASSERT_TRUE(parallel);
  testing::RoutedWithAr r = testing::routeWithAr(*parallel, "dfly", 2);
  ASSERT_TRUE(r.routed.tables.ok());
  EXPECT_EQ(testing::largestArGroup(*r.routed.tables), 2u);
  EXPECT_GT(r.report.arEntries, 0u);
  auto single = makeDragonfly(3, 3, 1, false);
  ASSERT_TRUE(single);
  testing::RoutedWithAr s = testing::routeWithAr(*single, "dfly", 2);
  ASSERT_TRUE(s.routed.tables.ok());
  EXPECT_EQ(s.report.arEntries, 0u);
}

// AR groups with the spread routes: the switches that detour or may detour offer, besides the LFT port, the
// detours of one SL (dfly_engine.cc's header). The LFTs stay those without AR; some members are non-minimal,
// within RoutingTables::arStretch (2 hops), and the checker passes them: each member's way arrives within
// the stretch and the VL-aware CDG with every member is acyclic. An SL differs from the one without AR only
// where the switch has a group, the group cap holds, and with every path on SL 0 the same groups close a
// cycle: the detour SLs are what makes them safe.
TEST(DflyEngine, SpreadArGroupsOfferDetoursDeadlockFree) {
  std::vector<fabric::TopologyPtr> fabrics = {generate(dragonfly(4, 2)), generate(dragonfly(4, 3)),
                                              generate(dragonfly(6, 3, 1)), makeDragonfly(5, 4, 2, false)};
  for (const auto& topo : fabrics) {
    ASSERT_TRUE(topo);
    SCOPED_TRACE(topo->switches().size());
    auto lids = assignLids(*topo, {}, 0);
    ASSERT_TRUE(lids.ok());
    Options o;
    o.vlLayers = 8;
    o.dflySpread = true;
    auto on = makeEngine("dfly")->compute(*topo, lids->lids, o);
    o.computeAr = false;
    auto off = makeEngine("dfly")->compute(*topo, lids->lids, o);
    ASSERT_TRUE(on.ok() && off.ok());
    EXPECT_EQ(on->lft, off->lft);
    EXPECT_EQ(on->arStretch, 2u);
    EXPECT_EQ(off->arStretch, 0u);
    EXPECT_GT(testing::largestArGroup(*on), 2u);
    size_t moved = 0;
    for (NodeIndex s : topo->switches())
      for (NodeIndex c : topo->cas()) {
        const fabric::Lid lid = lids->lids.base(c, fabric::PortNum{1});
        if (on->pathSl(s, lid) == off->pathSl(s, lid)) continue;
        ++moved;
        EXPECT_TRUE(dfly::isDetour(on->pathSl(s, lid)));
        EXPECT_NE(on->ar[s].groupOf(lid.value), ArTable::kNoGroup);
      }
    EXPECT_GT(moved, 0u);
    CheckReport c = checkRoutes(*topo, lids->lids, *on);
    EXPECT_TRUE(c.ok()) << formatReportText(c);
    EXPECT_TRUE(c.arCdgVlAware);
    EXPECT_GT(c.arStretched, c.arMembers / 10) << formatReportText(c);
    EXPECT_LE(c.cdgVls, 3u);

    o.computeAr = true;
    o.arGroupCap = 3;
    auto capped = makeEngine("dfly")->compute(*topo, lids->lids, o);
    ASSERT_TRUE(capped.ok());
    for (NodeIndex s : topo->switches()) EXPECT_LE(capped->ar[s].groups.size(), 3u);
    EXPECT_TRUE(checkRoutes(*topo, lids->lids, *capped).ok());

    // The VL tables the SM writes (layeredVlPairs) cover every member's way: from the CA port to the member,
    // and at its far end on to the route there.
    const VlPairs pairs = layeredVlPairs(*topo, *on);
    size_t ways = 0;
    for (NodeIndex s : topo->switches())
      for (NodeIndex c : topo->cas()) {
        const fabric::Lid lid = lids->lids.base(c, fabric::PortNum{1});
        const uint16_t group = on->ar[s].groupOf(lid.value);
        const fabric::Node& sw = topo->node(s);
        unsigned host = 1;
        auto isHost = [&](unsigned q) {
          return sw.ports[q].connected() && !topo->node(sw.ports[q].peerNode).isSwitch();
        };
        while (host < sw.numPorts && !isHost(host)) ++host;
        if (group == ArTable::kNoGroup) continue;
        for (unsigned q = 1; q <= sw.numPorts; ++q) {
          if (!on->ar[s].groups[group].test(q)) continue;
          const fabric::Port& p = sw.ports[q];
          ++ways;
          EXPECT_TRUE(pairs.used(s, host, q));
          EXPECT_TRUE(pairs.used(p.peerNode, p.peerPort.value, on->port(p.peerNode, lid)));
        }
      }
    EXPECT_GT(ways, 0u);

    RoutingTables flat = *on;
    flat.sl = {};
    EXPECT_FALSE(checkRoutes(*topo, lids->lids, flat).arCdgAcyclic);
  }
}

// What is not a dragonfly is declined with the reason (dfsp or dor route it), and so is a dragonfly on one
// VL.
TEST(DflyEngine, DeclinesWhatItCannotRoute) {
  struct Case {
    fabric::TopologyPtr topo;
    std::string why;
  };
  std::vector<Case> cases;
  cases.push_back({generate(testing::torus({4, 4, 4})),
                   "dfly: not a dragonfly (no two linked switches share a neighbour)"});
  cases.push_back({generate(testing::karyNTree(4, 2)),
                   "dfly: not a dragonfly (no two linked switches share a neighbour)"});
  cases.push_back({generate(testing::torus({3, 3})), "dfly: not a dragonfly (one group of switches)"});
  cases.push_back({makeDragonfly(3, 6, 1, false, true),  // a local link down
                   "dfly: not a dragonfly (a switch linked to 4 of the 5 others of its group)"});
  cases.push_back({makeDragonfly(3, 3, 1, false, true), "dfly: not a dragonfly (a group of 1 switch)"});
  cases.push_back(
      {generate(dragonfly(2, 2, 1)), "dfly: not a dragonfly (no two linked switches share a neighbour)"});
  for (const Case& c : cases) {
    ASSERT_TRUE(c.topo);
    Routed r = route(*c.topo, "dfly", 8);
    ASSERT_FALSE(r.tables.ok());
    EXPECT_EQ(r.tables.error().message, c.why);
  }
  auto fly = generate(dragonfly(4, 2));
  Routed one = route(*fly, "dfly", 1);
  ASSERT_FALSE(one.tables.ok());
  EXPECT_EQ(one.tables.error().message, "dfly: needs 2 VLs; the fabric offers 1");
}

}  // namespace
}  // namespace ibsm::routing
