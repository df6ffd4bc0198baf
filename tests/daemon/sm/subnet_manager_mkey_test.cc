// SubnetManager with M_Key protection on a FakeFabric whose SMAs check M_Keys as IBA says.
#include <gtest/gtest.h>

#include "daemon/sm/subnet_manager.h"
#include "mad/smp.h"
#include "tests/daemon/fake_fabric_fixture.h"

namespace ibsm::daemon {
namespace {

using testing::FakeFabricFixture;
using testing::generate;
using namespace std::chrono_literals;

constexpr mad::MkeyInfo kMkey{0x5eed5eed5eed5eed, 1, 30};

struct MkeySubnet : ::testing::Test {
  FakeFabricFixture fx;
  std::unique_ptr<SubnetManager> sm;
  size_t events = 0;

  void SetUp() override {
    tools::FabricSpec spec;
    spec.shape = tools::Shape::kFatTree;
    spec.levels = 2;
    spec.radix = 4;
    mad::FakeFabricOptions fo;
    fo.enforceMkey = true;
    fx.start(generate(spec), {32, 100ms, 2}, fo);
    fx.engine->setSmpMkey(kMkey.key);
    SmOptions o;
    o.engines = {"minhop"};
    o.program.mkey = kMkey;
    o.lightSweepInterval = mad::Duration::zero();
    sm = std::make_unique<SubnetManager>(*fx.engine, fx.clock, o);
    fx.engine->setUnsolicitedHandler(
        [this](const mad::MadPacket& m, const mad::MadHeader& h) { sm->onUnsolicited(m, h); });
    sm->setEventHandler([this](const TopologyEvent&) { ++events; });
  }
};

TEST_F(MkeySubnet, ComesUpProtectedAndCountsBadMkeyTrapsWithoutSweeping) {
  auto r = sm->sweep();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->subnetUp);
  EXPECT_GT(r->program.mkeysSet, 0u);
  const fabric::Topology& t = *sm->snapshot()->topology;
  const fabric::NodeIndex sw = fx.fakeIndex(t, t.switches().front());
  EXPECT_EQ(fx.fabric->portMkey(sw, fabric::PortNum{0}), kMkey);

  // A tool's Set without the key: discarded; the switch sends Trap 256 to the SM, which counts it and does
  // not re-read the fabric over it.
  const size_t before = events;
  const uint64_t sweeps = sm->sweeps();
  mad::MadPacket set =
      mad::makeDirectedSmp(mad::kSet, mad::kAttrSwitchInfo, 0, t.node(t.switches().front()).route);
  mad::setTid(set, 7);
  EXPECT_TRUE(fx.fabric->handle(set).empty());
  EXPECT_EQ(fx.fabric->mkeyViolations(), 1u);
  sm->tick();
  fx.clock.advance(std::chrono::seconds(1));
  sm->tick();
  EXPECT_EQ(sm->trapCounters().badMkey, 1u);
  EXPECT_EQ(sm->trapCounters().malformed, 0u);
  EXPECT_EQ(events, before);
  EXPECT_EQ(sm->sweeps(), sweeps);

  // The next heavy sweep still manages everything with the key: nothing to write, no violation of ours.
  auto again = sm->sweep("again");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE(again->subnetUp);
  EXPECT_EQ(again->program.smps(), 0u);
  EXPECT_EQ(fx.fabric->mkeyViolations(), 1u);
}

TEST_F(MkeySubnet, AReloadKeepsTheKeyResolvedAtStart) {
  SmOptions reloaded = sm->options();
  reloaded.program.mkey.reset();  // what smOptionsFrom(config) gives for m_key: random
  sm->setOptions(reloaded);
  ASSERT_TRUE(sm->options().program.mkey);
  EXPECT_EQ(*sm->options().program.mkey, kMkey);
}

}  // namespace
}  // namespace ibsm::daemon
