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

}  // namespace ibsm::daemon
