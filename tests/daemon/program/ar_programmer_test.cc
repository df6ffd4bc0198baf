#include "daemon/program/ar_programmer.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "mad/smp.h"
#include "tests/daemon/fake_fabric_fixture.h"

namespace ibsm::daemon {
namespace {

using fabric::NodeIndex;
using testing::FakeFabricFixture;
using testing::generate;

// 2-level fat tree of 8-port switches with doubled links: 4 leaves x 4 hosts, 2 spines, each leaf-spine pair
// joined by 2 links. Min-hop AR groups: a leaf has 3 (the 2 links to each spine, and all 4 uplinks towards
// the other leaves), a spine 4 (the 2 links to each leaf).
fabric::TopologyPtr fatTree() {
  tools::FabricSpec spec;
  spec.shape = tools::Shape::kFatTree;
  spec.levels = 2;
  spec.radix = 8;
  spec.parallel = 2;
  return generate(spec);
}

struct ArTest : ::testing::Test {
  FakeFabricFixture fx;
  SwitchTableCache cache;
  FakeFabricFixture::Up up;
  const ArOptions options{std::chrono::milliseconds(7), 30, mad::ArLidState::kBounded, 2};

  // Brings the fabric up with every switch AR-capable except those given other modes.
  void start(const std::vector<std::pair<std::string, mad::FakeArMode>>& modes = {},
             mad::FakeArCaps caps = {}) {
    fx.start(fatTree());
    for (NodeIndex n : fx.fabric->topology().switches())
      fx.fabric->setArMode(n, mad::FakeArMode::kImplemented, caps);
    for (const auto& [desc, mode] : modes) {
      auto n = fx.fabric->topology().findByDescription(desc);
      ASSERT_TRUE(n) << desc;
      fx.fabric->setArMode(*n, mode, caps);
    }
    up = fx.bringUp(cache);
    ASSERT_FALSE(up.tables.ar.empty());
  }
  const fabric::Topology& topo() const { return *up.found.topology; }
  NodeIndex fake(NodeIndex n) const { return fx.fakeIndex(topo(), n); }
  NodeIndex byDesc(const std::string& d) const { return *topo().findByDescription(d); }
  std::string leaf(int i) const {
    // The generator names switches in order; pick the i-th switch that has an AR group.
    int seen = 0;
    for (NodeIndex n : topo().switches())
      if (!up.tables.ar[n].groups.empty() && seen++ == i) return topo().node(n).description;
    return {};
  }
  // SMPs of one attribute the fake switch got, in order.
  std::vector<mad::FakeFabric::SmpRecord> smpsTo(NodeIndex fakeNode) const {
    std::vector<mad::FakeFabric::SmpRecord> out;
    for (const auto& r : fx.fabric->log())
      if (r.node == fakeNode &&
          (r.attrId == mad::kAttrArInfo || r.attrId == mad::kAttrArGroupTable || r.attrId == mad::kAttrArLft))
        out.push_back(r);
    return out;
  }
  // The switch holds what routing computed.
  void expectProgrammed(NodeIndex n) {
    const routing::ArTable& ar = up.tables.ar[n];
    NodeIndex f = fake(n);
    mad::ArInfo info = fx.fabric->arInfo(f);
    EXPECT_TRUE(info.enabled) << topo().node(n).description;
    EXPECT_EQ(info.groupTop, ar.groups.size() - 1);
    EXPECT_EQ(info.ageingTimeUs, 30u);
    for (size_t g = 0; g < ar.groups.size(); ++g)
      EXPECT_EQ(fx.fabric->arGroup(f, static_cast<uint16_t>(g)), ar.groups[g]) << "group " << g;
    const auto& lft = up.tables.lft[n];
    for (size_t lid = 1; lid < lft.size(); ++lid) {
      mad::ArLftEntry e = fx.fabric->arLft(f, static_cast<uint16_t>(lid));
      EXPECT_EQ(e.defaultPort, lft[lid]) << "LID " << lid;
      uint16_t g = lid < ar.lidToGroup.size() ? ar.lidToGroup[lid] : routing::ArTable::kNoGroup;
      if (g == routing::ArTable::kNoGroup) {
        EXPECT_EQ(e.state, mad::ArLidState::kStatic) << "LID " << lid;
      } else {
        EXPECT_EQ(e.state, mad::ArLidState::kBounded) << "LID " << lid;
        EXPECT_EQ(e.group, g) << "LID " << lid;
        EXPECT_TRUE(ar.groups[g][lft[lid]]) << "the default port belongs to the group";
      }
    }
  }
};

TEST_F(ArTest, ProgramsGroupsBeforeArLftThenEnables) {
  start();
  fx.fabric->clearLog();
  ArProgrammer ar(*fx.engine, fx.clock, options);
  ArReport r = ar.program(topo(), up.tables);
  EXPECT_TRUE(r.errors.empty()) << r.errors.front();
  EXPECT_TRUE(r.fellBack.empty());
  EXPECT_EQ(r.probed, topo().switches().size());
  EXPECT_EQ(r.capable, topo().switches().size());
  ASSERT_EQ(r.phases.size(), 4u);
  EXPECT_EQ(r.phases[0].name, "ar-probe");
  EXPECT_EQ(r.phases[0].smps, topo().switches().size());
  size_t withGroups = 0;
  for (NodeIndex n : topo().switches()) {
    if (up.tables.ar[n].groups.empty()) {
      EXPECT_FALSE(fx.fabric->arInfo(fake(n)).enabled);
      continue;
    }
    ++withGroups;
    expectProgrammed(n);
    // Order on this switch: probe, all group blocks, all ARLFT blocks, enable.
    auto smps = smpsTo(fake(n));
    ASSERT_GE(smps.size(), 4u);
    EXPECT_EQ(smps.front().attrId, mad::kAttrArInfo);
    EXPECT_EQ(smps.front().method, mad::kGet);
    EXPECT_EQ(smps.back().attrId, mad::kAttrArInfo);
    EXPECT_EQ(smps.back().method, mad::kSet);
    auto firstLft =
        std::find_if(smps.begin(), smps.end(), [](auto& s) { return s.attrId == mad::kAttrArLft; });
    auto lastGroup =
        std::find_if(smps.rbegin(), smps.rend(), [](auto& s) { return s.attrId == mad::kAttrArGroupTable; });
    ASSERT_NE(firstLft, smps.end());
    ASSERT_NE(lastGroup, smps.rend());
    EXPECT_LT(std::distance(smps.begin(), lastGroup.base()) - 1, std::distance(smps.begin(), firstLft));
    for (const auto& s : smps) EXPECT_EQ(s.status, 0);
  }
  EXPECT_GT(withGroups, 0u);
  EXPECT_EQ(r.enabled, withGroups);
  EXPECT_EQ(r.enableSets, withGroups);
  EXPECT_EQ(r.groupBlocksSent, fx.fabric->receivedSets(mad::kAttrArGroupTable));
  EXPECT_EQ(r.lftBlocksSent, fx.fabric->receivedSets(mad::kAttrArLft));

  // Nothing changed: nothing is sent.
  ArReport again = ar.program(topo(), up.tables);
  EXPECT_EQ(again.smps(), 0u);
  EXPECT_EQ(again.probed, 0u);
  EXPECT_EQ(again.groupBlocksSent + again.lftBlocksSent, 0u);
  EXPECT_EQ(again.enabled, withGroups);
}

TEST_F(ArTest, IncapableSwitchCostsOneShortTimeoutOncePerLifetime) {
  start();
  std::string silent = leaf(0), dropping = leaf(1);
  fx.fabric->setArMode(*fx.fabric->topology().findByDescription(silent), mad::FakeArMode::kSilent);
  fx.fabric->setArMode(*fx.fabric->topology().findByDescription(dropping), mad::FakeArMode::kDrop);
  ArProgrammer ar(*fx.engine, fx.clock, options);
  const uint64_t timeouts0 = fx.engine->counters().timeouts, sent0 = fx.engine->counters().sent;
  ArReport r = ar.program(topo(), up.tables);
  // One attempt each; the silent one is waited for once, for the short probe timeout, in parallel.
  EXPECT_EQ(fx.engine->counters().timeouts - timeouts0, 2u);
  EXPECT_EQ(r.phases[0].smps, topo().switches().size());
  EXPECT_EQ(r.phases[0].elapsed, options.probeTimeout);
  EXPECT_EQ(ar.capability(topo().node(byDesc(silent)).guid), ArCapability::kIncapable);
  EXPECT_EQ(ar.capability(topo().node(byDesc(dropping)).guid), ArCapability::kIncapable);
  EXPECT_EQ(r.incapable, 2u);
  EXPECT_EQ(smpsTo(fake(byDesc(silent))).size(), 0u);  // never reached its SMA's log: it does not answer
  EXPECT_EQ(smpsTo(fake(byDesc(dropping))).size(), 1u);
  EXPECT_TRUE(r.errors.empty());
  ASSERT_FALSE(r.warnings.empty());
  EXPECT_NE(r.warnings.back().find("AR001 2 switch(es)"), std::string::npos) << r.warnings.back();
  for (NodeIndex n : topo().switches())
    if (topo().node(n).description != silent && topo().node(n).description != dropping &&
        !up.tables.ar[n].groups.empty())
      expectProgrammed(n);
  const uint64_t arSent = fx.engine->counters().sent - sent0;
  EXPECT_EQ(arSent, r.smps());

  // Later runs cost those switches nothing, and no time.
  const uint64_t arInfo = fx.fabric->received(mad::kAttrArInfo);
  auto t0 = fx.clock.now();
  ArReport again = ar.program(topo(), up.tables);
  EXPECT_EQ(again.smps(), 0u);
  EXPECT_EQ(fx.clock.now(), t0);
  EXPECT_EQ(fx.fabric->received(mad::kAttrArInfo), arInfo);

  // A switch that left the fabric and comes back is a new lifetime: probed again.
  fabric::Guid gone = topo().node(byDesc(dropping)).guid;
  ar.forget(gone);
  ArReport third = ar.program(topo(), up.tables);
  EXPECT_EQ(third.probed, 1u);
  EXPECT_EQ(ar.capability(gone), ArCapability::kIncapable);
}

TEST_F(ArTest, RejectedBlockFallsBackToPlainLfts) {
  start();
  NodeIndex victim = byDesc(leaf(0));
  NodeIndex fv = fake(victim);
  ArProgrammer ar(*fx.engine, fx.clock, options);
  ArReport first = ar.program(topo(), up.tables);
  ASSERT_TRUE(first.errors.empty());
  ASSERT_TRUE(fx.fabric->arInfo(fv).enabled);

  // Routing gives the victim one more group (a copy of group 0, taking over its LIDs): the block holding it
  // must be written, and is rejected.
  routing::RoutingTables changed = up.tables;
  routing::ArTable& t = changed.ar[victim];
  const uint32_t block = static_cast<uint32_t>(t.groups.size() / mad::kArGroupsPerBlock);
  t.groups.push_back(t.groups[0]);
  for (size_t l = 0; l < t.lidToGroup.size(); ++l)
    if (std::as_const(t.lidToGroup)[l] == 0) t.lidToGroup[l] = static_cast<uint16_t>(t.groups.size() - 1);
  fx.fabric->rejectArBlock(fv, mad::kAttrArGroupTable, block);
  fx.fabric->clearLog();
  ArReport r = ar.program(topo(), changed);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("AR002 ARGroupTable block " + std::to_string(block)), std::string::npos)
      << r.errors[0];
  EXPECT_NE(r.errors[0].find("MAD status 28"), std::string::npos) << r.errors[0];
  ASSERT_EQ(r.fellBack.size(), 1u);
  EXPECT_EQ(r.fellBack[0], topo().node(victim).guid);
  EXPECT_FALSE(fx.fabric->arInfo(fv).enabled);  // plain LFTs rule on the victim
  EXPECT_FALSE(ar.enabled(topo().node(victim).guid));
  EXPECT_EQ(r.disableSets, 1u);
  for (const auto& s : smpsTo(fv)) EXPECT_NE(s.attrId, mad::kAttrArLft);  // no ARLFT after a failed group
  EXPECT_TRUE(std::any_of(r.warnings.begin(), r.warnings.end(),
                          [](const std::string& w) { return w.find("AR003") != std::string::npos; }));
  // The other switches are untouched and still on AR.
  for (NodeIndex n : topo().switches())
    if (n != victim && !up.tables.ar[n].groups.empty()) {
      EXPECT_TRUE(fx.fabric->arInfo(fake(n)).enabled);
    }

