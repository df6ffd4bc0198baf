// The SM's metrics as the exposition shows them: every family present from the start (so a dashboard has a
// series before the first event), the role as a state set, mirrored totals that never go down, sweeps and
// events as counters and histograms, traps and SA requests by label, and the port counters under the names
// and labels of infiniband_exporter.
#include "daemon/metrics/sm_metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

namespace ibsm::daemon {
namespace {

// The value of the sample `series` (name with its labels, as exposed), or NaN when absent.
double sample(const std::string& text, const std::string& series) {
  size_t at = 0;
  while ((at = text.find(series + " ", at)) != std::string::npos) {
    if (at == 0 || text[at - 1] == '\n') return std::stod(text.substr(at + series.size() + 1));
    at += series.size();
  }
  return std::nan("");
}

TEST(SmMetrics, EveryFamilyIsThereBeforeAnythingHappens) {
  SmMetrics m;
  const std::string t = m.exposition();
  for (std::string series :
       {"ibsm_sm_state", "ibsm_subnet_up", "ibsm_isolated_ports", "ibsm_sweeps_total{kind=\"heavy\"}",
        "ibsm_sweeps_total{kind=\"light\"}", "ibsm_sweep_duration_seconds_count{kind=\"heavy\"}",
        "ibsm_event_convergence_seconds_count{trigger=\"trap\"}",
        "ibsm_event_convergence_seconds_count{trigger=\"light_sweep\"}", "ibsm_routes_changed_total",
        "ibsm_lft_blocks_written_total", "ibsm_mads_sent_total", "ibsm_mad_timeouts_total",
        "ibsm_mad_retries_total", "ibsm_mad_failures_total", "ibsm_traps_malformed_total",
        "ibsm_sa_malformed_total", "ibsm_sm_role{role=\"master\"}"})
    EXPECT_EQ(sample(t, series), 0) << series << "\n" << t;
  EXPECT_EQ(t.find("infiniband_"), std::string::npos) << "no port counters before the first snapshot";
}

TEST(SmMetrics, StateIsAGaugeAndTheRoleAStateSet) {
  SmMetrics m;
  m.setState(3);
  m.setSubnetUp(true);
  std::string t = m.exposition();
  EXPECT_EQ(sample(t, "ibsm_sm_state"), 3);
  EXPECT_EQ(sample(t, "ibsm_sm_role{role=\"master\"}"), 1);
  EXPECT_EQ(sample(t, "ibsm_sm_role{role=\"standby\"}"), 0);
  EXPECT_EQ(sample(t, "ibsm_subnet_up"), 1);
  m.setState(2);
  m.setSubnetUp(false);
  t = m.exposition();
  EXPECT_EQ(sample(t, "ibsm_sm_role{role=\"master\"}"), 0);
  EXPECT_EQ(sample(t, "ibsm_sm_role{role=\"standby\"}"), 1);
  EXPECT_EQ(sample(t, "ibsm_subnet_up"), 0);
}

TEST(SmMetrics, MirroredTotalsFollowTheDaemonAndNeverGoDown) {
  SmMetrics m;
  SmMetrics::MadTotals mad;
  mad.sent = 100;
  mad.timeouts = 3;
  mad.retries = 2;
  mad.failed = 1;
  m.setMad(mad);
  EXPECT_EQ(sample(m.exposition(), "ibsm_mads_sent_total"), 100);
  mad.sent = 250;
  m.setMad(mad);
  m.setMad(mad);  // the same totals again change nothing
  std::string t = m.exposition();
  EXPECT_EQ(sample(t, "ibsm_mads_sent_total"), 250);
  EXPECT_EQ(sample(t, "ibsm_mad_timeouts_total"), 3);
  EXPECT_EQ(sample(t, "ibsm_mad_retries_total"), 2);
  EXPECT_EQ(sample(t, "ibsm_mad_failures_total"), 1);
  mad.sent = 10;  // a counter is never lowered (Prometheus would read a reset)
  m.setMad(mad);
  EXPECT_EQ(sample(m.exposition(), "ibsm_mads_sent_total"), 250);
}

TEST(SmMetrics, SweepsAndEventsAreCountedWithTheirDurations) {
  SmMetrics m;
  m.sweepDone(SmMetrics::SweepKind::kHeavy, 0.2, 40, 7);
  m.sweepDone(SmMetrics::SweepKind::kLight, 0.003, 0, 0);
  m.sweepDone(SmMetrics::SweepKind::kLight, 0.004, 0, 0);
  m.topologyEvent(SmMetrics::eventTrigger("trap 128 about LID 12"), 0.02, 5, 2);
  std::string t = m.exposition();
  EXPECT_EQ(sample(t, "ibsm_sweeps_total{kind=\"heavy\"}"), 1);
  EXPECT_EQ(sample(t, "ibsm_sweeps_total{kind=\"light\"}"), 2);
  EXPECT_EQ(sample(t, "ibsm_sweep_duration_seconds_count{kind=\"light\"}"), 2);
  EXPECT_NEAR(sample(t, "ibsm_sweep_duration_seconds_sum{kind=\"light\"}"), 0.007, 1e-9);
  EXPECT_EQ(sample(t, "ibsm_sweep_duration_seconds_bucket{kind=\"heavy\",le=\"0.25\"}"), 1);
  EXPECT_EQ(sample(t, "ibsm_sweep_duration_seconds_bucket{kind=\"heavy\",le=\"0.1\"}"), 0);
  EXPECT_EQ(sample(t, "ibsm_event_convergence_seconds_count{trigger=\"trap\"}"), 1);
  EXPECT_EQ(sample(t, "ibsm_routes_changed_total"), 45);
  EXPECT_EQ(sample(t, "ibsm_lft_blocks_written_total"), 9);
}

TEST(SmMetrics, EventTriggersComeFromTheCause) {
  EXPECT_EQ(SmMetrics::eventTrigger("trap 128 about LID 3"), "trap");
  EXPECT_EQ(SmMetrics::eventTrigger("light sweep: PortStateChange on 2 switch(es)"), "light_sweep");
  EXPECT_EQ(SmMetrics::eventTrigger("rebalance after the last repair"), "rebalance");
  EXPECT_EQ(SmMetrics::eventTrigger("hold-down of a flapping port ended"), "hold_down");
  EXPECT_EQ(SmMetrics::eventTrigger("something new"), "other");
}

TEST(SmMetrics, TrapsByNumberAndSaRequestsByAttributeAndStatus) {
  SmMetrics m;
  SmMetrics::TrapTotals traps;
  traps.byNumber = {{128, 3}, {144, 1}};
  traps.otherNumbers = 2;
  traps.duplicates = 1;
  m.setTraps(traps);
  SmMetrics::SaTotals sa;
  sa.byAttrStatus = {{{0x35, 0}, 9}, {{0x35, 0x0300}, 2}, {{0x99, 0x000C}, 1}};
  m.setSa(sa);
  std::string t = m.exposition();
  EXPECT_EQ(sample(t, "ibsm_traps_received_total{trap=\"128\"}"), 3);
  EXPECT_EQ(sample(t, "ibsm_traps_received_total{trap=\"144\"}"), 1);
  EXPECT_EQ(sample(t, "ibsm_traps_received_total{trap=\"other\"}"), 2);
  EXPECT_EQ(sample(t, "ibsm_traps_duplicate_total"), 1);
  EXPECT_EQ(sample(t, "ibsm_sa_requests_total{attribute=\"PathRecord\",status=\"ok\"}"), 9);
  EXPECT_EQ(sample(t, "ibsm_sa_requests_total{attribute=\"PathRecord\",status=\"no_records\"}"), 2);
  EXPECT_EQ(sample(t, "ibsm_sa_requests_total{attribute=\"0x0099\",status=\"method_attr_unsupported\"}"), 1);
}

TEST(SmMetrics, IsolatedPortsIsAGauge) {
  SmMetrics m;
  m.setIsolatedPorts(2);
  EXPECT_EQ(sample(m.exposition(), "ibsm_isolated_ports"), 2);
  m.setIsolatedPorts(0);
  EXPECT_EQ(sample(m.exposition(), "ibsm_isolated_ports"), 0);
}

TEST(PortCounterMetrics, NamesAndLabelsOfInfinibandExporter) {
  SmMetrics m;
  auto snap = std::make_shared<PortCounterSnapshot>();
  PortCounterRow sw;
  sw.isSwitch = true;
  sw.guid = fabric::Guid{0x506b4b03005d3101};
  sw.port = 3;
  sw.set(PortCounter::kSymbolError, 17);
  sw.set(PortCounter::kXmitData, 40);  // bytes
  sw.set(PortCounter::kLinkDowned, 0);
  PortCounterRow ca;
  ca.isSwitch = false;
  ca.guid = fabric::Guid{0x100000};
  ca.port = 1;
  ca.set(PortCounter::kRcvErrors, 4);
  snap->rows = {sw, ca};
  m.publishPortCounters(snap);
  std::string t = m.exposition();
  EXPECT_EQ(sample(t, "infiniband_switch_port_symbol_error_total{guid=\"0x506b4b03005d3101\",port=\"3\"}"),
            17);
  EXPECT_EQ(
      sample(t, "infiniband_switch_port_transmit_data_bytes_total{guid=\"0x506b4b03005d3101\",port=\"3\"}"),
      40);
  EXPECT_EQ(sample(t, "infiniband_switch_port_link_downed_total{guid=\"0x506b4b03005d3101\",port=\"3\"}"), 0);
  EXPECT_EQ(sample(t, "infiniband_hca_port_receive_errors_total{guid=\"0x0000000000100000\",port=\"1\"}"), 4);
  EXPECT_NE(t.find("# TYPE infiniband_switch_port_symbol_error_total counter"), std::string::npos);
  // A counter not read is not a zero: it is absent.
  EXPECT_EQ(t.find("infiniband_switch_port_receive_errors_total"), std::string::npos);
  EXPECT_EQ(t.find("infiniband_hca_port_symbol_error_total"), std::string::npos);
  EXPECT_EQ(metricSuffix(PortCounter::kExcessiveBufferOverrunErrors),
            "port_excessive_buffer_overrun_errors_total");
  EXPECT_EQ(ibaName(PortCounter::kXmitWait), "PortXmitWait");
  // A newer snapshot replaces the old one as a whole.
  m.publishPortCounters(std::make_shared<PortCounterSnapshot>());
  EXPECT_EQ(m.exposition().find("infiniband_"), std::string::npos);
}

// infiniband_exporter's info metrics, which its dashboards join the counters with.
//   S1 (switch, LID 1) port 2 <-> H1 (CA, LID 5) port 1
TEST(FabricInfoMetrics, SwitchesCasAndCablesAsTheExporterDescribesThem) {
  SmMetrics m;
  auto info = std::make_shared<FabricInfo>();
  info->nodes = {{true, fabric::Guid{0x200000}, "S1", 1}, {false, fabric::Guid{0x100000}, "H1 mlx5_0", 5}};
  info->links = {{0, 1, 2, 1, 5}, {1, 0, 1, 2, 1}};
  m.publishFabric(info);
  const std::string t = m.exposition();
  // Labels in the exporter's order.
  EXPECT_EQ(sample(t, "infiniband_switch_info{guid=\"0x0000000000200000\",switch=\"S1\",lid=\"1\"}"), 1) << t;
  EXPECT_EQ(sample(t, "infiniband_hca_info{guid=\"0x0000000000100000\",hca=\"H1 mlx5_0\",lid=\"5\"}"), 1)
      << t;
  EXPECT_EQ(sample(t,
                   "infiniband_switch_uplink_info{guid=\"0x0000000000200000\",port=\"2\",switch=\"S1\","
                   "uplink=\"H1 mlx5_0\",uplink_guid=\"0x0000000000100000\",uplink_type=\"CA\","
                   "uplink_port=\"1\",uplink_lid=\"5\"}"),
            1)
      << t;
  EXPECT_EQ(sample(t,
                   "infiniband_hca_uplink_info{guid=\"0x0000000000100000\",port=\"1\",hca=\"H1 mlx5_0\","
                   "uplink=\"S1\",uplink_guid=\"0x0000000000200000\",uplink_type=\"SW\",uplink_port=\"2\","
                   "uplink_lid=\"1\"}"),
            1)
      << t;
}

}  // namespace
}  // namespace ibsm::daemon
