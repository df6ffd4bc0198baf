// Up/down engine: root choice (given, auto-detected on trees, central switch on meshes), minimal legal
// routes, never a down-then-up turn (checked hop by hop against the ranking, static routes and AR members
// alike), balance, LMC, AR groups, and seeded property tests over random meshes and tori.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>

#include "routing/engine.h"
#include "routing/route_checker.h"
#include "tests/routing/fabric_sketch.h"
#include "tests/routing/generated_fabrics.h"
#include "tools/fabric_gen/generator.h"

namespace ibsm::routing {
namespace {

using fabric::Topology;
using fabric::TopologyPtr;
using testing::assignOrDie;
using testing::FabricSketch;
using tools::FabricSpec;
using tools::Shape;

constexpr uint32_t kInfHops = UINT32_MAX;

TopologyPtr generate(const FabricSpec& spec) {
  auto t = tools::generateFabric(spec);
  EXPECT_TRUE(t.ok()) << t.error().message;
  return t.ok() ? *t : nullptr;
}

RoutingTables routeOrDie(const Topology& topo, const LidAssignment& lids, const Options& options = {}) {
  auto r = makeUpDownEngine()->compute(topo, lids, options);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return r.ok() ? std::move(*r) : RoutingTables{};
}

// Switch-to-switch hops from every switch along the static routes of one LID; kInfHops when not delivered.
std::vector<uint32_t> staticHops(const Topology& topo, const LidAssignment& lids, const RoutingTables& tables,
                                 Lid lid) {
  std::vector<uint32_t> hops(topo.size(), kInfHops);
  LidOwner owner = lids.owner(lid);
  for (NodeIndex s : topo.switches()) {
    NodeIndex x = s;
    for (uint32_t h = 0; h <= topo.switches().size(); ++h) {
      uint8_t port = tables.port(x, lid);
      const auto& node = topo.node(x);
      if (port == kNoPort || port >= node.ports.size()) break;
      if (port == 0) {
        if (x == owner.node) hops[s] = h;
        break;
      }
      const auto& p = node.ports[port];
      if (!p.connected()) break;
      if (!topo.node(p.peerNode).isSwitch()) {
        if (p.peerNode == owner.node && p.peerPort == owner.port) hops[s] = h;
        break;
      }
      x = p.peerNode;
    }
  }
  return hops;
}

// Ranks by BFS from the roots, keys (rank, GUID): a hop to a smaller key is up.
std::vector<std::pair<uint32_t, uint64_t>> upDownKeys(const Topology& topo, const std::vector<Guid>& roots) {
  std::vector<std::pair<uint32_t, uint64_t>> key(topo.size(), {kInfHops, 0});
  std::vector<NodeIndex> queue;
  for (Guid g : roots) {
    NodeIndex n = *topo.findNode(g);
    key[n].first = 0;
    queue.push_back(n);
  }
  for (size_t i = 0; i < queue.size(); ++i)
    for (const auto& p : topo.node(queue[i]).ports)
      if (p.connected() && topo.node(p.peerNode).isSwitch() && key[p.peerNode].first == kInfHops) {
        key[p.peerNode].first = key[queue[i]].first + 1;
        queue.push_back(p.peerNode);
      }
  for (NodeIndex n = 0; n < topo.size(); ++n) key[n].second = topo.node(n).guid.value;
  return key;
}

struct Local {
  size_t undeliveredCaLidSwitches = 0;  // (switch, CA LID) whose static route does not deliver
  size_t arNotEqualCost = 0;            // AR members not one hop closer than the static route's switch
  size_t arMissingStatic = 0;
  size_t downThenUp = 0;  // (switch, LID, port) hops that go up although the packet may have
                          // arrived going down (checked only when keys are given)
};

// With keys: for each LID, every switch that some route (static or AR) enters over a down hop must only use
// down hops itself.
Local localChecks(const Topology& topo, const LidAssignment& lids, const RoutingTables& tables,
                  const std::vector<std::pair<uint32_t, uint64_t>>* keys = nullptr) {
  Local out;
  std::vector<char> enteredDown(topo.size());
  for (uint32_t l = 1; l <= lids.maxLid().value; ++l) {
    Lid lid{static_cast<uint16_t>(l)};
    LidOwner owner = lids.owner(lid);
    if (owner.node == fabric::kNoNode) continue;
    auto hops = staticHops(topo, lids, tables, lid);
    const bool ca = !topo.node(owner.node).isSwitch();
    auto members = [&](NodeIndex s) {
      PortMask m;
      uint8_t st = tables.port(s, lid);
      if (st != kNoPort) m.set(st);
      if (!tables.ar.empty() && l < tables.ar[s].lidToGroup.size() &&
          tables.ar[s].lidToGroup[l] != ArTable::kNoGroup)
        m |= tables.ar[s].groups[tables.ar[s].lidToGroup[l]];
      return m;
    };
    std::fill(enteredDown.begin(), enteredDown.end(), 0);
    for (NodeIndex s : topo.switches()) {
      if (ca && hops[s] == kInfHops) ++out.undeliveredCaLidSwitches;
      uint8_t st = tables.port(s, lid);
      PortMask m = members(s);
      if (!tables.ar.empty() && l < tables.ar[s].lidToGroup.size() &&
          tables.ar[s].lidToGroup[l] != ArTable::kNoGroup) {
        const PortMask& g = tables.ar[s].groups[tables.ar[s].lidToGroup[l]];
        if (st == kNoPort || !g.test(st)) ++out.arMissingStatic;
        for (unsigned p = 1; p < topo.node(s).ports.size(); ++p) {
          if (!g.test(p) || p == st) continue;
          const auto& port = topo.node(s).ports[p];
          bool ok = port.connected() && topo.node(port.peerNode).isSwitch() && hops[s] != kInfHops &&
                    hops[port.peerNode] + 1 == hops[s];
          out.arNotEqualCost += !ok;
        }
      }
      if (!keys) continue;
      for (unsigned p = 1; p < topo.node(s).ports.size(); ++p) {
        const auto& port = topo.node(s).ports[p];
        if (m.test(p) && port.connected() && topo.node(port.peerNode).isSwitch() &&
            (*keys)[port.peerNode] > (*keys)[s])
          enteredDown[port.peerNode] = 1;
      }
    }
    if (!keys) continue;
    for (NodeIndex s : topo.switches()) {
      if (!enteredDown[s]) continue;
      PortMask m = members(s);
      for (unsigned p = 1; p < topo.node(s).ports.size(); ++p) {
        const auto& port = topo.node(s).ports[p];
        if (m.test(p) && port.connected() && topo.node(port.peerNode).isSwitch() &&
            (*keys)[port.peerNode] < (*keys)[s])
          ++out.downThenUp;
      }
    }
  }
  return out;
}

struct Checked {
  CheckReport all;  // every LID as destination
  CheckReport ca;   // CA LIDs only (loads as routes between CAs)
  Local local;
};

Checked checkAll(const Topology& topo, const LidAssignment& lids, const RoutingTables& tables,
                 const std::vector<Guid>& roots = {}) {
  Checked c;
  CheckOptions all;
  all.allLids = true;
  all.checkAr = false;  // the checker's AR test is against unrestricted min-hop; equal cost is checked below
  c.all = checkRoutes(topo, lids, tables, all);
  EXPECT_EQ(c.all.loops, 0u) << formatReportText(c.all);
  EXPECT_EQ(c.all.misdelivered, 0u) << formatReportText(c.all);
  EXPECT_EQ(c.all.deadLink, 0u) << formatReportText(c.all);
  EXPECT_TRUE(c.all.cdgChecked && c.all.cdgAcyclic) << formatReportText(c.all);
  if (!tables.ar.empty()) {
    EXPECT_TRUE(c.all.arCdgChecked && c.all.arCdgAcyclic) << formatReportText(c.all);
  }
  CheckOptions ca;
  ca.allLids = true;
  ca.checkCdg = ca.checkAr = ca.checkArCdg = false;
  c.ca = checkRoutes(topo, testing::caLidsOnly(topo, lids), tables, ca);
  auto keys = roots.empty() ? std::vector<std::pair<uint32_t, uint64_t>>{} : upDownKeys(topo, roots);
  c.local = localChecks(topo, lids, tables, roots.empty() ? nullptr : &keys);
  EXPECT_EQ(c.local.arNotEqualCost, 0u);
  EXPECT_EQ(c.local.arMissingStatic, 0u);
  EXPECT_EQ(c.local.downThenUp, 0u);
  return c;
}

std::vector<Guid> guidsOf(const Topology& topo, std::string_view prefix) {
  std::vector<Guid> out;
  for (NodeIndex s : topo.switches())
    if (topo.node(s).description.starts_with(prefix)) out.push_back(topo.node(s).guid);
  return out;
}

// ---------------------------------------------------------------------------------------------------------------

//        spine0   spine1              roots (auto-detected: farthest from the switches with CAs)
//        /  |  \  /  |  \             .
//     leaf0 leaf1 leaf2               two hosts each; every leaf linked once to every spine
TEST(UpDownEngine, TwoLevelTreeIsMinimalAndBalanced) {
  auto topo = testing::makeFatTree2(3, 2, 2);
  auto lids = assignOrDie(*topo);
  auto tables = routeOrDie(*topo, lids);
  EXPECT_EQ(tables.engine, "updn");
  std::vector<Guid> spines = guidsOf(*topo, "spine");
  auto c = checkAll(*topo, lids, tables, spines);
  EXPECT_EQ(c.all.unreachable, 0u);
  EXPECT_EQ(c.all.maxStretch, 0u);
  // 2 hosts x 4 outside destinations over 2 up-links: 4 routes per link when balanced.
  EXPECT_EQ(c.ca.maxLoad, 4u);
  // Auto-detected roots are the spines: naming them gives the same tables.
  Options opt;
  opt.roots = spines;
  EXPECT_EQ(routeOrDie(*topo, lids, opt).lft, tables.lft);
}

TEST(UpDownEngine, RootsGivenAndDeclines) {
  auto topo = testing::makeFatTree2(4, 2, 2);
  auto lids = assignOrDie(*topo);
  Options opt;
  opt.roots = {Guid{0x1234}};
  auto r = makeUpDownEngine()->compute(*topo, lids, opt);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("0x0000000000001234"), std::string::npos) << r.error().message;
  // A CA's GUID is not a switch either.
  opt.roots = {topo->node(topo->cas().front()).guid};
  EXPECT_FALSE(makeUpDownEngine()->compute(*topo, lids, opt).ok());
  // No switches at all.
  FabricSketch f;
  f.link(f.addCa("a"), 1, f.addCa("b"), 1);
  auto bare = f.build();
  r = makeUpDownEngine()->compute(*bare, assignOrDie(*bare), {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("no switches"), std::string::npos);
  // A leaf as the root still routes everything, legally, just not as well.
  opt.roots = {topo->node(topo->switches().front()).guid};
  auto tables = routeOrDie(*topo, lids, opt);
  auto c = checkAll(*topo, lids, tables, opt.roots);
  EXPECT_EQ(c.all.unreachable, 0u);
}

// 3-level fat tree: auto roots are the cores, routes are minimal, and the balance is min-hop's.
TEST(UpDownEngine, ThreeLevelTreeUsesTheCores) {
  FabricSpec spec;
  spec.shape = Shape::kFatTree;
  spec.levels = 3;
  spec.radix = 12;
  auto topo = generate(spec);
  auto lids = assignOrDie(*topo);
  auto tables = routeOrDie(*topo, lids);
  std::vector<Guid> cores = guidsOf(*topo, "core");
  auto c = checkAll(*topo, lids, tables, cores);
  EXPECT_EQ(c.ca.unreachable, 0u);
  EXPECT_EQ(c.ca.maxStretch, 0u);
  // Core-to-core switch LIDs are the only unreachable pairs there could be, and CAs never need them.
  std::printf("3-level radix 12 (%zu hosts): updn max switch-link load %llu (ftree's optimum 426)\n",
              topo->cas().size(), static_cast<unsigned long long>(c.ca.maxLoad));
  EXPECT_LE(c.ca.maxLoad, 426u + 42u);  // within 10% of the optimum
  Options opt;
  opt.roots = cores;
  EXPECT_EQ(routeOrDie(*topo, lids, opt).lft, tables.lft);
}

//   sw0 - sw1 - sw2            every switch has a host: no tree top, so one central root (sw4)
//    |     |     |             .
//   sw3 - sw4 - sw5
//    |     |     |
//   sw6 - sw7 - sw8
TEST(UpDownEngine, MeshGetsOneCentralRoot) {
  auto topo = testing::makeGrid(3, 3, 1, false);
  auto lids = assignOrDie(*topo);
  auto tables = routeOrDie(*topo, lids);
  Guid center = topo->node(*topo->findByDescription("sw4")).guid;
  auto c = checkAll(*topo, lids, tables, {center});
  EXPECT_EQ(c.all.unreachable, 0u);
  Options opt;
  opt.roots = {center};
  EXPECT_EQ(routeOrDie(*topo, lids, opt).lft, tables.lft);
}

// Two roots carrying CAs: a root has no legal way to the other root (down then up), which is the one kind of
// pair up/down leaves unreachable (as OpenSM without connect_roots).
//    r0   r1        both roots have a host; the leaf in between has one too
//     \   /
//     leaf
TEST(UpDownEngine, RootToRootIsTheOnlyGap) {
  FabricSketch f;
  NodeIndex r0 = f.addSwitch("r0", 8), r1 = f.addSwitch("r1", 8), leaf = f.addSwitch("leaf", 8);
  for (NodeIndex s : {r0, r1, leaf}) f.link(f.addCa("h"), 1, s, f.nextPort(s));
  f.link(leaf, r0);
  f.link(leaf, r1);
  auto topo = f.build();
  auto lids = assignOrDie(*topo);
  Options opt;
  opt.roots = {topo->node(r0).guid, topo->node(r1).guid};
  auto tables = routeOrDie(*topo, lids, opt);
  auto c = checkAll(*topo, lids, tables, opt.roots);
  // Host of r0 <-> host of r1 (both ways), and each host to the other root's switch LID.
  EXPECT_EQ(c.all.unreachable, 4u) << formatReportText(c.all);
  EXPECT_EQ(c.all.noRoute, 4u);
  EXPECT_EQ(tables.port(r0, lids.base(r1, PortNum{0})), kNoPort);
}

// Auto-detected roots that are not a tree top can leave CA pairs apart; the engine then routes from a central
// root instead.
//   r1 - a - m - b - r2     hosts on a, m, b; r1 and r2 (no CAs, farthest from the CAs) would be the roots:
//                           then b cannot reach a (b -> m is down, m -> a is up) and vice versa
TEST(UpDownEngine, FallsBackToACentralRootWhenTreeRootsLeaveGaps) {
  FabricSketch f;
  NodeIndex r1 = f.addSwitch("r1", 8), a = f.addSwitch("a", 8), m = f.addSwitch("m", 8),
            b = f.addSwitch("b", 8), r2 = f.addSwitch("r2", 8);
  f.link(r1, a);
  f.link(a, m);
  f.link(m, b);
  f.link(b, r2);
  for (NodeIndex s : {a, m, b}) f.link(f.addCa("h"), 1, s, f.nextPort(s));
  auto topo = f.build();
  auto lids = assignOrDie(*topo);
  Options treeRoots;
  treeRoots.roots = {topo->node(r1).guid, topo->node(r2).guid};
  auto gaps = checkAll(*topo, lids, routeOrDie(*topo, lids, treeRoots), treeRoots.roots);
  EXPECT_GT(gaps.ca.unreachable, 0u);
  auto tables = routeOrDie(*topo, lids);
  auto c = checkAll(*topo, lids, tables, {topo->node(m).guid});
  EXPECT_EQ(c.all.unreachable, 0u) << formatReportText(c.all);
  Options central;
  central.roots = {topo->node(m).guid};
  EXPECT_EQ(routeOrDie(*topo, lids, central).lft, tables.lft);
}

TEST(UpDownEngine, LmcLidsTakeDistinctPorts) {
  auto topo = testing::makeFatTree2(4, 4, 2);
  auto lids = assignOrDie(*topo, 2);
  auto tables = routeOrDie(*topo, lids);
  checkAll(*topo, lids, tables, guidsOf(*topo, "spine"));
  for (NodeIndex ca : topo->cas()) {
    Lid base = lids.base(ca, PortNum{1});
    NodeIndex own = topo->node(ca).ports[1].peerNode;
    for (NodeIndex sw : topo->switches()) {
      if (sw == own || !topo->node(sw).description.starts_with("leaf")) continue;
      PortMask used;
      for (uint16_t i = 0; i < 4; ++i) used.set(tables.port(sw, Lid{static_cast<uint16_t>(base.value + i)}));
      EXPECT_EQ(used.count(), 4u) << "4 LIDs over 4 up-ports";
    }
  }
}

TEST(UpDownEngine, ArGroupsHoldEveryMinimalLegalPort) {
  auto topo = testing::makeFatTree2(4, 3, 2, 2);  // 2 parallel links per leaf-spine pair
  auto lids = assignOrDie(*topo);
  auto tables = routeOrDie(*topo, lids);
  checkAll(*topo, lids, tables, guidsOf(*topo, "spine"));
  ASSERT_EQ(tables.ar.size(), topo->size());
  for (NodeIndex sw : topo->switches()) {
    bool leaf = topo->node(sw).description.starts_with("leaf");
    for (NodeIndex ca : topo->cas()) {
      Lid lid = lids.base(ca, PortNum{1});
      uint16_t g = tables.ar[sw].lidToGroup[lid.value];
      if (topo->node(ca).ports[1].peerNode == sw) {
        EXPECT_EQ(g, ArTable::kNoGroup);  // one way only: the host port
        continue;
      }
      ASSERT_NE(g, ArTable::kNoGroup);
      // A leaf may take any of its 6 up-links; a spine either of its 2 parallel links down.
      EXPECT_EQ(tables.ar[sw].groups[g].count(), leaf ? 6u : 2u);
    }
  }
}

// Balance on a bigger fat tree, against ftree's optimum (630 = 18 x 630 / 18).
TEST(UpDownEngine, BalanceOnTwoLevelRadix36) {
  FabricSpec spec;
  spec.shape = Shape::kFatTree;
  spec.levels = 2;
  spec.radix = 36;
  auto topo = generate(spec);
  auto lids = assignOrDie(*topo);
  auto tables = routeOrDie(*topo, lids);
  auto c = checkAll(*topo, lids, tables, guidsOf(*topo, "spine"));
  std::printf("2-level radix 36 (648 hosts): updn max switch-link load %llu (optimum 630)\n",
              static_cast<unsigned long long>(c.ca.maxLoad));
  EXPECT_EQ(c.ca.unreachable, 0u);
  EXPECT_LE(c.ca.maxLoad, 630u + 63u);  // within 10% of the optimum
}

// Seeded property test: random meshes (in code and generated), tori and degraded trees; with explicit roots
// the turn rule is checked hop by hop.
TEST(UpDownEngine, PropertiesOnRandomFabrics) {
  std::mt19937 rng(7);
  for (int iter = 0; iter < 40; ++iter) {
    SCOPED_TRACE("iteration " + std::to_string(iter));
    TopologyPtr topo;
    switch (iter % 4) {
      case 0:
        topo = testing::makeRandomMesh(5 + rng() % 30, rng() % 40, rng());
        break;
      case 1: {
        FabricSpec s;
        s.shape = Shape::kMesh;
        s.switches = 4 + rng() % 40;
        s.degree = 2 + rng() % 5;
        s.hostsPerSwitch = rng() % 3;  // sometimes switches without hosts
        s.seed = rng();
        topo = generate(s);
        break;
      }
      case 2: {
        FabricSpec s;
        s.shape = Shape::kTorus;
        s.dims = {2 + static_cast<unsigned>(rng() % 4), 2 + static_cast<unsigned>(rng() % 4)};
        if (rng() % 2) s.dims.push_back(2 + rng() % 2);
        s.seed = rng();
        topo = generate(s);
        break;
      }
      default: {
        FabricSpec s;
        s.shape = Shape::kKaryNTree;
        s.k = 2 + rng() % 3;
        s.n = 2 + rng() % 2;
        s.removeLinks = rng() % 4;
        s.seed = rng();
        auto t = tools::generateFabric(s);
        if (!t) continue;
        topo = *t;
      }
    }
    ASSERT_TRUE(topo);
    auto lids = assignOrDie(*topo, iter % 6 == 0 ? 1 : 0);
    Options opt;
    if (iter % 3 == 0) {  // explicit roots: one or two random switches
      const auto& sw = topo->switches();
      opt.roots.push_back(topo->node(sw[rng() % sw.size()]).guid);
      if (rng() % 2) opt.roots.push_back(topo->node(sw[rng() % sw.size()]).guid);
    }
    auto tables = makeUpDownEngine()->compute(*topo, lids, opt);
    ASSERT_TRUE(tables.ok()) << tables.error().message;
    auto c = checkAll(*topo, lids, *tables, opt.roots);
    if (opt.roots.size() < 2) {
      // Auto roots and a single given root leave no CA pair apart, and (one root, or auto roots, which never
      // carry CAs unless there is just one) every switch reaches every CA LID.
      EXPECT_EQ(c.ca.unreachable, 0u) << formatReportText(c.ca);
      if (opt.roots.size() == 1) {
        EXPECT_EQ(c.local.undeliveredCaLidSwitches, 0u);
      }
    }
    auto again = makeUpDownEngine()->compute(*topo, lids, opt);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->lft, tables->lft);
  }
}

}  // namespace
}  // namespace ibsm::routing
