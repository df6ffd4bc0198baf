#include "tests/ibsim/topology_compare.h"

#include <set>
#include <tuple>

namespace ibsm::testing {

namespace {
using LinkKey = std::tuple<uint64_t, int, uint64_t, int>;

std::set<LinkKey> linkSet(const fabric::Topology& t) {
  std::set<LinkKey> s;
  for (const auto& l : t.links()) {
    uint64_t a = t.node(l.a).guid.value, b = t.node(l.b).guid.value;
    LinkKey k{a, l.portA.value, b, l.portB.value};
    LinkKey r{b, l.portB.value, a, l.portA.value};
    s.insert(std::min(k, r));
  }
  return s;
}

std::string linkName(const LinkKey& k) {
  return fabric::toString(fabric::Guid{std::get<0>(k)}) + "[" + std::to_string(std::get<1>(k)) + "] <-> " +
         fabric::toString(fabric::Guid{std::get<2>(k)}) + "[" + std::to_string(std::get<3>(k)) + "]";
}
}  // namespace

std::vector<std::string> compareTopologies(const fabric::Topology& e, const fabric::Topology& a, size_t limit) {
  std::vector<std::string> d;
  auto add = [&](std::string s) {
    if (d.size() < limit) d.push_back(std::move(s));
  };
  for (const auto& n : e.nodes()) {
    auto i = a.findNode(n.guid);
    if (!i) {
      add("missing node " + fabric::toString(n.guid) + " (" + n.description + ")");
      continue;
    }
    const auto& m = a.node(*i);
    if (m.type != n.type) add("node " + fabric::toString(n.guid) + ": type differs");
    if (m.numPorts != n.numPorts)
      add("node " + fabric::toString(n.guid) + ": " + std::to_string(m.numPorts) + " ports, expected " +
          std::to_string(n.numPorts));
    if (m.description != n.description)
      add("node " + fabric::toString(n.guid) + ": description '" + m.description + "', expected '" + n.description + "'");
    if (!n.isSwitch() && m.numPorts == n.numPorts)
      for (unsigned p = 1; p <= n.numPorts; ++p)
        if (n.ports[p].connected() && m.ports[p].guid != n.ports[p].guid)
          add("node " + fabric::toString(n.guid) + " port " + std::to_string(p) + ": GUID differs");
  }
  for (const auto& m : a.nodes())
    if (!e.findNode(m.guid)) add("extra node " + fabric::toString(m.guid) + " (" + m.description + ")");
  auto le = linkSet(e), la = linkSet(a);
  for (const auto& k : le)
    if (!la.count(k)) add("missing link " + linkName(k));
  for (const auto& k : la)
    if (!le.count(k)) add("extra link " + linkName(k));
  return d;
}

}  // namespace ibsm::testing
