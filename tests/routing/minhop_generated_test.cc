// Min-hop and the checker on fabrics from the generator (k-ary n-trees, fat trees, meshes, tori, degraded
// trees).
#include <gtest/gtest.h>

#include "fabric/topology_file.h"
#include "routing/engine.h"
#include "routing/lft_dump.h"
#include "routing/route_checker.h"
#include "tools/fabric_gen/generator.h"

namespace ibsm::routing {
namespace {

using tools::FabricSpec;
using tools::Shape;

fabric::TopologyPtr generate(const FabricSpec& spec) {
  auto t = tools::generateFabric(spec);
  EXPECT_TRUE(t.ok()) << t.error().message;
  return t.ok() ? *t : nullptr;
}

struct Routed {
  LidAssignment lids;
  RoutingTables tables;
  CheckReport report;
};

Routed routeAndCheck(const fabric::Topology& topo, uint8_t lmc = 0, unsigned threads = 1) {
  Routed r;
  auto a = assignLids(topo, {}, lmc);
  EXPECT_TRUE(a.ok());
  r.lids = a->lids;
  Options o;
  o.threads = threads;
  auto t = makeMinHopEngine()->compute(topo, r.lids, o);
  EXPECT_TRUE(t.ok());
  r.tables = *t;
  CheckOptions co;
  co.allLids = lmc > 0;
  co.threads = threads;
  r.report = checkRoutes(topo, r.lids, r.tables, co);
  const CheckReport& c = r.report;
  EXPECT_GT(c.pairs, 0u);
  EXPECT_EQ(c.unreachable, 0u) << formatReportText(c);
  EXPECT_EQ(c.maxStretch, 0u);
  EXPECT_EQ(c.arNotShortest, 0u);
  return r;
}

FabricSpec karyNTree(unsigned k, unsigned n) {
  FabricSpec s;
  s.shape = Shape::kKaryNTree;
  s.k = k;
  s.n = n;
  return s;
}

TEST(MinHopGenerated, KaryNTreesAreBalancedAndDeadlockFree) {
  for (auto [k, n] : {std::pair{4u, 2u}, {4u, 3u}, {8u, 2u}, {6u, 3u}}) {
    auto topo = generate(karyNTree(k, n));
    ASSERT_TRUE(topo);
    Routed r = routeAndCheck(*topo);
    const CheckReport& c = r.report;
    EXPECT_TRUE(c.cdgAcyclic) << k << "," << n;
    EXPECT_TRUE(c.arCdgAcyclic) << k << "," << n;
    EXPECT_EQ(c.maxHops, 2 * n) << k << "," << n;
    // Every switch-to-switch link carries traffic, and the worst is within 1.8x of the mean (the lowest-port
    // tie-break of OpenSM's default gives 3.5x on 4,3 and 7.5x on 8,3 through aliasing).
    EXPECT_GT(c.minLoad, 0u) << k << "," << n;
    EXPECT_LE(static_cast<double>(c.maxLoad), 1.8 * c.meanLoad)
        << k << "," << n << ": " << formatReportText(c);
  }
}

TEST(MinHopGenerated, TwoLevelFatTreeIsPerfectlyBalanced) {
  FabricSpec s;
  s.shape = Shape::kFatTree;
  s.levels = 2;
  s.radix = 12;
  auto topo = generate(s);
  ASSERT_TRUE(topo);
  Routed r = routeAndCheck(*topo);
  EXPECT_EQ(r.report.maxLoad, r.report.minLoad);
  EXPECT_TRUE(r.report.cdgAcyclic);
}

TEST(MinHopGenerated, DualPortHcasParallelLinksAndLmc) {
  FabricSpec s;
  s.shape = Shape::kFatTree;
  s.levels = 2;
  s.radix = 12;
  s.hcaPorts = 2;
  s.parallel = 2;
  auto topo = generate(s);
  ASSERT_TRUE(topo);
  Routed r = routeAndCheck(*topo, /*lmc=*/1);
  EXPECT_TRUE(r.report.cdgAcyclic);
  EXPECT_EQ(r.report.destinations, topo->switches().size() + 2 * 2 * topo->cas().size());
}

TEST(MinHopGenerated, MeshesAndTori) {
  FabricSpec mesh;
  mesh.shape = Shape::kMesh;
  mesh.switches = 40;
  mesh.degree = 4;
  mesh.hostsPerSwitch = 2;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    mesh.seed = seed;
    auto topo = generate(mesh);
    ASSERT_TRUE(topo);
    routeAndCheck(*topo);
  }
  for (auto dims :
       {std::vector<unsigned>{6, 6}, std::vector<unsigned>{4, 4, 3}, std::vector<unsigned>{2, 5}}) {
    FabricSpec torus;
    torus.shape = Shape::kTorus;
    torus.dims = dims;
    torus.hostsPerSwitch = 2;
    auto topo = generate(torus);
    ASSERT_TRUE(topo);
    Routed r = routeAndCheck(*topo, 0, /*threads=*/2);
    // Wrap-around rings of 3 or more switches give min-hop credit loops.
    if (dims[0] >= 3 && dims[1] >= 3) {
      EXPECT_FALSE(r.report.cdgAcyclic);
    }
  }
}

TEST(MinHopGenerated, DegradedTreesStayCompleteAndMinimal) {
  FabricSpec s = karyNTree(4, 3);
  s.removeLinks = 12;
  s.removeSwitches = 0;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    s.seed = seed;
    auto topo = generate(s);
    ASSERT_TRUE(topo);
    routeAndCheck(*topo);
  }
}

TEST(MinHopGenerated, TopologyFileAndLftDumpRoundTrip) {
  auto topo = generate(karyNTree(4, 3));
  ASSERT_TRUE(topo);
  // What ibsm-route does: the file read back routes exactly like the generated fabric.
  auto back = fabric::parseTopology(fabric::formatTopology(*topo), "gen.topo");
  ASSERT_TRUE(back.ok()) << back.error().message;
  Routed a = routeAndCheck(*topo), b = routeAndCheck(**back);
  EXPECT_EQ(a.tables.lft, b.tables.lft);
  auto dumped = parseLftDump(formatLftDump(*topo, a.lids, a.tables), **back, "lfts");
  ASSERT_TRUE(dumped.ok()) << dumped.error().message;
  EXPECT_EQ(dumped->lft, a.tables.lft);
}

}  // namespace
}  // namespace ibsm::routing
