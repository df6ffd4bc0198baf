// Dimension-order routing (dor): the grid detected from the switch graph alone (hypercubes, meshes, tori with
// rings of 3 and more, parallel links), declined otherwise; minimal paths; and datelines that the VL-aware
// route checker proves deadlock-free on 2 VLs where the same routes on one VL are not.
#include <gtest/gtest.h>

#include <map>

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

using testing::route;
using testing::Routed;

// e-cube on a hypercube: minimal, one VL, every link equally loaded. A 4x4x4 torus is the 6-cube (a ring of
// 4 is the 2-cube), so it is routed the same way.
TEST(DorEngine, HypercubesArePerfectlyBalancedOnOneVl) {
  for (const FabricSpec& spec : {hypercube(5), torus({4, 4, 4}), hypercube(1)}) {
    auto topo = generate(spec);
    Routed r = route(*topo, "dor", 1);
    ASSERT_TRUE(r.tables.ok()) << r.tables.error().message;
    CheckReport c = checkRoutes(*topo, r.lids, *r.tables);
    EXPECT_TRUE(c.ok()) << formatReportText(c);
    EXPECT_EQ(c.cdgVls, 0u);
    EXPECT_EQ(c.maxStretch, 0u);
    EXPECT_EQ(c.maxLoad, c.minLoad);
    EXPECT_EQ(r.tables->slLayers, 1u);
    EXPECT_TRUE(r.tables->sl.empty());
  }
}

// Tori of several sizes (odd and even rings, rings of 3 that need no dateline, a ring of 4 that is two
// dimensions of 2) and meshes: every pair reached on a minimal path, deadlock-free on the VLs reported, the
// SLs telling which wrap links a path crosses.
TEST(DorEngine, ToriAndMeshesAreMinimalAndDeadlockFree) {
  struct Case {
    fabric::TopologyPtr topo;
    uint8_t vls;  // VLs the datelines need
    uint8_t sls;  // SLs in use: 2^(rings of 5 or more)
  };
  std::vector<Case> cases;
  for (auto dims : std::vector<std::vector<unsigned>>{{5, 5}, {6, 6}, {4, 4, 3}, {5, 4, 3}, {7, 3}, {8, 2}})
    cases.push_back({generate(torus(dims)), 2, 0});
  cases[0].sls = 4;  // 5x5
  cases[1].sls = 4;  // 6x6
  cases[2].sls = 1;  // 4x4x3: the 4-cube times a ring of 3
  cases[3].sls = 2;  // 5x4x3
  cases[4].sls = 2;  // 7x3
  cases[5].sls = 2;  // 8x2
  cases[2].vls = 1;
  cases.push_back({generate(torus({3, 3, 3})), 1, 1});
  cases.push_back({testing::makeGrid(4, 3, 1, false), 1, 1});
  cases.push_back({testing::makeGrid(6, 5, 2, false), 1, 1});
  cases.push_back({testing::makeGrid(5, 1, 1, true), 2, 2});  // a ring of 5
  for (const Case& k : cases) {
    ASSERT_NE(k.topo, nullptr);
    SCOPED_TRACE(k.topo->node(k.topo->switches().back()).description);
    Routed r = route(*k.topo, "dor", 8);
    ASSERT_TRUE(r.tables.ok()) << r.tables.error().message;
    const RoutingTables& t = *r.tables;
    CheckReport c = checkRoutes(*k.topo, r.lids, t);
    EXPECT_TRUE(c.ok()) << formatReportText(c);
    EXPECT_EQ(c.unreachable, 0u);
    EXPECT_EQ(c.maxStretch, 0u);
    EXPECT_TRUE(c.cdgChecked);
    EXPECT_EQ(t.slLayers, k.vls);
    EXPECT_EQ(c.cdgVls, k.vls == 1 ? 0u : k.vls);
    uint8_t maxSl = 0;
    for (const auto& row : t.sl)
      for (uint8_t sl : row) maxSl = std::max(maxSl, sl);
    EXPECT_EQ(maxSl + 1u, k.sls);
  }
}

