// dfly's incremental repair (routing/dfly_repair.h) through repairRoutes: a failed global link (its group
// pair's only one) is detoured through a third group, a failed local link by two local hops, on the SLs and
// VLs of dfly_engine.cc's header: every pair reachable, the VL-aware CDG acyclic (and cyclic once the
// detours' SLs share one VL), only the routes that crossed the link moved, the kept loads equal a recount; a
// link that comes back restores the original tables, in the repair or, when an incremental rebalance
// follows, in the rebalance (rebalanceDragonfly); what it cannot repair it declines with the reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <utility>

#include "routing/dfly_vls.h"
#include "routing/engine.h"
#include "routing/rebalance.h"
#include "routing/repair.h"
#include "routing/route_checker.h"
#include "routing/switch_graph.h"
#include "tests/routing/generated_fabrics.h"

namespace ibsm::routing {
namespace {

using fabric::TopologyPtr;
using testing::crosses;
using testing::dragonfly;
using testing::generate;
using testing::takeDown;

using Routed = testing::RoutedWithLoads;
Routed route(const Topology& topo, uint8_t vls = 8) {
  Options o;
  o.vlLayers = vls;
  o.computeAr = false;
  return testing::routeWithLoads(topo, "dfly", o);
}

// Switch-to-switch links (lower node first) whose ends are in the same group (local) or not.
std::vector<std::pair<NodeIndex, uint8_t>> links(const Topology& topo, const RoutingTables& t, bool local) {
  std::vector<std::pair<NodeIndex, uint8_t>> out;
  for (NodeIndex s : topo.switches())
    for (unsigned p = 1; p < topo.node(s).ports.size(); ++p) {
      const fabric::Port& port = topo.node(s).ports[p];
      if (port.connected() && topo.node(port.peerNode).isSwitch() && s < port.peerNode &&
          (t.dflyGroup[s] == t.dflyGroup[port.peerNode]) == local)
        out.emplace_back(s, static_cast<uint8_t>(p));
    }
  return out;
}

// The same tables with SLs `sls` moved, on every pair, to the VL SL 0 takes there.
RoutingTables onOneVl(const Topology& topo, RoutingTables t, std::initializer_list<uint8_t> sls) {
  for (NodeIndex s : topo.switches()) {
    const unsigned ports = topo.node(s).numPorts;
    for (unsigned in = 0; in <= ports; ++in)
      for (unsigned out = 0; out <= ports; ++out) {
        uint64_t v = t.slToVl.packed(s, in, out);
        const uint64_t vl0 = v & 0xF;
        for (uint8_t sl : sls) v = (v & ~(uint64_t{0xF} << (4 * sl))) | (vl0 << (4 * sl));
        t.slToVl.setPacked(s, ports, in, out, v);
      }
  }
  return t;
}

// Repairs `before` for `after` and checks what every dfly repair promises.
RepairResult repairAndCheck(const Topology& topo, const Routed& before, const Topology& after,
                            std::pair<NodeIndex, uint8_t> failed, const std::string& what) {
  auto r = repairRoutes(topo, before.lids, before.tables, before.loads, after, before.lids);
  EXPECT_TRUE(r.ok()) << what << ": " << (r ? "" : r.error().message);
  if (!r) return {};
  EXPECT_EQ(r->tables.engine, "dfly");
  EXPECT_EQ(r->note.rfind("dfly: ", 0), 0u) << r->note;
  CheckReport rep = checkRoutes(after, before.lids, r->tables);
  EXPECT_EQ(rep.unreachable, 0u) << what << "\n" << formatReportText(rep);
  EXPECT_TRUE(rep.cdgChecked && rep.cdgAcyclic) << what << "\n" << formatReportText(rep);
  EXPECT_LE(rep.cdgVls, 4u) << what;
  EXPECT_LE(r->tables.slLayers, 4u) << what;
  EXPECT_LE(rep.maxStretch, 3u) << what;
  // Every path SL is one of dfly's.
  for (const auto& row : r->tables.sl)
    for (uint8_t sl : row) EXPECT_LT(sl, dfly::kSls) << what;
  // The SL-to-VL tables are the engine's: a repair writes none of its own.
  EXPECT_EQ(r->tables.slToVl, before.tables.slToVl) << what;
  // Only routes that crossed the failed link moved, and `moved` counts them.
  size_t moved = 0;
  for (NodeIndex s : after.switches())
    for (uint16_t lid = 1; lid <= before.lids.maxLid().value; ++lid)
      if (r->tables.port(s, fabric::Lid{lid}) != before.tables.port(s, fabric::Lid{lid})) {
        ++moved;
        EXPECT_TRUE(crosses(topo, before.tables, s, lid, failed.first, failed.second))
            << what << ": switch " << topo.node(s).description << " LID " << lid << " moved";
      }
  EXPECT_EQ(moved, r->moved) << what;
  EXPECT_GT(moved, 0u) << what;
  // The loads it keeps are the loads of its tables.
  PortLoads recount = computePortLoads(after, before.lids, r->tables);
  for (NodeIndex s : after.switches())
    for (size_t p = 1; p < recount[s].size(); ++p) EXPECT_EQ(r->loads[s][p], recount[s][p]) << what;
  return std::move(*r);
}

// Every global link of a dragonfly with one global link per group pair (9 groups of 4), down in turn: the
// pair's routes go through a third group above or below both (SL 1 or 2, VLs 0-2), and only those. Put on
// one VL with the minimal paths the detours of all those repairs together close a cycle.
TEST(DflyRepair, EveryGlobalLinkThatIsItsGroupPairsOnlyOne) {
  TopologyPtr topo = generate(dragonfly(4, 2));
  ASSERT_TRUE(topo);
  Routed before = route(*topo);
  ASSERT_EQ(before.tables.engine, "dfly");
  const auto globals = links(*topo, before.tables, false);
  ASSERT_EQ(globals.size(), 36u);  // 9 groups, one link per pair
  std::set<uint8_t> sls;
  for (auto link : globals) {
    const std::string what = topo->node(link.first).description + "[" + std::to_string(link.second) + "]";
    TopologyPtr after = takeDown(*topo, {link});
    RepairResult r = repairAndCheck(*topo, before, *after, link, what);
    for (const auto& row : r.tables.sl)
      for (uint8_t sl : row) sls.insert(sl);
    EXPECT_EQ(r.tables.slLayers, 3u) << what;  // VL 2: the detour's second global hop
    EXPECT_NE(r.note.find("through a third group"), std::string::npos) << r.note;
  }
  // Peaks and valleys in both orders of the groups (the pairs of the first and the last group have no third
  // group outside their interval in order A).
  EXPECT_EQ(sls, (std::set<uint8_t>{0, 1, 2, 5, 6}));

  // Two failures in a row (two group pairs that share no group), then the detours with their SLs' VLs
  // collapsed onto SL 0's: the CDG on one VL per link closes.
  TopologyPtr once = takeDown(*topo, {globals[0]});
  auto r1 = repairRoutes(*topo, before.lids, before.tables, before.loads, *once, before.lids);
  ASSERT_TRUE(r1.ok()) << r1.error().message;
  Routed second{before.lids, r1->tables, r1->loads};
  size_t cyclic = 0, checked = 0;
  for (size_t i = 1; i < globals.size(); ++i) {
    TopologyPtr twice = takeDown(*once, {globals[i]});
    auto r2 = repairRoutes(*once, second.lids, second.tables, second.loads, *twice, second.lids);
    if (!r2) {
      EXPECT_NE(r2.error().message.find("no deadlock-free way"), std::string::npos) << r2.error().message;
      continue;
    }
    ++checked;
    CheckReport ok = checkRoutes(*twice, before.lids, r2->tables);
    EXPECT_EQ(ok.unreachable, 0u) << formatReportText(ok);
    EXPECT_TRUE(ok.cdgAcyclic) << formatReportText(ok);
    const RoutingTables flat =
        onOneVl(*twice, r2->tables, {dfly::kSlPeakA, dfly::kSlValleyA, dfly::kSlPeakB, dfly::kSlValleyB});
    cyclic += !checkRoutes(*twice, before.lids, flat).cdgAcyclic;
  }
  EXPECT_GE(checked, globals.size() / 2);
  EXPECT_GT(cyclic, 0u) << "the detours' own VLs are what keeps them deadlock-free";
}

// Every local link down in turn (9 groups of 4 routers, 2 hosts each): its routes take two local hops in the
// group (SL 0 inside the group, 4 before the global hop, 3 after it), never a third group, on VLs 0-3.
TEST(DflyRepair, EveryLocalLink) {
  TopologyPtr topo = generate(dragonfly(4, 2));
  ASSERT_TRUE(topo);
  Routed before = route(*topo);
  const auto locals = links(*topo, before.tables, true);
  ASSERT_EQ(locals.size(), 9u * 6);
  std::set<uint8_t> sls;
  for (auto link : locals) {
    const std::string what = topo->node(link.first).description + "[" + std::to_string(link.second) + "]";
    TopologyPtr after = takeDown(*topo, {link});
    RepairResult r = repairAndCheck(*topo, before, *after, link, what);
    for (const auto& row : r.tables.sl)
      for (uint8_t sl : row) {
        EXPECT_FALSE(dfly::isDetour(sl)) << what;
        sls.insert(sl);
      }
    EXPECT_EQ(r.tables.slLayers, 4u) << what;
  }
  EXPECT_EQ(sls, (std::set<uint8_t>{0, 3, 4}));

  // Two local links down in a row: repaired (checked as above) or declined with the reason; with the SLs of
  // two local hops moved to the minimal paths' VLs, some of those repairs close a cycle.
  size_t repaired = 0, cyclic = 0;
  for (size_t i = 0; i < locals.size(); i += 3)
    for (size_t j = i + 1; j < locals.size(); j += 2) {
      TopologyPtr once = takeDown(*topo, {locals[i]});
      auto r1 = repairRoutes(*topo, before.lids, before.tables, before.loads, *once, before.lids);
      ASSERT_TRUE(r1.ok()) << r1.error().message;
      TopologyPtr twice = takeDown(*once, {locals[j]});
      Routed second{before.lids, r1->tables, r1->loads};
      auto r2 = repairRoutes(*once, before.lids, r1->tables, r1->loads, *twice, before.lids);
      if (!r2) {
        EXPECT_NE(r2.error().message.find("has no deadlock-free way to LID"), std::string::npos);
        continue;
      }
      ++repaired;
      repairAndCheck(*once, second, *twice, locals[j], "two local links");
      const RoutingTables flat = onOneVl(*twice, r2->tables, {dfly::kSlFirstLocals, dfly::kSlLastLocals});
      cyclic += !checkRoutes(*twice, before.lids, flat).cdgAcyclic;
    }
  EXPECT_GT(repaired, 200u);
  EXPECT_GT(cyclic, 0u);
}

// A link that comes back: the repaired tables are replaced by the engine's for the whole dragonfly, which
// are the original ones (same LFTs, SLs all 0, same max load), and only what the repair moved moves back.
TEST(DflyRepair, ALinkThatComesBackRestoresTheOriginalTables) {
  TopologyPtr topo = generate(dragonfly(4, 2));
  ASSERT_TRUE(topo);
  Routed before = route(*topo);
  const uint64_t maxLoad = checkRoutes(*topo, before.lids, before.tables).maxLoad;
  for (bool local : {false, true}) {
    const auto link = links(*topo, before.tables, local)[3];
    TopologyPtr after = takeDown(*topo, {link});
    auto down = repairRoutes(*topo, before.lids, before.tables, before.loads, *after, before.lids);
    ASSERT_TRUE(down.ok()) << down.error().message;
    auto up = repairRoutes(*after, before.lids, down->tables, down->loads, *topo, before.lids);
    ASSERT_TRUE(up.ok()) << up.error().message;
    EXPECT_EQ(up->tables.lft, before.tables.lft);
    EXPECT_EQ(up->tables.sl, before.tables.sl);
    EXPECT_EQ(up->tables.slLayers, 2u);
    EXPECT_EQ(up->moved, down->moved);
    EXPECT_NE(up->note.find("whole again"), std::string::npos) << up->note;
    CheckReport c = checkRoutes(*topo, before.lids, up->tables);
    EXPECT_TRUE(c.ok()) << formatReportText(c);
    EXPECT_EQ(c.maxLoad, maxLoad);
    EXPECT_EQ(up->loads, before.loads);
  }
  // Two links down, one back: the repaired routes stay (valid without it) until the other one is back too.
  const auto globals = links(*topo, before.tables, false);
  TopologyPtr one = takeDown(*topo, {globals[0]});
  TopologyPtr two = takeDown(*one, {globals[5]});
  auto r1 = repairRoutes(*topo, before.lids, before.tables, before.loads, *one, before.lids);
  ASSERT_TRUE(r1.ok());
  auto r2 = repairRoutes(*one, before.lids, r1->tables, r1->loads, *two, before.lids);
  ASSERT_TRUE(r2.ok()) << r2.error().message;
  TopologyPtr back = takeDown(*topo, {globals[5]});
  auto r3 = repairRoutes(*two, before.lids, r2->tables, r2->loads, *back, before.lids);
  ASSERT_TRUE(r3.ok()) << r3.error().message;
  EXPECT_EQ(r3->moved, 0u);
  EXPECT_TRUE(checkRoutes(*back, before.lids, r3->tables).ok());
  auto r4 = repairRoutes(*back, before.lids, r3->tables, r3->loads, *topo, before.lids);
  ASSERT_TRUE(r4.ok());
  EXPECT_EQ(r4->tables.lft, before.tables.lft);
}

// The spread routes' AR groups offer detours that rest on the routes to their LID (dfly_engine.cc's header):
// with every global link of 9 groups x 4 down in turn, the repaired tables pass the checker with every
// member (each within RoutingTables::arStretch, the VL-aware AR CDG acyclic), the groups of the LIDs whose
// routes moved hold only the LFT port's parallel links, and the other LIDs keep their detours.
TEST(DflyRepair, ARepairedLidsGroupsGoBackToTheParallelLinks) {
  TopologyPtr topo = generate(dragonfly(4, 2));
  ASSERT_TRUE(topo);
  Options o;
  o.vlLayers = 8;
  o.dflySpread = true;
  const Routed before = testing::routeWithLoads(*topo, "dfly", o);
  ASSERT_EQ(before.tables.arStretch, 2u);
  for (auto link : links(*topo, before.tables, false)) {
    const std::string what = topo->node(link.first).description + "[" + std::to_string(link.second) + "]";
    TopologyPtr after = takeDown(*topo, {link});
    auto r = repairRoutes(*topo, before.lids, before.tables, before.loads, *after, before.lids);
    ASSERT_TRUE(r.ok()) << what << ": " << r.error().message;
    EXPECT_EQ(r->tables.arStretch, 2u) << what;
    CheckReport c = checkRoutes(*after, before.lids, r->tables);
    EXPECT_TRUE(c.ok()) << what << "\n" << formatReportText(c);
    EXPECT_GT(c.arStretched, 0u) << what;
    const SwitchGraph g(*after);
    for (uint16_t lid = 1; lid <= before.lids.maxLid().value; ++lid) {
      const fabric::Lid l{lid};
      if (std::none_of(after->switches().begin(), after->switches().end(),
                       [&](NodeIndex s) { return r->tables.port(s, l) != before.tables.port(s, l); }))
        continue;
      for (NodeIndex s : after->switches()) {
        const uint16_t group = r->tables.ar[s].groupOf(lid);
        if (group == ArTable::kNoGroup) continue;
        const SwitchIndex to = g.arcs()[g.arcOfPort(g.index(s), r->tables.port(s, l))].to;
        for (uint32_t a = g.arcBegin(g.index(s)); a < g.arcEnd(g.index(s)); ++a) {
          if (r->tables.ar[s].groups[group].test(g.arcs()[a].port)) {
            EXPECT_EQ(g.arcs()[a].to, to) << what << ": " << after->node(s).description << " LID " << lid;
          }
        }
      }
    }
  }
}

// With an incremental rebalance to follow (clearDeparted false, ibsmd's default) a link that comes back is
// left to the rebalance, off the event loop: the repair keeps the routes (valid without the link) and moves
// nothing, and the rebalance gives back exactly the engine's tables for the whole dragonfly, minimal or
// spread (Options::dflySpread): LFTs, AR groups, SLs and loads of a fresh compute, sharing every row that
// did not change and counting each entry that moves back (those the repair moved) as restored. After a loss,
// or while another link is still down, it declines and the repaired routes stay. Without a rebalance the
// repair gives them back itself, as before.
TEST(DflyRepair, ALinkThatComesBackIsLeftToTheRebalance) {
  TopologyPtr topo = generate(dragonfly(4, 2));
  ASSERT_TRUE(topo);
  for (bool spread : {false, true}) {
    Options o;
    o.vlLayers = 8;
    o.dflySpread = spread;
    const Routed before = testing::routeWithLoads(*topo, "dfly", o);
    ASSERT_EQ(before.tables.dflySpread, spread);
    ASSERT_FALSE(before.tables.ar.empty());
    const uint64_t maxLoad = checkRoutes(*topo, before.lids, before.tables).maxLoad;
    // Repairs `from` (on `was`) for `now`, with or without a rebalance to follow.
    auto repair = [&](const Topology& was, const RepairResult& from, const Topology& now, bool rebalance) {
      return repairRoutes(was, before.lids, from.tables, from.loads, now, before.lids, 2048, !rebalance);
    };
    // The rebalance of `r` gives the engine's tables back; how many entries moved.
    auto restores = [&](const RepairResult& r, const std::string& what) -> size_t {
      auto b = rebalanceRoutes(*topo, before.lids, r.tables, r.loads);
      if (!b.ok()) {
        ADD_FAILURE() << what << ": " << b.error().message;
        return 0;
      }
      EXPECT_EQ(b->note, "dfly: the dragonfly is whole again, its routes from scratch") << what;
      EXPECT_TRUE(b->tables.lft == before.tables.lft) << what;
      EXPECT_TRUE(b->tables.ar == before.tables.ar) << what;
      EXPECT_EQ(b->tables.sl, before.tables.sl) << what;
      EXPECT_EQ(b->tables.slLayers, before.tables.slLayers) << what;
      EXPECT_EQ(b->tables.slToVl, before.tables.slToVl) << what;
      EXPECT_EQ(b->loads, before.loads) << what;
      EXPECT_EQ(b->maxLoadAfter, maxLoad) << what;
      EXPECT_GT(b->maxLoadBefore, b->maxLoadAfter) << what;
      size_t moved = 0;
      const Rows<LftRow>& lft = b->tables.lft;  // read only: a write would clone the row
      for (NodeIndex s : topo->switches()) {
        for (size_t lid = 0; lid < lft[s].size(); ++lid) moved += lft[s][lid] != r.tables.lft[s][lid];
        if (lft[s] == r.tables.lft[s]) {
          EXPECT_TRUE(lft.sameRow(s, r.tables.lft, s)) << what << ": " << topo->node(s).description;
        }
      }
      EXPECT_GT(moved, 0u) << what;
      EXPECT_EQ(b->moved, moved) << what;
      EXPECT_EQ(b->restored, moved) << what;
      return moved;
    };
    RepairResult whole;
    whole.tables = before.tables;
    whole.loads = before.loads;
    for (bool local : {false, true}) {
      const std::string what = std::string(spread ? "spread, " : "minimal, ") + (local ? "local" : "global");
      const auto link = links(*topo, before.tables, local)[3];
      TopologyPtr after = takeDown(*topo, {link});
      auto down = repair(*topo, whole, *after, true);
      ASSERT_TRUE(down.ok()) << what << ": " << down.error().message;
      auto none = rebalanceRoutes(*after, before.lids, down->tables, down->loads);
      ASSERT_FALSE(none.ok()) << what;
      EXPECT_NE(none.error().message.find("no link that came back waits"), std::string::npos)
          << none.error().message;
      auto up = repair(*after, *down, *topo, true);
      ASSERT_TRUE(up.ok()) << what << ": " << up.error().message;
      EXPECT_EQ(up->note, "dfly: the routes stay; the rebalance takes the new link(s) off the event loop");
      EXPECT_EQ(up->moved, 0u) << what;
      EXPECT_TRUE(up->tables.lft == down->tables.lft) << what;
      EXPECT_EQ(up->tables.sl, down->tables.sl) << what;
      EXPECT_EQ(up->loads[link.first][link.second], 0u) << what;
      EXPECT_TRUE(checkRoutes(*topo, before.lids, up->tables).ok()) << what;
      EXPECT_EQ(restores(*up, what), down->moved) << what;  // what the repair moved moves back
      // No rebalance to follow: the repair gives the engine's tables back on its own.
      auto scratch = repair(*after, *down, *topo, false);
      ASSERT_TRUE(scratch.ok()) << what << ": " << scratch.error().message;
      EXPECT_NE(scratch->note.find("whole again"), std::string::npos) << scratch->note;
      EXPECT_TRUE(scratch->tables.lft == before.tables.lft) << what;
      EXPECT_EQ(scratch->tables.sl, before.tables.sl) << what;
    }
    // Two global links down, one back: the dragonfly is not whole, the rebalance declines; the other back
    // too: the engine's tables.
    const auto globals = links(*topo, before.tables, false);
    TopologyPtr one = takeDown(*topo, {globals[0]});
    TopologyPtr two = takeDown(*one, {globals[5]});
    TopologyPtr back = takeDown(*topo, {globals[5]});
    auto r1 = repair(*topo, whole, *one, true);
    ASSERT_TRUE(r1.ok()) << r1.error().message;
    auto r2 = repair(*one, *r1, *two, true);
    ASSERT_TRUE(r2.ok()) << r2.error().message;
    auto r3 = repair(*two, *r2, *back, true);
    ASSERT_TRUE(r3.ok()) << r3.error().message;
    auto notWhole = rebalanceRoutes(*back, before.lids, r3->tables, r3->loads);
    ASSERT_FALSE(notWhole.ok());
    EXPECT_NE(notWhole.error().message.find("the dragonfly is not whole"), std::string::npos)
        << notWhole.error().message;
    auto r4 = repair(*back, *r3, *topo, true);
    ASSERT_TRUE(r4.ok()) << r4.error().message;
    EXPECT_LE(restores(*r4, "two links"), r1->moved + r2->moved);
  }
}

// What the scheme cannot do is declined with the reason, and the caller routes from scratch: a dragonfly
// routed on 2 VLs has no VL for a detour's second global hop.
TEST(DflyRepair, DeclinesWithoutTheVlsADetourNeeds) {
  TopologyPtr topo = generate(dragonfly(4, 2));
  ASSERT_TRUE(topo);
  Routed before = route(*topo, 2);
  const auto link = links(*topo, before.tables, false)[0];
  TopologyPtr after = takeDown(*topo, {link});
  auto r = repairRoutes(*topo, before.lids, before.tables, before.loads, *after, before.lids);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("dfly: switch "), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("has no deadlock-free way to LID"), std::string::npos);
}

}  // namespace
}  // namespace ibsm::routing
