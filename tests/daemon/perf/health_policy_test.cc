#include "daemon/perf/health_policy.h"

#include <gtest/gtest.h>

#include "tests/daemon/perf/perf_fixture.h"

namespace ibsm::daemon::testing {
namespace {

using Kind = HealthDecision::Kind;
using mad::PerfCounter;

// The records of the fixture's fabric as a counter sweep leaves them: every linked port read in sweep `n`,
// over an interval of 60 s, with `errors` symbol errors on the ports given.
struct Sweeps {
  std::vector<PortRecord> records;
  uint64_t n = 0;
  Sweeps() {
    for (auto [g, p] : std::vector<PortId>{
             {kHostA, 1}, {kSw0, 1}, {kSw0, 2}, {kSw0, 3}, {kSw1, 1}, {kSw1, 2}, {kSw1, 3}, {kHostB, 1}}) {
      PortRecord r;
      r.node = g;
      r.port = p;
      records.push_back(r);
    }
  }
  const std::vector<PortRecord>& next(std::map<PortId, uint64_t> symbolErrors = {},
                                      mad::Duration interval = 60s) {
    ++n;
    for (PortRecord& r : records) {
      r.sweep = n;
      r.lastInterval = interval;
      r.lastErrors = {};
      auto it = symbolErrors.find({r.node, r.port});
      if (it != symbolErrors.end()) r.lastErrors[static_cast<size_t>(PerfCounter::kSymbolError)] = it->second;
    }
    return records;
  }
};

struct HealthPolicyTest : ::testing::Test {
  std::shared_ptr<const SubnetSnapshot> snap = twoSwitchSnapshot();
  mad::TimePoint now{};
  Sweeps sweeps;
  HealthOptions options() {
    HealthOptions o;
    o.action = HealthAction::kIsolate;
    o.thresholds[static_cast<size_t>(PerfCounter::kSymbolError)] = 10;  // per minute
    o.cleanPeriod = 300s;
    return o;
  }
  std::vector<HealthDecision> evaluate(HealthPolicy& p, std::map<PortId, uint64_t> errors = {},
                                       mad::Duration interval = 60s) {
    now += interval;
    const std::vector<PortRecord>& records = sweeps.next(std::move(errors), interval);
    return p.evaluate(records, sweeps.n, *snap->topology, now);
  }
};

TEST_F(HealthPolicyTest, ReportOnlyWarns) {
  HealthOptions o = options();
  o.action = HealthAction::kReport;
  HealthPolicy p(o);
  auto d = evaluate(p, {{{kSw0, 2}, 11}});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].kind, Kind::kWarning);
  EXPECT_STREQ(d[0].id(), "HLTH001");
  EXPECT_NE(d[0].text.find("symbol_error +11.0/min (threshold 10.0/min)"), std::string::npos) << d[0].text;
  EXPECT_TRUE(p.isolatedPorts().empty());
  EXPECT_EQ(p.status()[2].state, PortHealthState::kWarning);
  EXPECT_TRUE(evaluate(p, {{{kSw0, 2}, 50}}).empty());  // still a warning: said once
}

TEST_F(HealthPolicyTest, RatesArePerMinute) {
  HealthPolicy p(options());
  EXPECT_TRUE(evaluate(p, {{{kSw0, 2}, 4}}, 30s).empty());  // 8 a minute
  auto d = evaluate(p, {{{kSw0, 2}, 6}}, 30s);              // 12 a minute
  ASSERT_FALSE(d.empty());
  EXPECT_EQ(d[0].kind, Kind::kWarning);
}

