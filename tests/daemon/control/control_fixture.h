// A small subnet snapshot for the control tests, built in code and routed by min-hop:
//
//            spine (S2)
//           /         \    .
//     leafA (S0)     leafB (S1)
//      1/   \2        1/   \2   .
//    h0      h1     h2      h3        (CA i: node GUID 0xca000 + 0x10 i, port 1 GUID + 1)
//
// Ports are 4x QDR, LinkUp, and in INIT (as a first sweep finds them) unless `active`.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "daemon/sm/subnet_manager.h"
#include "routing/engine.h"
#include "routing/lid_assignment.h"
#include "tests/routing/fabric_sketch.h"

namespace ibsm::daemon::testing {

inline std::shared_ptr<SubnetSnapshot> makeSnapshot(bool active = false) {
  routing::testing::FabricSketch f;
  auto leafA = f.addSwitch("leafA", 4), leafB = f.addSwitch("leafB", 4), spine = f.addSwitch("spine", 4);
  auto h0 = f.addCa("h0 HCA-1"), h1 = f.addCa("h1 HCA-1"), h2 = f.addCa("h2 HCA-1"), h3 = f.addCa("h3 HCA-1");
  f.link(leafA, 1, h0, 1);
  f.link(leafA, 2, h1, 1);
  f.link(leafB, 1, h2, 1);
  f.link(leafB, 2, h3, 1);
  f.link(leafA, 3, spine, 1);
  f.link(leafB, 3, spine, 2);
  for (fabric::NodeIndex n = 0; n < 7; ++n) {
    fabric::Node& node = f.node(n);
    for (unsigned p = 0; p <= node.numPorts; ++p) {
      fabric::PortAttrs& a = node.ports[p].attrs;
      a.valid = true;
      a.widthActive = 2;
      a.speedActive = 4;
      a.physState = 5;
      a.state = active ? fabric::PortState::kActive : fabric::PortState::kInit;
    }
  }
  auto topo = f.build();
  auto snap = std::make_shared<SubnetSnapshot>();
  snap->topology = topo;
  auto lids = routing::assignLids(*topo, {}, 0);
  EXPECT_TRUE(lids.ok());
  snap->lids = lids->lids;
  auto routed = routing::computeChain({"minhop"}, *topo, snap->lids, routing::Options{});
  EXPECT_TRUE(routed.ok()) << (routed.ok() ? "" : routed.error().message);
  if (routed.ok()) snap->tables = routed->tables;
  return snap;
}

}  // namespace ibsm::daemon::testing