  // It is tried again next time; failing maxFailures (2) runs in a row parks it on plain LFTs.
  ArReport second = ar.program(topo(), changed);
  EXPECT_EQ(second.errors.size(), 1u);
  EXPECT_NE(second.warnings.back().find("until it is reset"), std::string::npos) << second.warnings.back();
  fx.fabric->clearLog();
  ArReport parked = ar.program(topo(), changed);
  EXPECT_TRUE(parked.errors.empty());
  EXPECT_EQ(parked.smps(), 0u);
  EXPECT_EQ(parked.fellBack.size(), 1u);
  EXPECT_TRUE(smpsTo(fv).empty());

  // Once the switch accepts the block and the parking is lifted (forgetTables, as after a reset), it is
  // programmed fully.
  fx.fabric->rejectArBlock(fv, mad::kAttrArGroupTable, block, false);
  ar.forgetTables();
  ArReport healed = ar.program(topo(), changed);
  EXPECT_TRUE(healed.errors.empty());
  EXPECT_TRUE(fx.fabric->arInfo(fv).enabled);
  up.tables = changed;
  expectProgrammed(victim);
}

TEST_F(ArTest, RejectedArLftBlockDisablesAr) {
  start();
  NodeIndex victim = byDesc(leaf(1));
  fx.fabric->rejectArBlock(fake(victim), mad::kAttrArLft, 0);
  ArProgrammer ar(*fx.engine, fx.clock, options);
  ArReport r = ar.program(topo(), up.tables);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("ARLinearForwardingTable block 0"), std::string::npos);
  EXPECT_FALSE(fx.fabric->arInfo(fake(victim)).enabled);
  for (const auto& s : smpsTo(fake(victim)))
    EXPECT_FALSE(s.attrId == mad::kAttrArInfo && s.method == mad::kSet);  // never enabled
  EXPECT_EQ(r.fellBack.size(), 1u);
}

