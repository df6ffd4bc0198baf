#include "routing/routing_graph.h"

#include <algorithm>
#include <cassert>

#include "routing/switch_graph.h"

namespace ibsm::routing {

RoutingGraph::RoutingGraph(const Topology& topo) : index_(topo.size(), kNone) {
  for (NodeIndex n : topo.switches()) {
    index_[n] = static_cast<uint32_t>(nodes_.size());
    nodes_.push_back(n);
    guids_.push_back(topo.node(n).guid);
  }
  begin_.assign(nodes_.size() + 1, 0);
  hosts_.assign(nodes_.size(), 0);
  for (uint32_t s = 0; s < nodes_.size(); ++s) readArcs(topo, s);
  begin_[nodes_.size()] = static_cast<uint32_t>(arcs_.size());
  for (uint32_t s = 0; s < nodes_.size(); ++s) pairArcs(s);
}

RoutingGraph::RoutingGraph(const Topology& topo, const RoutingGraph& base, const std::vector<bool>& reread)
    : nodes_(base.nodes_), index_(base.index_), guids_(base.guids_), maxPort_(base.maxPort_) {
  const uint32_t n = static_cast<uint32_t>(nodes_.size());
  begin_.assign(n + 1, 0);
  hosts_ = base.hosts_;
  arcs_.reserve(base.arcs_.size());
  for (uint32_t s = 0; s < n; ++s) {
    if (reread[nodes_[s]]) {
      readArcs(topo, s);
      continue;
    }
    begin_[s] = static_cast<uint32_t>(arcs_.size());
    arcs_.insert(arcs_.end(), base.arcs_.begin() + base.begin_[s], base.arcs_.begin() + base.begin_[s + 1]);
  }
  begin_[n] = static_cast<uint32_t>(arcs_.size());
  // Between two switches kept as they were, an arc's reverse keeps its place in its switch's arcs.
  for (uint32_t s = 0; s < n; ++s) {
    if (reread[nodes_[s]]) {
      pairArcs(s);
      continue;
    }
    for (uint32_t a = begin_[s], b = base.begin_[s]; a < begin_[s + 1]; ++a, ++b) {
      Arc& arc = arcs_[a];
      arc.reverse = reread[nodes_[arc.to]] ? reverseOf(s, arc)
                                           : begin_[arc.to] + (base.arcs_[b].reverse - base.begin_[arc.to]);
    }
  }
}

void RoutingGraph::readArcs(const Topology& topo, uint32_t s) {
  const fabric::Node& node = topo.node(nodes_[s]);
  begin_[s] = static_cast<uint32_t>(arcs_.size());
  hosts_[s] = 0;
  maxPort_ = std::max<uint32_t>(maxPort_, node.numPorts);
  for (unsigned p = 1; p <= node.numPorts && p < node.ports.size(); ++p) {
    const fabric::Port& port = node.ports[p];
    if (!portUsable(topo, port)) continue;
    uint32_t peer = index_[port.peerNode];
    if (peer == kNone) {
      ++hosts_[s];
      continue;
    }
    if (peer == s) continue;  // a cable looped back into the same switch carries no routes
    arcs_.push_back(Arc{peer, static_cast<uint8_t>(p), port.peerPort.value, kNone});
  }
}

// The reverse of s's arc: the peer's arc whose local port is its peerPort. Arcs are port-ordered, so a binary
// search inside the peer's range finds it.
uint32_t RoutingGraph::reverseOf(uint32_t s, const Arc& arc) const {
  auto first = arcs_.begin() + begin_[arc.to];
  auto last = arcs_.begin() + begin_[arc.to + 1];
  auto it = std::lower_bound(first, last, arc.peerPort, [](const Arc& x, uint8_t p) { return x.port < p; });
  assert(it != last && it->port == arc.peerPort && it->to == s);
  (void)s;
  return static_cast<uint32_t>(it - arcs_.begin());
}

void RoutingGraph::pairArcs(uint32_t s) {
  for (uint32_t a = begin_[s]; a < begin_[s + 1]; ++a) arcs_[a].reverse = reverseOf(s, arcs_[a]);
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

bool destLid(const Topology& topo, const LidAssignment& lids, const RoutingGraph& graph, Lid lid,
             DestLid& d) {
  const LidOwner owner = lids.owner(lid);
  if (owner.node == fabric::kNoNode || owner.node >= topo.size()) return false;
  const fabric::Node& node = topo.node(owner.node);
  d = DestLid{};
  d.lid = lid;
  d.owner = owner.node;
  d.ownerPort = owner.port;
  d.offset = static_cast<uint16_t>(lid.value - lids.base(owner.node, owner.port).value);
  if (node.isSwitch()) {
    d.sw = graph.indexOf(owner.node);
    d.port = 0;
    d.isSwitch = true;
    return true;
  }
  if (owner.port.value >= node.ports.size()) return false;
  const fabric::Port& port = node.ports[owner.port.value];
  if (!portUsable(topo, port)) return false;
  d.sw = graph.indexOf(port.peerNode);
  d.port = port.peerPort.value;
  return d.sw != RoutingGraph::kNone;
}

std::vector<DestLid> collectDestLids(const Topology& topo, const LidAssignment& lids,
                                     const RoutingGraph& graph) {
  std::vector<DestLid> out;
  DestLid d;
  for (uint32_t l = 1; l <= lids.maxLid().value; ++l)
    if (destLid(topo, lids, graph, Lid{static_cast<uint16_t>(l)}, d)) out.push_back(d);
  return out;
}

}  // namespace ibsm::routing