TEST_F(HealthPolicyTest, IsolatesTheLinkAndKeepsItOutUntilTheCleanPeriodIsOver) {
  HealthPolicy p(options());
  auto d = evaluate(p, {{{kSw0, 2}, 1000}});
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].kind, Kind::kWarning);
  EXPECT_EQ(d[1].kind, Kind::kIsolated);
  EXPECT_STREQ(d[1].id(), "HLTH002");
  EXPECT_EQ(d[1].peer, (PortId{kSw1, 2}));
  EXPECT_NE(d[1].text.find("sw0/2 <-> sw1/2"), std::string::npos) << d[1].text;
  EXPECT_EQ(p.isolatedPorts(), (std::vector<PortId>{{kSw0, 2}, {kSw1, 2}}));
  // Clean for 4 minutes: still out; the fifth clean minute ends it.
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(evaluate(p).empty());
  d = evaluate(p);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].kind, Kind::kRestored);
  EXPECT_TRUE(p.isolatedPorts().empty());
  EXPECT_EQ(p.status()[2].state, PortHealthState::kOk);
}

TEST_F(HealthPolicyTest, ABadSampleRestartsTheCleanPeriod) {
  HealthPolicy p(options());
  evaluate(p, {{{kSw0, 2}, 1000}});
  for (int i = 0; i < 3; ++i) evaluate(p);
  evaluate(p, {{{kSw0, 2}, 20}});
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(evaluate(p).empty());
  EXPECT_EQ(p.isolatedLinks(), 1u);
  EXPECT_EQ(evaluate(p).size(), 1u);
  EXPECT_EQ(p.isolatedLinks(), 0u);
}

TEST_F(HealthPolicyTest, NeverCutsANodeOff) {
  HealthPolicy p(options());
  // host-a's only link, and then both parallel links between the switches: the second would split the
  // fabric.
  auto d = evaluate(p, {{{kSw0, 1}, 1000}, {{kSw0, 2}, 1000}, {{kSw0, 3}, 1000}});
  std::vector<Kind> kinds;
  for (const auto& x : d) kinds.push_back(x.kind);
  EXPECT_EQ(kinds, (std::vector<Kind>{Kind::kWarning, Kind::kRefused, Kind::kWarning, Kind::kIsolated,
                                      Kind::kWarning, Kind::kRefused}));
  EXPECT_STREQ(d[1].id(), "HLTH003");
  EXPECT_NE(d[1].text.find("would cut 3 node(s) off"), std::string::npos) << d[1].text;  // the SM sits there
  EXPECT_NE(d[5].text.find("would cut 2 node(s) off"), std::string::npos) << d[5].text;
  EXPECT_EQ(p.isolatedLinks(), 1u);
  EXPECT_TRUE(evaluate(p, {{{kSw0, 1}, 1000}}).empty());  // refused once, not on every sweep
}

