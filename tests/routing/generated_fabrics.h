// Fabrics from the generator (tools/fabric_gen) for the routing tests that need more than a sketch: the spec
// of each shape and generate(), shared by the engine and repair tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "fabric/topology.h"
#include "routing/engine.h"
#include "routing/repair.h"
#include "routing/route_checker.h"
#include "tools/fabric_gen/generator.h"

namespace ibsm::routing::testing {

// The generated topology; a failed generation fails the test (and gives nullptr).
inline fabric::TopologyPtr generate(const tools::FabricSpec& spec) {
  auto t = tools::generateFabric(spec);
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
  return t.ok() ? *t : nullptr;
}

inline tools::FabricSpec karyNTree(unsigned k, unsigned n) {
  tools::FabricSpec s;
  s.shape = tools::Shape::kKaryNTree;
  s.k = k;
  s.n = n;
  return s;
}

inline tools::FabricSpec fatTree(unsigned levels, unsigned radix) {
  tools::FabricSpec s;
  s.shape = tools::Shape::kFatTree;
  s.levels = levels;
  s.radix = radix;
  return s;
}

// Groups of a routers (all-to-all), h global links per router, a * h + 1 groups.
inline tools::FabricSpec dragonfly(unsigned a, unsigned h, unsigned hostsPerSwitch = 2) {
  tools::FabricSpec s;
  s.shape = tools::Shape::kDragonfly;
  s.dragonflyA = a;
  s.dragonflyH = h;
  s.hostsPerSwitch = hostsPerSwitch;
  return s;
}

// Random connected mesh of `switches` switches with up to `degree` switch neighbours each.
inline tools::FabricSpec mesh(unsigned switches, unsigned degree, uint64_t seed,
                              unsigned hostsPerSwitch = 2) {
  tools::FabricSpec s;
  s.shape = tools::Shape::kMesh;
  s.switches = switches;
  s.degree = degree;
  s.seed = seed;
  s.hostsPerSwitch = hostsPerSwitch;
  return s;
}

inline tools::FabricSpec hypercube(unsigned d, unsigned hostsPerSwitch = 2) {
  tools::FabricSpec s;
  s.shape = tools::Shape::kHypercube;
  s.hypercubeD = d;
  s.hostsPerSwitch = hostsPerSwitch;
  return s;
}

inline tools::FabricSpec torus(std::vector<unsigned> dims, unsigned hostsPerSwitch = 2) {
  tools::FabricSpec s;
  s.shape = tools::Shape::kTorus;
  s.dims = std::move(dims);
  s.hostsPerSwitch = hostsPerSwitch;
  return s;
}

// A fabric routed by one engine (no AR) on at most `vls` VL layers, with the LIDs it was routed for.
struct Routed {
  LidAssignment lids;
  fabric::Result<RoutingTables> tables = fabric::makeError("not routed");
};
inline Routed route(const fabric::Topology& topo, const std::string& engine, uint8_t vls) {
  Routed r;
  auto a = assignLids(topo, {}, 0);
  EXPECT_TRUE(a.ok());
  r.lids = a->lids;
  Options o;
  o.vlLayers = vls;
  o.computeAr = false;
  r.tables = makeEngine(engine)->compute(topo, r.lids, o);
  return r;
}

// Routes like route() but with AR groups (at most `cap` per switch) and checks what every engine promises
// for them: the LFTs, SLs and SL-to-VL tables are those routed without AR, every member is on a shortest
// path, every group holds the LFT port, and the CDG with every member included is acyclic (per VL when the
// paths carry SLs). Returns the check of the tables with AR.
struct RoutedWithAr {
  Routed routed;
  CheckReport report;
};
inline RoutedWithAr routeWithAr(const fabric::Topology& topo, const std::string& engine, uint8_t vls,
                                uint32_t cap = Options{}.arGroupCap) {
  RoutedWithAr out;
  Routed plain = route(topo, engine, vls);
  out.routed.lids = plain.lids;
  Options o;
  o.vlLayers = vls;
  o.arGroupCap = cap;
  out.routed.tables = makeEngine(engine)->compute(topo, plain.lids, o);
  EXPECT_TRUE(plain.tables.ok() && out.routed.tables.ok());
  if (!plain.tables.ok() || !out.routed.tables.ok()) return out;
  const RoutingTables &off = *plain.tables, &on = *out.routed.tables;
  EXPECT_TRUE(off.ar.empty());
  EXPECT_EQ(on.ar.size(), topo.size());
  EXPECT_EQ(on.lft, off.lft);
  EXPECT_EQ(on.sl, off.sl);
  EXPECT_EQ(on.slLayers, off.slLayers);
  EXPECT_EQ(on.slToVl, off.slToVl);
  for (const ArTable& ar : on.ar) EXPECT_LE(ar.groups.size(), cap);
  out.report = checkRoutes(topo, plain.lids, on);
  const CheckReport& r = out.report;
  EXPECT_TRUE(r.arChecked && r.arCdgChecked);
  EXPECT_EQ(r.arCdgVlAware, on.slLayers > 1);
  EXPECT_EQ(r.arNotShortest, 0u) << formatReportText(r);
  EXPECT_EQ(r.arMissingStatic, 0u);
  EXPECT_TRUE(r.arCdgAcyclic) << formatReportText(r);
  EXPECT_TRUE(r.ok()) << formatReportText(r);
  return out;
}

// The largest AR group of any switch (0 when there is none).
inline size_t largestArGroup(const RoutingTables& t) {
  size_t most = 0;
  for (const ArTable& ar : t.ar)
    for (const PortMask& g : ar.groups) most = std::max(most, g.count());
  return most;
}

// The LIDs of the CA ports only (the switches' own LIDs cleared).
inline LidAssignment caLidsOnly(const fabric::Topology& topo, const LidAssignment& lids) {
  LidAssignment out = lids;
  for (fabric::NodeIndex s : topo.switches()) out.set(s, fabric::PortNum{0}, LidRange{fabric::Lid{0}, 0});
  return out;
}

// The topology with ports taken down (both ends of each link).
inline fabric::TopologyPtr takeDown(const fabric::Topology& topo,
                                    const std::vector<std::pair<fabric::NodeIndex, uint8_t>>& ports) {
  fabric::Topology::AttrPatch patch;
  for (auto [n, p] : ports) {
    const fabric::Port& port = topo.node(n).ports[p];
    for (auto [node, num] : {std::pair{n, p}, std::pair{port.peerNode, port.peerPort.value}}) {
      fabric::PortAttrs a = topo.node(node).ports[num].attrs;
      a.valid = true;
      a.state = fabric::PortState::kDown;
      patch.ports.emplace_back(node, fabric::PortNum{num}, a);
    }
  }
  return topo.withAttrs(patch);
}

// Whether the route from switch s to lid over `t` (on `topo`) takes the link out of (n, port), either way.
inline bool crosses(const fabric::Topology& topo, const RoutingTables& t, fabric::NodeIndex s, uint16_t lid,
                    fabric::NodeIndex n, uint8_t port) {
  const fabric::Port& far = topo.node(n).ports[port];
  for (size_t hops = 0; hops < topo.switches().size(); ++hops) {
    const uint8_t p = t.port(s, fabric::Lid{lid});
    if (p == kNoPort || p == 0 || p >= topo.node(s).ports.size()) return false;
    if ((s == n && p == port) || (s == far.peerNode && p == far.peerPort.value)) return true;
    const fabric::Port& next = topo.node(s).ports[p];
    if (!topo.node(next.peerNode).isSwitch()) return false;
    s = next.peerNode;
  }
  return false;
}

// Switch-to-switch ports of the fabric, in node and port order.
inline std::vector<std::pair<fabric::NodeIndex, uint8_t>> switchLinks(const fabric::Topology& topo) {
  std::vector<std::pair<fabric::NodeIndex, uint8_t>> out;
  for (fabric::NodeIndex s : topo.switches())
    for (unsigned p = 1; p < topo.node(s).ports.size(); ++p) {
      const fabric::Port& port = topo.node(s).ports[p];
      if (port.connected() && topo.node(port.peerNode).isSwitch() && s < port.peerNode)
        out.emplace_back(s, static_cast<uint8_t>(p));
    }
  return out;
}

// The up-link of a generated fat tree's switch `name` to the first core it is cabled to (spine-0's: the
// failure a repair alone cannot keep balanced); port 0 when there is none.
inline std::pair<fabric::NodeIndex, uint8_t> coreLink(const fabric::Topology& topo, const std::string& name) {
  const fabric::NodeIndex n = topo.findByDescription(name).value_or(topo.switches().front());
  for (unsigned p = 1; p < topo.node(n).ports.size(); ++p) {
    const fabric::Port& port = topo.node(n).ports[p];
    if (port.connected() && topo.node(port.peerNode).description.starts_with("core"))
      return {n, static_cast<uint8_t>(p)};
  }
  return {n, 0};
}

// The port of switch `from` cabled to switch `to` (by description); port 0 when there is none.
inline std::pair<fabric::NodeIndex, uint8_t> linkBetween(const fabric::Topology& topo,
                                                         const std::string& from, const std::string& to) {
  const fabric::NodeIndex n = topo.findByDescription(from).value_or(topo.switches().front());
  for (unsigned p = 1; p < topo.node(n).ports.size(); ++p) {
    const fabric::Port& port = topo.node(n).ports[p];
    if (port.connected() && topo.node(port.peerNode).description == to) return {n, static_cast<uint8_t>(p)};
  }
  return {n, 0};
}

// Routed as the daemon routes (with AR groups and the switch LIDs' holes filled), with the link loads a
// repair or rebalance starts from.
struct RoutedWithLoads {
  LidAssignment lids;
  RoutingTables tables;
  PortLoads loads;
};
inline RoutedWithLoads routeWithLoads(const fabric::Topology& topo, const std::string& engine,
                                      const Options& options = {}) {
  auto assigned = assignLids(topo, {}, 0);
  EXPECT_TRUE(assigned.ok());
  RoutedWithLoads r{assigned->lids, {}, {}};
  auto t = makeEngine(engine)->compute(topo, r.lids, options);
  EXPECT_TRUE(t.ok()) << (t ? "" : t.error().message);
  if (!t) return r;
  r.tables = std::move(*t);
  fillSwitchLidHoles(topo, r.lids, r.tables);
  r.loads = computePortLoads(topo, r.lids, r.tables);
  return r;
}

}  // namespace ibsm::routing::testing
