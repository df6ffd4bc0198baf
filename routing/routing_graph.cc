#include "routing/routing_graph.h"

#include <algorithm>
#include <cassert>

namespace ibsm::routing {
namespace {
bool usable(const Topology& topo, const fabric::Port& port) {
  if (!port.connected() || port.peerNode >= topo.size()) return false;
  if (port.attrs.valid && port.attrs.state == fabric::PortState::kDown) return false;
  const fabric::Node& peer = topo.node(port.peerNode);
  if (port.peerPort.value >= peer.ports.size()) return false;
  const fabric::PortAttrs& q = peer.ports[port.peerPort.value].attrs;
  return !(q.valid && q.state == fabric::PortState::kDown);
}
}  // namespace

RoutingGraph::RoutingGraph(const Topology& topo) : index_(topo.size(), kNone) {
  for (NodeIndex n : topo.switches()) {
    index_[n] = static_cast<uint32_t>(nodes_.size());
    nodes_.push_back(n);
    guids_.push_back(topo.node(n).guid);
  }
  begin_.assign(nodes_.size() + 1, 0);
  hosts_.assign(nodes_.size(), 0);
  for (uint32_t s = 0; s < nodes_.size(); ++s) {
    const fabric::Node& node = topo.node(nodes_[s]);
    begin_[s] = static_cast<uint32_t>(arcs_.size());
    maxPort_ = std::max<uint32_t>(maxPort_, node.numPorts);
    for (unsigned p = 1; p <= node.numPorts && p < node.ports.size(); ++p) {
      const fabric::Port& port = node.ports[p];
      if (!usable(topo, port)) continue;
      uint32_t peer = index_[port.peerNode];
      if (peer == kNone) {
        ++hosts_[s];
        continue;
      }
      if (peer == s) continue;  // a cable looped back into the same switch carries no routes
      arcs_.push_back(Arc{peer, static_cast<uint8_t>(p), port.peerPort.value, kNone});
    }
  }
  begin_[nodes_.size()] = static_cast<uint32_t>(arcs_.size());
  // Pair each arc with its reverse: the peer's arc whose local port is our peerPort. Arcs are port-ordered,
  // so a binary search inside the peer's range finds it.
  for (uint32_t s = 0; s < nodes_.size(); ++s) {
    for (uint32_t a = begin_[s]; a < begin_[s + 1]; ++a) {
      Arc& arc = arcs_[a];
      auto first = arcs_.begin() + begin_[arc.to];
      auto last = arcs_.begin() + begin_[arc.to + 1];
      auto it =
          std::lower_bound(first, last, arc.peerPort, [](const Arc& x, uint8_t p) { return x.port < p; });
      assert(it != last && it->port == arc.peerPort && it->to == s);
      arc.reverse = static_cast<uint32_t>(it - arcs_.begin());
    }
  }
}

std::vector<uint32_t> RoutingGraph::components() const {
  std::vector<uint32_t> comp(size(), kNone);
  std::vector<uint32_t> queue;
  uint32_t next = 0;
  for (uint32_t s = 0; s < size(); ++s) {
    if (comp[s] != kNone) continue;
    comp[s] = next;
    queue.assign(1, s);
    for (size_t i = 0; i < queue.size(); ++i)
      for (const Arc& a : arcs(queue[i]))
        if (comp[a.to] == kNone) {
          comp[a.to] = next;
          queue.push_back(a.to);
        }
    ++next;
  }
  return comp;
}

std::vector<uint32_t> RoutingGraph::distances(std::span<const uint32_t> sources) const {
  std::vector<uint32_t> dist(size(), kNone);
  std::vector<uint32_t> queue;
  for (uint32_t s : sources)
    if (dist[s] == kNone) {
      dist[s] = 0;
      queue.push_back(s);
    }
  for (size_t i = 0; i < queue.size(); ++i) {
    uint32_t u = queue[i];
    for (const Arc& a : arcs(u))
      if (dist[a.to] == kNone) {
        dist[a.to] = dist[u] + 1;
        queue.push_back(a.to);
      }
  }
  return dist;
}

std::vector<DestLid> collectDestLids(const Topology& topo, const LidAssignment& lids,
                                     const RoutingGraph& graph) {
  std::vector<DestLid> out;
  const uint32_t maxLid = lids.maxLid().value;
  for (uint32_t l = 1; l <= maxLid; ++l) {
    Lid lid{static_cast<uint16_t>(l)};
    LidOwner owner = lids.owner(lid);
    if (owner.node == fabric::kNoNode || owner.node >= topo.size()) continue;
    const fabric::Node& node = topo.node(owner.node);
    DestLid d;
    d.lid = lid;
    d.owner = owner.node;
    d.ownerPort = owner.port;
    d.offset = static_cast<uint16_t>(l - lids.base(owner.node, owner.port).value);
    if (node.isSwitch()) {
      d.sw = graph.indexOf(owner.node);
      d.port = 0;
      d.isSwitch = true;
    } else {
      if (owner.port.value >= node.ports.size()) continue;
      const fabric::Port& port = node.ports[owner.port.value];
      if (!usable(topo, port)) continue;
      uint32_t sw = graph.indexOf(port.peerNode);
      if (sw == RoutingGraph::kNone) continue;
      d.sw = sw;
      d.port = port.peerPort.value;
    }
    out.push_back(d);
  }
  return out;
}

}  // namespace ibsm::routing
