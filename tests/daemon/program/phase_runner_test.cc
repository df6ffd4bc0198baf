// PhaseRunner and the block cache on a FakeMadPort whose responder decides per SMP: answer, refuse with a
// status, or stay silent.
#include "daemon/program/phase_runner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "daemon/program/block_cache.h"
#include "mad/fake_mad_port.h"
#include "mad/smp.h"

namespace ibsm::daemon {
namespace {

using namespace std::chrono_literals;

mad::MadPacket set(uint16_t attrId, uint32_t attrMod) {
  fabric::DrPath path;
  path = *path.extended(1);
  return mad::makeDirectedSmp(mad::kSet, attrId, attrMod, path);
}

// The responder's behaviour by attribute modifier: how many attempts it ignores before answering (-1: never),
// and the status it answers with.
struct Behaviour {
  int silentAttempts = 0;
  uint16_t status = 0;
};

struct PhaseRunnerTest : ::testing::Test {
  mad::FakeClock clock;
  mad::FakeMadPort port{clock};
  std::map<uint32_t, Behaviour> behaviour;
  std::map<uint32_t, int> seen;  // attempts per attribute modifier
  PhaseRunnerTest() {
    port.setResponder([this](const mad::MadPacket& req) {
      auto h = mad::parseHeader(req);
      Behaviour b = behaviour[h->attrMod];
      int attempt = ++seen[h->attrMod];
      if (b.silentAttempts < 0 || attempt <= b.silentAttempts) return std::vector<mad::MadPacket>{};
      return std::vector<mad::MadPacket>{mad::makeResponse(req, b.status)};
    });
  }
  mad::MadEngine engine{port, clock, mad::MadEngineOptions{4, 100ms, 1}};  // two attempts per request
};

TEST_F(PhaseRunnerTest, CountsSmpsAndErrorsAndReportsEachOutcomeOnce) {
  behaviour[1].status = 0x1C;  // refused
  behaviour[2].silentAttempts = -1;
  std::map<uint32_t, bool> outcome;
  PhaseStats st = runPhase(engine, clock, "x", PhaseOptions{}, [&](PhaseRunner& phase) {
    for (uint32_t mod : {0u, 1u, 2u})
      phase.submit(set(mad::kAttrLft, mod), [&, mod](const SmpAnswer& a) {
        EXPECT_FALSE(outcome.count(mod));
        outcome[mod] = a.ok;
        EXPECT_EQ(a.attrMod, mod);
        if (mod == 1) {
          EXPECT_EQ(a.failure(), ": MAD status 28");
        }
        if (mod == 2) {
          EXPECT_EQ(a.failure(), ": no answer");
        }
      });
  });
  EXPECT_EQ(st.name, "x");
  EXPECT_EQ(outcome, (std::map<uint32_t, bool>{{0, true}, {1, false}, {2, false}}));
  EXPECT_EQ(st.errors, 2u);
  EXPECT_EQ(st.smps, 1u + 1 + 2);  // the silent one twice: the engine's retry
  EXPECT_EQ(st.secondPass, 0u);    // not asked for
  // Two timeouts of the silent Set: the first attempt waits the configured 100 ms (sent before any answer was
  // measured), the resend twice the adaptive timeout (at its 10 ms floor: the others were answered at once).
  EXPECT_GE(st.elapsed, 120ms);
}

// A fabric's worth of Sets (337k LFT blocks at 11,664 hosts) never waits in the engine all at once: submit
// polls the engine while kMaxQueued wait, and a completion that submits again does not poll from inside.
TEST_F(PhaseRunnerTest, SubmitHoldsTheEngineQueueBoundedAndEveryAnswerArrives) {
  const uint32_t n = 3 * PhaseRunner::kMaxQueued;
  size_t maxQueued = 0, done = 0, chained = 0;
  PhaseStats st = runPhase(engine, clock, "x", PhaseOptions{}, [&](PhaseRunner& phase) {
    for (uint32_t mod = 0; mod < n; ++mod) {
      phase.submit(set(mad::kAttrLft, mod), [&, mod](const SmpAnswer& a) {
        EXPECT_TRUE(a.ok);
        ++done;
        if (mod % 1000 == 0)
          phase.submit(set(mad::kAttrLft, n + mod), [&](const SmpAnswer& b) { chained += b.ok; });
      });
      maxQueued = std::max(maxQueued, engine.queued());
    }
  });
  EXPECT_LE(maxQueued, PhaseRunner::kMaxQueued);
  EXPECT_GT(maxQueued, PhaseRunner::kMaxQueued / 2);
  EXPECT_EQ(done, n);
  EXPECT_EQ(chained, (n + 999) / 1000);
  EXPECT_EQ(st.errors, 0u);
  EXPECT_EQ(st.smps, n + chained);
}

TEST_F(PhaseRunnerTest, SecondPassResendsOnlyTheSetsWithNoAnswerAfterTheOthers) {
  behaviour[1].silentAttempts = 2;  // lost in the first pass, answered in the second
  behaviour[2].silentAttempts = -1;
  behaviour[3].status = 0x1C;  // a refusal is final: not sent again
  std::vector<uint32_t> order;
  size_t failures = 0;
  PhaseStats st = runPhase(engine, clock, "x", PhaseOptions{.secondPass = true}, [&](PhaseRunner& phase) {
    for (uint32_t mod : {0u, 1u, 2u, 3u})
      phase.submit(set(mad::kAttrLft, mod), [&, mod](const SmpAnswer& a) {
        if (a.ok) order.push_back(mod);
        failures += !a.ok;
        if (mod == 1) {
          EXPECT_TRUE(a.secondPass);
        }
        if (mod == 2) {
          EXPECT_TRUE(a.secondPass);
        }
      });
  });
  EXPECT_EQ(order, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(failures, 2u);
  EXPECT_EQ(st.errors, 2u);
  // Set 2 goes a third round, since set 1 was answered in the second; none is answered in the third.
  EXPECT_EQ(st.secondPass, 3u);
  EXPECT_EQ(seen[1], 3);
  EXPECT_EQ(seen[2], 6);
  EXPECT_EQ(seen[3], 1);
  EXPECT_EQ(st.smps, 1u + 3 + 6 + 1);
}

// A Set that never gets an answer (its switch is gone) costs two rounds when nothing else is answered late.
TEST_F(PhaseRunnerTest, ASilentSetAloneIsGivenUpAfterTwoRounds) {
  behaviour[2].silentAttempts = -1;
  size_t failures = 0;
  PhaseStats st = runPhase(engine, clock, "x", PhaseOptions{.secondPass = true}, [&](PhaseRunner& phase) {
    for (uint32_t mod : {0u, 1u, 2u})
      phase.submit(set(mad::kAttrLft, mod), [&](const SmpAnswer& a) {
        failures += !a.ok;
        EXPECT_EQ(a.attrMod, a.ok ? a.attrMod : 2u);
      });
  });
  EXPECT_EQ(failures, 1u);
  EXPECT_EQ(st.secondPass, 1u);
  EXPECT_EQ(seen[2], 4);
}

// Rounds go on while they get answers (loss on every port of a large fabric), up to kMaxSmpRounds in all.
TEST_F(PhaseRunnerTest, RoundsGoOnWhileTheyGetAnswers) {
  behaviour[0].silentAttempts = 2;   // answered in round 2
  behaviour[1].silentAttempts = 4;   // answered in round 3 (round 2 got an answer)
  behaviour[2].silentAttempts = -1;  // rounds 2, 3 and 4, then given up
  std::vector<uint32_t> order;
  PhaseStats st = runPhase(engine, clock, "x", PhaseOptions{.secondPass = true}, [&](PhaseRunner& phase) {
    for (uint32_t mod : {0u, 1u, 2u})
      phase.submit(set(mad::kAttrLft, mod), [&, mod](const SmpAnswer& a) {
        if (a.ok) order.push_back(mod);
      });
  });
  EXPECT_EQ(order, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(st.errors, 1u);
  EXPECT_EQ(seen[0], 3);
  EXPECT_EQ(seen[1], 5);
  EXPECT_EQ(seen[2], 8);
}

TEST_F(PhaseRunnerTest, PortInfoRefusedAfterALostAnswerCountsAsApplied) {
  // The first attempt took effect but its answer was lost: the retry is refused with 0x1C.
  behaviour[1].silentAttempts = 1;
  behaviour[1].status = 0x1C;
  behaviour[2].status = 0x1C;  // refused at once: a real error
  behaviour[3].silentAttempts = 1;
  behaviour[3].status = 0x1C;  // not PortInfo: a real error too
  std::map<uint32_t, bool> ok;
  PhaseStats st = runPhase(engine, clock, "x", PhaseOptions{}, [&](PhaseRunner& phase) {
    phase.submit(set(mad::kAttrPortInfo, 1), [&](const SmpAnswer& a) { ok[1] = a.ok; });
    phase.submit(set(mad::kAttrPortInfo, 2), [&](const SmpAnswer& a) { ok[2] = a.ok; });
    phase.submit(set(mad::kAttrLft, 3), [&](const SmpAnswer& a) { ok[3] = a.ok; });
  });
  EXPECT_EQ(ok, (std::map<uint32_t, bool>{{1, true}, {2, false}, {3, false}}));
  EXPECT_EQ(st.errors, 2u);
}

TEST_F(PhaseRunnerTest, FailuresThatAreAnswersAreNotErrors) {
  behaviour[0].silentAttempts = -1;
  bool called = false;
  PhaseStats st = runPhase(engine, clock, "probe", PhaseOptions{.secondPass = true}, [&](PhaseRunner& phase) {
    phase.submit(
        set(mad::kAttrArInfo, 0), [&](const SmpAnswer& a) { called = !a.ok; }, mad::RequestOptions{20ms, 0u},
        false);
  });
  EXPECT_TRUE(called);
  EXPECT_EQ(st.errors, 0u);
  EXPECT_EQ(st.smps, 2u);  // one attempt, and the second pass
  EXPECT_EQ(st.secondPass, 1u);
}

TEST_F(PhaseRunnerTest, WaitLetsAPhaseGoOnWithWhatItLearnt) {
  PhaseRunner phase(engine, clock, "read-then-write");
  int reads = 0;
  phase.submit(set(mad::kAttrPKeyTable, 0), [&](const SmpAnswer& a) { reads += a.ok; });
  phase.wait();
  EXPECT_EQ(reads, 1);
  phase.submit(set(mad::kAttrPKeyTable, 1), nullptr);
  PhaseStats st = phase.finish();
  EXPECT_EQ(st.smps, 2u);
  EXPECT_EQ(st.errors, 0u);
}

TEST(KnownBlocks, ABlockIsKnownOnlyOnceStoredAndUntilForgotten) {
  KnownBlocks<int> t;
  t.grow(3);
  EXPECT_EQ(t.size(), 3u);
  EXPECT_FALSE(t.holds(0, 0));  // never written: unknown, even if it matches the default
  t.store(1, 7);
  EXPECT_TRUE(t.holds(1, 7));
  EXPECT_FALSE(t.holds(1, 8));
  t.markUnknown(1);
  EXPECT_FALSE(t.holds(1, 7));
  t.store(2, 5);
  t.grow(2);  // never shrinks
  EXPECT_EQ(t.size(), 3u);
  t.forgetAll();
  EXPECT_FALSE(t.known(2));
  EXPECT_FALSE(t.holds(9, 0));  // past the end
}

TEST(SwitchCache, ForgetsSwitchesOneByOneOrByPredicate) {
  SwitchCache<KnownBlocks<int>> c;
  c[fabric::Guid{1}].store(0, 1);
  c[fabric::Guid{2}].store(0, 2);
  c[fabric::Guid{3}].store(0, 3);
  ASSERT_TRUE(c.find(fabric::Guid{2}));
  EXPECT_TRUE(c.find(fabric::Guid{2})->holds(0, 2));
  c.forget(fabric::Guid{2});
  EXPECT_FALSE(c.find(fabric::Guid{2}));
  c.retain([](fabric::Guid g) { return g.value == 3; });
  EXPECT_FALSE(c.find(fabric::Guid{1}));
  EXPECT_TRUE(c.find(fabric::Guid{3}));
  c.clear();
  EXPECT_FALSE(c.find(fabric::Guid{3}));
}

}  // namespace
}  // namespace ibsm::daemon
