#include "daemon/perf/perf_manager.h"

#include <gtest/gtest.h>

#include "tests/daemon/perf/perf_fixture.h"

namespace ibsm::daemon::testing {
namespace {

using mad::PerfCounter;
using mad::PerfData;

struct PerfManagerTest : ::testing::Test {
  mad::FakeClock clock;
  mad::FakeMadPort port{clock};
  mad::MadEngine engine{port, clock, {32, 100ms, 7}};  // the daemon's default retries
  FakePma pma;
  std::shared_ptr<const SubnetSnapshot> snap = twoSwitchSnapshot();
  PerfManager perf{engine, clock, {60s, 4}};

  PerfManagerTest() {
    port.setResponder([this](const mad::MadPacket& m) { return pma(m); });
  }
  // One whole counter sweep, now.
  PerfManager::SweepStats sweep(bool clear = true) {
    perf.sweepNow();
    for (int i = 0; i < 1000; ++i) {
      if (auto done = perf.tick(snap, clear)) return *done;
      engine.poll(1ms);
    }
    ADD_FAILURE() << "the counter sweep did not finish";
    return {};
  }
  const PortRecord& rec(fabric::Guid node, uint8_t p) {
    const PortRecord* r = perf.find(node, p);
    EXPECT_NE(r, nullptr);
    static const PortRecord kNone;
    return r ? *r : kNone;
  }
};

TEST_F(PerfManagerTest, ReadsEveryLinkedPortAfterItsNodesClassPortInfo) {
  PerfManager::SweepStats s = sweep();
  // 2 CA ports + 3 linked ports on each switch; one ClassPortInfo per node, then never again.
  EXPECT_EQ(s.ports, 8u);
  EXPECT_EQ(pma.cpis, 4u);
  EXPECT_EQ(pma.gets, 8u);
  EXPECT_EQ(pma.exts, 0u);  // no PMA says it has PortCountersExtended
  EXPECT_EQ(s.gmps, 12u);
  EXPECT_EQ(s.failed, 0u);
  EXPECT_EQ(perf.ports().size(), 8u);
  EXPECT_EQ(rec(kSw1, 3).lid, 2);  // a switch's ports are read at its port-0 LID
  EXPECT_EQ(rec(kHostB, 1).lid, 4);
  EXPECT_EQ(perf.find(kSw0, 4), nullptr);  // not linked
  sweep();
  EXPECT_EQ(pma.cpis, 4u);
}

TEST_F(PerfManagerTest, MasterKeeps64BitTotalsAndClearsWhatItRead) {
  pma.error(1, 2, PerfCounter::kSymbolError) = 100;
  sweep();
  EXPECT_EQ(rec(kSw0, 2).errors[static_cast<size_t>(PerfCounter::kSymbolError)], 100u);
  EXPECT_EQ(pma.error(1, 2, PerfCounter::kSymbolError), 0u);  // cleared
  EXPECT_EQ(pma.sets, 1u);                                    // only the port that had errors
  clock.advance(30s);
  pma.error(1, 2, PerfCounter::kSymbolError) = 0xFFFF;  // saturated
  sweep();
  const PortRecord& r = rec(kSw0, 2);
  EXPECT_EQ(r.errors[static_cast<size_t>(PerfCounter::kSymbolError)], 100u + 0xFFFF);
  EXPECT_EQ(r.lastErrors[static_cast<size_t>(PerfCounter::kSymbolError)], 0xFFFFu);
  EXPECT_GE(r.lastInterval, 30s);
  EXPECT_EQ(pma.error(1, 2, PerfCounter::kSymbolError), 0u);
}

TEST_F(PerfManagerTest, StandbyReadsWithoutClearing) {
  pma.error(2, 1, PerfCounter::kLinkDowned) = 3;
  sweep(false);
  pma.error(2, 1, PerfCounter::kLinkDowned) = 5;
  sweep(false);
  EXPECT_EQ(pma.sets, 0u);
  EXPECT_EQ(rec(kSw1, 1).errors[static_cast<size_t>(PerfCounter::kLinkDowned)], 5u);
  EXPECT_EQ(rec(kSw1, 1).lastErrors[static_cast<size_t>(PerfCounter::kLinkDowned)], 2u);
  // Someone (the master) cleared it meanwhile: what it holds now is all new.
  pma.error(2, 1, PerfCounter::kLinkDowned) = 1;
  sweep(false);
  EXPECT_EQ(rec(kSw1, 1).errors[static_cast<size_t>(PerfCounter::kLinkDowned)], 6u);
}

TEST_F(PerfManagerTest, DataFromPortCountersExtendedWhereTheClassPortInfoSaysSo) {
  pma.capMask[2] = mad::kPmExtendedWidth;
  pma.extended[{2, 2}].data[static_cast<size_t>(PerfData::kXmitData)] = 1ull << 40;  // 4-byte words
  pma.counters[{1, 2}].data[static_cast<size_t>(PerfData::kRcvPkts)] = 7;
  sweep();
  EXPECT_EQ(pma.exts, 3u);  // sw1's three linked ports
  EXPECT_TRUE(rec(kSw1, 2).extended);
  EXPECT_FALSE(rec(kSw0, 2).extended);
  EXPECT_EQ(rec(kSw1, 2).data[static_cast<size_t>(PerfData::kXmitData)], 4ull << 40);
  EXPECT_EQ(rec(kSw0, 2).data[static_cast<size_t>(PerfData::kRcvPkts)], 7u);
  // 32-bit data counters are cleared by the master only past half their range.
  EXPECT_EQ(pma.sets, 0u);
  pma.counters[{1, 2}].data[static_cast<size_t>(PerfData::kRcvPkts)] = 0x90000000u;
  sweep();
  EXPECT_EQ(pma.sets, 1u);
  EXPECT_EQ(rec(kSw0, 2).data[static_cast<size_t>(PerfData::kRcvPkts)], 0x90000000u);
}

TEST_F(PerfManagerTest, FewGmpsInFlightAndNoneWhileTheEngineHasAQueue) {
  // The PMAs answer; the SMAs hold every SMP.
  port.setResponder([&](const mad::MadPacket& m) {
    return m.bytes[1] == mad::kClassPerf ? pma(m) : std::vector<mad::MadPacket>{};
  });
  perf.sweepNow();
  perf.tick(snap, true);
  EXPECT_EQ(engine.inFlight(), 4u);  // maxInFlight, not the engine's window of 32
  // The SM's own work fills the engine's window and queues behind it.
  for (int i = 0; i < 40; ++i)
    engine.submit(mad::makeLidRoutedSmp(mad::kGet, mad::kAttrNodeInfo, 0, 1), nullptr);
  engine.poll(0ms);  // the four GMPs are answered; four more SMPs take their places
  EXPECT_EQ(engine.inFlight(), 32u);
  EXPECT_EQ(engine.queued(), 8u);
  perf.tick(snap, true);
  EXPECT_EQ(engine.queued(), 8u);  // the performance manager waits for the SM's queue to drain
  EXPECT_TRUE(perf.sweeping());
}

TEST_F(PerfManagerTest, UnansweredAndMisdirectedAnswersAreCountedNotTrusted) {
  pma.silent.insert(4);      // host-b
  pma.liars.insert({1, 3});  // sw0 answers port 3 about port 4
  pma.error(1, 3, PerfCounter::kSymbolError) = 9;
  PerfManager::SweepStats s = sweep();
  EXPECT_EQ(s.failed, 2u);
  EXPECT_EQ(s.gmps, 4u + 8u + 2u);  // host-b's two GMPs went out twice (one retry), not 8 times
  EXPECT_FALSE(rec(kSw0, 3).seen);
  EXPECT_EQ(rec(kSw0, 3).errors[0], 0u);
  EXPECT_EQ(pma.sets, 0u);
}

TEST_F(PerfManagerTest, SweepsFollowTheInterval) {
  EXPECT_FALSE(perf.tick(snap, true));
  EXPECT_FALSE(perf.sweeping());  // the first one is an interval after start
  clock.advance(60s);
  perf.tick(snap, true);
  EXPECT_TRUE(perf.sweeping());
  for (int i = 0; i < 100 && perf.sweeping(); ++i) {
    engine.poll(1ms);
    perf.tick(snap, true);
  }
  EXPECT_FALSE(perf.sweeping());
  perf.tick(snap, true);
  EXPECT_FALSE(perf.sweeping());  // the next one is another 60 s away
  perf.setOptions({0s, 4});
  clock.advance(120s);
  perf.tick(snap, true);
  EXPECT_FALSE(perf.sweeping());  // 0: off
}

}  // namespace
}  // namespace ibsm::daemon::testing
