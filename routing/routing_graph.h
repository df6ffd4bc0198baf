// Switch-level view of a topology shared by the up/down and fat-tree engines: dense switch indices, the
// switch-to-switch arcs of each switch in compressed (CSR) form, the traffic sources hanging off each switch,
// and the list of destination LIDs with the switch and egress port where each one leaves the switch fabric.
// A cable counts only when both ends are connected and neither end is known (PortInfo read) to be Down.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "fabric/topology.h"
#include "routing/lid_assignment.h"

namespace ibsm::routing {

class RoutingGraph {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  // One direction of a switch-to-switch link; arcs of a switch are ordered by local port number.
  struct Arc {
    uint32_t to;       // peer switch index
    uint8_t port;      // local egress port
    uint8_t peerPort;  // ingress port on the peer
    uint32_t reverse;  // index of the opposite arc (peer -> this switch over the same cable)
  };

  explicit RoutingGraph(const Topology& topo);
  // topo's graph made from base, the graph of a version of topo with the same switches under the same
  // numbers: the switches `reread` marks (by node) have their arcs and hosts read from topo, the others keep
  // base's. Those must be every switch whose node differs between the two versions and every switch behind
  // a port whose link or Down state differs (RepairIndex::patched marks them).
  RoutingGraph(const Topology& topo, const RoutingGraph& base, const std::vector<bool>& reread);

  size_t size() const { return nodes_.size(); }
  fabric::NodeIndex node(uint32_t sw) const { return nodes_[sw]; }
  // kNone for non-switch nodes.
  uint32_t indexOf(fabric::NodeIndex node) const { return index_[node]; }
  Guid guid(uint32_t sw) const { return guids_[sw]; }
  std::span<const Arc> arcs(uint32_t sw) const {
    return {arcs_.data() + begin_[sw], arcs_.data() + begin_[sw + 1]};
  }
  uint32_t firstArc(uint32_t sw) const { return begin_[sw]; }
  const Arc& arc(uint32_t a) const { return arcs_[a]; }
  size_t arcCount() const { return arcs_.size(); }
  // Non-switch endports cabled to this switch (the traffic sources behind it).
  uint32_t hosts(uint32_t sw) const { return hosts_[sw]; }
  uint32_t maxPort() const { return maxPort_; }

  // Connected component id of each switch (0-based, numbered in switch-index order).
  std::vector<uint32_t> components() const;
  // Multi-source BFS hop count over switch-to-switch arcs; kNone where unreached.
  std::vector<uint32_t> distances(std::span<const uint32_t> sources) const;

 private:
  void readArcs(const Topology& topo, uint32_t s);  // appends s's arcs (reverse unset), counts its hosts
  void pairArcs(uint32_t s);                        // sets the reverse of each of s's arcs
  uint32_t reverseOf(uint32_t s, const Arc& arc) const;
  std::vector<fabric::NodeIndex> nodes_;
  std::vector<uint32_t> index_;
  std::vector<Guid> guids_;
  std::vector<uint32_t> begin_;  // size() + 1 entries
  std::vector<Arc> arcs_;
  std::vector<uint32_t> hosts_;
  uint32_t maxPort_ = 0;
};

// A hop count not reached (a BFS's unset distance), as the engines and repairs write it.
inline constexpr uint32_t kInf = RoutingGraph::kNone;

// (switch, port) -> arc index, RoutingGraph::kNone where the port carries no switch-to-switch link.
class ArcIndex {
 public:
  explicit ArcIndex(const RoutingGraph& g)
      : stride_(g.maxPort() + 1), at_(g.size() * stride_, RoutingGraph::kNone) {
    for (uint32_t s = 0; s < g.size(); ++s)
      for (uint32_t a = g.firstArc(s); a < g.firstArc(s + 1); ++a) at_[s * stride_ + g.arc(a).port] = a;
  }
  uint32_t operator()(uint32_t s, uint8_t port) const {
    return port < stride_ ? at_[static_cast<size_t>(s) * stride_ + port] : RoutingGraph::kNone;
  }

 private:
  size_t stride_;
  std::vector<uint32_t> at_;
};

// The up/down rule a repair, the rebalance's restoring and adoption share. s's route to a destination takes
// the hop s -> v when it is one step along a shortest legal route: with a down-only way (sDown known) only a
// down hop to a switch whose down-only way is one shorter; otherwise an up hop to a switch whose legal route
// (sAny) is one shorter. Routes built so stay up* then down* under one order: the CDG on one VL is acyclic.
inline bool legalHop(bool up, uint32_t sDown, uint32_t sAny, uint32_t vDown, uint32_t vAny) {
  if (sDown != RoutingGraph::kNone) return !up && vDown == sDown - 1;
  return sAny != RoutingGraph::kNone && up && vAny == sAny - 1;
}

// A destination LID as seen by the switches: where it leaves the switch fabric.
struct DestLid {
  Lid lid;
  uint32_t sw = RoutingGraph::kNone;  // switch the endport is (switch port 0) or hangs off (CA/router port)
  uint8_t port = 0;                   // egress port on that switch; 0 for the switch's own LID
  bool isSwitch = false;              // a switch's own (port 0) LID
  NodeIndex owner = fabric::kNoNode;  // the endport that owns the LID
  PortNum ownerPort;
  uint16_t offset = 0;  // LID - base LID of the owner's LMC range
};

// Every LID 1..lids.maxLid() owned by an endport that a switch can deliver to, in LID order. LIDs of CA ports
// with no switch on the other end of the cable are left out (no switch can route to them).
std::vector<DestLid> collectDestLids(const Topology& topo, const LidAssignment& lids,
                                     const RoutingGraph& graph);
// One LID's: false when no switch can deliver to it (unused, or its port has no switch on the other end).
bool destLid(const Topology& topo, const LidAssignment& lids, const RoutingGraph& graph, Lid lid, DestLid& d);

}  // namespace ibsm::routing
