#include "daemon/discoverer.h"

#include <memory>
#include <optional>

#include "mad/smp.h"

namespace ibsm::daemon {

using fabric::DrPath;
using fabric::NodeIndex;
using mad::MadResult;

namespace {

// State of one sweep; lives while its SMPs are in flight.
struct Sweep {
  mad::MadEngine& engine;
  fabric::TopologyBuilder builder;
  std::vector<std::vector<RawAttr>> portInfo;
  std::vector<RawAttr> switchInfo;
  std::vector<std::string> warnings;
  std::optional<std::string> fatal;
  // Links seen: (node, port) <-> (node, port), applied at the end so an inconsistent answer is reported once.
  struct PendingLink {
    NodeIndex a;
    uint8_t pa;
    NodeIndex b;
    uint8_t pb;
  };
  std::vector<PendingLink> links;

  explicit Sweep(mad::MadEngine& e) : engine(e) {}

  void get(uint16_t attr, uint32_t mod, const DrPath& path, mad::MadCompletion done) {
    engine.submit(mad::makeDirectedSmp(mad::kGet, attr, mod, path), std::move(done));
  }

  static bool answered(const MadResult& r) { return r.ok() && r.header.status == 0; }

  void warnNoAnswer(const char* what, const DrPath& path, const MadResult& r) {
    warnings.push_back(std::string("DISC001 no ") + what + " from directed route " + path.toString() +
                       (r.ok() ? " (MAD status " + std::to_string(r.header.status) + ")" : " (timeout)"));
  }

  // NodeInfo at `path`, reached from (parent, parentPort) unless this is the local node.
  void probe(const DrPath& path, NodeIndex parent, uint8_t parentPort) {
    get(mad::kAttrNodeInfo, 0, path, [this, path, parent, parentPort](const MadResult& r) {
      if (!answered(r)) {
        if (parent == fabric::kNoNode) fatal = "the local port does not answer NodeInfo";
        else warnNoAnswer("NodeInfo", path, r);
        return;
      }
      auto info = mad::decodeNodeInfo(mad::smpData(r.response));
      if (!info) {
        warnings.push_back("DISC002 bad NodeInfo from " + path.toString() + ": " + info.error().message);
        return;
      }
      onNodeInfo(path, parent, parentPort, *info);
    });
  }

  void onNodeInfo(const DrPath& path, NodeIndex parent, uint8_t parentPort, const mad::NodeInfo& info) {
    if (auto known = builder.findNode(info.nodeGuid)) {
      const fabric::Node& n = builder.node(*known);
      if (n.type != info.type || n.numPorts != info.numPorts) {
        warnings.push_back("DISC003 node " + fabric::toString(info.nodeGuid) + " answers differently on route " +
                           path.toString() + "; ignoring that route");
        return;
      }
      // A CA met again through another of its ports: NodeInfo tells that port's GUID.
      if (!n.isSwitch()) {
        fabric::Port& port = builder.node(*known).ports[info.localPort];
        port.guid = info.portGuid;
        port.route = path;
      }
      if (parent != fabric::kNoNode) links.push_back({parent, parentPort, *known, info.localPort});
      return;
    }
    fabric::Node node;
    node.type = info.type;
    node.guid = info.nodeGuid;
    node.systemGuid = info.systemGuid;
    node.vendorId = info.vendorId;
    node.deviceId = info.deviceId;
    node.revision = info.revision;
    node.numPorts = info.numPorts;
    node.route = path;
    auto added = builder.addNode(std::move(node));
    if (!added) {
      warnings.push_back("DISC004 " + added.error().message);
      return;
    }
    NodeIndex idx = *added;
    fabric::Node& n = builder.node(idx);
    if (info.type == fabric::NodeType::kSwitch) n.ports[0].guid = info.portGuid;
    else {
      n.ports[info.localPort].guid = info.portGuid;
      n.ports[info.localPort].route = path;
    }
    portInfo.emplace_back(info.numPorts + 1u, RawAttr{});
    switchInfo.emplace_back();
    if (parent == fabric::kNoNode) builder.setSmPort(idx, fabric::PortNum{info.localPort});
    else links.push_back({parent, parentPort, idx, info.localPort});

    get(mad::kAttrNodeDescription, 0, path, [this, idx, path](const MadResult& r) {
      if (answered(r)) builder.node(idx).description = mad::decodeNodeDescription(mad::smpData(r.response));
      else warnNoAnswer("NodeDescription", path, r);
    });
    if (info.type == fabric::NodeType::kSwitch) {
      get(mad::kAttrSwitchInfo, 0, path, [this, idx, path](const MadResult& r) {
        if (!answered(r)) return warnNoAnswer("SwitchInfo", path, r);
        std::copy_n(mad::smpData(r.response), 64, switchInfo[idx].begin());
        builder.node(idx).sw = mad::decodeSwitchInfo(mad::smpData(r.response));
      });
      for (unsigned p = 0; p <= info.numPorts; ++p) queryPort(idx, path, static_cast<uint8_t>(p), info.localPort, true);
    } else {
      // A CA or router: PortInfo of every port (the SMP cannot pass through it, so nothing to explore).
      for (unsigned p = 1; p <= info.numPorts; ++p) queryPort(idx, path, static_cast<uint8_t>(p), info.localPort, false);
    }
  }

