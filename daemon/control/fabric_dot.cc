// What the fabric carries, drawn: route loads per egress port (linkLoads) and the Graphviz picture
// (formatDot) that `topology format=dot` answers.
#include <algorithm>
#include <cstdio>

#include "daemon/control/control_protocol.h"
#include "daemon/control/protocol_helpers.h"

namespace ibsm::daemon {

using detail::nodeLabel;
using fabric::Guid;
using fabric::Lid;
using fabric::Node;
using fabric::NodeIndex;
using fabric::NodeType;
using fabric::PortNum;
using fabric::PortState;
using fabric::Topology;
using routing::LidAssignment;

namespace {

std::string dotEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += (static_cast<unsigned char>(c) < 0x20) ? '?' : c;
  }
  return out;
}

}  // namespace

std::vector<std::vector<uint64_t>> linkLoads(const SubnetSnapshot& snap) {
  const Topology& t = *snap.topology;
  std::vector<std::vector<uint64_t>> loads(t.size());
  for (NodeIndex n = 0; n < t.size(); ++n) loads[n].assign(t.node(n).numPorts + 1u, 0);
  // Sources: linked CA ports with a LID; their count per attached switch is the traffic each switch injects.
  struct Source {
    NodeIndex ca;
    unsigned port;
    NodeIndex sw;
  };
  std::vector<Source> sources;
  for (NodeIndex n : t.cas())
    for (unsigned p = 1; p <= t.node(n).numPorts; ++p) {
      const fabric::Port& port = t.node(n).ports[p];
      if (port.connected() && t.node(port.peerNode).isSwitch() &&
          snap.lids.base(n, PortNum{static_cast<uint8_t>(p)}).value)
        sources.push_back({n, p, port.peerNode});
    }
  std::vector<uint64_t> inject(t.size(), 0);
  std::vector<uint8_t> onPath(t.size(), 0);
  for (unsigned l = 1; l <= snap.lids.maxLid().value; ++l) {
    Lid lid{static_cast<uint16_t>(l)};
    routing::LidOwner o = snap.lids.owner(lid);
    if (o.node == fabric::kNoNode || snap.lids.base(o.node, o.port) != lid) continue;
    std::fill(inject.begin(), inject.end(), 0);
    for (const Source& s : sources) {
      if (s.ca == o.node && s.port == o.port.value) continue;  // a port to itself
      ++inject[s.sw];
      ++loads[s.ca][s.port];
    }
    for (NodeIndex sw : t.switches()) {
      if (!inject[sw]) continue;
      // Follow the LFT from this switch, adding its injected routes to every egress on the way.
      std::fill(onPath.begin(), onPath.end(), 0);
      NodeIndex cur = sw;
      for (int hop = 0; hop < 64 && cur != fabric::kNoNode && !onPath[cur]; ++hop) {
        onPath[cur] = 1;
        uint8_t out = cur < snap.tables.lft.size() ? snap.tables.port(cur, lid) : routing::kNoPort;
        const Node& node = t.node(cur);
        if (out == 0 || out > node.numPorts || !node.ports[out].connected()) break;
        loads[cur][out] += inject[sw];
        NodeIndex next = node.ports[out].peerNode;
        cur = t.node(next).isSwitch() ? next : fabric::kNoNode;
      }
    }
  }
  return loads;
}

std::string formatDot(const SubnetSnapshot& snap, const std::vector<std::vector<uint64_t>>& loads) {
  const Topology& t = *snap.topology;
  uint64_t maxLoad = 1;
  for (const auto& v : loads)
    for (uint64_t x : v) maxLoad = std::max(maxLoad, x);
  std::string out =
      "graph ibsm {\n  graph [overlap=false, splines=true, label=\"ibsm: " + dotEscape(snap.tables.engine) +
      " routes, link labels: ports and routes each way\"];\n"
      "  node [fontsize=10];\n  edge [fontsize=8];\n";
  char buf[512];
  for (NodeIndex n = 0; n < t.size(); ++n) {
    const Node& node = t.node(n);
    Lid lid = node.isSwitch() ? snap.lids.base(n, PortNum{0}) : Lid{};
    if (!node.isSwitch())
      for (unsigned p = 1; p <= node.numPorts && !lid.value; ++p)
        lid = snap.lids.base(n, PortNum{static_cast<uint8_t>(p)});
    std::snprintf(buf, sizeof buf, "  \"%s\" [label=\"%s\\nLID %u\", shape=%s%s];\n",
                  fabric::toString(node.guid).c_str(), dotEscape(nodeLabel(node)).c_str(), lid.value,
                  node.isSwitch() ? "box" : "ellipse",
                  node.isSwitch() ? ", style=filled, fillcolor=\"#dbe8f6\"" : "");
    out += buf;
  }
  for (const fabric::Link& l : t.links()) {
    uint64_t ab = loads[l.a][l.portA.value], ba = loads[l.b][l.portB.value];
    double width = 1.0 + 4.0 * static_cast<double>(std::max(ab, ba)) / static_cast<double>(maxLoad);
    std::snprintf(buf, sizeof buf, "  \"%s\" -- \"%s\" [label=\"%u:%u\\n%llu | %llu\", penwidth=%.2f];\n",
                  fabric::toString(t.node(l.a).guid).c_str(), fabric::toString(t.node(l.b).guid).c_str(),
                  l.portA.value, l.portB.value, static_cast<unsigned long long>(ab),
                  static_cast<unsigned long long>(ba), width);
    out += buf;
  }
  out += "}\n";
  return out;
}

}  // namespace ibsm::daemon
