// A new master on a fabric another SM (or an earlier run of this one) programmed: it reads the LFTs back,
// keeps every valid held route (also those a repair moved, which a fresh run would route otherwise) and
// writes no LFT block; a held route that is not valid any more is replaced, and only its blocks are written.
#include <gtest/gtest.h>

#include <filesystem>

#include "routing/route_checker.h"
#include "tests/daemon/sm/sm_fixture.h"

namespace ibsm::daemon {
namespace {

using testing::SmFixture;

// Every end port's base LID, by port GUID.
std::map<fabric::Guid, uint16_t> baseLids(const SubnetSnapshot& s) {
  std::map<fabric::Guid, uint16_t> out;
  const fabric::Topology& t = *s.topology;
  for (fabric::NodeIndex n = 0; n < t.size(); ++n)
    for (unsigned p = t.node(n).isSwitch() ? 0 : 1; p < (t.node(n).isSwitch() ? 1u : t.node(n).ports.size());
         ++p)
      out[t.node(n).ports[p].guid] = s.lids.base(n, fabric::PortNum{static_cast<uint8_t>(p)}).value;
  return out;
}

// Every switch's LFT as the fake fabric holds it, by switch GUID.
std::map<fabric::Guid, std::vector<uint8_t>> fabricLfts(const SmFixture& f) {
  std::map<fabric::Guid, std::vector<uint8_t>> out;
  const fabric::Topology& t = f.fabric->topology();
  for (fabric::NodeIndex s : t.switches()) out[t.node(s).guid] = f.fabric->lft(s);
  return out;
}

struct Restart : ::testing::Test, SmFixture {
  std::string dir;
  SmOptions options() const {
    SmOptions o = sm->options();
    o.guid2lidPath = dir + "/guid2lid";
    return o;
  }
  void SetUp() override {
    dir = (std::filesystem::temp_directory_path() / ("ibsm-takeover-" + std::to_string(::getpid()))).string();
    std::filesystem::create_directories(dir);
    create();
    sm = std::make_unique<SubnetManager>(*engine, clock, wallClock, options());
    sm->setEventHandler([this](const TopologyEvent& e) { events.push_back(e); });
    auto r = sm->sweep();
    ASSERT_TRUE(r) << r.error().message;
    ASSERT_TRUE(r->subnetUp);
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
  // A new SubnetManager on the same fabric and state directory (ibsmd restarted), and its first sweep.
  SweepReport restart() {
    SmOptions o = options();
    sm = std::make_unique<SubnetManager>(*engine, clock, wallClock, o);
    sm->setEventHandler([this](const TopologyEvent& e) { events.push_back(e); });
    auto r = sm->sweep("start");
    EXPECT_TRUE(r) << r.error().message;
    return r ? *r : SweepReport{};
  }
};

TEST_F(Restart, ARestartWritesNoLftBlock) {
  auto lfts = fabricLfts(*this);
  auto lids = baseLids(*sm->snapshot());
  SweepReport r = restart();
  EXPECT_TRUE(r.subnetUp);
  ASSERT_TRUE(r.readback);
  EXPECT_GT(r.readback->blocks, 0u);
  EXPECT_EQ(r.readback->failed, 0u);
  EXPECT_EQ(r.readback->replaced, 0u);
  EXPECT_EQ(r.program.lftBlocksSent, 0u);
  EXPECT_EQ(r.lidsChanged, 0u);
  EXPECT_EQ(fabricLfts(*this), lfts);
  EXPECT_EQ(baseLids(*sm->snapshot()), lids);
}

// A link goes down and the repair moves routes off it: the tables now differ from a from-scratch run. The
// restarted SM keeps them all (nothing written) and can repair again from them (it has the engine's order).
TEST_F(Restart, ARestartKeepsTheRoutesARepairMoved) {
  const fabric::Topology& topo = *sm->snapshot()->topology;
  const auto leaf = topo.node(0).ports[topo.smPort().value].peerNode;
  std::optional<uint8_t> uplink;
  for (unsigned p = 1; p < topo.node(leaf).ports.size() && !uplink; ++p) {
    const fabric::Port& port = topo.node(leaf).ports[p];
    if (port.connected() && topo.node(port.peerNode).isSwitch()) uplink = static_cast<uint8_t>(p);
  }
  ASSERT_TRUE(uplink);
  ASSERT_TRUE(fabric->linkDown(fakeIndex(topo, leaf), fabric::PortNum{*uplink}));
  while (port.receive(mad::Duration::zero())) {
  }  // the traps are lost; the update below is what a light sweep would start
  auto u = sm->update({topo.node(leaf).guid}, "test: link down", clock.now());
  ASSERT_TRUE(u) << u.error().message;
  ASSERT_TRUE(u->routesMoved);
  ASSERT_GT(*u->routesMoved, 0u);
  auto lfts = fabricLfts(*this);
  auto repaired = sm->snapshot();

  events.clear();
  SweepReport r = restart();
  EXPECT_TRUE(r.subnetUp);
  ASSERT_TRUE(r.readback);
  EXPECT_GT(r.readback->kept, 0u) << "a fresh minhop run routes some LIDs otherwise";
  EXPECT_EQ(r.readback->replaced, 0u);
  EXPECT_EQ(r.program.lftBlocksSent, 0u);
  EXPECT_EQ(r.lidsChanged, 0u);
  EXPECT_EQ(fabricLfts(*this), lfts);
  ASSERT_FALSE(events.empty());
  EXPECT_NE(events.back().action.find("LFTs read back"), std::string::npos) << events.back().action;
  const auto& snap = *sm->snapshot();
  EXPECT_EQ(baseLids(snap), baseLids(*repaired));
  EXPECT_FALSE(snap.tables.upKey.empty());
  EXPECT_TRUE(routing::checkRoutes(*snap.topology, snap.lids, snap.tables).ok());
}

// Someone changed a switch's table behind the SM's back (a route into a loop): the restarted SM replaces
// just that entry and writes its block only.
TEST_F(Restart, AnInvalidHeldRouteIsReplacedAndOnlyItsBlockWritten) {
  const auto snap = sm->snapshot();
  const fabric::Topology& topo = *snap->topology;
  // A leaf's route to a CA LID of another leaf, sent back down a host port instead.
  fabric::NodeIndex leaf = topo.node(0).ports[topo.smPort().value].peerNode;
  uint8_t hostPort = 0;
  for (unsigned p = 1; p < topo.node(leaf).ports.size(); ++p) {
    const fabric::Port& port = topo.node(leaf).ports[p];
    if (port.connected() && !topo.node(port.peerNode).isSwitch()) hostPort = static_cast<uint8_t>(p);
  }
  ASSERT_NE(hostPort, 0);
  uint16_t far = 0;
  for (fabric::NodeIndex c : topo.cas()) {
    const fabric::Port& p = topo.node(c).ports[1];
    if (p.connected() && p.peerNode != leaf) far = snap->lids.base(c, fabric::PortNum{1}).value;
  }
  ASSERT_NE(far, 0);
  const uint8_t good = snap->tables.port(leaf, fabric::Lid{far});
  // Write the bad entry as an SM would: a Set of the block through the engine.
  const fabric::NodeIndex fake = fakeIndex(topo, leaf);
  std::vector<uint8_t> row = fabric->lft(fake);
  row[far] = hostPort;
  mad::LftBlock block{};
  const size_t b = far / mad::kLftBlockLids;
  for (size_t i = 0; i < block.size(); ++i)
    block[i] = b * mad::kLftBlockLids + i < row.size() ? row[b * mad::kLftBlockLids + i] : 0xFF;
  mad::MadPacket set =
      mad::makeDirectedSmp(mad::kSet, mad::kAttrLft, static_cast<uint32_t>(b), topo.route(leaf));
  mad::encodeLftBlock(block, mad::smpData(set));
  engine->submit(std::move(set), nullptr);
  engine->runUntilIdle();
  ASSERT_EQ(fabric->lftPort(fake, far), hostPort);

  SweepReport r = restart();
  ASSERT_TRUE(r.readback);
  EXPECT_EQ(r.readback->replaced, 1u);
  EXPECT_EQ(r.program.lftBlocksSent, 1u);
  EXPECT_EQ(fabric->lftPort(fake, far), good);
}

}  // namespace
}  // namespace ibsm::daemon
