// dor's incremental repair (routing/dor_repair.h) through repairRoutes: a lost link of a torus, a mesh or a
// hypercube is routed around by a sidestep in another dimension, on the detour layer of VLs: every pair
// reachable, the VL-aware CDG acyclic with the repaired SL-to-VL tables (and cyclic once the detours share
// dor's own VLs), only the routes that took the link moved, only SL-to-VL entries of the detour SLs on the
// pairs those routes take are new, the kept loads equal a recount; a link that comes back restores dor's
// tables from scratch; parallel links take the routes without a detour; what it cannot repair it declines
// with the reason.
#include <gtest/gtest.h>

#include <set>

#include "routing/engine.h"
#include "routing/repair.h"
#include "routing/route_checker.h"
#include "routing/sl_to_vl.h"
#include "tests/routing/fabric_sketch.h"
#include "tests/routing/generated_fabrics.h"

namespace ibsm::routing {
namespace {

using fabric::TopologyPtr;
using testing::crosses;
using testing::generate;
using testing::hypercube;
using testing::takeDown;
using testing::torus;
using Link = std::pair<NodeIndex, uint8_t>;
using Routed = testing::RoutedWithLoads;

Routed route(const Topology& topo, uint8_t vls = 4) {
  Options o;
  o.vlLayers = vls;
  o.computeAr = false;
  return testing::routeWithLoads(topo, "dor", o);
}

// The dimension of a switch-to-switch link on dor's grid.
uint32_t dimOf(const Topology& topo, const RoutingTables& t, Link link) {
  const DorGrid& g = t.dorGrid;
  const NodeIndex m = topo.node(link.first).ports[link.second].peerNode;
  for (uint32_t d = 0; d < g.dims(); ++d)
    if (g.coord[link.first * g.dims() + d] != g.coord[m * g.dims() + d]) return d;
  return UINT32_MAX;
}

// The fabric's switch-to-switch links in dimension d.
std::vector<Link> linksIn(const Topology& topo, const RoutingTables& t, uint32_t d) {
  std::vector<Link> out;
  for (Link l : testing::switchLinks(topo))
    if (dimOf(topo, t, l) == d) out.push_back(l);
  return out;
}

// The SL-to-VL table of a (node, input, output) as the VL programmer writes it.
uint64_t tableOf(const RoutingTables& t, NodeIndex n, unsigned in, unsigned out) {
  uint64_t v = 0;
  for (uint8_t sl = 0; sl < 16; ++sl) v |= uint64_t{t.hopVl(n, in, out, sl)} << (4 * sl);
  return v;
}

// SLtoVLMappingTable Sets the VL programmer sends when `after` replaces `before`: the pairs the routes need
// that were not needed before or whose table changed.
size_t vlSets(const Topology& topo, const RoutingTables& before, const RoutingTables& after) {
  const VlPairs was = layeredVlPairs(topo, before), now = layeredVlPairs(topo, after);
  size_t sets = 0;
  for (NodeIndex n = 0; n < topo.size(); ++n)
    for (unsigned in = 0; in <= topo.node(n).numPorts; ++in)
      for (unsigned out = 1; out <= topo.node(n).numPorts; ++out)
        sets += now.used(n, in, out) &&
                (!was.used(n, in, out) || tableOf(before, n, in, out) != tableOf(after, n, in, out));
  return sets;
}

// The tables with the detour SLs on dor's own VLs (the detour flag cleared).
RoutingTables onDorsVls(RoutingTables t) {
  for (size_t s = 0; s < t.sl.size(); ++s)
    for (uint8_t& sl : t.sl[s]) sl = static_cast<uint8_t>(sl & ~(1u << t.dorGrid.rings()));
  return t;
}

struct Checked {
  RepairResult result;
  size_t vlSets = 0;
};

// Repairs `before` for `after` (links `failed` down since `topo`) and checks what every dor repair promises.
// stretch: the most hops a route may have taken more (2 per detour it takes).
Checked repairAndCheck(const Topology& topo, const Routed& before, const Topology& after,
                       const std::vector<Link>& failed, const std::string& what, uint32_t stretch = 2) {
  auto r = repairRoutes(topo, before.lids, before.tables, before.loads, after, before.lids);
  EXPECT_TRUE(r.ok()) << what << ": " << (r ? "" : r.error().message);
  if (!r) return {};
  EXPECT_EQ(r->tables.engine, "dor");
  EXPECT_EQ(r->note.rfind("dor: ", 0), 0u) << r->note;
  CheckReport rep = checkRoutes(after, before.lids, r->tables);
  EXPECT_EQ(rep.unreachable, 0u) << what << "\n" << formatReportText(rep);
  EXPECT_TRUE(rep.cdgChecked && rep.cdgAcyclic) << what << "\n" << formatReportText(rep);
  EXPECT_LE(r->tables.slLayers, 4u) << what;
  EXPECT_LE(rep.maxStretch, stretch) << what;
  // The same verdict from the tables as the switches would hold them, read back.
  SlToVlMap held;
  for (NodeIndex n : after.switches()) {
    const unsigned ports = after.node(n).numPorts;
    for (unsigned in = 0; in <= ports; ++in)
      for (unsigned out = 1; out <= ports; ++out)
        held.setPacked(n, ports, in, out, tableOf(r->tables, n, in, out));
  }
  CheckOptions co;
  co.slToVl = &held;
  EXPECT_TRUE(checkRoutes(after, before.lids, r->tables, co).cdgAcyclic) << what;
  // Only routes that took a failed link moved, and `moved` counts them; the others keep their SLs.
  const int rings = before.tables.dorGrid.rings();
  size_t moved = 0;
  for (NodeIndex s : after.switches())
    for (uint16_t lid = 1; lid <= before.lids.maxLid().value; ++lid) {
      bool crossed = false;
      for (Link l : failed) crossed = crossed || crosses(topo, before.tables, s, lid, l.first, l.second);
      if (r->tables.port(s, fabric::Lid{lid}) != before.tables.port(s, fabric::Lid{lid})) {
        ++moved;
        EXPECT_TRUE(crossed) << what << ": switch " << topo.node(s).description << " LID " << lid << " moved";
      }
      const uint8_t sl = r->tables.pathSl(s, fabric::Lid{lid});
      if (!crossed) {
        EXPECT_EQ(sl, before.tables.pathSl(s, fabric::Lid{lid})) << what;
      }
      EXPECT_LT(sl, 2u << rings) << what;
    }
  EXPECT_EQ(moved, r->moved) << what;
  EXPECT_GT(moved, 0u) << what;
  // The SL-to-VL tables change only for the detour SLs (flag bit `rings`), and there to layer 1.
  const uint8_t layers = rings > 0 ? 2 : 1;
  for (NodeIndex n : after.switches()) {
    const unsigned ports = after.node(n).numPorts;
    for (unsigned in = 0; in <= ports; ++in)
      for (unsigned out = 1; out <= ports; ++out)
        for (uint8_t sl = 0; sl < 16; ++sl) {
          const uint8_t was = before.tables.hopVl(n, in, out, sl), now = r->tables.hopVl(n, in, out, sl);
          if (was == now) continue;
          EXPECT_TRUE(sl >> rings & 1u) << what << ": SL " << unsigned{sl};
          EXPECT_EQ(now,
                    layers + before.tables.hopVl(n, in, out, static_cast<uint8_t>(sl & ((1u << rings) - 1))));
        }
  }
  // The loads it keeps are the loads of its tables.
  PortLoads recount = computePortLoads(after, before.lids, r->tables);
  for (NodeIndex s : after.switches())
    for (size_t p = 1; p < recount[s].size(); ++p) EXPECT_EQ(r->loads[s][p], recount[s][p]) << what;
  const size_t sets = vlSets(after, before.tables, r->tables);
  return {std::move(*r), sets};
}

struct Case {
  std::string name;
  TopologyPtr topo;
  uint8_t layers;  // dor's own VLs
};
std::vector<Case> cases() {
  return {{"3x4x5 torus", generate(torus({3, 4, 5})), 2},
          {"5x5 torus", generate(torus({5, 5})), 2},
          {"6x5 mesh", testing::makeGrid(6, 5, 2, false), 1},
          {"4-cube", generate(hypercube(4)), 1}};
}

// Every switch-to-switch link down in turn: routed around on the detour layer (2 x dor's VLs), only the
// routes that took it moved, and the link back gives dor's tables from scratch exactly.
TEST(DorRepair, EveryLinkDownIsRoutedAroundAndComesBack) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    ASSERT_NE(c.topo, nullptr);
    const Topology& topo = *c.topo;
    Routed before = route(topo);
    ASSERT_EQ(before.tables.engine, "dor");
    ASSERT_EQ(before.tables.slLayers, c.layers);
    size_t links = 0, sets = 0;
    std::set<uint32_t> dims;
    for (Link link : testing::switchLinks(topo)) {
      const std::string what = topo.node(link.first).description + "[" + std::to_string(link.second) + "]";
      TopologyPtr after = takeDown(topo, {link});
      Checked down = repairAndCheck(topo, before, *after, {link}, what);
      ++links;
      dims.insert(dimOf(topo, before.tables, link));
      sets = std::max(sets, down.vlSets);
      EXPECT_EQ(down.result.tables.slLayers, 2 * c.layers) << what;
      EXPECT_NE(down.result.note.find(" route(s) around 1 link(s) by a sidestep, on SL bit "),
                std::string::npos)
          << down.result.note;
      EXPECT_EQ(down.result.note.find("checked"), std::string::npos) << down.result.note;  // the proof's case
      // Back up: dor's tables from scratch, and only what the repair moved moves back.
      auto up = repairRoutes(*after, before.lids, down.result.tables, down.result.loads, topo, before.lids);
      ASSERT_TRUE(up.ok()) << what << ": " << up.error().message;
      EXPECT_NE(up->note.find("whole again"), std::string::npos) << up->note;
      EXPECT_EQ(up->tables.lft, before.tables.lft) << what;
      EXPECT_EQ(up->tables.sl, before.tables.sl) << what;
      EXPECT_EQ(up->tables.slToVl, before.tables.slToVl) << what;
      EXPECT_EQ(up->tables.slLayers, c.layers) << what;
      EXPECT_EQ(up->moved, down.result.moved) << what;
      EXPECT_EQ(up->loads, before.loads) << what;
    }
    EXPECT_EQ(dims.size(), before.tables.dorGrid.dims());
    EXPECT_GT(links, 0u);
    // The VL tables a repair needs are a fraction of what the fabric holds (dfsp from scratch writes most
    // pairs of every switch).
    Options o;
    o.vlLayers = 8;
    o.computeAr = false;
    auto dfsp = makeEngine("dfsp")->compute(topo, before.lids, o);
    ASSERT_TRUE(dfsp.ok()) << dfsp.error().message;
    EXPECT_LT(sets, layeredVlPairs(topo, *dfsp).count() / 2) << sets;
  }
}