  void queryPort(NodeIndex idx, const DrPath& path, uint8_t port, uint8_t arrivalPort, bool isSwitch) {
    get(mad::kAttrPortInfo, port, path, [=, this](const MadResult& r) {
      if (!answered(r)) return warnNoAnswer(("PortInfo " + std::to_string(port)).c_str(), path, r);
      const uint8_t* data = mad::smpData(r.response);
      std::copy_n(data, 64, portInfo[idx][port].begin());
      fabric::PortAttrs attrs = mad::decodePortInfo(data);
      builder.node(idx).ports[port].attrs = attrs;
      constexpr uint8_t kLinkUp = 5;
      // Explore every other linked port of a switch; from a CA only the SM's own port, when the CA is local.
      bool local = path.count == 0;
      bool explore = isSwitch ? port != 0 && (port != arrivalPort || local) : local && port == arrivalPort;
      if (!explore || attrs.physState != kLinkUp) return;
      auto next = path.extended(port);
      if (!next) {
        fatal = "node beyond the directed-route limit of " + std::to_string(DrPath::kMaxHops) +
                " hops, behind route " + path.toString() + "," + std::to_string(port);
        return;
      }
      probe(*next, idx, port);
    });
  }
};

}  // namespace

fabric::Result<DiscoveryResult> Discoverer::discover() {
  const mad::TimePoint start = clock_.now();
  const mad::MadCounters before = engine_.counters();
  auto sweep = std::make_unique<Sweep>(engine_);
  sweep->probe(DrPath{}, fabric::kNoNode, 0);
  engine_.runUntilIdle();
  if (sweep->fatal) return fabric::makeError(*sweep->fatal);
  if (sweep->builder.size() == 0) return fabric::makeError("discovery found no node");

  DiscoveryResult result;
  for (const auto& l : sweep->links) {
    auto linked = sweep->builder.connect(l.a, fabric::PortNum{l.pa}, l.b, fabric::PortNum{l.pb});
    if (!linked) sweep->warnings.push_back("DISC005 inconsistent link: " + linked.error().message);
  }
  result.portInfo = std::move(sweep->portInfo);
  result.switchInfo = std::move(sweep->switchInfo);
  auto topo = std::move(sweep->builder).build();
  if (!topo) return topo.error();
  result.topology = std::move(*topo);
  const mad::MadCounters& after = engine_.counters();
  result.stats.smps = after.sent - before.sent;
  result.stats.timeouts = after.timeouts - before.timeouts;
  result.stats.failed = after.failed - before.failed;
  result.stats.elapsed = clock_.now() - start;
  result.stats.warnings = std::move(sweep->warnings);
  return result;
}

}  // namespace ibsm::daemon