// The first read has no interval: its counts are of unknown age. A watched counter found above zero is a
// warning; with isolate, a count past start_threshold isolates the link at once, and a port whose link cannot
// go yet (its loss would split the fabric) is isolated at the first later sweep where it can, with no further
// increase. Counters that are not watched, and counts at or under the threshold, isolate nothing.
TEST_F(HealthPolicyTest, CountsFoundAtStartWarnAndPastTheStartThresholdIsolate) {
  HealthOptions o = options();
  o.startThreshold = 1000;
  HealthPolicy p(o);
  auto found = [&](PortId port, PerfCounter c, uint64_t n) {
    for (PortRecord& r : sweeps.records)
      if (PortId{r.node, r.port} == port) r.found[static_cast<size_t>(c)] = n;
  };
  found({kSw0, 2}, PerfCounter::kSymbolError, 60000);
  found({kSw0, 3}, PerfCounter::kSymbolError, 60000);
  found({kSw1, 1}, PerfCounter::kSymbolError, 1000);  // not past the threshold: a warning only
  found({kSw1, 3}, PerfCounter::kVl15Dropped, 5);     // not watched
  auto d = evaluate(p, {}, 0s);
  std::vector<Kind> kinds;
  for (const auto& x : d) kinds.push_back(x.kind);
  EXPECT_EQ(kinds, (std::vector<Kind>{Kind::kWarning, Kind::kIsolated, Kind::kWarning, Kind::kRefused,
                                      Kind::kWarning}));
  EXPECT_NE(d[0].text.find("sw0/2 counters found at start, interval unknown: symbol_error 60000"),
            std::string::npos)
      << d[0].text;
  EXPECT_NE(d[1].text.find("isolating sw0/2 <-> sw1/2: found at start"), std::string::npos) << d[1].text;
  EXPECT_NE(d[4].text.find("sw1/1 counters found at start"), std::string::npos) << d[4].text;
  EXPECT_EQ(p.status()[2].reason, "found at start, interval unknown: symbol_error 60000");
  EXPECT_EQ(p.isolatedPorts(), (std::vector<PortId>{{kSw0, 2}, {kSw1, 2}}));
  // Counters cleared after the read: the next samples show no increase. Once sw0/2's link is back, sw0/3's
  // can go.
  EXPECT_TRUE(evaluate(p).empty());
  ASSERT_TRUE(p.release({kSw0, 2}, now));
  d = evaluate(p);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].kind, Kind::kIsolated);
  EXPECT_EQ(p.isolatedPorts(), (std::vector<PortId>{{kSw0, 3}, {kSw1, 3}}));
  // Report: the same warnings, nothing isolated.
  o.action = HealthAction::kReport;
  HealthPolicy report(o);
  const std::vector<PortRecord>& first = sweeps.next({}, 0s);
  for (const auto& x : report.evaluate(first, sweeps.n, *snap->topology, now))
    EXPECT_EQ(x.kind, Kind::kWarning) << x.text;
  EXPECT_EQ(report.status()[2].state, PortHealthState::kWarning);
  EXPECT_TRUE(report.isolatedPorts().empty());
}

TEST_F(HealthPolicyTest, MaxIsolatedCapsTheIsolations) {
  HealthOptions o = options();
  o.maxIsolated = 0;
  HealthPolicy p(o);
  auto d = evaluate(p, {{{kSw0, 2}, 1000}});
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[1].kind, Kind::kRefused);
  EXPECT_NE(d[1].text.find("health.max_isolated (0)"), std::string::npos) << d[1].text;
}

TEST_F(HealthPolicyTest, ReleaseByEitherEnd) {
  HealthPolicy p(options());
  evaluate(p, {{{kSw0, 2}, 1000}});
  EXPECT_FALSE(p.release({kSw0, 3}, now).ok());
  auto r = p.release({kSw1, 2}, now);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->kind, Kind::kRestored);
  EXPECT_TRUE(p.isolatedPorts().empty());
  EXPECT_EQ(p.status()[2].state, PortHealthState::kOk);
  // Still bad at the next sweep: isolated again.
  auto d = evaluate(p, {{{kSw0, 2}, 1000}});
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[1].kind, Kind::kIsolated);
}

TEST_F(HealthPolicyTest, AnIsolatedPortThatCannotBeReadComesBackAfterTheCleanPeriod) {
  HealthPolicy p(options());
  evaluate(p, {{{kSw0, 2}, 1000}});
  sweeps.records[2].sweep = 0;  // sw0 is not read any more
  for (int i = 0; i < 4; ++i) {
    now += 60s;
    EXPECT_TRUE(p.evaluate(sweeps.records, ++sweeps.n, *snap->topology, now).empty());
  }
  now += 60s;
  auto d = p.evaluate(sweeps.records, ++sweeps.n, *snap->topology, now);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].kind, Kind::kRestored);
  EXPECT_NE(d[0].text.find("could not be read"), std::string::npos);
}

TEST_F(HealthPolicyTest, SwitchingToReportRoutesTheIsolatedLinksAgain) {
  HealthPolicy p(options());
  evaluate(p, {{{kSw0, 2}, 1000}});
  HealthOptions o = options();
  o.action = HealthAction::kReport;
  p.setOptions(o);
  auto d = evaluate(p);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].kind, Kind::kRestored);
  EXPECT_EQ(p.status()[2].state, PortHealthState::kWarning);  // not clean for long enough yet
}

}  // namespace
}  // namespace ibsm::daemon::testing