//   sw0 - sw1 - sw2 - sw3 - sw4
//    `-----------------------'     a ring of 5, one host each: without the dateline (every SL 0) the
//                                  two-hop paths sw0 -> sw1 -> sw2, ..., sw4 -> sw0 -> sw1 close the ring
TEST(DorEngine, DatelinesBreakTheRingsCycleAndOneVlIsDeclined) {
  auto topo = testing::makeGrid(5, 1, 1, true);
  Routed r = route(*topo, "dor", 2);
  ASSERT_TRUE(r.tables.ok()) << r.tables.error().message;
  CheckReport c = checkRoutes(*topo, r.lids, *r.tables);
  EXPECT_TRUE(c.ok()) << formatReportText(c);
  EXPECT_EQ(c.cdgVls, 2u);
  // The SL-to-VL tables the engine asks for, as ibsmd programs them and reads back: the same verdict.
  SlToVlMap map;
  for (NodeIndex n : topo->switches()) {
    const unsigned ports = topo->node(n).numPorts;
    for (unsigned out = 1; out <= ports; ++out)
      for (unsigned in = 0; in <= ports; ++in) {
        SlToVlMap::Table table{};
        for (unsigned sl = 0; sl < 16; ++sl)
          table[sl] = r.tables->hopVl(n, in, out, static_cast<uint8_t>(sl));
        map.set(n, ports, in, out, table);
      }
  }
  CheckOptions co;
  co.slToVl = &map;
  EXPECT_TRUE(checkRoutes(*topo, r.lids, *r.tables, co).cdgAcyclic);

  RoutingTables flat = *r.tables;
  for (size_t s = 0; s < flat.sl.size(); ++s) std::fill(flat.sl[s].begin(), flat.sl[s].end(), 0);
  CheckReport cf = checkRoutes(*topo, r.lids, flat);
  EXPECT_FALSE(cf.cdgAcyclic);
  EXPECT_EQ(cf.cdgCycle.size(), 5u) << formatReportText(cf);

  Routed one = route(*topo, "dor", 1);
  ASSERT_FALSE(one.tables.ok());
  EXPECT_EQ(one.tables.error().message, "dor: the datelines of the 1 ring need 2 VLs; the fabric offers 1");
}

// Parallel links: the destinations are spread over them, so every link carries routes, and the load is
// what one link per pair would carry, halved.
TEST(DorEngine, ParallelLinksAreSpreadOverDestinations) {
  FabricSpec one = torus({5, 4}), two = torus({5, 4});
  two.parallel = 2;
  auto a = generate(one), b = generate(two);
  Routed ra = route(*a, "dor", 8), rb = route(*b, "dor", 8);
  ASSERT_TRUE(ra.tables.ok() && rb.tables.ok());
  CheckReport ca = checkRoutes(*a, ra.lids, *ra.tables), cb = checkRoutes(*b, rb.lids, *rb.tables);
  EXPECT_TRUE(cb.ok()) << formatReportText(cb);
  EXPECT_EQ(cb.maxStretch, 0u);
  EXPECT_GT(cb.minLoad, 0u);
  EXPECT_EQ(cb.switchLinks, 2 * ca.switchLinks);
  EXPECT_LE(cb.maxLoad, (ca.maxLoad + 1) / 2);
}

// AR groups are the parallel links of the LFT port's way, nothing else: every (switch, LID) routed over a
// switch link has a group of exactly its 2 parallel links, and the CDG per VL stays acyclic with them.
TEST(DorEngine, ArGroupsAreTheParallelLinks) {
  for (std::vector<unsigned> dims : {std::vector<unsigned>{5, 4}, std::vector<unsigned>{3, 2, 2}}) {
    FabricSpec spec = torus(dims);
    spec.parallel = 2;
    auto topo = generate(spec);
    ASSERT_NE(topo, nullptr);
    testing::RoutedWithAr r = testing::routeWithAr(*topo, "dor", 8);
    ASSERT_TRUE(r.routed.tables.ok());
    const RoutingTables& t = *r.routed.tables;
    size_t overSwitchLinks = 0;
    for (NodeIndex n : topo->switches())
      for (uint32_t l = 1; l <= r.routed.lids.maxLid().value; ++l) {
        const uint8_t q = t.port(n, Lid{static_cast<uint16_t>(l)});
        if (q == kNoPort || q == 0 || !topo->node(topo->node(n).ports[q].peerNode).isSwitch()) continue;
        ++overSwitchLinks;
        const ArTable& ar = t.ar[n];
        ASSERT_NE(ar.lidToGroup[l], ArTable::kNoGroup);
        const PortMask& g = ar.groups[ar.lidToGroup[l]];
        EXPECT_EQ(g.count(), 2u);
        EXPECT_TRUE(g.test(q));
        for (unsigned p = 0; p < g.size(); ++p) {  // both lead to the LFT port's neighbour
          if (g.test(p)) {
            EXPECT_EQ(topo->node(n).ports[p].peerNode, topo->node(n).ports[q].peerNode);
          }
        }
      }
    EXPECT_EQ(r.report.arMembers, 2 * r.report.arEntries);
    EXPECT_GT(r.report.arEntries, 0u);
    EXPECT_LE(r.report.arEntries, overSwitchLinks);  // the checker looks at base LIDs only
    EXPECT_EQ(t.slLayers, dims[0] == 5 ? 2u : 1u);
    // The cap (checked in routeWithAr): one group per switch, the other ways route statically.
    testing::RoutedWithAr capped = testing::routeWithAr(*topo, "dor", 8, 1);
    EXPECT_EQ(capped.report.arGroups, topo->switches().size());
    EXPECT_LT(capped.report.arEntries, r.report.arEntries);
  }
}