// Two links down in different dimensions, at once and one after the other: repaired (the detour layer
// checked for cycles, as no proof covers two) or declined with the reason; then both back: dor's tables.
// With the detour SLs put on dor's own VLs, some of those repairs close a cycle.
TEST(DorRepair, TwoLinksInDifferentDimensions) {
  size_t flatCyclic = 0;
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const Topology& topo = *c.topo;
    Routed before = route(topo);
    const size_t D = before.tables.dorGrid.dims();
    size_t repaired = 0, tried = 0;
    for (uint32_t d1 = 0; d1 < D; ++d1)
      for (uint32_t d2 = d1 + 1; d2 < D; ++d2) {
        const std::vector<Link> l1 = linksIn(topo, before.tables, d1), l2 = linksIn(topo, before.tables, d2);
        for (size_t i = 0; i < l1.size(); i += 7) {
          const Link a = l1[i], b = l2[(i * 5 + 3) % l2.size()];
          const std::string what = topo.node(a.first).description + "[" + std::to_string(a.second) +
                                   "] and " + topo.node(b.first).description + "[" +
                                   std::to_string(b.second) + "]";
          ++tried;
          // At once.
          TopologyPtr both = takeDown(topo, {a, b});
          auto r = repairRoutes(topo, before.lids, before.tables, before.loads, *both, before.lids);
          if (!r) {
            EXPECT_TRUE(r.error().message.starts_with("dor: ")) << r.error().message;
            continue;
          }
          ++repaired;
          repairAndCheck(topo, before, *both, {a, b}, what, 4);
          flatCyclic += !checkRoutes(*both, before.lids, onDorsVls(r->tables)).cdgAcyclic;
          EXPECT_NE(r->note.find("(checked)"), std::string::npos) << r->note;
          // One after the other.
          TopologyPtr one = takeDown(topo, {a});
          auto r1 = repairRoutes(topo, before.lids, before.tables, before.loads, *one, before.lids);
          ASSERT_TRUE(r1.ok()) << r1.error().message;
          Routed first{before.lids, r1->tables, r1->loads};
          auto r2 = repairRoutes(*one, first.lids, first.tables, first.loads, *both, first.lids);
          if (r2) {
            repairAndCheck(*one, first, *both, {b}, what + ", one after the other", 4);
            // One back: the routes stay; both back: dor's tables.
            TopologyPtr bBack = takeDown(topo, {a});
            auto r3 = repairRoutes(*both, before.lids, r2->tables, r2->loads, *bBack, before.lids);
            ASSERT_TRUE(r3.ok()) << r3.error().message;
            EXPECT_EQ(r3->moved, 0u);
            EXPECT_NE(r3->note.find("wait until the grid is whole"), std::string::npos) << r3->note;
            EXPECT_TRUE(checkRoutes(*bBack, before.lids, r3->tables).ok());
            auto r4 = repairRoutes(*bBack, before.lids, r3->tables, r3->loads, topo, before.lids);
            ASSERT_TRUE(r4.ok()) << r4.error().message;
            EXPECT_EQ(r4->tables.lft, before.tables.lft);
            EXPECT_EQ(r4->tables.sl, before.tables.sl);
          } else {
            EXPECT_TRUE(r2.error().message.starts_with("dor: ")) << r2.error().message;
          }
        }
      }
    if (D > 1) {
      EXPECT_GT(repaired, tried / 2) << repaired << " of " << tried;
    }
  }
  EXPECT_GT(flatCyclic, 0u) << "the detour layer is what keeps the detours deadlock-free";
}

