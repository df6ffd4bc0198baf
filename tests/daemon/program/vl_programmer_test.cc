// VlProgrammer against FakeFabric (a 2-ary 2-tree: 4 switches of 4 ports, 4 hosts):
//   leaf-0 -- host-0, host-1     leaf-1 -- host-2, host-3     both leaves -- spine-0, spine-1
#include "daemon/program/vl_programmer.h"

#include <gtest/gtest.h>

#include "routing/engine.h"
#include "tests/daemon/fake_fabric_fixture.h"

namespace ibsm::daemon {
namespace {

struct VlFixture : testing::FakeFabricFixture {
  DiscoveryResult found;
  explicit VlFixture(mad::FakeFabricOptions options = {}) {
    tools::FabricSpec spec;
    spec.k = 2;
    spec.n = 2;
    start(testing::generate(spec), {32, std::chrono::milliseconds(100), 3}, options);
    found = discover();
    auto a = routing::assignLids(topo(), {}, 0);
    EXPECT_TRUE(a.ok());
    lids = a->lids;
    routing::Options o;
    o.computeAr = false;
    tables = *routing::makeEngine("minhop")->compute(topo(), lids, o);
  }
  const fabric::Topology& topo() const { return *found.topology; }
  fabric::NodeIndex node(const std::string& name) const { return topo().findByDescription(name).value(); }
  // Puts the paths entering at `ingress` towards `host` on `sl`.
  void setSl(const std::string& ingress, const std::string& host, uint8_t sl) {
    tables.sl.resize(topo().size());
    auto& row = tables.sl[node(ingress)];
    row.resize(lids.maxLid().value + 1u, 0);
    row[lids.base(node(host), fabric::PortNum{1}).value] = sl;
    tables.slLayers = std::max<uint8_t>(tables.slLayers, static_cast<uint8_t>(sl + 1));
  }
  routing::LidAssignment lids;
  routing::RoutingTables tables;
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
  VlReport r = p.program(f.topo(), f.tables, VlProgramOptions{});
  EXPECT_EQ(r.phase.smps, 0u);
  EXPECT_EQ(f.fabric->received(mad::kAttrSlToVl) + f.fabric->received(mad::kAttrVlArb), 0u);
}

// Only where a path runs on an SL above 0: from leaf-0's hosts to host-2, leaf-0 (host ports in, one up port
// out), the spine it goes to, leaf-1 (to host-2), and the sending hosts' own ports.
TEST(VlProgrammer, WritesOnlyThePairsOfPathsAboveSl0OnceThenOnlyTheDelta) {
  VlFixture f;
  VlProgrammer p(*f.engine, f.clock);
  VlProgramOptions o;
  o.layers = 2;
  f.setSl("leaf-0", "host-2 HCA-1", 1);
  VlReport r = p.program(f.topo(), f.tables, o);
  EXPECT_TRUE(r.errors.empty()) << r.errors.front();
  EXPECT_EQ(r.sl2vlSet, 2u + 1 + 1 + 2);
  EXPECT_EQ(r.vlArbSet, 1u + 1 + 1 + 2);
  const fabric::NodeIndex leaf = f.node("leaf-0"), host = f.node("host-0 HCA-1"), far = f.node("leaf-1");
  const fabric::Lid dst = f.lids.base(f.node("host-2 HCA-1"), fabric::PortNum{1});
  const uint8_t up = f.tables.port(leaf, dst), down = f.tables.port(far, dst);
  const uint8_t hostPort = f.topo().node(host).ports[1].peerPort.value;
  EXPECT_EQ(f.fabric->slToVl(f.fakeIndex(f.topo(), leaf), hostPort, up),
            (std::array<uint8_t, 8>{0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01}));
  EXPECT_EQ(f.fabric->slToVl(f.fakeIndex(f.topo(), host), 0, 1)[0], 0x01);
  const fabric::NodeIndex spine = f.topo().node(leaf).ports[up].peerNode;
  EXPECT_EQ(f.fabric->slToVl(f.fakeIndex(f.topo(), far),
                             f.topo().node(spine).ports[f.tables.port(spine, dst)].peerPort.value, down)[0],
            0x01);
  auto arb = f.fabric->vlArb(f.fakeIndex(f.topo(), leaf), up, 1);
  EXPECT_EQ(arb[2], 1);
  EXPECT_EQ(arb[3], 64);
  // The reverse direction and the other host pairs stay on SL 0: their tables are not touched.
  EXPECT_EQ(f.fabric->received(mad::kAttrSlToVl), r.sl2vlSet);

  // Unchanged: nothing sent, and no path looked at (no route changed since a run that wrote all it needed).
  VlReport again = p.program(f.topo(), f.tables, o);
  EXPECT_EQ(again.phase.smps, 0u);
  EXPECT_EQ(again.sl2vlSkipped, 0u);
  // Three layers: everything changes once.
  o.layers = 3;
  VlReport three = p.program(f.topo(), f.tables, o);
  EXPECT_EQ(three.sl2vlSet, r.sl2vlSet);
  EXPECT_EQ(f.fabric->slToVl(f.fakeIndex(f.topo(), leaf), hostPort, up)[1],
            0x20);  // SL 2 -> VL 2, SL 3 -> VL 0
}

// Every table of the fake fabric's nodes: SLtoVLMappingTables of all (input, output) pairs and the
// low-priority arbitration of every port.
std::vector<std::array<uint8_t, 64>> vlState(const VlFixture& f) {
  std::vector<std::array<uint8_t, 64>> out;
  const fabric::Topology& t = f.fabric->topology();
  for (fabric::NodeIndex n = 0; n < t.size(); ++n)
    for (unsigned in = 0; in <= t.node(n).numPorts; ++in) {
      std::array<uint8_t, 64> row{};
      for (unsigned o = 0; o <= t.node(n).numPorts && o < 8; ++o) {
        const auto table = f.fabric->slToVl(n, in, o);
        std::copy(table.begin(), table.end(), row.begin() + 8 * o);
      }
      out.push_back(row);
      out.push_back(f.fabric->vlArb(n, in, 1));
    }
  return out;
}

// A fresh programmer on a fresh fake fabric with f's tables: it must leave the fabric as f's holds it.
VlReport expectAsFresh(const VlFixture& f, const VlProgramOptions& o) {
  VlFixture fresh;
  fresh.tables = f.tables;
  VlProgrammer q(*fresh.engine, fresh.clock);
  VlReport all = q.program(fresh.topo(), fresh.tables, o);
  EXPECT_TRUE(all.errors.empty());
  EXPECT_EQ(vlState(f), vlState(fresh));
  return all;
}

// After a run that wrote every pair its routes need, a run on tables whose routes changed (a repair) walks
// only the paths to the LIDs that changed: here a second destination's paths go on SL 1. The fabric then
// holds what a fresh programmer writes for the new tables, and only the new pairs were sent.
TEST(VlProgrammer, ADeltaWritesThePairsOfTheChangedPathsOnly) {
  VlFixture f;
  VlProgrammer p(*f.engine, f.clock);
  VlProgramOptions o;
  o.layers = 2;
  f.setSl("leaf-0", "host-2 HCA-1", 1);
  VlReport first = p.program(f.topo(), f.tables, o);
  ASSERT_TRUE(first.errors.empty());
  f.setSl("leaf-0", "host-3 HCA-1", 1);
  f.setSl("leaf-1", "host-0 HCA-1", 1);
  VlReport delta = p.program(f.topo(), f.tables, o);
  ASSERT_TRUE(delta.errors.empty());
  EXPECT_GT(delta.sl2vlSet, 0u);

  const VlReport all = expectAsFresh(f, o);
  // Everything the full run wrote, the two runs wrote once: nothing twice.
  EXPECT_EQ(first.sl2vlSet + delta.sl2vlSet, all.sl2vlSet);
  EXPECT_EQ(first.vlArbSet + delta.vlArbSet, all.vlArbSet);
  // The delta looked at none of the first destination's pairs that its new paths do not share.
  EXPECT_LT(delta.sl2vlSet + delta.sl2vlSkipped, all.sl2vlSet);
}

// With the engine's own SL-to-VL tables (dfly, dor) the layer count only caps the arbitration: a repair that
// puts a path on an SL above 0 and raises the count (dfly's VL 3 on two local hops) is still a delta, and the
// fabric ends as a fresh programmer leaves it.
TEST(VlProgrammer, ALayerCountChangeWithTheEnginesTablesIsADelta) {
  VlFixture f;
  VlProgrammer p(*f.engine, f.clock);
  const fabric::NodeIndex leaf = f.node("leaf-0");
  const unsigned ports = f.topo().node(leaf).numPorts;
  const uint8_t hostPort = f.topo().node(f.node("host-0 HCA-1")).ports[1].peerPort.value;
  for (unsigned out = 1; out <= ports; ++out)
    if (out != hostPort) f.tables.slToVl.setPacked(leaf, ports, hostPort, out, 0x1111111111111111ull);
  f.tables.slLayers = 2;
  VlProgramOptions o;
  o.layers = 2;
  VlReport first = p.program(f.topo(), f.tables, o);
  ASSERT_TRUE(first.errors.empty());
  f.setSl("leaf-0", "host-2 HCA-1", 1);
  o.layers = f.tables.slLayers = 3;
  VlReport delta = p.program(f.topo(), f.tables, o);
  ASSERT_TRUE(delta.errors.empty());
  EXPECT_GT(delta.sl2vlSet, 0u);

  const VlReport all = expectAsFresh(f, o);
  EXPECT_LT(delta.sl2vlSet + delta.sl2vlSkipped, all.sl2vlSet);  // the first run's pairs not looked at again
}

// A switch with OptimizedSLtoVLMappingProgramming (IBA 1.2.1) gets one Set with the all-input and
// all-output modifier bits instead of one per pair: the same paths as above cost 3 Sets on the switches
// (leaf-0, the spine, leaf-1) instead of 4, and every pair of those switches holds the layered table.
TEST(VlProgrammer, OneSetPerSwitchWhereSwitchInfoOffersOptimizedProgramming) {
  mad::FakeFabricOptions options;
  options.optimizedSlToVl = true;
  VlFixture f(options);
  const fabric::NodeIndex leaf = f.node("leaf-0"), far = f.node("leaf-1");
  ASSERT_TRUE(f.topo().node(leaf).sw.optimizedSlToVl);  // discovery read it from SwitchInfo
  VlProgrammer p(*f.engine, f.clock);
  VlProgramOptions o;
  o.layers = 2;
  f.setSl("leaf-0", "host-2 HCA-1", 1);
  VlReport r = p.program(f.topo(), f.tables, o);
  EXPECT_TRUE(r.errors.empty()) << r.errors.front();
  EXPECT_EQ(r.sl2vlSet, 3u + 2);  // one per switch on the paths, the two sending host ports
  EXPECT_EQ(r.vlArbSet, 1u + 1 + 1 + 2);
  size_t allPorts = 0;
  for (const auto& smp : f.fabric->log())
    if (smp.attrId == mad::kAttrSlToVl && smp.attrMod == (mad::kSlToVlAllInputs | mad::kSlToVlAllOutputs))
      ++allPorts;
  EXPECT_EQ(allPorts, 3u);
  const std::array<uint8_t, 8> layered{0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01};
  for (fabric::NodeIndex sw : {leaf, far})
    for (unsigned in = 0; in <= f.topo().node(sw).numPorts; ++in)
      for (unsigned out = 0; out <= f.topo().node(sw).numPorts; ++out)
        EXPECT_EQ(f.fabric->slToVl(f.fakeIndex(f.topo(), sw), in, out), layered) << in << "->" << out;
  // The spine the paths do not cross keeps its reset tables.
  const fabric::Lid dst = f.lids.base(f.node("host-2 HCA-1"), fabric::PortNum{1});
  const fabric::NodeIndex used = f.topo().node(leaf).ports[f.tables.port(leaf, dst)].peerNode;
  const fabric::NodeIndex idle = used == f.node("spine-0") ? f.node("spine-1") : f.node("spine-0");
  EXPECT_EQ(f.fabric->slToVl(f.fakeIndex(f.topo(), idle), 1, 2)[1], 0x23);

  // Unchanged: nothing sent; three layers: one Set per switch again.
  VlReport again = p.program(f.topo(), f.tables, o);
  EXPECT_EQ(again.phase.smps, 0u);
  o.layers = 3;
  VlReport three = p.program(f.topo(), f.tables, o);
  EXPECT_EQ(three.sl2vlSet, 3u + 2);
}

// An engine that maps SLs per output port (RoutingTables::slToVl, dor's datelines): the same pairs are
// written, each with the table of its output port; ports the engine left out send every SL on VL 0. A switch
// with OptimizedSLtoVLMappingProgramming gets one Set per output port (all its inputs).
TEST(VlProgrammer, PerOutputPortTablesOfTheEngine) {
  for (bool optimized : {false, true}) {
    SCOPED_TRACE(optimized ? "optimized" : "per pair");
    mad::FakeFabricOptions options;
    options.optimizedSlToVl = optimized;
    VlFixture f(options);
    VlProgrammer p(*f.engine, f.clock);
    VlProgramOptions o;
    o.layers = 2;
    f.setSl("leaf-0", "host-2 HCA-1", 1);
    const fabric::NodeIndex leaf = f.node("leaf-0"), host = f.node("host-0 HCA-1"), far = f.node("leaf-1");
    const fabric::Lid dst = f.lids.base(f.node("host-2 HCA-1"), fabric::PortNum{1});
    const uint8_t up = f.tables.port(leaf, dst), down = f.tables.port(far, dst);
    const unsigned ports = f.topo().node(leaf).numPorts;
    for (unsigned in = 0; in <= ports; ++in)  // SL 1 -> VL 1, every other SL on VL 0
      f.tables.slToVl.setPacked(leaf, ports, in, up, uint64_t{1} << 4);
    VlReport r = p.program(f.topo(), f.tables, o);
    EXPECT_TRUE(r.errors.empty()) << r.errors.front();
    EXPECT_EQ(r.sl2vlSet, (optimized ? 1u + 1 + 1 : 2u + 1 + 1) + 2);
    const uint8_t hostPort = f.topo().node(host).ports[1].peerPort.value;
    EXPECT_EQ(f.fabric->slToVl(f.fakeIndex(f.topo(), leaf), hostPort, up),
              (std::array<uint8_t, 8>{0x01, 0, 0, 0, 0, 0, 0, 0}));
    EXPECT_EQ(f.fabric->slToVl(f.fakeIndex(f.topo(), host), 0, 1), (std::array<uint8_t, 8>{}));
    const fabric::NodeIndex spine = f.topo().node(leaf).ports[up].peerNode;
    EXPECT_EQ(f.fabric->slToVl(f.fakeIndex(f.topo(), far),
                               f.topo().node(spine).ports[f.tables.port(spine, dst)].peerPort.value, down),
              (std::array<uint8_t, 8>{}));
  }
}

// An engine may map SL 0 off VL 0 on some pairs (dfly: a host's first local hop on VL 1): those pairs are
// written although every path is on SL 0, and only those, with the arbitration tables of their outputs. When
// routes on one VL follow, the two pairs are written back to SL 0 on VL 0, and nothing else is sent.
TEST(VlProgrammer, PairsThatMapSl0OffVl0AreWrittenOnSl0AloneAndRestoredAfter) {
  VlFixture f;
  VlProgrammer p(*f.engine, f.clock);
  const fabric::NodeIndex leaf = f.node("leaf-0");
  const unsigned ports = f.topo().node(leaf).numPorts;
  const uint8_t hostPort = f.topo().node(f.node("host-0 HCA-1")).ports[1].peerPort.value;
  std::vector<uint8_t> ups;
  for (unsigned q = 1; q <= ports; ++q) {
    const fabric::Port& port = f.topo().node(leaf).ports[q];
    if (port.connected() && f.topo().node(port.peerNode).isSwitch()) ups.push_back(static_cast<uint8_t>(q));
  }
  ASSERT_EQ(ups.size(), 2u);
  f.tables.slLayers = 2;
  for (uint8_t up : ups) f.tables.slToVl.setPacked(leaf, ports, hostPort, up, 0x1111111111111111ull);
  VlProgramOptions o;
  o.layers = 2;
  VlReport r = p.program(f.topo(), f.tables, o);
  EXPECT_TRUE(r.errors.empty()) << r.errors.front();
  EXPECT_EQ(r.sl2vlSet, 2u);  // (host-0's port, each up port): paths to leaf-1's hosts take both
  EXPECT_EQ(r.vlArbSet, 2u);
  EXPECT_EQ(f.fabric->received(mad::kAttrSlToVl), 2u);
  for (uint8_t up : ups)
    EXPECT_EQ(f.fabric->slToVl(f.fakeIndex(f.topo(), leaf), hostPort, up),
              (std::array<uint8_t, 8>{0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11}));

  routing::RoutingTables oneVl = f.tables;
  oneVl.slLayers = 1;
  oneVl.slToVl = routing::SlToVlMap{0};
  r = p.program(f.topo(), oneVl, VlProgramOptions{});
  EXPECT_TRUE(r.errors.empty()) << r.errors.front();
  EXPECT_EQ(r.sl2vlSet, 2u);
  EXPECT_EQ(r.vlArbSet, 0u);
  for (uint8_t up : ups)
    EXPECT_EQ(f.fabric->slToVl(f.fakeIndex(f.topo(), leaf), hostPort, up), (std::array<uint8_t, 8>{}));
  EXPECT_EQ(p.program(f.topo(), oneVl, VlProgramOptions{}).phase.smps, 0u);
}

}  // namespace
}  // namespace ibsm::daemon
