// The deadlock-free balanced shortest-path engine (dfsp): minimal paths, balance, VL layers within the VLs
// given, a clear error beyond them; and the VL-aware route checker that judges it.
#include <gtest/gtest.h>

#include "routing/channel_graph.h"
#include "routing/engine.h"
#include "routing/route_checker.h"
#include "tests/routing/fabric_sketch.h"
#include "tests/routing/generated_fabrics.h"

namespace ibsm::routing {
namespace {

using testing::dragonfly;
using testing::generate;
using testing::hypercube;
using testing::torus;
using tools::FabricSpec;
using tools::Shape;

using testing::route;
using testing::Routed;

// On the non-tree shapes dfsp must reach every pair on a minimal path, stay deadlock-free per VL with the
// layers it reports, and balance at least as well as min-hop (which is not deadlock-free there).
TEST(DfspEngine, DragonflyHypercubeTorusAreMinimalBalancedAndDeadlockFreePerVl) {
  for (const FabricSpec& spec : {dragonfly(4, 2), hypercube(4), torus({3, 3, 3}), torus({4, 4})}) {
    auto topo = generate(spec);
    ASSERT_NE(topo, nullptr);
    SCOPED_TRACE(topo->node(topo->switches()[0]).description);
    Routed r = route(*topo, "dfsp", 8);
    ASSERT_TRUE(r.tables.ok()) << r.tables.error().message;
    const RoutingTables& t = *r.tables;
    EXPECT_EQ(t.engine, "dfsp");
    CheckReport c = checkRoutes(*topo, r.lids, t);
    EXPECT_EQ(c.unreachable, 0u) << formatReportText(c);
    EXPECT_EQ(c.maxStretch, 0u);
    ASSERT_TRUE(c.cdgChecked);
    EXPECT_TRUE(c.cdgAcyclic) << formatReportText(c);
    EXPECT_TRUE(c.ok());
    EXPECT_GE(t.slLayers, 2u);  // none of these is deadlock-free with minimal paths on one VL
    EXPECT_LE(t.slLayers, 8u);
    EXPECT_EQ(c.cdgVls, t.slLayers);

    Routed m = route(*topo, "minhop", 1);
    ASSERT_TRUE(m.tables.ok());
    CheckReport cm = checkRoutes(*topo, m.lids, *m.tables);
    EXPECT_FALSE(cm.cdgAcyclic);  // why the VL layers are needed
    EXPECT_LE(c.maxLoad, cm.maxLoad);

    // The checker is what proves it: with every path on SL 0 the same routes have a cycle.
    RoutingTables flat = t;
    for (size_t s = 0; s < flat.sl.size(); ++s) std::fill(flat.sl[s].begin(), flat.sl[s].end(), 0);
    CheckReport cf = checkRoutes(*topo, r.lids, flat);
    EXPECT_FALSE(cf.cdgAcyclic);
    EXPECT_FALSE(cf.cdgCycle.empty());
    // ... and so it has when the SL-to-VL tables put every SL on VL 0.
    SlToVlMap allVl0;
    for (NodeIndex n : topo->switches())
      for (unsigned in = 0; in <= topo->node(n).numPorts; ++in)
        for (unsigned out = 0; out <= topo->node(n).numPorts; ++out)
          allVl0.set(n, topo->node(n).numPorts, in, out, SlToVlMap::Table{});
    CheckOptions co;
    co.slToVl = &allVl0;
    EXPECT_FALSE(checkRoutes(*topo, r.lids, t, co).cdgAcyclic);
  }
}

// The 9 x 4 dragonfly and 5-cube of issue 15, 2 hosts per switch: the loads measured there for OpenSM's best
// deadlock-free engine were 88 (lash, 3 VLs) and 64 (lash); updn 336 and 232.
TEST(DfspEngine, IssueFabricsBeatUpDown) {
  struct Case {
    FabricSpec spec;
    uint64_t maxLoad;
    uint8_t maxVls;
  };
  for (const Case& k : {Case{dragonfly(4, 2), 88, 3}, Case{hypercube(5), 70, 6}}) {
    auto topo = generate(k.spec);
    Routed r = route(*topo, "dfsp", 8);
    ASSERT_TRUE(r.tables.ok()) << r.tables.error().message;
    CheckReport c = checkRoutes(*topo, r.lids, *r.tables);
    EXPECT_TRUE(c.ok()) << formatReportText(c);
    EXPECT_LE(c.maxLoad, k.maxLoad);
    EXPECT_LE(r.tables->slLayers, k.maxVls);
    Routed u = route(*topo, "updn", 1);
    EXPECT_LT(c.maxLoad * 2, checkRoutes(*topo, u.lids, *u.tables).maxLoad);
  }
}

//   sw0 - sw1 - sw2 - sw3 - sw4
//    `-----------------------'     a ring of 5, one host each: every minimal path is unique, and the
//                                  two-hop ones, sw0 -> sw1 -> sw2, ..., sw4 -> sw0 -> sw1, close the ring
TEST(DfspEngine, TooFewVlsIsAClearErrorAndTheChainFallsBack) {
  auto topo = testing::makeGrid(5, 1, 1, true);
  Routed one = route(*topo, "dfsp", 1);
  ASSERT_FALSE(one.tables.ok());
  EXPECT_NE(one.tables.error().message.find("need more than 1 VL layer"), std::string::npos)
      << one.tables.error().message;
  EXPECT_NE(one.tables.error().message.find("the fabric offers 1"), std::string::npos);
  Routed two = route(*topo, "dfsp", 2);
  ASSERT_TRUE(two.tables.ok()) << two.tables.error().message;
  EXPECT_EQ(two.tables->slLayers, 2u);
  EXPECT_TRUE(checkRoutes(*topo, two.lids, *two.tables).ok());

  Options o;
  auto chain = computeChain({"dfsp", "updn"}, *topo, one.lids, o);
  ASSERT_TRUE(chain.ok());
  EXPECT_EQ(chain->tables.engine, "updn");
  ASSERT_EQ(chain->fallbacks.size(), 1u);
  EXPECT_TRUE(chain->fallbacks[0].starts_with("dfsp: ")) << chain->fallbacks[0];
}

// A line of switches has no cycle: one layer, no SL table, the same as any minimal routing.
TEST(DfspEngine, AcyclicFabricNeedsOneLayerAndNoSlTable) {
  testing::FabricSketch f;
  auto a = f.addSwitch("a"), b = f.addSwitch("b"), c = f.addSwitch("c");
  f.link(a, b);
  f.link(b, c);
  for (auto s : {a, b, c}) f.link(f.addCa("h"), 1, s, f.nextPort(s));
  auto topo = f.build();
  Routed r = route(*topo, "dfsp", 1);
  ASSERT_TRUE(r.tables.ok()) << r.tables.error().message;
  EXPECT_EQ(r.tables->slLayers, 1u);
  EXPECT_TRUE(r.tables->sl.empty());
  CheckReport rep = checkRoutes(*topo, r.lids, *r.tables);
  EXPECT_TRUE(rep.ok()) << formatReportText(rep);
  EXPECT_EQ(rep.cdgVls, 0u);  // no SLs: the one-VL check
}

TEST(DfspEngine, IsDeterministicForAnyThreadCount) {
  for (const FabricSpec& spec : {torus({4, 4}), dragonfly(4, 2)}) {
    auto topo = generate(spec);
    Routed a = route(*topo, "dfsp", 8), b = route(*topo, "dfsp", 8);
    ASSERT_TRUE(a.tables.ok() && b.tables.ok());
    EXPECT_EQ(a.tables->lft, b.tables->lft);
    EXPECT_EQ(a.tables->sl, b.tables->sl);
    Rows<ArTable> arOnce;  // with AR (the others are without): the same groups for every thread count
    for (unsigned threads : {2u, 3u, 8u}) {
      Options o;
      o.vlLayers = 8;
      o.threads = threads;
      auto t = makeEngine("dfsp")->compute(*topo, a.lids, o);
      ASSERT_TRUE(t.ok());
      EXPECT_EQ(t->lft, a.tables->lft) << threads << " threads";
      EXPECT_EQ(t->sl, a.tables->sl) << threads << " threads";
      EXPECT_EQ(t->slLayers, a.tables->slLayers);
      if (threads == 2u) arOnce = t->ar;
      EXPECT_EQ(t->ar, arOnce) << threads << " threads";
    }
  }
}

// AR groups: the equal-cost alternatives whose dependencies every layer that uses them already has give real
// groups on every shape; with them the CDG of every VL is exactly the static one (the same dependencies, so
// acyclic: the route checker closes each SL's traffic over all members).
TEST(DfspEngine, ArGroupsAddNoDependencyToAnyLayer) {
  for (const FabricSpec& spec : {dragonfly(4, 2), testing::mesh(30, 4, 1), testing::mesh(40, 5, 2),
                                 hypercube(4), torus({3, 3, 3}), torus({4, 4})}) {
    auto topo = generate(spec);
    ASSERT_NE(topo, nullptr);
    SCOPED_TRACE(topo->node(topo->switches()[0]).description);
    testing::RoutedWithAr r = testing::routeWithAr(*topo, "dfsp", 8);
    ASSERT_TRUE(r.routed.tables.ok());
    const CheckReport& c = r.report;
    EXPECT_GE(r.routed.tables->slLayers, 2u);
    EXPECT_EQ(c.arCdgEdges, c.cdgEdges) << formatReportText(c);
    EXPECT_GE(testing::largestArGroup(*r.routed.tables), 2u);
    EXPECT_GT(c.arEntries, 0u);
  }
}

// The rule is needed: dfsp's paths with every shortest port as AR member (min-hop's groups) deadlock on
// some VL, and the checker finds it.
TEST(DfspEngine, AllShortestPortsAsArGroupsWouldCloseACycle) {
  auto topo = generate(dragonfly(4, 2));
  Routed r = route(*topo, "dfsp", 8);
  ASSERT_TRUE(r.tables.ok());
  Options o;
  auto minhop = makeEngine("minhop")->compute(*topo, r.lids, o);
  ASSERT_TRUE(minhop.ok());
  RoutingTables t = *r.tables;
  t.ar = minhop->ar;
  CheckReport c = checkRoutes(*topo, r.lids, t);
  EXPECT_TRUE(c.cdgAcyclic);
  EXPECT_EQ(c.arNotShortest, 0u);
  EXPECT_TRUE(c.arCdgVlAware);
  EXPECT_FALSE(c.arCdgAcyclic);
  EXPECT_FALSE(c.arCdgCycle.empty());
}

// The group cap: a switch holds at most that many groups, LIDs past it route statically (still safe: fewer
// members only take dependencies away).
TEST(DfspEngine, ArGroupCapIsRespected) {
  auto topo = generate(dragonfly(4, 2));
  testing::RoutedWithAr full = testing::routeWithAr(*topo, "dfsp", 8);
  testing::RoutedWithAr capped = testing::routeWithAr(*topo, "dfsp", 8, 1);
  ASSERT_TRUE(full.routed.tables.ok() && capped.routed.tables.ok());
  bool anyCapped = false;
  for (const ArTable& ar : capped.routed.tables->ar) anyCapped = anyCapped || ar.capped;
  EXPECT_TRUE(anyCapped);
  EXPECT_LE(capped.report.arGroups, topo->switches().size());
  EXPECT_GT(full.report.arGroups, capped.report.arGroups);
  EXPECT_GT(capped.report.arEntries, 0u);
  EXPECT_LT(capped.report.arEntries, full.report.arEntries);
  testing::RoutedWithAr none = testing::routeWithAr(*topo, "dfsp", 8, 0);
  EXPECT_EQ(none.report.arEntries, 0u);
}

// "dor|dfsp": both are computed, the lower max link load wins; a declining alternative is only noted.
TEST(EngineChain, AlternativesPickTheLowestMaxLinkLoad) {
  EXPECT_TRUE(parseChain("ftree,dor|dfsp,updn").ok());
  EXPECT_FALSE(parseChain("ftree,dor|lash").ok());
  EXPECT_FALSE(parseChain("dor|").ok());
  Options o;
  o.vlLayers = 8;
  auto cube = generate(hypercube(4));
  auto lids = assignLids(*cube, {}, 0)->lids;
  auto chain = computeChain({"ftree", "dfsp|dor", "updn"}, *cube, lids, o);
  ASSERT_TRUE(chain.ok()) << chain.error().message;
  EXPECT_EQ(chain->tables.engine, "dor");
  EXPECT_EQ(chain->choices.size(), 2u);
  auto fly = generate(dragonfly(4, 2));
  auto flyLids = assignLids(*fly, {}, 0)->lids;
  chain = computeChain({"dor|dfsp", "updn"}, *fly, flyLids, o);
  ASSERT_TRUE(chain.ok()) << chain.error().message;
  EXPECT_EQ(chain->tables.engine, "dfsp");
  ASSERT_EQ(chain->choices.size(), 2u);
  EXPECT_TRUE(chain->choices[0].starts_with("dor: not a mesh or torus")) << chain->choices[0];
  o.vlLayers = 1;  // dfsp needs 2 here, dor declines: the element fails and updn routes
  chain = computeChain({"dor|dfsp", "updn"}, *fly, flyLids, o);
  ASSERT_TRUE(chain.ok());
  EXPECT_EQ(chain->tables.engine, "updn");
  ASSERT_EQ(chain->fallbacks.size(), 1u);
  EXPECT_NE(chain->fallbacks[0].find("dfsp: the balanced shortest paths need more than 1 VL layer"),
            std::string::npos)
      << chain->fallbacks[0];
}

TEST(ChannelGraph, FindsACycleOnlyWhenThereIsOne) {
  std::vector<uint64_t> edges{channelEdge(0, 1), channelEdge(1, 2), channelEdge(0, 2), channelEdge(0, 1)};
  uniqueEdges(edges);
  EXPECT_EQ(edges.size(), 3u);
  EXPECT_TRUE(findChannelCycle(3, edges).empty());
  edges.push_back(channelEdge(2, 1));
  uniqueEdges(edges);
  auto cycle = findChannelCycle(3, edges);
  EXPECT_EQ(cycle, (std::vector<uint32_t>{1, 2}));
}

TEST(SlToVlMap, UnsetIsIdentityAndTablesArePerPortPair) {
  SlToVlMap m;
  EXPECT_EQ(m.vl(3, 1, 2, 5), 5u);
  SlToVlMap::Table t{};
  t[5] = 7;
  m.set(3, 4, 1, 2, t);
  EXPECT_EQ(m.vl(3, 1, 2, 5), 7u);
  EXPECT_EQ(m.vl(3, 1, 2, 4), 0u);
  EXPECT_EQ(m.vl(3, 2, 1, 5), 5u);  // another pair: still the identity
  EXPECT_EQ(m.vl(2, 1, 2, 5), 5u);
}

}  // namespace
}  // namespace ibsm::routing
