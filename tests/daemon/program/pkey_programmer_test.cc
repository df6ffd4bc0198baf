// PkeyProgrammer against FakeFabric (a 2-ary 2-tree: 4 switches, 4 hosts; P_Key tables as ibsim boots them:
// CA ports 64 entries, switch port 0 8, switch ports 64, 0xFFFF in entry 0):
//   leaf-0 -- host-0, host-1     leaf-1 -- host-2, host-3     both leaves -- spine-0, spine-1
#include "daemon/program/pkey_programmer.h"

#include <gtest/gtest.h>

#include "tests/daemon/fake_fabric_fixture.h"

namespace ibsm::daemon {
namespace {

struct PkeyFixture : testing::FakeFabricFixture {
  DiscoveryResult found;
  PkeyFixture() {
    tools::FabricSpec spec;
    spec.k = 2;
    spec.n = 2;
    start(testing::generate(spec));
    found = discover();
  }
  const fabric::Topology& topo() const { return *found.topology; }
  fabric::NodeIndex host(unsigned i) const {
    return topo().findByDescription("host-" + std::to_string(i) + " HCA-1").value();
  }
  fabric::NodeIndex sw(const std::string& name) const { return topo().findByDescription(name).value(); }
};

TEST(PkeySlot, DefaultGoesToEntryZeroOrTheFirstFreeOne) {
  EXPECT_FALSE(defaultPkeySlot({0x8001, 0xFFFF, 0}));
  EXPECT_EQ(defaultPkeySlot({0, 0, 0}), 0u);
  EXPECT_EQ(defaultPkeySlot({0x7FFF, 0, 0}), 0u);  // the limited member becomes the full one
  EXPECT_EQ(defaultPkeySlot({0x8001, 0x8002, 0}), 2u);
  EXPECT_EQ(defaultPkeySlot({0x8001, 0x8002}), 2u);  // no room: the table's size
}

TEST(PkeyProgrammer, ReadsEveryManagedPortOnceAndSendsNothingWhenTablesAreRight) {
  PkeyFixture f;
  PkeyProgrammer p(*f.engine, f.clock);
  PkeyReport r = p.program(f.topo());
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
  // Switch port 0 (1 block) of 4 switches, host ports (2 blocks) of 4 hosts; no switch external port.
  EXPECT_EQ(r.portsRead, 4u + 4);
  EXPECT_EQ(r.phase.smps, 4u * 1 + 4 * 2);
  EXPECT_EQ(r.blocksSet, 0u);
  EXPECT_EQ(f.fabric->receivedSets(mad::kAttrPKeyTable), 0u);
  auto tables = p.tables();
  const auto* h0 = tables->find(f.topo().node(f.host(0)).guid, 1);
  ASSERT_TRUE(h0);
  EXPECT_EQ(h0->size(), 64u);
  EXPECT_EQ((*h0)[0], 0xFFFF);
  const auto* sw0 = tables->find(f.topo().node(f.sw("leaf-0")).guid, 0);
  ASSERT_TRUE(sw0);
  EXPECT_EQ(sw0->size(), 32u);  // 8 entries: one block

  // Known tables are not read again; an unchanged run publishes the same tables.
  PkeyReport again = p.program(f.topo());
  EXPECT_EQ(again.phase.smps, 0u);
  EXPECT_EQ(p.tables(), tables);
}

TEST(PkeyProgrammer, WritesTheDefaultPkeyOnlyWhereItIsMissing) {
  PkeyFixture f;
  const fabric::NodeIndex h1 = f.fakeIndex(f.topo(), f.host(1)), h2 = f.fakeIndex(f.topo(), f.host(2));
  const fabric::NodeIndex spine = f.fakeIndex(f.topo(), f.sw("spine-0"));
  f.fabric->setPkeys(h1, fabric::PortNum{1}, {});  // empty: entry 0
  f.fabric->setPkeys(h2, fabric::PortNum{1},
                     std::vector<uint16_t>(40, 0x8005));    // full to 40: entry 40, block 1
  f.fabric->setPkeys(spine, fabric::PortNum{0}, {0x7FFF});  // limited member: upgraded
  f.fabric->setPkeys(spine, fabric::PortNum{2}, {0x7FFF});  // an external port: left alone
  PkeyProgrammer p(*f.engine, f.clock);
  PkeyReport r = p.program(f.topo());
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
  EXPECT_EQ(r.blocksSet, 3u);
  EXPECT_EQ(f.fabric->receivedSets(mad::kAttrPKeyTable), 3u);
  EXPECT_EQ(f.fabric->pkeys(h1, fabric::PortNum{1})[0], 0xFFFF);
  auto t2 = f.fabric->pkeys(h2, fabric::PortNum{1});
  EXPECT_EQ(t2[39], 0x8005);
  EXPECT_EQ(t2[40], 0xFFFF);
  EXPECT_EQ(f.fabric->pkeys(spine, fabric::PortNum{0})[0], 0xFFFF);
  EXPECT_EQ(f.fabric->pkeys(spine, fabric::PortNum{2})[0], 0x7FFF);  // untouched
  // The published tables are what the ports hold now.
  const auto* held = p.tables()->find(f.topo().node(f.host(2)).guid, 1);
  ASSERT_TRUE(held);
  EXPECT_EQ(*held, t2);
  // Which Sets went where: block 1 of host-2's port, block 0 of spine-0 port 0.
  bool spineBlock = false, hostBlock = false;
  for (const auto& e : f.fabric->log()) {
    if (e.attrId != mad::kAttrPKeyTable || e.method != mad::kSet) continue;
    if (e.node == spine) spineBlock = e.attrMod == mad::pkeyAttrMod(0, 0);
    if (e.node == h2) hostBlock = e.attrMod == 1;
  }
  EXPECT_TRUE(spineBlock);
  EXPECT_TRUE(hostBlock);
}

TEST(PkeyProgrammer, AFullTableIsReportedAndAPortThatLeftIsReadAgain) {
  PkeyFixture f;
  const fabric::NodeIndex h3 = f.fakeIndex(f.topo(), f.host(3));
  f.fabric->setPkeys(h3, fabric::PortNum{1}, std::vector<uint16_t>(64, 0x8009));
  PkeyProgrammer p(*f.engine, f.clock);
  PkeyReport r = p.program(f.topo());
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("PKEY003"), std::string::npos) << r.warnings[0];
  EXPECT_EQ(f.fabric->receivedSets(mad::kAttrPKeyTable), 0u);