// Parallel links: a link of a pair that keeps another takes its routes to that one, no detour, no new SL.
TEST(DorRepair, AParallelLinkTakesTheRoutesWithoutADetour) {
  tools::FabricSpec spec = torus({5, 4});
  spec.parallel = 2;
  TopologyPtr topo = generate(spec);
  ASSERT_NE(topo, nullptr);
  Routed before = route(*topo);
  const Link link = linksIn(*topo, before.tables, 2)[3];  // in the ring of 5
  TopologyPtr after = takeDown(*topo, {link});
  Checked r = repairAndCheck(*topo, before, *after, {link}, "parallel");
  EXPECT_EQ(r.result.tables.sl, before.tables.sl);
  EXPECT_EQ(r.result.tables.slToVl, before.tables.slToVl);
  EXPECT_EQ(r.result.tables.slLayers, 2u);
  EXPECT_LT(r.vlSets, 20u);  // the pairs of the other link that carry no SL above 0 yet
  EXPECT_NE(r.result.note.find("dor: no detour, "), std::string::npos) << r.result.note;
  EXPECT_EQ(checkRoutes(*after, before.lids, r.result.tables).maxStretch, 0u);

  // With AR groups (the parallel links of the LFT port's way): the lost port leaves them, the groups of the
  // detoured and the moved entries are what the engine would make of the links left, and the CDG with every
  // member stays acyclic on each VL.
  Options o;
  o.vlLayers = 4;
  Routed ar = testing::routeWithLoads(*topo, "dor", o);
  auto rr = repairRoutes(*topo, ar.lids, ar.tables, ar.loads, *after, ar.lids);
  ASSERT_TRUE(rr.ok()) << rr.error().message;
  CheckReport c = checkRoutes(*after, ar.lids, rr->tables);
  EXPECT_TRUE(c.ok()) << formatReportText(c);
  EXPECT_TRUE(c.arChecked && c.arCdgChecked && c.arCdgVlAware);
  EXPECT_GT(c.arEntries, 0u);
  for (const PortMask& m : rr->tables.ar[link.first].groups) EXPECT_FALSE(m.test(link.second));

  // Both links of the pair down: a sidestep, and the routes that take it lose their AR groups (detours are
  // no shortest ways).
  std::vector<Link> pair;
  const NodeIndex peer = topo->node(link.first).ports[link.second].peerNode;
  for (unsigned p = 1; p <= topo->node(link.first).numPorts; ++p)
    if (topo->node(link.first).ports[p].peerNode == peer)
      pair.emplace_back(link.first, static_cast<uint8_t>(p));
  ASSERT_EQ(pair.size(), 2u);
  TopologyPtr cut = takeDown(*topo, pair);
  rr = repairRoutes(*topo, ar.lids, ar.tables, ar.loads, *cut, ar.lids);
  ASSERT_TRUE(rr.ok()) << rr.error().message;
  EXPECT_NE(rr->note.find(" route(s) around 1 link(s) by a sidestep"), std::string::npos) << rr->note;
  c = checkRoutes(*cut, ar.lids, rr->tables);
  EXPECT_TRUE(c.ok()) << formatReportText(c);
  EXPECT_EQ(c.arNotShortest, 0u);
}