TEST_F(ArTest, SwitchWithFewerGroupsThanRoutingStaysStatic) {
  start({}, mad::FakeArCaps{3});  // 3 groups per switch: enough for the leaves, not for the spines
  ArProgrammer ar(*fx.engine, fx.clock, options);
  size_t needMore = 0, fit = 0;
  for (NodeIndex n : topo().switches()) {
    needMore += up.tables.ar[n].groups.size() > 3;
    fit += !up.tables.ar[n].groups.empty() && up.tables.ar[n].groups.size() <= 3;
  }
  ASSERT_GT(fit, 0u);
  ASSERT_GT(needMore, 0u);
  ArReport r = ar.program(topo(), up.tables);
  EXPECT_TRUE(r.errors.empty());
  EXPECT_EQ(r.fellBack.size(), needMore);
  size_t warned = std::count_if(r.warnings.begin(), r.warnings.end(), [](const std::string& w) {
    return w.find("AR003") != std::string::npos && w.find("the switch holds 3") != std::string::npos;
  });
  EXPECT_EQ(warned, needMore);
  for (NodeIndex n : topo().switches()) {
    if (up.tables.ar[n].groups.empty()) continue;
    if (up.tables.ar[n].groups.size() > 3) {
      EXPECT_FALSE(fx.fabric->arInfo(fake(n)).enabled);
      for (const auto& s : smpsTo(fake(n))) EXPECT_EQ(s.method, mad::kGet);  // only the probe
    } else {
      expectProgrammed(n);
    }
  }
  EXPECT_EQ(r.enabled, fit);
}