// Without parallel links no port is safe beside the LFT's, so there is no group; and the other minimal
// ports (min-hop's groups) would indeed close a cycle on a hypercube and a torus, which the checker finds.
TEST(DorEngine, NoParallelLinksNoArGroupsAndOtherMinimalPortsWouldCloseACycle) {
  for (const FabricSpec& spec : {hypercube(4), torus({5, 4}), torus({6, 3})}) {
    auto topo = generate(spec);
    ASSERT_NE(topo, nullptr);
    testing::RoutedWithAr r = testing::routeWithAr(*topo, "dor", 8);
    ASSERT_TRUE(r.routed.tables.ok());
    EXPECT_EQ(testing::largestArGroup(*r.routed.tables), 0u);
    EXPECT_EQ(r.report.arEntries, 0u);

    RoutingTables t = *r.routed.tables;
    auto minhop = makeEngine("minhop")->compute(*topo, r.routed.lids, Options{});
    ASSERT_TRUE(minhop.ok());
    t.ar = minhop->ar;
    CheckReport c = checkRoutes(*topo, r.routed.lids, t);
    EXPECT_TRUE(c.cdgAcyclic);
    EXPECT_EQ(c.arNotShortest, 0u);
    EXPECT_FALSE(c.arCdgAcyclic) << formatReportText(c);
  }
}

TEST(DorEngine, IsDeterministic) {
  auto topo = generate(torus({5, 4, 3}));
  Routed a = route(*topo, "dor", 8), b = route(*topo, "dor", 8);
  ASSERT_TRUE(a.tables.ok() && b.tables.ok());
  EXPECT_EQ(a.tables->lft, b.tables->lft);
  EXPECT_EQ(a.tables->sl, b.tables->sl);
  EXPECT_EQ(a.tables->slToVl, b.tables->slToVl);
}

// The coordinates do not depend on the order in which the switches were discovered: the same 5 x 3 torus
// built in two orders (same GUIDs, cabled on the same ports) gets the same port and SL for every (switch,
// host).
TEST(DorEngine, DiscoveryOrderDoesNotMatter) {
  auto build = [](bool reversed) {
    testing::FabricSketch f;
    std::vector<NodeIndex> sw(15), ca(15);
    for (unsigned n = 0; n < 15; ++n) {
      const unsigned i = reversed ? 14 - n : n;
      sw[i] = f.addSwitch("t" + std::to_string(i), 8);
      f.node(sw[i]).guid = fabric::Guid{0x5000u + i};
    }
    for (unsigned i = 0; i < 15; ++i) {
      const unsigned x = i % 5, y = i / 5;
      f.link(sw[i], 2, sw[y * 5 + (x + 1) % 5], 3);
      f.link(sw[i], 4, sw[(y + 1) % 3 * 5 + x], 5);
      ca[i] = f.addCa("h" + std::to_string(i));
      f.link(ca[i], 1, sw[i], 1);
    }
    return f.build();
  };
  std::map<std::pair<uint64_t, uint64_t>, std::pair<unsigned, unsigned>> seen[2];
  for (int k = 0; k < 2; ++k) {
    auto topo = build(k == 1);
    Routed r = route(*topo, "dor", 8);
    ASSERT_TRUE(r.tables.ok()) << r.tables.error().message;
    for (NodeIndex s : topo->switches())
      for (NodeIndex c : topo->cas()) {
        const fabric::Lid lid = r.lids.base(c, fabric::PortNum{1});
        seen[k][{topo->node(s).guid.value, topo->node(c).guid.value}] = {r.tables->port(s, lid),
                                                                         r.tables->pathSl(s, lid)};
      }
  }
  EXPECT_EQ(seen[0], seen[1]);
}

