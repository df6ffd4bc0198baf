// PkeyProgrammer against FakeFabric (a 2-ary 2-tree: 4 switches, 4 hosts; P_Key tables as ibsim boots them:
// CA ports 64 entries, switch port 0 8, switch ports 64, 0xFFFF in entry 0; unless a test says otherwise the
// ports report IsPKeyNVRAM, so their tables may hold anything and are read):
//   leaf-0 -- host-0, host-1     leaf-1 -- host-2, host-3     both leaves -- spine-0, spine-1
#include "daemon/program/pkey_programmer.h"

#include <gtest/gtest.h>

#include "tests/daemon/fake_fabric_fixture.h"

namespace ibsm::daemon {
namespace {

struct PkeyFixture : testing::FakeFabricFixture {
  DiscoveryResult found;
  explicit PkeyFixture(mad::FakeFabricOptions options = {}, bool nvram = true) {
    options.pkeyNvram = nvram;
    tools::FabricSpec spec;
    spec.k = 2;
    spec.n = 2;
    start(testing::generate(spec), {32, std::chrono::milliseconds(100), 3}, options);
    found = discover();
  }
  const fabric::Topology& topo() const { return *found.topology; }
  fabric::PartitionMap map;
  const fabric::PartitionMap& defaults() {
    map = fabric::PartitionMap::resolve(topo(), {});
    return map;
  }
  const fabric::PartitionMap& with(const std::vector<fabric::Partition>& parts) {
    map = fabric::PartitionMap::resolve(topo(), parts);
    return map;
  }
  fabric::NodeIndex host(unsigned i) const {
    return topo().findByDescription("host-" + std::to_string(i) + " HCA-1").value();
  }
  fabric::NodeIndex sw(const std::string& name) const { return topo().findByDescription(name).value(); }
};

using Table = std::vector<uint16_t>;
const std::vector<uint16_t> kDefaultOnly{0xFFFF};

TEST(PlaceKeys, KeysStayWhereTheyAreNewOnesTakeFreeEntries) {
  size_t overflow = 9;
  // The default key goes to entry 0 when it is free, else to the first free entry; a wanted key is kept.
  EXPECT_EQ(placeKeys({0, 0, 0}, kDefaultOnly, 3, &overflow), (Table{0xFFFF, 0, 0}));
  EXPECT_EQ(overflow, 0u);
  EXPECT_EQ(placeKeys({0x7FFF, 0, 0}, kDefaultOnly, 3), (Table{0xFFFF, 0, 0}));  // limited -> full in place
  EXPECT_EQ(placeKeys({0x8001, 0xFFFF, 0}, std::vector<uint16_t>{0xFFFF, 0x8001}, 3),
            (Table{0x8001, 0xFFFF, 0}));
  // Keys nobody wants are cleared; duplicates of a key go.
  EXPECT_EQ(placeKeys({0x8001, 0x8005, 0xFFFF, 0xFFFF}, kDefaultOnly, 4), (Table{0, 0, 0xFFFF, 0}));
  // Adding and removing a key restores the table.
  Table start{0xFFFF, 0x8003, 0, 0};
  Table added = placeKeys(start, std::vector<uint16_t>{0xFFFF, 0x8003, 0x0009}, 4);
  EXPECT_EQ(added, (Table{0xFFFF, 0x8003, 0x0009, 0}));
  EXPECT_EQ(placeKeys(added, std::vector<uint16_t>{0xFFFF, 0x8003}, 4), start);
  // No room: counted.
  EXPECT_EQ(placeKeys({0x8001, 0x8002}, std::vector<uint16_t>{0x8001, 0x8002, 0xFFFF}, 2, &overflow),
            (Table{0x8001, 0x8002}));
  EXPECT_EQ(overflow, 1u);
}

TEST(PkeyProgrammer, ReadsEveryManagedPortOnceAndSendsNothingWhenTablesAreRight) {
  PkeyFixture f;
  PkeyProgrammer p(*f.engine, f.clock);
  PkeyReport r = p.program(f.topo(), f.defaults());
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
  PkeyReport again = p.program(f.topo(), f.defaults());
  EXPECT_EQ(again.phase.smps, 0u);
  EXPECT_EQ(p.tables(), tables);
}

// Ports without IsPKeyNVRAM that no SM has set up (no LID, no SM LID, as at boot) hold only the default key
// at index 0 (IBA C10-123): nothing is read or written; a port that has a LID is read.
TEST(PkeyProgrammer, TablesAtTheirResetContentAreNotRead) {
  PkeyFixture f({}, false);
  PkeyProgrammer p(*f.engine, f.clock);
  PkeyReport r = p.program(f.topo(), f.defaults());
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
  EXPECT_EQ(r.portsAtReset, 4u + 4);
  EXPECT_EQ(r.portsRead, 0u);
  EXPECT_EQ(r.phase.smps, 0u);
  EXPECT_EQ(f.fabric->received(mad::kAttrPKeyTable), 0u);
  const auto* h0 = p.tables()->find(f.topo().node(f.host(0)).guid, 1);
  ASSERT_TRUE(h0);
  EXPECT_EQ(*h0, f.fabric->pkeys(f.fakeIndex(f.topo(), f.host(0)), fabric::PortNum{1}));

  // A port with a LID may have been set up by an SM: read (and its stale key cleared).
  const fabric::NodeIndex h1 = f.host(1);
  f.fabric->setPkeys(f.fakeIndex(f.topo(), h1), fabric::PortNum{1}, {0xFFFF, 0x8005});
  mad::PortInfoSet lid;
  lid.lid = 7;
  uint8_t block[mad::kSmpDataSize];
  std::copy(f.found.portInfo[h1][1].begin(), f.found.portInfo[h1][1].end(), block);
  mad::applyPortInfoSet(lid, block);
  mad::MadPacket smp =
      mad::makeDirectedSmp(mad::kSet, mad::kAttrPortInfo, 1, f.topo().portRoute(h1, fabric::PortNum{1}));
  std::copy_n(block, sizeof block, mad::smpData(smp));
  f.engine->submit(std::move(smp), nullptr);
  f.engine->runUntilIdle();
  DiscoveryResult again = f.discover();
  PkeyProgrammer fresh(*f.engine, f.clock);
  PkeyReport second = fresh.program(*again.topology, fabric::PartitionMap::resolve(*again.topology, {}));
  EXPECT_EQ(second.portsRead, 1u);
  EXPECT_EQ(second.portsAtReset, 4u + 3);
  EXPECT_EQ(second.blocksSet, 1u);
  EXPECT_EQ(f.fabric->pkeys(f.fakeIndex(f.topo(), h1), fabric::PortNum{1})[1], 0);
}

TEST(PkeyProgrammer, WritesOnlyTheBlocksThatDiffer) {
  PkeyFixture f;
  const fabric::NodeIndex h1 = f.fakeIndex(f.topo(), f.host(1)), h2 = f.fakeIndex(f.topo(), f.host(2));
  const fabric::NodeIndex spine = f.fakeIndex(f.topo(), f.sw("spine-0"));
  f.fabric->setPkeys(h1, fabric::PortNum{1}, {});  // empty: entry 0
  f.fabric->setPkeys(h2, fabric::PortNum{1},
                     std::vector<uint16_t>(40, 0x8005));    // a stale key to entry 39: both blocks
  f.fabric->setPkeys(spine, fabric::PortNum{0}, {0x7FFF});  // limited member: upgraded
  f.fabric->setPkeys(spine, fabric::PortNum{2}, {0x7FFF});  // an external port: left alone
  PkeyProgrammer p(*f.engine, f.clock);
  PkeyReport r = p.program(f.topo(), f.defaults());
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
  EXPECT_EQ(r.blocksSet, 4u);
  EXPECT_EQ(r.portsChanged, 3u);
  EXPECT_EQ(f.fabric->receivedSets(mad::kAttrPKeyTable), 4u);
  EXPECT_EQ(f.fabric->pkeys(h1, fabric::PortNum{1})[0], 0xFFFF);
  auto t2 = f.fabric->pkeys(h2, fabric::PortNum{1});
  EXPECT_EQ(t2[0], 0xFFFF);
  EXPECT_EQ(t2[39], 0);
  EXPECT_EQ(f.fabric->pkeys(spine, fabric::PortNum{0})[0], 0xFFFF);
  EXPECT_EQ(f.fabric->pkeys(spine, fabric::PortNum{2})[0], 0x7FFF);  // untouched
  // The published tables are what the ports hold now.
  const auto* held = p.tables()->find(f.topo().node(f.host(2)).guid, 1);
  ASSERT_TRUE(held);
  EXPECT_EQ(*held, t2);
}

TEST(PkeyProgrammer, APortThatLeftIsReadAgain) {
  PkeyFixture f;
  const fabric::NodeIndex h3 = f.fakeIndex(f.topo(), f.host(3));
  PkeyProgrammer p(*f.engine, f.clock);
  p.program(f.topo(), f.defaults());
  // host-3 goes away (its leaf port down): forgotten; back: read again.
  const fabric::NodeIndex leaf = f.fakeIndex(f.topo(), f.sw("leaf-1"));
  const auto& leafNode = f.fabric->topology().node(leaf);
  unsigned toHost = 0;
  for (unsigned q = 1; q <= leafNode.numPorts; ++q)
    if (leafNode.ports[q].peerNode == h3) toHost = q;
  ASSERT_NE(toHost, 0u);
  ASSERT_TRUE(f.fabric->linkDown(leaf, fabric::PortNum{static_cast<uint8_t>(toHost)}));
  DiscoveryResult without = f.discover();
  p.program(*without.topology, fabric::PartitionMap::resolve(*without.topology, {}));
  EXPECT_FALSE(p.tables()->find(f.topo().node(f.host(3)).guid, 1));
  ASSERT_TRUE(f.fabric->linkUp(leaf, fabric::PortNum{static_cast<uint8_t>(toHost)}));
  f.fabric->setPkeys(h3, fabric::PortNum{1}, {0x8009});
  DiscoveryResult back = f.discover();
  PkeyReport again = p.program(*back.topology, fabric::PartitionMap::resolve(*back.topology, {}));
  EXPECT_EQ(again.portsRead, 1u);
  EXPECT_EQ(again.blocksSet, 1u);
  EXPECT_EQ(f.fabric->pkeys(h3, fabric::PortNum{1})[0], 0xFFFF);
}

// Two partitions of hosts: the hosts and the switch ports facing them hold their keys; adding a partition
// writes only the blocks it changes, and removing it restores every table exactly.
TEST(PkeyProgrammer, PartitionsReachHostsAndFacingSwitchPortsAsADelta) {
  PkeyFixture f;
  using fabric::Membership;
  using Kind = fabric::PartitionMember::Kind;
  auto guidOf = [&](unsigned h) { return f.topo().node(f.host(h)).ports[1].guid; };
  std::vector<fabric::Partition> parts{
      {"Default", 0x7FFF, std::nullopt, {{Kind::kAll, {}, {}, Membership::kLimited}}, ""},
      {"a",
       0x0001,
       std::nullopt,
       {{Kind::kPortGuid, guidOf(0), {}, Membership::kFull},
        {Kind::kPortGuid, guidOf(1), {}, Membership::kFull}},
       ""},
  };
  PkeyProgrammer p(*f.engine, f.clock);
  PkeyReport r = p.program(f.topo(), f.with(parts));
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
  auto keysOf = [](std::vector<uint16_t> t) {
    std::erase(t, uint16_t{0});
    std::sort(t.begin(), t.end());
    return t;
  };
  auto facing = [&](unsigned h) {
    const auto& port = f.fabric->topology().node(f.fakeIndex(f.topo(), f.host(h))).ports[1];
    return f.fabric->pkeys(port.peerNode, port.peerPort);
  };
  const fabric::NodeIndex h0 = f.fakeIndex(f.topo(), f.host(0)), h2 = f.fakeIndex(f.topo(), f.host(2));
  // host-0 is the SM's port: full in the default partition whatever the rules say.
  EXPECT_EQ(keysOf(f.fabric->pkeys(h0, fabric::PortNum{1})), (std::vector<uint16_t>{0x8001, 0xFFFF}));
  EXPECT_EQ(keysOf(f.fabric->pkeys(f.fakeIndex(f.topo(), f.host(1)), fabric::PortNum{1})),
            (std::vector<uint16_t>{0x7FFF, 0x8001}));
  EXPECT_EQ(keysOf(f.fabric->pkeys(h2, fabric::PortNum{1})), (std::vector<uint16_t>{0x7FFF}));
  EXPECT_EQ(keysOf(facing(1)), (std::vector<uint16_t>{0x7FFF, 0x8001}));
  EXPECT_EQ(keysOf(facing(2)), (std::vector<uint16_t>{0x7FFF}));
  const fabric::NodeIndex leaf = f.fakeIndex(f.topo(), f.sw("leaf-0"));
  EXPECT_EQ(keysOf(f.fabric->pkeys(leaf, fabric::PortNum{0})), (std::vector<uint16_t>{0x7FFF}));

  // Snapshot of every table; then add partition b (host-2, host-3): only their tables and their switch
  // ports change, one block each.
  auto all = [&] {
    std::map<std::pair<fabric::NodeIndex, unsigned>, std::vector<uint16_t>> t;
    const auto& topo = f.fabric->topology();
    for (fabric::NodeIndex n = 0; n < topo.size(); ++n)
      for (unsigned q = 0; q < topo.node(n).ports.size(); ++q)
        t[{n, q}] = f.fabric->pkeys(n, fabric::PortNum{static_cast<uint8_t>(q)});
    return t;
  };
  const auto before = all();
  f.fabric->clearLog();
  parts.push_back({"b",
                   0x0002,
                   std::nullopt,
                   {{Kind::kPortGuid, guidOf(2), {}, Membership::kFull},
                    {Kind::kPortGuid, guidOf(3), {}, Membership::kLimited}},
                   ""});
  PkeyReport added = p.program(f.topo(), f.with(parts));
  EXPECT_EQ(added.blocksSet, 4u);  // host-2, host-3 and the two switch ports facing them
  EXPECT_EQ(added.portsRead, 0u);
  EXPECT_EQ(keysOf(f.fabric->pkeys(h2, fabric::PortNum{1})), (std::vector<uint16_t>{0x7FFF, 0x8002}));
  EXPECT_EQ(keysOf(facing(3)), (std::vector<uint16_t>{0x0002, 0x7FFF}));
  size_t gets = 0;
  for (const auto& e : f.fabric->log()) gets += e.attrId == mad::kAttrPKeyTable && e.method == mad::kGet;
  EXPECT_EQ(gets, 0u);  // write and trust

  parts.pop_back();
  PkeyReport removed = p.program(f.topo(), f.with(parts));
  EXPECT_EQ(removed.blocksSet, 4u);
  EXPECT_EQ(all(), before);
  // Nothing changes: nothing is sent.
  EXPECT_EQ(p.program(f.topo(), f.with(parts)).phase.smps, 0u);
}

// Partition enforcement on the switch ports facing partitioned hosts: on when their P_Keys are there, sent
// once (the SM keeps the PortInfo block it wrote), never on switch-to-switch ports. ibsim drops the bits on a
// Set; the fake fabric keeps them like a real switch with keepPartitionEnforcement.
TEST(PkeyProgrammer, EnforcementGoesOnWhereTheFacingPortsHoldPartitionKeys) {
  mad::FakeFabricOptions real;
  real.keepPartitionEnforcement = true;
  PkeyFixture f(real);
  using fabric::Membership;
  using Kind = fabric::PartitionMember::Kind;
  const fabric::Guid h1 = f.topo().node(f.host(1)).ports[1].guid;
  std::vector<fabric::Partition> parts{
      {"a", 0x0001, std::nullopt, {{Kind::kPortGuid, h1, {}, Membership::kFull}}, ""}};
  PkeyProgrammer p(*f.engine, f.clock);
  EXPECT_TRUE(p.program(f.topo(), f.with(parts)).warnings.empty());
  // Only host-1's switch port: the others hold nothing but the default key.
  const auto& hostPort = f.topo().node(f.host(1)).ports[1];
  const fabric::Guid leaf = f.topo().node(hostPort.peerNode).guid;
  ASSERT_EQ(p.facingPorts().size(), 1u);
  EXPECT_EQ(*p.facingPorts().begin(), std::make_pair(leaf, hostPort.peerPort.value));

  Programmer programmer(*f.engine, f.clock);
  std::vector<std::string> errors;
  PhaseStats first = programmer.enforcePartitions(f.found, p.facingPorts(), errors);
  EXPECT_TRUE(errors.empty()) << errors.front();
  EXPECT_EQ(first.smps, 1u);
  const fabric::NodeIndex fakeLeaf = f.fakeIndex(f.topo(), hostPort.peerNode);
  EXPECT_TRUE(f.fabric->partitionEnforced(fakeLeaf, hostPort.peerPort));
  const auto& leafNode = f.fabric->topology().node(fakeLeaf);
  for (unsigned q = 1; q < leafNode.ports.size(); ++q) {
    if (q != hostPort.peerPort.value) {
      EXPECT_FALSE(f.fabric->partitionEnforced(fakeLeaf, fabric::PortNum{static_cast<uint8_t>(q)})) << q;
    }
  }
  // The port's state is untouched (the Set asks for no change) and the next run sends nothing.
  EXPECT_EQ(f.fabric->portAttrs(fakeLeaf, hostPort.peerPort).state,
            f.topo().node(hostPort.peerNode).ports[hostPort.peerPort.value].attrs.state);
  EXPECT_EQ(programmer.enforcePartitions(f.found, p.facingPorts(), errors).smps, 0u);

  // ibsim drops the bits: the Set is acknowledged, the switch does not keep them.
  PkeyFixture sim;
  PkeyProgrammer q(*sim.engine, sim.clock);
  q.program(sim.topo(), sim.with(parts));
  Programmer simProgrammer(*sim.engine, sim.clock);
  EXPECT_EQ(simProgrammer.enforcePartitions(sim.found, q.facingPorts(), errors).smps, 1u);
  EXPECT_FALSE(
      sim.fabric->partitionEnforced(sim.fakeIndex(sim.topo(), hostPort.peerNode), hostPort.peerPort));
}

}  // namespace
}  // namespace ibsm::daemon
