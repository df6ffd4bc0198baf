// VlProgrammer against FakeFabric (a 2-ary 2-tree: 4 switches of 4 ports, 4 hosts):
//   leaf-0 -- host-0, host-1     leaf-1 -- host-2, host-3     both leaves -- spine-0, spine-1
#include "daemon/program/vl_programmer.h"

#include <gtest/gtest.h>

#include "tests/daemon/fake_fabric_fixture.h"

namespace ibsm::daemon {
namespace {

struct VlFixture : testing::FakeFabricFixture {
  DiscoveryResult found;
  VlFixture() {
    tools::FabricSpec spec;
    spec.k = 2;
    spec.n = 2;
    start(testing::generate(spec));
    found = discover();
  }
  const fabric::Topology& topo() const { return *found.topology; }
  fabric::NodeIndex node(const std::string& name) const { return topo().findByDescription(name).value(); }
};

TEST(VlTables, LayeredMappingAndArbitration) {
  mad::SlToVlTable t = layeredSlToVl(3);
  EXPECT_EQ(t[0], 0);
  EXPECT_EQ(t[2], 2);
  EXPECT_EQ(t[3], 0);
  EXPECT_EQ(t[15], 0);
  uint8_t raw[8];
  mad::encodeSlToVl(t, raw);
  EXPECT_EQ(raw[0], 0x01);
  EXPECT_EQ(raw[1], 0x20);
  EXPECT_EQ(mad::decodeSlToVl(raw), t);
  VlProgramOptions o;
  o.layers = 2;
  o.weights = {32};
  mad::VlArbBlock b = layeredVlArb(o);
  EXPECT_EQ(b[0], (mad::VlArbEntry{0, 32}));
  EXPECT_EQ(b[1], (mad::VlArbEntry{1, 32}));
  EXPECT_EQ(b[2], (mad::VlArbEntry{0, 0}));
  uint8_t arb[64];
  mad::encodeVlArbBlock(b, arb);
  EXPECT_EQ(arb[2], 1);
  EXPECT_EQ(arb[3], 32);
  EXPECT_EQ(mad::decodeVlArbBlock(arb), b);
  EXPECT_EQ(mad::slToVlAttrMod(3, 4), 0x0304u);
  EXPECT_EQ(mad::vlArbAttrMod(mad::kVlArbLowFirst, 4), 0x10004u);
}

TEST(VlProgrammer, NothingAtAllOnOneVl) {
  VlFixture f;
  VlProgrammer p(*f.engine, f.clock);
  VlReport r = p.program(f.topo(), VlProgramOptions{});
  EXPECT_EQ(r.phase.smps, 0u);
  EXPECT_EQ(f.fabric->received(mad::kAttrSlToVl) + f.fabric->received(mad::kAttrVlArb), 0u);
}

TEST(VlProgrammer, WritesEveryPortPairOnceThenOnlyTheDelta) {
  VlFixture f;
  VlProgrammer p(*f.engine, f.clock);
  VlProgramOptions o;
  o.layers = 2;
  VlReport r = p.program(f.topo(), o);
  EXPECT_TRUE(r.errors.empty()) << r.errors.front();
  // A leaf has 4 linked ports, each an output from port 0 and the 3 others: 4 x 4 tables; a spine 2 linked
  // ports (its up ports are unused): 2 x 2. Hosts: 1 table each. Arbitration: one block per linked switch
  // port and host port.
  EXPECT_EQ(r.sl2vlSet, 2u * 16 + 2 * 4 + 4);
  EXPECT_EQ(r.vlArbSet, 2u * 4 + 2 * 2 + 4);
  const fabric::NodeIndex leaf = f.node("leaf-0"), host = f.node("host-0 HCA-1");
  EXPECT_EQ(f.fabric->slToVl(leaf, 1, 3),
            (std::array<uint8_t, 8>{0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01}));
  EXPECT_EQ(f.fabric->slToVl(leaf, 0, 3)[0], 0x01);
  EXPECT_EQ(f.fabric->slToVl(host, 0, 1)[0], 0x01);
  auto arb = f.fabric->vlArb(leaf, 3, 1);
  EXPECT_EQ(arb[2], 1);
  EXPECT_EQ(arb[3], 64);

  // Unchanged: nothing sent.
  VlReport again = p.program(f.topo(), o);
  EXPECT_EQ(again.phase.smps, 0u);
  EXPECT_EQ(again.sl2vlSkipped, r.sl2vlSet);
  // Three layers: everything changes once.
  o.layers = 3;
  VlReport three = p.program(f.topo(), o);
  EXPECT_EQ(three.sl2vlSet, r.sl2vlSet);
  EXPECT_EQ(f.fabric->slToVl(leaf, 1, 3)[1], 0x20);  // SL 2 -> VL 2, SL 3 -> VL 0
}

}  // namespace
}  // namespace ibsm::daemon
