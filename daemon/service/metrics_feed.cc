#include "daemon/service/metrics_feed.h"

namespace ibsm::daemon {

SmMetrics::MadTotals madTotals(const mad::MadCounters& c) {
  return {c.sent,   c.received, c.responses,  c.timeouts,    c.retries,
          c.failed, c.dropped,  c.unexpected, c.unsolicited, c.sendErrors};
}

SmMetrics::TrapTotals trapTotals(const TrapHandler::Counters& c) {
  return {c.malformed, c.duplicates, c.byNumber, c.otherNumbers};
}

SmMetrics::SaTotals saTotals(const SaCounters& c) {
  return {c.malformed, c.byAttrStatus, c.otherAttrStatus};
}

std::shared_ptr<const FabricInfo> fabricInfo(const SubnetSnapshot& snap) {
  auto info = std::make_shared<FabricInfo>();
  if (!snap.topology) return info;
  const fabric::Topology& topo = *snap.topology;
  // The LID a port answers to: a switch's port 0, a CA's own port.
  auto lidOf = [&](fabric::NodeIndex n, fabric::PortNum p) -> uint16_t {
    const bool sw = topo.node(n).isSwitch();
    return snap.lids.base(n, sw ? fabric::PortNum{0} : p).value;
  };
  info->nodes.reserve(topo.size());
  for (fabric::NodeIndex n = 0; n < topo.size(); ++n) {
    const fabric::Node& node = topo.node(n);
    FabricInfo::Node out{node.isSwitch(), node.guid, node.description, 0};
    for (size_t p = node.isSwitch() ? 0 : 1; p < node.ports.size(); ++p) {
      if (!node.isSwitch() && !node.ports[p].connected()) continue;
      out.lid = lidOf(n, fabric::PortNum{static_cast<uint8_t>(p)});
      break;
    }
    info->nodes.push_back(std::move(out));
    for (size_t p = 1; p < node.ports.size(); ++p) {
      const fabric::Port& port = node.ports[p];
      if (!port.connected()) continue;
      info->links.push_back({n, port.peerNode, static_cast<uint8_t>(p), port.peerPort.value,
                             lidOf(port.peerNode, port.peerPort)});
    }
  }
  return info;
}

std::shared_ptr<const PortCounterSnapshot> portCounters(const HealthSnapshot& health) {
  using mad::PerfCounter;
  using mad::PerfData;
  static constexpr std::pair<PerfCounter, PortCounter> kErrors[] = {
      {PerfCounter::kSymbolError, PortCounter::kSymbolError},
      {PerfCounter::kLinkErrorRecovery, PortCounter::kLinkErrorRecovery},
      {PerfCounter::kLinkDowned, PortCounter::kLinkDowned},
      {PerfCounter::kPortRcvErrors, PortCounter::kRcvErrors},
      {PerfCounter::kPortRcvRemotePhysicalErrors, PortCounter::kRcvRemotePhysicalErrors},
      {PerfCounter::kPortRcvSwitchRelayErrors, PortCounter::kRcvSwitchRelayErrors},
      {PerfCounter::kPortXmitDiscards, PortCounter::kXmitDiscards},
      {PerfCounter::kPortXmitConstraintErrors, PortCounter::kXmitConstraintErrors},
      {PerfCounter::kPortRcvConstraintErrors, PortCounter::kRcvConstraintErrors},
      {PerfCounter::kLocalLinkIntegrityErrors, PortCounter::kLocalLinkIntegrityErrors},
      {PerfCounter::kExcessiveBufferOverrun, PortCounter::kExcessiveBufferOverrunErrors},
      {PerfCounter::kVl15Dropped, PortCounter::kVl15Dropped},
      {PerfCounter::kPortXmitWait, PortCounter::kXmitWait},
  };
  static constexpr std::pair<PerfData, PortCounter> kData[] = {
      {PerfData::kXmitData, PortCounter::kXmitData},
      {PerfData::kRcvData, PortCounter::kRcvData},
      {PerfData::kXmitPkts, PortCounter::kXmitPkts},
      {PerfData::kRcvPkts, PortCounter::kRcvPkts},
  };
  auto out = std::make_shared<PortCounterSnapshot>();
  out->rows.reserve(health.ports.size());
  for (const PortHealth& p : health.ports) {
    PortCounterRow row;
    row.isSwitch = p.isSwitch;
    row.guid = p.node;
    row.port = p.port;
    for (auto [from, to] : kErrors) row.set(to, p.errors[static_cast<size_t>(from)]);
    for (auto [from, to] : kData) row.set(to, p.data[static_cast<size_t>(from)]);
    out->rows.push_back(row);
  }
  return out;
}

uint64_t isolatedPorts(const HealthSnapshot& health) {
  uint64_t n = 0;
  for (const PortHealth& p : health.ports) n += p.state == PortHealthState::kIsolated;
  return n;
}

}  // namespace ibsm::daemon
