// TrapHandler on the fake fabric: every trap is answered with a TrapRepress and counted; the same trap within
// the window counts as a duplicate and asks for nothing; a trap says which switches to re-read.
#include "daemon/sm/trap_handler.h"

#include <gtest/gtest.h>

#include "tests/daemon/sm/sm_fixture.h"

namespace ibsm::daemon {
namespace {

using testing::SmFixture;
using namespace std::chrono_literals;

constexpr mad::Duration kWindow = 20ms;

// A programmed subnet (through SubnetManager) and a TrapHandler of its own on the same engine.
struct Traps : ::testing::Test {
  SmFixture f;
  std::unique_ptr<TrapHandler> traps;
  std::vector<mad::Notice> notices;

  void SetUp() override {
    f.up();
    traps = std::make_unique<TrapHandler>(*f.engine, f.clock, kWindow);
    traps->setNoticeHandler([this](const mad::Notice& n) { notices.push_back(n); });
  }
  TrapHandler::Outcome send(const mad::Notice& n) {
    return traps->onTrap(mad::makeTrap(n, 1), f.sm->snapshot().get());
  }
  size_t represses() const {
    size_t n = 0;
    for (const mad::MadPacket& m : f.port.sent()) {
      auto h = mad::parseHeader(m);
      if (h && h->method == mad::kTrapRepress) ++n;
    }
    return n;
  }
  // A CA of the fabric: its port 1's LID and GUID, and the GUID of the switch it is cabled to.
  struct Ca {
    uint16_t lid;
    fabric::Guid port, sw;
  };
  Ca someCa() const {
    const SubnetSnapshot& s = *f.sm->snapshot();
    for (fabric::NodeIndex n = 0; n < s.topology->size(); ++n) {
      const fabric::Node& node = s.topology->node(n);
      if (node.isSwitch() || !node.ports[1].connected() || n == s.topology->smNode()) continue;
      return {s.lids.base(n, fabric::PortNum{1}).value, node.ports[1].guid,
              s.topology->node(node.ports[1].peerNode).guid};
    }
    ADD_FAILURE() << "no CA";
    return {};
  }
};

TEST_F(Traps, TheSameTrapWithinTheWindowIsADuplicate) {
  const size_t repressedBefore = represses();
  mad::Notice n = SmFixture::trap128(f.switchLid());
  auto first = send(n);
  EXPECT_EQ(first.switches.size(), 1u);
  auto again = send(n);  // same trap, same LID, same port, no time passed
  EXPECT_TRUE(again.switches.empty());
  f.clock.advance(kWindow / 2);
  EXPECT_TRUE(send(n).switches.empty());  // the window counts from the last arrival
  f.clock.advance(kWindow);
  EXPECT_EQ(send(n).switches.size(), 1u);  // past the window: accepted again
  n.trapNumber = 129;                      // another trap about the same LID is no duplicate
  EXPECT_EQ(send(n).switches.size(), 1u);

  EXPECT_EQ(traps->counters().received, 5u);
  EXPECT_EQ(traps->counters().duplicates, 2u);
  EXPECT_EQ(traps->counters().malformed, 0u);
  EXPECT_EQ(notices.size(), 3u);                 // only the accepted ones reach the SA
  EXPECT_EQ(represses() - repressedBefore, 5u);  // every trap is answered, duplicates too
}

TEST_F(Traps, DecodedTrapsAreCountedByNumberUpToACap) {
  mad::Notice n = SmFixture::trap128(f.switchLid());
  send(n);
  send(n);  // a duplicate is still a trap 128 received
  n.trapNumber = 144;
  send(n);
  EXPECT_EQ(traps->counters().byNumber.at(128), 2u);
  EXPECT_EQ(traps->counters().byNumber.at(144), 1u);
  // Trap numbers come from the wire: past the cap they are counted together.
  for (uint16_t t = 1000; t < 1000 + TrapHandler::kMaxTrapNumbers; ++t) {
    n.trapNumber = t;
    send(n);
  }
  EXPECT_EQ(traps->counters().byNumber.size(), TrapHandler::kMaxTrapNumbers);
  EXPECT_EQ(traps->counters().otherNumbers, 2u);
  EXPECT_EQ(traps->counters().byNumber.at(128), 2u);
}

TEST_F(Traps, MalformedTrapsAreCountedAndAskForNothing) {
  mad::Notice n = SmFixture::trap128(f.switchLid());
  n.lidAddr = 0xC001;  // a multicast LID
  EXPECT_TRUE(send(n).switches.empty());
  EXPECT_EQ(traps->counters().received, 1u);
  EXPECT_EQ(traps->counters().malformed, 1u);
  EXPECT_TRUE(notices.empty());
}

TEST_F(Traps, ATrapAboutACaConcernsItsSwitchAndAnUnknownLidEverySwitch) {
  const Ca ca = someCa();
  mad::Notice n = SmFixture::trap128(ca.lid);
  n.trapNumber = 129;
  n.portNum = 1;
  auto out = send(n);
  ASSERT_EQ(out.switches.size(), 1u);
  EXPECT_EQ(out.switches[0], ca.sw);
  EXPECT_EQ(out.cause, "trap 129 about LID " + std::to_string(ca.lid));
  EXPECT_FALSE(out.smPort);

  n.lidAddr = 0xBFFF;  // unicast, held by nobody
  EXPECT_EQ(send(n).switches.size(), f.sm->snapshot()->topology->switches().size());
}

TEST_F(Traps, Trap256IsCountedOnlyAndTrap144WithIsSmNamesThePort) {
  const Ca ca = someCa();
  mad::Notice bad = SmFixture::trap128(ca.lid);
  bad.trapNumber = 256;
  EXPECT_TRUE(send(bad).switches.empty());
  EXPECT_EQ(traps->counters().badMkey, 1u);
  EXPECT_EQ(notices.size(), 1u);  // the SA still hears of it

  mad::Notice sm = SmFixture::trap128(ca.lid);
  sm.type = 4;
  sm.producerType = 1;
  sm.trapNumber = 144;
  sm.capMask = 1u << 1;  // IsSM
  auto out = send(sm);
  ASSERT_TRUE(out.smPort);
  EXPECT_EQ(*out.smPort, ca.port);
  EXPECT_EQ(out.switches, std::vector<fabric::Guid>{ca.sw});
}

TEST_F(Traps, BeforeTheFirstSweepATrapAsksForNothing) {
  auto out = traps->onTrap(mad::makeTrap(SmFixture::trap128(f.switchLid()), 1), nullptr);
  EXPECT_TRUE(out.switches.empty());
  EXPECT_EQ(traps->counters().received, 1u);
  EXPECT_EQ(notices.size(), 1u);
}

}  // namespace
}  // namespace ibsm::daemon