// What the scheme cannot do is declined with the reason, and the caller routes from scratch: dor routed on
// the 2 VLs its datelines need has none for a detour; a switch whose links are all down has no way around.
TEST(DorRepair, DeclinesWhatItCannotRouteAround) {
  TopologyPtr topo = generate(torus({5, 5}));
  Routed two = route(*topo, 2);
  const Link link = testing::switchLinks(*topo)[0];
  TopologyPtr after = takeDown(*topo, {link});
  auto r = repairRoutes(*topo, two.lids, two.tables, two.loads, *after, two.lids);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "dor: a detour needs 4 VLs; dor routed on 2");

  Routed four = route(*topo, 4);
  const NodeIndex sw = topo->switches()[7];
  std::vector<Link> all;
  for (unsigned p = 1; p <= topo->node(sw).numPorts; ++p) {
    const fabric::Port& port = topo->node(sw).ports[p];
    if (port.connected() && topo->node(port.peerNode).isSwitch())
      all.emplace_back(sw, static_cast<uint8_t>(p));
  }
  TopologyPtr cut = takeDown(*topo, all);
  r = repairRoutes(*topo, four.lids, four.tables, four.loads, *cut, four.lids);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error().message.starts_with("dor: ")) << r.error().message;
}

}  // namespace
}  // namespace ibsm::routing
