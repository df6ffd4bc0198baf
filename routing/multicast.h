// Multicast spanning trees (IBA 18.2.4.3): for one multicast group, a loop-free tree over the switches that
// reaches every member, and the port mask each switch's MulticastForwardingTable entry for the group's MLID
// gets. Pure: the same topology and members always give the same tree.
//
// The root is the switch whose farthest member switch is nearest (ties: lowest node index), so the tree's
// depth is minimal; the tree is the BFS tree from the root (lowest port first), pruned to the branches that
// lead to member switches. A switch's mask holds its tree links (towards the parent and the children) and the
// ports of its receiving members. Send-only members put their switch in the tree but get no port: what they
// send enters the tree there and is never sent back to them.
#pragma once

#include <vector>

#include "fabric/topology.h"
#include "routing/routing_tables.h"

namespace ibsm::routing {

inline constexpr uint16_t kMinMlid = 0xC000;
inline constexpr uint16_t kMaxMlid = 0xFFFE;

struct McastMember {
  fabric::NodeIndex node;  // a CA (or a switch, for its management port 0)
  fabric::PortNum port;
  bool receives = true;  // false for a send-only member
};

struct McastTree {
  fabric::NodeIndex root = fabric::kNoNode;  // kNoNode when no member sits behind a switch
  std::vector<std::pair<fabric::NodeIndex, PortMask>> switches;  // tree switches, by node index
  std::vector<McastMember> unreachable;  // members the tree cannot reach (not linked, other part)
};

// A multicast group as the MFT programmer takes it: its MLID and the members resolved to topology ports.
struct McastGroupRoute {
  uint16_t mlid;
  std::vector<McastMember> members;
};

McastTree buildMcastTree(const fabric::Topology& topo, const std::vector<McastMember>& members);

}  // namespace ibsm::routing