TEST_F(ArTest, PlainLftChangeReenablesAr) {
  start();
  ArProgrammer ar(*fx.engine, fx.clock, options);
  ASSERT_TRUE(ar.program(topo(), up.tables).errors.empty());
  NodeIndex sw = byDesc(leaf(0));
  // Re-route: one LID moves to another member of its group; the Programmer writes the plain LFT block,
  // which turns AR off on the switch (no_fallback = 0); the ArProgrammer rewrites that ARLFT block and
  // enables AR again.
  routing::RoutingTables changed = up.tables;
  const routing::ArTable& t = changed.ar[sw];
  uint16_t lid = 0;
  for (size_t l = 1; l < t.lidToGroup.size() && !lid; ++l)
    if (t.lidToGroup[l] != routing::ArTable::kNoGroup) lid = static_cast<uint16_t>(l);
  ASSERT_NE(lid, 0);
  const routing::PortMask& g = t.groups[t.lidToGroup[lid]];
  uint8_t other = 0;
  for (unsigned p = 1; p < 256 && !other; ++p)
    if (g[p] && p != changed.lft[sw][lid]) other = static_cast<uint8_t>(p);
  ASSERT_NE(other, 0);
  changed.lft[sw][lid] = other;
  Programmer programmer(*fx.engine, fx.clock);
  DiscoveryResult fresh = fx.discover();
  ProgramReport pr = programmer.program(fresh, up.lids, changed, cache, ProgramOptions{});
  EXPECT_EQ(pr.lftBlocksSent, 1u);
  EXPECT_FALSE(fx.fabric->arInfo(fake(sw)).enabled);
  ArReport r = ar.program(topo(), changed);
  EXPECT_TRUE(r.errors.empty());
  EXPECT_EQ(r.lftBlocksSent, 1u);
  EXPECT_EQ(r.groupBlocksSent, 0u);
  EXPECT_EQ(r.enableSets, 1u);
  EXPECT_TRUE(fx.fabric->arInfo(fake(sw)).enabled);
  EXPECT_EQ(fx.fabric->arLft(fake(sw), lid).defaultPort, other);
}

TEST_F(ArTest, RoutingWithoutArTurnsItOff) {
  start();
  ArProgrammer ar(*fx.engine, fx.clock, options);
  ArReport on = ar.program(topo(), up.tables);
  ASSERT_GT(on.enabled, 0u);
  routing::RoutingTables noAr = up.tables;
  noAr.ar.clear();
  ArReport off = ar.program(topo(), noAr);
  EXPECT_TRUE(off.errors.empty());
  EXPECT_EQ(off.disableSets, on.enabled);
  EXPECT_EQ(off.enabled, 0u);
  for (NodeIndex n : topo().switches()) EXPECT_FALSE(fx.fabric->arInfo(fake(n)).enabled);
  EXPECT_EQ(ar.program(topo(), noAr).smps(), 0u);
}

}  // namespace
}  // namespace ibsm::daemon
