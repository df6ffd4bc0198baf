#include "tools/fabric_gen/compare.h"

namespace ibsm::tools {

using fabric::Guid;
using fabric::Node;
using fabric::Port;
using fabric::Topology;

namespace {

std::string portName(const Node& n, unsigned p) {
  return toString(n.guid) + "[" + std::to_string(p) + "] (\"" + n.description + "\")";
}

// "guid[port]" of the far end of a port, or "-" when unlinked.
std::string peerOf(const Topology& t, const Port& port) {
  if (!port.connected()) return "-";
  return toString(t.node(port.peerNode).guid) + "[" + std::to_string(port.peerPort.value) + "]";
}

}  // namespace

std::string diffTopologies(const Topology& expected, const Topology& actual, size_t maxDiffs) {
  std::string out;
  size_t count = 0;
  auto report = [&](const std::string& line) {
    if (count++ < maxDiffs) out += line + "\n";
  };
  if (expected.size() != actual.size())
    report("node count: expected " + std::to_string(expected.size()) + ", got " +
           std::to_string(actual.size()));
  if (expected.links().size() != actual.links().size())
    report("link count: expected " + std::to_string(expected.links().size()) + ", got " +
           std::to_string(actual.links().size()));
  for (const Node& a : actual.nodes())
    if (!expected.findNode(a.guid))
      report("unexpected node " + toString(a.guid) + " \"" + a.description + "\"");
  for (const Node& e : expected.nodes()) {
    auto idx = actual.findNode(e.guid);
    if (!idx) {
      report("missing node " + toString(e.guid) + " \"" + e.description + "\"");
      continue;
    }
    const Node& a = actual.node(*idx);
    std::string name = toString(e.guid) + " (\"" + e.description + "\")";
    if (a.type != e.type) report(name + ": type " + toString(e.type) + " vs " + toString(a.type));
    if (a.description != e.description) report(name + ": description vs \"" + a.description + "\"");
    if (a.numPorts != e.numPorts || a.ports.size() != e.ports.size()) {
      report(name + ": " + std::to_string(e.numPorts) + " ports vs " + std::to_string(a.numPorts));
      continue;
    }
    if (e.isSwitch()) {
      const auto &pe = e.ports[0], &pa = a.ports[0];
      if (pe.guid != pa.guid) report(name + ": port GUID " + toString(pe.guid) + " vs " + toString(pa.guid));
      if (pe.attrs.lid != pa.attrs.lid || pe.attrs.lmc != pa.attrs.lmc)
        report(name + ": LID " + std::to_string(pe.attrs.lid.value) + " vs " +
               std::to_string(pa.attrs.lid.value));
      if (e.sw.enhancedPort0 != a.sw.enhancedPort0) report(name + ": enhanced port 0 differs");
    }
    for (unsigned p = 1; p <= e.numPorts; ++p) {
      const Port& pe = e.ports[p];
      const Port& pa = a.ports[p];
      std::string port = portName(e, p);
      std::string peerE = peerOf(expected, pe), peerA = peerOf(actual, pa);
      if (peerE != peerA) report(port + ": linked to " + peerE + " vs " + peerA);
      if (!e.isSwitch() && pe.guid != pa.guid)
        report(port + ": port GUID " + toString(pe.guid) + " vs " + toString(pa.guid));
      if (!pe.connected() || !pa.connected()) continue;
      if (pe.attrs.widthActive != pa.attrs.widthActive || pe.attrs.speedActive != pa.attrs.speedActive ||
          pe.attrs.speedExtActive != pa.attrs.speedExtActive)
        report(port + ": link " + fabric::linkWidthString(pe.attrs.widthActive) +
               fabric::linkSpeedString(pe.attrs.speedActive, pe.attrs.speedExtActive) + " vs " +
               fabric::linkWidthString(pa.attrs.widthActive) +
               fabric::linkSpeedString(pa.attrs.speedActive, pa.attrs.speedExtActive));
      if (!e.isSwitch() && (pe.attrs.lid != pa.attrs.lid || pe.attrs.lmc != pa.attrs.lmc))
        report(port + ": LID " + std::to_string(pe.attrs.lid.value) + " vs " +
               std::to_string(pa.attrs.lid.value));
    }
  }
  if (count > maxDiffs) out += "... and " + std::to_string(count - maxDiffs) + " more differences\n";
  return out;
}

}  // namespace ibsm::tools