  // host-3 goes away (its leaf port down): forgotten; back: read again.
  const fabric::NodeIndex leaf = f.fakeIndex(f.topo(), f.sw("leaf-1"));
  const auto& leafNode = f.fabric->topology().node(leaf);
  unsigned toHost = 0;
  for (unsigned q = 1; q <= leafNode.numPorts; ++q)
    if (leafNode.ports[q].peerNode == h3) toHost = q;
  ASSERT_NE(toHost, 0u);
  ASSERT_TRUE(f.fabric->linkDown(leaf, fabric::PortNum{static_cast<uint8_t>(toHost)}));
  DiscoveryResult without = f.discover();
  p.program(*without.topology);
  EXPECT_FALSE(p.tables()->find(f.topo().node(f.host(3)).guid, 1));
  ASSERT_TRUE(f.fabric->linkUp(leaf, fabric::PortNum{static_cast<uint8_t>(toHost)}));
  f.fabric->setPkeys(h3, fabric::PortNum{1}, {0x8009});
  DiscoveryResult back = f.discover();
  PkeyReport again = p.program(*back.topology);
  EXPECT_EQ(again.blocksSet, 1u);
  EXPECT_EQ(f.fabric->pkeys(h3, fabric::PortNum{1})[1], 0xFFFF);
}

}  // namespace
}  // namespace ibsm::daemon
