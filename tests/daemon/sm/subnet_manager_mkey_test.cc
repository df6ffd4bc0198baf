// SubnetManager with M_Key protection on a FakeFabric whose SMAs check M_Keys as IBA says.
#include <gtest/gtest.h>

#include "daemon/sm/subnet_manager.h"
#include "mad/smp.h"
#include "tests/daemon/sm/sm_fixture.h"

namespace ibsm::daemon {
namespace {

using testing::SmFixture;
using namespace std::chrono_literals;

constexpr mad::MkeyInfo kMkey{0x5eed5eed5eed5eed, 1, 30};

// A fat tree of radix 4 whose SMAs check M_Keys, and an SM that protects it with kMkey.
struct MkeySubnet : ::testing::Test {
  SmFixture fx;

  void SetUp() override {
    testing::SmSetup setup;
    setup.radix = 4;
    setup.engine = {32, 100ms, 2};
    setup.fabric.enforceMkey = true;
    setup.mkey = kMkey;
    fx.create(setup);
  }
};

TEST_F(MkeySubnet, ComesUpProtectedAndCountsBadMkeyTrapsWithoutSweeping) {
  auto r = fx.sm->sweep();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->subnetUp);
  EXPECT_GT(r->program.mkeysSet, 0u);
  const fabric::Topology& t = *fx.sm->snapshot()->topology;
  const fabric::NodeIndex sw = fx.fakeIndex(t, t.switches().front());
  EXPECT_EQ(fx.fabric->portMkey(sw, fabric::PortNum{0}), kMkey);

  // A tool's Set without the key: discarded; the switch sends Trap 256 to the SM, which counts it and does
  // not re-read the fabric over it.
  const size_t before = fx.events.size();
  const uint64_t sweeps = fx.sm->sweeps();
  mad::MadPacket set =
      mad::makeDirectedSmp(mad::kSet, mad::kAttrSwitchInfo, 0, t.route(t.switches().front()));
  mad::setTid(set, 7);
  EXPECT_TRUE(fx.fabric->handle(set).empty());
  EXPECT_EQ(fx.fabric->mkeyViolations(), 1u);
  fx.sm->tick();
  fx.clock.advance(std::chrono::seconds(1));
  fx.sm->tick();
  EXPECT_EQ(fx.sm->trapCounters().badMkey, 1u);
  EXPECT_EQ(fx.sm->trapCounters().malformed, 0u);
  EXPECT_EQ(fx.events.size(), before);
  EXPECT_EQ(fx.sm->sweeps(), sweeps);

  // The next heavy sweep still manages everything with the key: nothing to write, no violation of ours.
  auto again = fx.sm->sweep("again");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE(again->subnetUp);
  EXPECT_EQ(again->program.smps(), 0u);
  EXPECT_EQ(fx.fabric->mkeyViolations(), 1u);
}

TEST_F(MkeySubnet, AReloadKeepsTheKeyResolvedAtStart) {
  SmOptions reloaded = fx.sm->options();
  reloaded.program.mkey.reset();  // what smOptionsFrom(config) gives for m_key: random
  fx.sm->setOptions(reloaded);
  ASSERT_TRUE(fx.sm->options().program.mkey);
  EXPECT_EQ(*fx.sm->options().program.mkey, kMkey);
}

}  // namespace
}  // namespace ibsm::daemon
