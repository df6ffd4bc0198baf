// Fabrics from the generator (tools/fabric_gen) for the routing tests that need more than a sketch: the spec
// of each shape and generate(), shared by the engine and repair tests.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "fabric/topology.h"
#include "routing/engine.h"
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

}  // namespace ibsm::routing::testing
