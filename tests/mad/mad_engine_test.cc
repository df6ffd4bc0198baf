#include "mad/mad_engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "mad/fake_mad_port.h"

namespace ibsm::mad {
namespace {

using namespace std::chrono_literals;

MadPacket nodeInfoGet(uint8_t hop = 1) {
  fabric::DrPath path;
  path = *path.extended(hop);
  return makeDirectedSmp(kGet, kAttrNodeInfo, 0, path);
}

struct EngineTest : ::testing::Test {
  FakeClock clock;
  FakeMadPort port{clock};
  MadEngineOptions options{4, 100ms, 2};
};

TEST_F(EngineTest, MatchesResponsesByTid) {
  port.setResponder([](const MadPacket& req) { return std::vector<MadPacket>{makeResponse(req)}; });
  MadEngine engine(port, clock, options);
  int done = 0;
  for (int i = 0; i < 10; ++i)
    engine.submit(nodeInfoGet(), [&](const MadResult& r) {
      EXPECT_TRUE(r.ok());
      EXPECT_EQ(r.attempts, 1u);
      EXPECT_EQ(r.header.attrId, kAttrNodeInfo);
      ++done;
    });
  engine.runUntilIdle();
  EXPECT_EQ(done, 10);
  EXPECT_EQ(engine.counters().sent, 10u);
  EXPECT_EQ(engine.counters().responses, 10u);
  EXPECT_EQ(engine.counters().timeouts, 0u);
}

TEST_F(EngineTest, WindowIsNeverExceeded) {
  std::vector<MadPacket> held;
  MadEngine* enginePtr = nullptr;
  size_t maxSeen = 0;
  // The responder holds every request; the test answers them in bursts, in reverse order.
  port.setResponder([&](const MadPacket& req) {
    held.push_back(req);
    maxSeen = std::max(maxSeen, enginePtr->inFlight() + 1);
    return std::vector<MadPacket>{};
  });
  MadEngine engine(port, clock, options);
  enginePtr = &engine;
  int done = 0;
  for (int i = 0; i < 50; ++i) engine.submit(nodeInfoGet(), [&](const MadResult& r) { done += r.ok(); });
  EXPECT_EQ(engine.inFlight(), 4u);
  EXPECT_EQ(engine.queued(), 46u);
  while (!engine.idle()) {
    auto batch = std::move(held);
    held.clear();
    std::reverse(batch.begin(), batch.end());  // out of order
    for (auto& r : batch) port.inject(makeResponse(r));
    engine.poll(0ms);
  }
  EXPECT_EQ(done, 50);
  EXPECT_LE(maxSeen, 4u);
  EXPECT_EQ(engine.maxInFlightSeen(), 4u);
}

// An urgent request (a standby's poll of its master, a sweep's probe) goes out before the queued ones, not
// behind a sweep; urgent ones among themselves in the order submitted.
TEST_F(EngineTest, AnUrgentRequestIsSentBeforeTheQueue) {
  std::vector<uint32_t> order;  // the attribute modifier of each request as it is sent
  port.setResponder([&](const MadPacket& req) {
    order.push_back(parseHeader(req)->attrMod);
    return std::vector<MadPacket>{makeResponse(req)};
  });
  MadEngine engine(port, clock, options);
  const fabric::DrPath path = *fabric::DrPath{}.extended(1);
  for (int i = 0; i < 20; ++i)
    engine.submit(makeDirectedSmp(kGet, kAttrNodeInfo, 0, path), [](const MadResult&) {});
  RequestOptions urgent;
  urgent.urgent = true;
  for (uint32_t mod : {7u, 8u})
    engine.submit(
        makeDirectedSmp(kGet, kAttrNodeInfo, mod, path), [](const MadResult&) {}, urgent);
  engine.runUntilIdle();
  ASSERT_EQ(order.size(), 22u);
  const auto at = std::find(order.begin(), order.end(), 7u) - order.begin();
  EXPECT_EQ(at, 4);  // right after the window of 4 that was already out
  EXPECT_EQ(order[5], 8u);
}

// A sweep that stops cancels what it queued and nobody else's: each cancelled request completes at once.
TEST_F(EngineTest, CancelQueuedCompletesOnlyTheOwnersRequestsNotSentYet) {
  std::vector<MadPacket> held;
  port.setResponder([&](const MadPacket& req) {
    held.push_back(req);
    return std::vector<MadPacket>{};
  });
  MadEngine engine(port, clock, options);
  int mine = 0, cancelled = 0, theirs = 0;
  RequestOptions own;
  own.owner = &mine;
  for (int i = 0; i < 10; ++i)
    engine.submit(
        nodeInfoGet(), [&](const MadResult& r) { r.status == MadStatus::kCancelled ? ++cancelled : ++mine; },
        own);
  engine.submit(nodeInfoGet(), [&](const MadResult& r) { theirs += r.ok(); });
  EXPECT_EQ(engine.cancelQueued(&mine), 6u);  // 4 were out already
  EXPECT_EQ(cancelled, 6);
  EXPECT_EQ(engine.queued(), 1u);
  while (!engine.idle()) {
    auto batch = std::move(held);
    held.clear();
    for (auto& r : batch) port.inject(makeResponse(r));
    engine.poll(0ms);
  }
  EXPECT_EQ(mine, 4);
  EXPECT_EQ(theirs, 1);
  EXPECT_EQ(engine.counters().sent, 5u);
}

TEST_F(EngineTest, TimesOutAndRetriesThenFails) {
  MadEngine engine(port, clock, options);  // no responder: nothing ever answers
  MadResult result;
  bool called = false;
  auto start = clock.now();
  engine.submit(nodeInfoGet(), [&](const MadResult& r) {
    result = r;
    called = true;
  });
  engine.runUntilIdle();
  ASSERT_TRUE(called);
  EXPECT_EQ(result.status, MadStatus::kTimeout);
  EXPECT_EQ(result.attempts, 3u);  // first try + 2 retries
  EXPECT_EQ(engine.counters().timeouts, 3u);
  EXPECT_EQ(engine.counters().retries, 2u);
  EXPECT_EQ(engine.counters().failed, 1u);
  EXPECT_GE(clock.now() - start, 300ms);
  EXPECT_EQ(port.sent().size(), 3u);
  // Each attempt has its own TID.
  EXPECT_NE(getTid(port.sent()[0]), getTid(port.sent()[1]));
}

TEST_F(EngineTest, RetrySucceedsAfterLoss) {
  int calls = 0;
  port.setResponder([&](const MadPacket& req) {
    if (++calls == 1) return std::vector<MadPacket>{};  // first attempt lost
    return std::vector<MadPacket>{makeResponse(req)};
  });
  MadEngine engine(port, clock, options);
  MadResult result;
  engine.submit(nodeInfoGet(), [&](const MadResult& r) { result = r; });
  engine.runUntilIdle();
  EXPECT_TRUE(result.ok());
  EXPECT_EQ(result.attempts, 2u);
  EXPECT_EQ(engine.counters().retries, 1u);
}

TEST_F(EngineTest, TransportGiveUpStatusRetriesAtOnce) {
  int calls = 0;
  port.setResponder([&](const MadPacket& req) {
    MadPacket back = req;
    if (++calls == 1) {
      back.status = 110;  // what umad2sim returns for a dropped MAD
      return std::vector<MadPacket>{back};
    }
    return std::vector<MadPacket>{makeResponse(req)};
  });
  MadEngine engine(port, clock, options);
  MadResult result;
  auto start = clock.now();
  engine.submit(nodeInfoGet(), [&](const MadResult& r) { result = r; });
  engine.runUntilIdle();
  EXPECT_TRUE(result.ok());
  EXPECT_EQ(result.attempts, 2u);
  EXPECT_LT(clock.now() - start, 100ms);  // no waiting for the timer
}

TEST_F(EngineTest, LateResponseToEarlierAttemptIsIgnored) {
  std::vector<MadPacket> held;
  port.setResponder([&](const MadPacket& req) {
    held.push_back(req);
    return std::vector<MadPacket>{};
  });
  MadEngine engine(port, clock, options);
  int done = 0;
  engine.submit(nodeInfoGet(), [&](const MadResult& r) {
    ++done;
    EXPECT_EQ(r.attempts, 2u);
  });
  engine.poll(100ms);  // first attempt times out; the retry is sent
  ASSERT_EQ(held.size(), 2u);
  port.inject(makeResponse(held[0]));  // late answer to attempt 1
  engine.poll(0ms);
  EXPECT_EQ(done, 0);
  EXPECT_EQ(engine.counters().unexpected, 1u);
  port.inject(makeResponse(held[1]));
  engine.poll(0ms);
  EXPECT_EQ(done, 1);
}

TEST_F(EngineTest, ShortGarbledAndMismatchedResponsesAreCountedAndDropped) {
  std::vector<MadPacket> held;
  port.setResponder([&](const MadPacket& req) {
    held.push_back(req);
    return std::vector<MadPacket>{};
  });
  MadEngine engine(port, clock, options);
  MadResult result;
  engine.submit(nodeInfoGet(), [&](const MadResult& r) { result = r; });
  ASSERT_EQ(held.size(), 1u);

  MadPacket shortMad = makeResponse(held[0]);
  shortMad.size = 10;
  port.inject(shortMad);
  MadPacket badVersion = makeResponse(held[0]);
  badVersion.bytes[0] = 7;
  port.inject(badVersion);
  MadPacket wrongAttr = makeResponse(held[0]);
  wrongAttr.bytes[16] = 0x00;
  wrongAttr.bytes[17] = 0x15;  // PortInfo instead of NodeInfo, same TID
  port.inject(wrongAttr);
  MadPacket truncated = makeResponse(held[0]);
  truncated.size = 100;
  port.inject(truncated);
  MadPacket unknownTid = makeResponse(held[0]);
  setTid(unknownTid, 0xdeadbeef);
  port.inject(unknownTid);
  std::mt19937 rng(7);
  for (int i = 0; i < 200; ++i) {  // random garbage of random length
    MadPacket g;
    g.size = rng() % (kMadSize + 1);
    for (auto& b : g.bytes) b = static_cast<uint8_t>(rng());
    port.inject(g);
  }
  engine.poll(0ms);
  EXPECT_FALSE(result.ok());
  EXPECT_GE(engine.counters().dropped, 4u);
  EXPECT_GE(engine.counters().unexpected, 1u);
  EXPECT_EQ(engine.counters().received, 205u);

  port.inject(makeResponse(held[0]));  // the real answer still completes the request
  engine.poll(0ms);
  EXPECT_TRUE(result.ok());
}

TEST_F(EngineTest, UnsolicitedRequestsGoToHandler) {
  MadEngine engine(port, clock, options);
  int traps = 0;
  engine.setUnsolicitedHandler([&](const MadPacket&, const MadHeader& h) {
    EXPECT_EQ(h.method, kTrap);
    ++traps;
  });
  MadPacket trap = makeLidRoutedSmp(kTrap, kAttrNotice, 0, 1);
  port.inject(trap);
  engine.poll(0ms);
  EXPECT_EQ(traps, 1);
  EXPECT_EQ(engine.counters().unsolicited, 1u);
}

TEST_F(EngineTest, SendErrorCompletesRequest) {
  port.failSends(true);
  MadEngine engine(port, clock, options);
  MadResult result;
  engine.submit(nodeInfoGet(), [&](const MadResult& r) { result = r; });
  engine.runUntilIdle();
  EXPECT_EQ(result.status, MadStatus::kSendError);
  EXPECT_EQ(engine.counters().sendErrors, 1u);
}

TEST_F(EngineTest, SmpRequestsCarryTheMkey) {
  port.setResponder([](const MadPacket& req) { return std::vector<MadPacket>{makeResponse(req)}; });
  MadEngine engine(port, clock, options);
  auto noop = [](const MadResult&) {};
  engine.submit(nodeInfoGet(), noop);  // before a key is set: none
  engine.setSmpMkey(0x1122334455667788);
  engine.submit(nodeInfoGet(), noop);
  engine.submit(makeLidRoutedSmp(kSet, kAttrPortInfo, 0, 5), noop);
  engine.submit(makeDirectedSmp(kGet, kAttrNodeInfo, 0, fabric::DrPath{}, 0x99), noop);  // its own key stays
  MadPacket sa;
  sa.bytes[0] = 1;
  sa.bytes[1] = kClassSubnAdm;
  sa.bytes[2] = 2;
  sa.bytes[3] = kGet;
  engine.submit(sa, noop);  // not an SMP: bytes 24..31 are SA's, left alone
  ASSERT_TRUE(engine.sendUnmatched(makeLidRoutedSmp(kTrapRepress, kAttrNotice, 0, 5)));
  ASSERT_TRUE(engine.sendUnmatched(makeResponse(nodeInfoGet())));  // an answer of ours: no key
  engine.runUntilIdle();
  std::vector<uint64_t> keys;
  for (const MadPacket& m : port.sent()) keys.push_back(getMadMkey(m));
  // In the order sent: the window (4) holds the first four; the two unmatched go at once; the SA MAD last.
  EXPECT_EQ(keys, (std::vector<uint64_t>{0, 0x1122334455667788, 0x1122334455667788, 0x99, 0x1122334455667788,
                                         0, 0}));
}

TEST_F(EngineTest, CompletionMaySubmitMore) {
  port.setResponder([](const MadPacket& req) { return std::vector<MadPacket>{makeResponse(req)}; });
  MadEngine engine(port, clock, options);
  int depth = 0;
  std::function<void(const MadResult&)> next = [&](const MadResult&) {
    if (++depth < 100) engine.submit(nodeInfoGet(), next);
  };
  engine.submit(nodeInfoGet(), next);
  engine.runUntilIdle();
  EXPECT_EQ(depth, 100);
}

// A burst far larger than the slots the engine keeps: every request completes once with its own answer, also
// when the last completion of the burst (which gives the burst's slots back) submits more.
TEST_F(EngineTest, ABurstCompletesOnceEachAndTheEngineGoesOnAfterIt) {
  port.setResponder([](const MadPacket& req) { return std::vector<MadPacket>{makeResponse(req)}; });
  MadEngine engine(port, clock, options);
  constexpr int kBurst = 10000;
  std::vector<int> completions(kBurst, 0);
  int after = 0;
  for (int i = 0; i < kBurst; ++i) {
    MadPacket mad = nodeInfoGet();
    mad.bytes[kSmpDataOffset] = static_cast<uint8_t>(i >> 8);  // the answer echoes it
    mad.bytes[kSmpDataOffset + 1] = static_cast<uint8_t>(i);
    engine.submit(mad, [&, i](const MadResult& r) {
      EXPECT_TRUE(r.ok());
      EXPECT_EQ(r.response.bytes[kSmpDataOffset] << 8 | r.response.bytes[kSmpDataOffset + 1], i);
      if (++completions[i] == 1 && i == kBurst - 1)
        engine.submit(nodeInfoGet(), [&](const MadResult& again) { after += again.ok(); });
    });
  }
  EXPECT_EQ(engine.queued() + engine.inFlight(), static_cast<size_t>(kBurst));
  engine.runUntilIdle();
  EXPECT_TRUE(std::all_of(completions.begin(), completions.end(), [](int c) { return c == 1; }));
  EXPECT_EQ(after, 1);
  EXPECT_TRUE(engine.idle());
  EXPECT_EQ(engine.counters().responses, static_cast<uint64_t>(kBurst + 1));
}

// A NodeInfo Get along `hops` hops (port 1 each).
MadPacket nodeInfoAt(unsigned hops) {
  fabric::DrPath path;
  for (unsigned i = 0; i < hops; ++i) path = *path.extended(1);
  return makeDirectedSmp(kGet, kAttrNodeInfo, 0, path);
}

// Adaptive timeouts. A responder that holds every request, so the test decides when (and whether) each is
// answered; `answerAfter` answers the last one held after `rtt` of simulated time.
struct AdaptiveTest : EngineTest {
  std::vector<MadPacket> held;
  std::vector<TimePoint> sentAt;
  AdaptiveTest() {
    options.minTimeout = 1ms;
    port.setResponder([this](const MadPacket& req) {
      held.push_back(req);
      sentAt.push_back(clock.now());
      return std::vector<MadPacket>{};
    });
  }
  void answerAfter(MadEngine& engine, Duration rtt) {
    clock.advance(rtt);
    port.inject(makeResponse(held.back()));
    engine.poll(0ms);
  }
  // n requests, each answered at its first attempt after rtt.
  void train(MadEngine& engine, const MadPacket& mad, Duration rtt, int n = 40) {
    for (int i = 0; i < n; ++i) {
      bool ok = false;
      engine.submit(mad, [&](const MadResult& r) { ok = r.ok(); });
      answerAfter(engine, rtt);
      EXPECT_TRUE(ok);
    }
  }
};

Duration near(Duration d) {
  return std::chrono::duration_cast<std::chrono::microseconds>(d);
}

TEST_F(AdaptiveTest, TimeoutFollowsTheRoundTripTimeOfEachHopCount) {
  MadEngine engine(port, clock, options);
  EXPECT_EQ(engine.adaptiveTimeout(1), 100ms);  // the configured timeout until a bucket has a sample
  train(engine, nodeInfoAt(1), 2ms);
  train(engine, nodeInfoAt(3), 6ms);
  train(engine, makeLidRoutedSmp(kGet, kAttrNodeInfo, 0, 5), 3ms);
  // A steady round trip leaves rttvar near 0: the timeout converges to the round trip itself.
  EXPECT_EQ(near(engine.adaptiveTimeout(1)), 2ms);
  EXPECT_EQ(near(engine.adaptiveTimeout(3)), 6ms);
  EXPECT_EQ(near(engine.adaptiveTimeout(MadEngine::kLidRouted)), 3ms);
  EXPECT_EQ(engine.adaptiveTimeout(2), 100ms);  // no sample of 2 hops yet
  // Jitter widens it (4 rttvar), and the first attempt of a 3-hop SMP now times out after that.
  for (int i = 0; i < 20; ++i) train(engine, nodeInfoAt(3), i % 2 ? 2ms : 10ms, 1);
  const Duration jittery = engine.adaptiveTimeout(3);
  EXPECT_GT(jittery, 10ms);
  EXPECT_LT(jittery, 30ms);
  // Never below the floor nor above the configured timeout.
  train(engine, nodeInfoAt(4), 0ms);
  EXPECT_EQ(engine.adaptiveTimeout(4), 1ms);
  train(engine, nodeInfoAt(5), 500ms, 3);
  EXPECT_EQ(engine.adaptiveTimeout(5), 100ms);
  held.clear();
  sentAt.clear();
  MadResult result;
  engine.submit(nodeInfoAt(3), [&](const MadResult& r) { result = r; });
  engine.poll(100ms);
  ASSERT_EQ(sentAt.size(), 2u);  // timed out and resent
  EXPECT_EQ(sentAt[1] - sentAt[0], jittery);
}

// Karn's rule: an answer to a resent request may belong to any of its attempts, so it is no sample.
TEST_F(AdaptiveTest, OnlyAnswersToFirstAttemptsAreSamples) {
  MadEngine engine(port, clock, options);
  MadResult result;
  engine.submit(nodeInfoAt(2), [&](const MadResult& r) { result = r; });
  engine.poll(100ms);  // the first attempt times out
  ASSERT_EQ(held.size(), 2u);
  answerAfter(engine, 1ms);  // the retry is answered
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result.attempts, 2u);
  EXPECT_EQ(engine.adaptiveTimeout(2), 100ms);  // still unsampled
  train(engine, nodeInfoAt(2), 4ms, 1);
  EXPECT_EQ(engine.adaptiveTimeout(2), 12ms);  // first sample: srtt 4, rttvar 2
}

// Each resend waits twice as long as the attempt before, up to twice the configured timeout.
TEST_F(AdaptiveTest, RetriesBackOffUpToTwiceTheConfiguredTimeout) {
  options.retries = 7;
  MadEngine engine(port, clock, options);
  train(engine, nodeInfoAt(1), 5ms);
  const Duration rto = engine.adaptiveTimeout(1);
  held.clear();
  sentAt.clear();
  MadResult result;
  engine.submit(nodeInfoAt(1), [&](const MadResult& r) { result = r; });
  engine.runUntilIdle();  // nothing answers
  EXPECT_EQ(result.status, MadStatus::kTimeout);
  ASSERT_EQ(sentAt.size(), 8u);
  for (size_t i = 1; i < sentAt.size(); ++i)
    EXPECT_EQ(sentAt[i] - sentAt[i - 1], std::min<Duration>(rto * (1 << (i - 1)), 200ms)) << i;
  // A caller's own timeout is kept for every attempt.
  sentAt.clear();
  engine.submit(
      nodeInfoAt(1), [&](const MadResult& r) { result = r; }, RequestOptions{30ms, 2u});
  engine.runUntilIdle();
  ASSERT_EQ(sentAt.size(), 3u);
  EXPECT_EQ(sentAt[1] - sentAt[0], 30ms);
  EXPECT_EQ(sentAt[2] - sentAt[1], 30ms);
}

// With the defaults (100 ms, 7 retries, 10 ms floor) and a fabric that answered at once so far (the timeout
// at its floor), 300 ms of total loss are outlasted: without the backoff the 8 attempts would span 80 ms.
TEST_F(AdaptiveTest, ABurstOfLossIsSurvivedWithTheDefaults) {
  options = MadEngineOptions{};
  MadEngine engine(port, clock, options);
  train(engine, nodeInfoAt(2), 0ms);
  ASSERT_EQ(engine.adaptiveTimeout(2), 10ms);
  const TimePoint burstEnd = clock.now() + 300ms;
  port.setResponder([&](const MadPacket& req) {
    if (clock.now() < burstEnd) return std::vector<MadPacket>{};
    return std::vector<MadPacket>{makeResponse(req)};
  });
  int ok = 0;
  for (int i = 0; i < 32; ++i) engine.submit(nodeInfoAt(2), [&](const MadResult& r) { ok += r.ok(); });
  engine.runUntilIdle();
  EXPECT_EQ(ok, 32);
  EXPECT_EQ(engine.counters().failed, 0u);
  EXPECT_LT(clock.now() - (burstEnd - 300ms), 800ms);  // and sooner than fixed 100 ms timeouts would give up
}

// With the defaults and the timeout at its floor, a MAD that is never answered is given up no sooner than
// with fixed 100 ms timeouts (8 x 100 ms): the backoff loses none of the old burst tolerance.
TEST_F(AdaptiveTest, AnUnansweredMadIsWaitedForAsLongAsWithFixedTimeouts) {
  options = MadEngineOptions{};
  MadEngine engine(port, clock, options);
  train(engine, nodeInfoAt(2), 0ms);
  ASSERT_EQ(engine.adaptiveTimeout(2), 10ms);
  port.setResponder([](const MadPacket&) { return std::vector<MadPacket>{}; });
  MadResult result;
  const TimePoint start = clock.now();
  engine.submit(nodeInfoAt(2), [&](const MadResult& r) { result = r; });
  engine.runUntilIdle();
  EXPECT_EQ(result.status, MadStatus::kTimeout);
  EXPECT_GE(clock.now() - start, 800ms);
}

// The fabric answered in 1 ms and now takes 35 ms (a starved simulator, a loaded host): without backing the
// bucket off every MAD would time out at the 10 ms floor and again at 20 ms, its answers dropped, and be
// answered only at its third attempt, never sampled. A timed-out first attempt doubles the bucket's wait
// until the next sample: after a few timeouts first attempts are answered again and the wait follows the new
// round trip. A sample ends the backoff.
TEST_F(AdaptiveTest, ASlowerFabricBacksTheWaitOffInsteadOfResendingEveryMad) {
  options = MadEngineOptions{};
  MadEngine engine(port, clock, options);
  train(engine, nodeInfoAt(2), 1ms);
  ASSERT_EQ(engine.adaptiveTimeout(2), 10ms);
  // Answers each held attempt 35 ms after it was sent, stepping the clock by 1 ms, until nothing is pending.
  std::vector<bool> answered;
  auto runSlow = [&] {
    while (!engine.idle()) {
      clock.advance(1ms);
      answered.resize(held.size(), false);
      for (size_t i = 0; i < held.size(); ++i)
        if (!answered[i] && clock.now() - sentAt[i] >= 35ms) {
          port.inject(makeResponse(held[i]));
          answered[i] = true;
        }
      engine.poll(0ms);
    }
  };
  int ok = 0;
  for (int i = 0; i < 20; ++i) {
    engine.submit(nodeInfoAt(2), [&](const MadResult& r) { ok += r.ok(); });
    runSlow();
  }
  EXPECT_EQ(ok, 20);
  EXPECT_LE(engine.counters().timeouts, 3u);  // 40 without the backoff: two per MAD
  EXPECT_GE(engine.adaptiveTimeout(2), 35ms);
  // Other buckets keep their own wait; a window of MADs timing out together backs off once.
  train(engine, nodeInfoAt(3), 1ms);
  ASSERT_EQ(engine.adaptiveTimeout(3), 10ms);
  for (int i = 0; i < 8; ++i) engine.submit(nodeInfoAt(3), [](const MadResult&) {});
  clock.advance(10ms);
  engine.poll(0ms);
  EXPECT_EQ(engine.adaptiveTimeout(3), 20ms);
  runSlow();
  train(engine, nodeInfoAt(3), 1ms, 1);  // a sample: the backoff ends
  EXPECT_LT(engine.adaptiveTimeout(3), 20ms);
}

}  // namespace
}  // namespace ibsm::mad
