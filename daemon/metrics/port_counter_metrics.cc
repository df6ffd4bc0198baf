#include "daemon/metrics/port_counter_metrics.h"

#include <prometheus/metric_family.h>

#include <string>

namespace ibsm::daemon {

namespace {

struct Names {
  std::string_view suffix, iba;
};

// In PortCounter order.
constexpr std::array<Names, kPortCounterCount> kNames = {{
    {"port_transmit_data_bytes_total", "PortXmitData"},
    {"port_receive_data_bytes_total", "PortRcvData"},
    {"port_transmit_packets_total", "PortXmitPkts"},
    {"port_receive_packets_total", "PortRcvPkts"},
    {"port_unicast_transmit_packets_total", "PortUnicastXmitPkts"},
    {"port_unicast_receive_packets_total", "PortUnicastRcvPkts"},
    {"port_multicast_transmit_packets_total", "PortMulticastXmitPkts"},
    {"port_multicast_receive_packets_total", "PortMulticastRcvPkts"},
    {"port_symbol_error_total", "SymbolErrorCounter"},
    {"port_link_error_recovery_total", "LinkErrorRecoveryCounter"},
    {"port_link_downed_total", "LinkDownedCounter"},
    {"port_receive_errors_total", "PortRcvErrors"},
    {"port_receive_remote_physical_errors_total", "PortRcvRemotePhysicalErrors"},
    {"port_receive_switch_relay_errors_total", "PortRcvSwitchRelayErrors"},
    {"port_transmit_discards_total", "PortXmitDiscards"},
    {"port_transmit_constraint_errors_total", "PortXmitConstraintErrors"},
    {"port_receive_constraint_errors_total", "PortRcvConstraintErrors"},
    {"port_local_link_integrity_errors_total", "LocalLinkIntegrityErrors"},
    {"port_excessive_buffer_overrun_errors_total", "ExcessiveBufferOverrunErrors"},
    {"port_vl15_dropped_total", "VL15Dropped"},
    {"port_transmit_wait_total", "PortXmitWait"},
}};

}  // namespace

std::string_view metricSuffix(PortCounter c) {
  return kNames[static_cast<size_t>(c)].suffix;
}

std::string_view ibaName(PortCounter c) {
  return kNames[static_cast<size_t>(c)].iba;
}

void PortCounterCollector::publish(std::shared_ptr<const PortCounterSnapshot> snapshot) {
  std::lock_guard<std::mutex> lock(mutex_);
  snapshot_ = std::move(snapshot);
}

std::vector<prometheus::MetricFamily> PortCounterCollector::collect() const {
  std::shared_ptr<const PortCounterSnapshot> snap;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    snap = snapshot_;
  }
  std::vector<prometheus::MetricFamily> out;
  if (!snap) return out;
  // Families: switch counters first, then CA counters, each in PortCounter order; a family with no sample is
  // left out.
  for (bool sw : {true, false}) {
    for (size_t i = 0; i < kPortCounterCount; ++i) {
      prometheus::MetricFamily f;
      f.name = sw ? "infiniband_switch_" : "infiniband_hca_";
      f.name += kNames[i].suffix;
      f.help = sw ? "Infiniband switch port " : "Infiniband HCA port ";
      f.help += kNames[i].iba;
      f.type = prometheus::MetricType::Counter;
      const bool data =
          i == static_cast<size_t>(PortCounter::kXmitData) || i == static_cast<size_t>(PortCounter::kRcvData);
      for (const PortCounterRow& r : snap->rows) {
        if (r.isSwitch != sw || !r.values[i]) continue;
        prometheus::ClientMetric m;
        m.label = {{"guid", fabric::toString(r.guid)}, {"port", std::to_string(r.port)}};
        // Data counters count 4-byte words; the exporter publishes bytes.
        m.counter.value = static_cast<double>(*r.values[i]) * (data ? 4.0 : 1.0);
        f.metric.push_back(std::move(m));
      }
      if (!f.metric.empty()) out.push_back(std::move(f));
    }
  }
  return out;
}

}  // namespace ibsm::daemon