// What is not a grid is declined with the reason: dragonflies (but the one of 3 groups of 2 is a ring of 6),
// a fat tree, a random mesh, and a 5x5 torus with one link missing (dfsp routes that one).
//   t(0,0) - t(1,0) - ... - t(4,0) - (wrap)       the torus of 5 x 5 of the generator, but the link
//     |        |             |                     t(2,3) - t(3,3) is not cabled
TEST(DorEngine, WhatIsNoGridIsDeclined) {
  FabricSpec mesh;
  mesh.shape = tools::Shape::kMesh;
  mesh.switches = 20;
  mesh.degree = 4;
  mesh.hostsPerSwitch = 1;
  std::vector<fabric::TopologyPtr> fabrics{generate(dragonfly(4, 2)), generate(dragonfly(3, 1)),
                                           generate(mesh), testing::makeFatTree2(4, 2, 2)};
  testing::FabricSketch f;
  std::vector<NodeIndex> sw;
  for (unsigned i = 0; i < 25; ++i) sw.push_back(f.addSwitch("t" + std::to_string(i), 8));
  for (unsigned y = 0; y < 5; ++y)
    for (unsigned x = 0; x < 5; ++x) {
      if (!(x == 2 && y == 3)) f.link(sw[y * 5 + x], sw[y * 5 + (x + 1) % 5]);
      f.link(sw[y * 5 + x], sw[(y + 1) % 5 * 5 + x]);
    }
  for (NodeIndex s : sw) f.link(f.addCa("h"), 1, s, f.nextPort(s));
  fabrics.push_back(f.build());
  for (const auto& topo : fabrics) {
    ASSERT_NE(topo, nullptr);
    Routed r = route(*topo, "dor", 8);
    ASSERT_FALSE(r.tables.ok()) << topo->node(topo->switches()[0]).description;
    EXPECT_TRUE(r.tables.error().message.starts_with("dor: not a mesh or torus ("))
        << r.tables.error().message;
  }
  Routed dfsp = route(*fabrics.back(), "dfsp", 8);
  EXPECT_TRUE(dfsp.tables.ok());
}

// The default chain's "dor|dfsp" on a torus: both route deadlock-free, the lower max link load wins.
TEST(DorEngine, ChainPicksTheBetterOfDorAndDfspOnATorus) {
  auto topo = generate(torus({5, 5}));
  auto lids = assignLids(*topo, {}, 0)->lids;
  Options o;
  o.vlLayers = 8;
  o.computeAr = false;
  auto chain = computeChain({"ftree", "dor|dfsp", "updn", "minhop"}, *topo, lids, o);
  ASSERT_TRUE(chain.ok()) << chain.error().message;
  ASSERT_EQ(chain->choices.size(), 2u);
  EXPECT_TRUE(chain->choices[0].starts_with("dor: max link load ")) << chain->choices[0];
  EXPECT_TRUE(chain->choices[1].starts_with("dfsp: max link load ")) << chain->choices[1];
  EXPECT_TRUE(checkRoutes(*topo, lids, chain->tables).ok());
  o.vlLayers = 1;  // neither dor's datelines nor dfsp's layers fit: the element fails (ROUTE002), updn routes
  chain = computeChain({"ftree", "dor|dfsp", "updn", "minhop"}, *topo, lids, o);
  ASSERT_TRUE(chain.ok()) << chain.error().message;
  EXPECT_EQ(chain->tables.engine, "updn");
  ASSERT_EQ(chain->fallbacks.size(), 2u);
  EXPECT_NE(chain->fallbacks[1].find("dor: the datelines of the 2 rings need 2 VLs; the fabric offers 1"),
            std::string::npos)
      << chain->fallbacks[1];
}

}  // namespace
}  // namespace ibsm::routing
