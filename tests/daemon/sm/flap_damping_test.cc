// FlapDamping: each down of a port within the back-off window doubles its hold-down, up to the maximum; a
// port quiet for longer starts again from the first hold-down. On the fake fabric, a link taken down between
// two discoveries is noted and held down.
#include "daemon/sm/flap_damping.h"

#include <gtest/gtest.h>

#include "tests/daemon/sm/sm_fixture.h"

namespace ibsm::daemon {
namespace {

using testing::SmFixture;
using namespace std::chrono_literals;

constexpr fabric::Guid kSwitch{0x1234};

TEST(FlapDamping, EachDownWithinTheWindowDoublesTheHoldDownUpToTheMaximum) {
  mad::FakeClock clock;
  FlapDamping flaps(clock, 2s, 60s);
  EXPECT_FALSE(flaps.heldUntil(kSwitch, 3));
  std::vector<mad::Duration> holds;
  for (int i = 0; i < 7; ++i) {
    flaps.noteDown(kSwitch, 3);
    holds.push_back(*flaps.heldUntil(kSwitch, 3) - clock.now());
    clock.advance(1s);
  }
  const std::vector<mad::Duration> expected{2s, 4s, 8s, 16s, 32s, 60s, 60s};
  EXPECT_EQ(holds, expected);
  EXPECT_FALSE(flaps.heldUntil(kSwitch, 4));  // per port
}

TEST(FlapDamping, APortQuietForTheWholeWindowStartsAgain) {
  mad::FakeClock clock;
  FlapDamping flaps(clock, 2s, 60s);
  flaps.noteDown(kSwitch, 1);
  clock.advance(1s);
  flaps.noteDown(kSwitch, 1);  // 4 s
  EXPECT_EQ(flaps.active(), (std::vector<std::pair<fabric::Guid, uint8_t>>{{kSwitch, 1}}));
  clock.advance(4s);
  EXPECT_TRUE(flaps.active().empty());  // the hold-down is over
  clock.advance(60s);
  flaps.noteDown(kSwitch, 1);
  EXPECT_EQ(*flaps.heldUntil(kSwitch, 1), clock.now() + 2s);
}

TEST(FlapDamping, ALinkThatWentDownBetweenTwoDiscoveriesIsHeldDown) {
  SmFixture f;
  f.startFabric();
  FlapDamping flaps(f.clock, 2s, 60s);
  DiscoveryResult before = f.discover();
  const fabric::Topology& t = *before.topology;
  // A leaf switch's first cabled port to another switch.
  fabric::NodeIndex leaf = fabric::kNoNode;
  unsigned port = 0;
  for (fabric::NodeIndex s : t.switches())
    for (unsigned p = 1; p <= t.node(s).numPorts && leaf == fabric::kNoNode; ++p)
      if (t.node(s).ports[p].connected() && t.node(t.node(s).ports[p].peerNode).isSwitch()) {
        leaf = s;
        port = p;
      }
  ASSERT_NE(leaf, fabric::kNoNode);
  const fabric::Guid g = t.node(leaf).guid;
  ASSERT_TRUE(f.fabric->linkDown(f.fakeIndex(t, leaf), fabric::PortNum{static_cast<uint8_t>(port)}));
  DiscoveryResult down = f.discover();
  auto changes = flaps.noteLinkChanges(t, *down.topology, {g});
  EXPECT_EQ(changes.down, 1u);
  EXPECT_EQ(changes.up, 0u);
  EXPECT_EQ(flaps.active(), (std::vector<std::pair<fabric::Guid, uint8_t>>{{g, static_cast<uint8_t>(port)}}));

  ASSERT_TRUE(f.fabric->linkUp(f.fakeIndex(t, leaf), fabric::PortNum{static_cast<uint8_t>(port)}));
  DiscoveryResult up = f.discover();
  changes = flaps.noteLinkChanges(*down.topology, *up.topology, {g});
  EXPECT_EQ(changes.up, 1u);
  EXPECT_EQ(changes.down, 0u);
  EXPECT_EQ(*flaps.heldUntil(g, static_cast<uint8_t>(port)), f.clock.now() + 2s);  // unchanged by the up
}

}  // namespace
}  // namespace ibsm::daemon
