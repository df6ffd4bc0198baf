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

std::vector<prometheus::MetricFamily> portCounterFamilies(const PortCounterSnapshot& snap) {
  std::vector<prometheus::MetricFamily> out;
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
      for (const PortCounterRow& r : snap.rows) {
        if (r.isSwitch != sw || !r.values[i]) continue;
        prometheus::ClientMetric m;
        m.label = {{"guid", fabric::toString(r.guid)}, {"port", std::to_string(r.port)}};
        m.counter.value = static_cast<double>(*r.values[i]);
        f.metric.push_back(std::move(m));
      }
      if (!f.metric.empty()) out.push_back(std::move(f));
    }
  }
  return out;
}

std::vector<prometheus::MetricFamily> fabricInfoFamilies(const FabricInfo& info) {
  std::vector<prometheus::MetricFamily> out;
  auto family = [](const char* name, const char* help) {
    prometheus::MetricFamily f;
    f.name = name;
    f.help = help;
    f.type = prometheus::MetricType::Gauge;
    return f;
  };
  auto one = [](std::vector<prometheus::ClientMetric::Label> labels) {
    prometheus::ClientMetric m;
    m.label = std::move(labels);
    m.gauge.value = 1;
    return m;
  };
  prometheus::MetricFamily swInfo = family("infiniband_switch_info", "Infiniband switch information");
  prometheus::MetricFamily caInfo = family("infiniband_hca_info", "Infiniband HCA information");
  prometheus::MetricFamily swUp =
      family("infiniband_switch_uplink_info", "Infiniband switch uplink information");
  prometheus::MetricFamily caUp = family("infiniband_hca_uplink_info", "Infiniband HCA uplink information");
  for (const FabricInfo::Node& n : info.nodes)
    (n.isSwitch ? swInfo : caInfo)
        .metric.push_back(one({{"guid", fabric::toString(n.guid)},
                               {n.isSwitch ? "switch" : "hca", n.name},
                               {"lid", std::to_string(n.lid)}}));
  for (const FabricInfo::Link& l : info.links) {
    if (l.node >= info.nodes.size() || l.peer >= info.nodes.size()) continue;
    const FabricInfo::Node& n = info.nodes[l.node];
    const FabricInfo::Node& p = info.nodes[l.peer];
    (n.isSwitch ? swUp : caUp)
        .metric.push_back(one({{"guid", fabric::toString(n.guid)},
                               {"port", std::to_string(l.port)},
                               {n.isSwitch ? "switch" : "hca", n.name},
                               {"uplink", p.name},
                               {"uplink_guid", fabric::toString(p.guid)},
                               {"uplink_type", p.isSwitch ? "SW" : "CA"},
                               {"uplink_port", std::to_string(l.peerPort)},
                               {"uplink_lid", std::to_string(l.peerLid)}}));
  }
  for (auto* f : {&swInfo, &caInfo, &swUp, &caUp})
    if (!f->metric.empty()) out.push_back(std::move(*f));
  return out;
}

}  // namespace ibsm::daemon
