#include "routing/multicast.h"

#include <algorithm>
#include <limits>

#include "routing/switch_graph.h"

namespace ibsm::routing {

using fabric::NodeIndex;
using fabric::PortNum;

namespace {

// BFS hop counts from `from` over the switch graph; parentArc (optional) gets the arc each switch was reached
// by.
void bfs(const SwitchGraph& g, SwitchIndex from, std::vector<uint16_t>& dist,
         std::vector<uint32_t>* parentArc) {
  dist.assign(g.size(), kUnreachable);
  if (parentArc) parentArc->assign(g.size(), kNoArc);
  std::vector<SwitchIndex> queue{from};
  dist[from] = 0;
  for (size_t head = 0; head < queue.size(); ++head) {
    SwitchIndex s = queue[head];
    for (uint32_t a = g.arcBegin(s); a < g.arcEnd(s); ++a) {
      SwitchIndex t = g.arcs()[a].to;
      if (dist[t] != kUnreachable) continue;
      dist[t] = static_cast<uint16_t>(dist[s] + 1);
      if (parentArc) (*parentArc)[t] = a;
      queue.push_back(t);
    }
  }
}

}  // namespace

McastTree buildMcastTree(const fabric::Topology& topo, const std::vector<McastMember>& members) {
  McastTree tree;
  // Each member's switch and the port of that switch the member hangs off (0 for the switch itself).
  struct Leaf {
    fabric::NodeIndex node;
    uint8_t port;
    bool receives;
    size_t member;
    SwitchIndex sw = kNoSwitch;  // node's index in the switch graph
  };
  std::vector<Leaf> leaves;
  for (size_t i = 0; i < members.size(); ++i) {
    const McastMember& m = members[i];
    if (m.node >= topo.size()) {
      tree.unreachable.push_back(m);
      continue;
    }
    const fabric::Node& n = topo.node(m.node);
    if (n.isSwitch()) {
      leaves.push_back({m.node, 0, m.receives, i});
      continue;
    }
    bool linked = m.port.value >= 1 && m.port.value <= n.numPorts && portUsable(topo, m.node, m.port);
    if (!linked || !topo.node(n.ports[m.port.value].peerNode).isSwitch()) {
      tree.unreachable.push_back(m);
      continue;
    }
    leaves.push_back({n.ports[m.port.value].peerNode, n.ports[m.port.value].peerPort.value, m.receives, i});
  }
  // A group without members (the broadcast group before any host joined) costs no graph of the fabric.
  if (leaves.empty()) return tree;
  SwitchGraph g(topo);
  for (Leaf& l : leaves) l.sw = g.index(l.node);

  std::vector<SwitchIndex> memberSwitches;
  for (const Leaf& l : leaves) memberSwitches.push_back(l.sw);
  std::sort(memberSwitches.begin(), memberSwitches.end());
  memberSwitches.erase(std::unique(memberSwitches.begin(), memberSwitches.end()), memberSwitches.end());

  // Root: minimise the largest distance to a member switch, preferring switches that reach them all.
  std::vector<uint32_t> worst(g.size(), 0);
  std::vector<uint16_t> dist;
  for (SwitchIndex m : memberSwitches) {
    bfs(g, m, dist, nullptr);
    for (SwitchIndex s = 0; s < g.size(); ++s)
      worst[s] = std::max<uint32_t>(
          worst[s], dist[s] == kUnreachable ? std::numeric_limits<uint16_t>::max() + 1u : dist[s]);
  }
  SwitchIndex root = memberSwitches.front();
  for (SwitchIndex s = 0; s < g.size(); ++s)
    if (worst[s] < worst[root]) root = s;
  tree.root = g.node(root);

  std::vector<uint32_t> parentArc;
  bfs(g, root, dist, &parentArc);
  std::vector<PortMask> mask(g.size());
  std::vector<bool> inTree(g.size(), false);
  inTree[root] = true;
  for (SwitchIndex m : memberSwitches) {
    // Walk up to the root (or to a branch already in the tree), adding the tree link at both ends.
    for (SwitchIndex s = m; !inTree[s] && parentArc[s] != kNoArc;) {
      const SwitchGraph::Arc& a = g.arcs()[parentArc[s]];
      inTree[s] = true;
      mask[s].set(a.peerPort);
      mask[a.from].set(a.port);
      s = a.from;
    }
  }
  for (const Leaf& l : leaves) {
    if (!inTree[l.sw]) {
      tree.unreachable.push_back(members[l.member]);
      continue;
    }
    if (l.receives) mask[l.sw].set(l.port);
  }
  for (SwitchIndex s = 0; s < g.size(); ++s)
    if (inTree[s]) tree.switches.emplace_back(g.node(s), mask[s]);
  std::sort(tree.switches.begin(), tree.switches.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return tree;
}

}  // namespace ibsm::routing
