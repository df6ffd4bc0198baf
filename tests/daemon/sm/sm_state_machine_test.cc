#include "daemon/sm/sm_state_machine.h"

#include <gtest/gtest.h>

namespace ibsm::daemon {
namespace {

using namespace std::chrono_literals;
using fabric::Guid;

constexpr Guid kSelf{0x100};
constexpr Guid kOther{0x200};

mad::SmInfo info(Guid g, uint8_t prio, SmState s, uint64_t key = 0) {
  mad::SmInfo i;
  i.guid = g;
  i.priority = prio;
  i.state = static_cast<uint8_t>(s);
  i.smKey = key;
  return i;
}

struct SmStateMachineTest : ::testing::Test {
  mad::FakeClock clock;
  SmStateMachine make(uint8_t prio, uint64_t key = 0) {
    SmStateMachine m({prio, key, 1000ms, 3});
    m.setSelf(kSelf);
    return m;
  }
};

TEST_F(SmStateMachineTest, AloneBecomesMaster) {
  auto m = make(0);
  m.startDiscovery();
  auto d = m.decide(clock.now());
  EXPECT_EQ(d.state, SmState::kMaster);
  EXPECT_EQ(m.masterTerms(), 1u);
  EXPECT_FALSE(m.tookOver());
}

TEST_F(SmStateMachineTest, YieldsToAnyMasterAndToABetterNonMaster) {
  auto m = make(10);
  m.startDiscovery();
  m.noteRemote(kOther, 5, {}, info(kOther, 1, SmState::kMaster), clock.now());  // worse, but master
  auto d = m.decide(clock.now());
  EXPECT_EQ(d.state, SmState::kStandby);
  EXPECT_EQ(d.master, kOther);

  auto n = make(1);
  n.startDiscovery();
  n.noteRemote(kOther, 5, {}, info(kOther, 2, SmState::kDiscovering), clock.now());
  EXPECT_EQ(n.decide(clock.now()).state, SmState::kStandby);
  // Equal priority: the lower GUID wins (kSelf < kOther), so we are master.
  auto t = make(2);
  t.startDiscovery();
  t.noteRemote(kOther, 5, {}, info(kOther, 2, SmState::kStandby), clock.now());
  EXPECT_EQ(t.decide(clock.now()).state, SmState::kMaster);
}

TEST_F(SmStateMachineTest, WrongSmKeyNeverMakesUsYield) {
  auto m = make(1, 0xAA);
  m.startDiscovery();
  m.noteRemote(kOther, 5, {}, info(kOther, 15, SmState::kMaster, 0), clock.now());  // key withheld
  EXPECT_EQ(m.decide(clock.now()).state, SmState::kMaster);
  EXPECT_EQ(m.badKeys(), 1u);
  ASSERT_NE(m.findRemote(kOther), nullptr);
  EXPECT_FALSE(m.findRemote(kOther)->keyOk);
  // A HANDOVER with a wrong key is refused too; with the right one from a master it is acknowledged.
  EXPECT_EQ(m.onSet(1, info(kOther, 15, SmState::kMaster, 0xBB), clock.now()),
            SmStateMachine::SetOutcome::kBadKey);
  EXPECT_EQ(m.badKeys(), 2u);
  // Same key: trusted, and a better master wins.
  auto k = make(1, 0xAA);
  k.startDiscovery();
  k.noteRemote(kOther, 5, {}, info(kOther, 15, SmState::kMaster, 0xAA), clock.now());
  EXPECT_EQ(k.decide(clock.now()).state, SmState::kStandby);
}

TEST_F(SmStateMachineTest, StandbyTakesOverAfterRetriesFailedPolls) {
  auto m = make(1);
  m.startDiscovery();
  m.noteRemote(kOther, 5, {}, info(kOther, 5, SmState::kMaster), clock.now());
  ASSERT_EQ(m.decide(clock.now()).state, SmState::kStandby);
  EXPECT_FALSE(m.pollDue(clock.now()));
  clock.advance(1000ms);
  ASSERT_TRUE(m.pollDue(clock.now()));
  m.pollSent(clock.now());
  EXPECT_FALSE(m.pollResult(info(kOther, 5, SmState::kMaster), clock.now()));
  EXPECT_FALSE(m.pollResult(std::nullopt, clock.now()));
  EXPECT_FALSE(m.pollResult(info(kOther, 5, SmState::kMaster), clock.now()));  // an answer resets the count
  EXPECT_FALSE(m.pollResult(std::nullopt, clock.now()));
  EXPECT_FALSE(m.pollResult(info(kOther, 5, SmState::kNotActive), clock.now()));  // not master: a failure
  EXPECT_TRUE(m.pollResult(std::nullopt, clock.now()));
  // The takeover sweep: the old master does not answer.
  m.startDiscovery();
  m.noteRemote(kOther, 5, {}, std::nullopt, clock.now());
  EXPECT_EQ(m.decide(clock.now()).state, SmState::kMaster);
  EXPECT_TRUE(m.tookOver());
}

TEST_F(SmStateMachineTest, MasterHandsOverToABetterStandby) {
  auto m = make(1);
  m.startDiscovery();
  ASSERT_EQ(m.decide(clock.now()).state, SmState::kMaster);
  m.noteRemote(kOther, 5, {}, info(kOther, 9, SmState::kStandby), clock.now());
  auto d = m.decide(clock.now());
  EXPECT_EQ(d.state, SmState::kMaster);
  ASSERT_EQ(d.handoverTo, kOther);
  m.handoverSent(kOther, clock.now());
  EXPECT_FALSE(m.decide(clock.now()).handoverTo);  // pending: not again
  // An ACKNOWLEDGE from someone else is ignored; from the new master it makes us STANDBY.
  EXPECT_EQ(m.onSet(2, info(Guid{0x300}, 9, SmState::kMaster), clock.now()),
            SmStateMachine::SetOutcome::kIgnored);
  EXPECT_EQ(m.onSet(2, info(kOther, 9, SmState::kMaster), clock.now()),
            SmStateMachine::SetOutcome::kNowStandby);
  EXPECT_EQ(m.state(), SmState::kStandby);
  EXPECT_EQ(m.master(), kOther);
}

TEST_F(SmStateMachineTest, UnacknowledgedHandoverIsRetried) {
  auto m = make(1);
  m.startDiscovery();
  m.decide(clock.now());
  m.noteRemote(kOther, 5, {}, info(kOther, 9, SmState::kStandby), clock.now());
  m.handoverSent(kOther, clock.now());
  clock.advance(3001ms);
  EXPECT_EQ(m.decide(clock.now()).handoverTo, kOther);
  EXPECT_EQ(m.onSet(2, info(kOther, 9, SmState::kMaster), clock.now()), SmStateMachine::SetOutcome::kIgnored);
}

TEST_F(SmStateMachineTest, StandbyReceivingHandoverBecomesMaster) {
  auto m = make(9);
  m.startDiscovery();
  m.noteRemote(kOther, 5, {}, info(kOther, 1, SmState::kMaster), clock.now());
  ASSERT_EQ(m.decide(clock.now()).state, SmState::kStandby);
  EXPECT_EQ(m.onSet(1, info(kOther, 1, SmState::kMaster), clock.now()),
            SmStateMachine::SetOutcome::kBecomeMaster);
  EXPECT_EQ(m.state(), SmState::kMaster);
  EXPECT_TRUE(m.tookOver());
  // Its sweep still sees the old master as MASTER (the ACKNOWLEDGE is on its way): it stays master.
  m.startDiscovery();
  m.noteRemote(kOther, 5, {}, info(kOther, 1, SmState::kMaster), clock.now());
  EXPECT_EQ(m.decide(clock.now()).state, SmState::kMaster);
  // HANDOVER while master: acknowledge, nothing changes.
  EXPECT_EQ(m.onSet(1, info(kOther, 1, SmState::kMaster), clock.now()),
            SmStateMachine::SetOutcome::kAcknowledge);
  EXPECT_EQ(m.masterTerms(), 1u);
}

TEST_F(SmStateMachineTest, DisableAndDiscover) {
  auto m = make(1);
  m.startDiscovery();
  m.noteRemote(kOther, 5, {}, info(kOther, 5, SmState::kMaster), clock.now());
  m.decide(clock.now());
  EXPECT_EQ(m.onSet(3, info(kOther, 5, SmState::kMaster), clock.now()),
            SmStateMachine::SetOutcome::kDisabled);
  EXPECT_EQ(m.state(), SmState::kNotActive);
  m.startDiscovery();  // a sweep does not wake a NOTACTIVE SM
  EXPECT_EQ(m.state(), SmState::kNotActive);
  EXPECT_EQ(m.onSet(5, info(kOther, 5, SmState::kMaster), clock.now()),
            SmStateMachine::SetOutcome::kDiscover);
  EXPECT_EQ(m.state(), SmState::kDiscovering);
  EXPECT_EQ(m.onSet(4, info(kOther, 5, SmState::kMaster), clock.now()),
            SmStateMachine::SetOutcome::kNowStandby);
  EXPECT_EQ(m.state(), SmState::kStandby);
  EXPECT_EQ(m.onSet(99, info(kOther, 5, SmState::kMaster), clock.now()),
            SmStateMachine::SetOutcome::kIgnored);
}

TEST_F(SmStateMachineTest, TwoMastersTheBetterKeepsIt) {
  auto m = make(1);
  m.startDiscovery();
  m.decide(clock.now());
  m.noteRemote(kOther, 5, {}, info(kOther, 9, SmState::kMaster), clock.now());
  EXPECT_EQ(m.decide(clock.now()).state, SmState::kStandby);
}

}  // namespace
}  // namespace ibsm::daemon
