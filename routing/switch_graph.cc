#include "routing/switch_graph.h"

#include <cassert>

#include "routing/parallel.h"

namespace ibsm::routing {

using fabric::Node;
using fabric::NodeIndex;
using fabric::PortNum;
using fabric::PortState;
using fabric::Topology;

LidExit lidExit(const Topology& topo, const SwitchGraph& graph, NodeIndex node, PortNum port) {
  LidExit e;
  if (node >= topo.size()) return e;
  const Node& n = topo.node(node);
  if (n.isSwitch()) {
    e.sw = graph.index(node);
    return e;
  }
  if (!portUsable(topo, node, port)) return e;
  const fabric::Port& p = n.ports[port.value];
  e.sw = graph.index(p.peerNode);
  e.port = p.peerPort.value;
  e.toCa = true;
  return e;
}

bool portUsable(const Topology& topo, NodeIndex node, PortNum port) {
  if (node >= topo.size()) return false;
  const Node& n = topo.node(node);
  return port.value != 0 && port.value <= n.numPorts && portUsable(topo, n.ports[port.value]);
}

bool portUsable(const Topology& topo, const fabric::Port& p) {
  if (!p.connected() || p.peerNode >= topo.size() || p.attrs.down()) return false;
  const Node& peer = topo.node(p.peerNode);
  return p.peerPort.value < peer.ports.size() && !peer.ports[p.peerPort.value].attrs.down();
}

SwitchGraph::SwitchGraph(const Topology& topo) {
  indexOf_.assign(topo.size(), kNoSwitch);
  nodeOf_ = topo.switches();
  for (SwitchIndex s = 0; s < nodeOf_.size(); ++s) indexOf_[nodeOf_[s]] = s;

  arcBegin_.reserve(nodeOf_.size() + 1);
  portBase_.reserve(nodeOf_.size());
  portCount_.reserve(nodeOf_.size());
  for (SwitchIndex s = 0; s < nodeOf_.size(); ++s) {
    const Node& n = topo.node(nodeOf_[s]);
    arcBegin_.push_back(static_cast<uint32_t>(arcs_.size()));
    portBase_.push_back(static_cast<uint32_t>(arcOfPort_.size()));
    portCount_.push_back(static_cast<uint16_t>(n.numPorts + 1u));
    arcOfPort_.resize(arcOfPort_.size() + n.numPorts + 1u, kNoArc);
    for (unsigned p = 1; p <= n.numPorts; ++p) {
      const fabric::Port& port = n.ports[p];
      if (!port.connected() || !portUsable(topo, nodeOf_[s], PortNum{static_cast<uint8_t>(p)})) continue;
      SwitchIndex t = index(port.peerNode);
      if (t == kNoSwitch) continue;
      arcOfPort_[portBase_[s] + p] = static_cast<uint32_t>(arcs_.size());
      arcs_.push_back(Arc{s, t, static_cast<uint8_t>(p), port.peerPort.value});
    }
  }
  arcBegin_.push_back(static_cast<uint32_t>(arcs_.size()));
}

HopMatrix::HopMatrix(const SwitchGraph& g, unsigned threads) : n_(g.size()), d_(n_ * n_, kUnreachable) {
  unsigned workers = workerCount(n_, threads);
  std::vector<std::vector<SwitchIndex>> queues(workers, std::vector<SwitchIndex>(n_));
  parallelFor(n_, threads, [&](unsigned worker, size_t src) {
    uint16_t* dist = d_.data() + src * n_;
    std::vector<SwitchIndex>& queue = queues[worker];
    size_t head = 0, tail = 0;
    dist[src] = 0;
    queue[tail++] = static_cast<SwitchIndex>(src);
    const auto& arcs = g.arcs();
    while (head < tail) {
      SwitchIndex s = queue[head++];
      uint16_t next = static_cast<uint16_t>(dist[s] + 1);
      for (uint32_t a = g.arcBegin(s); a < g.arcEnd(s); ++a) {
        SwitchIndex t = arcs[a].to;
        if (dist[t] != kUnreachable) continue;
        dist[t] = next;
        queue[tail++] = t;
      }
    }
    assert(tail <= n_);
  });
}

}  // namespace ibsm::routing
