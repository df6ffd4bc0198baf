// Dense, read-only view of the switch-to-switch part of a topology, shared by the min-hop engine and the
// route checker: switches renumbered 0..S-1, usable switch-switch links as a CSR arc list (one arc per
// direction), and all-pairs switch hop distances. Everything is a flat vector so the hot loops are plain
// array walks.
#pragma once

#include <cstdint>
#include <vector>

#include "fabric/topology.h"

namespace ibsm::routing {

using SwitchIndex = uint32_t;
inline constexpr SwitchIndex kNoSwitch = UINT32_MAX;
inline constexpr uint32_t kNoArc = UINT32_MAX;
inline constexpr uint16_t kUnreachable = UINT16_MAX;

// A port can carry traffic when it is linked and neither end reported PortState Down (ports of a topology
// read from a file have no PortInfo and count as usable).
bool portUsable(const fabric::Topology& topo, fabric::NodeIndex node, fabric::PortNum port);
// The same for a port of a node of topo, given itself.
bool portUsable(const fabric::Topology& topo, const fabric::Port& port);

class SwitchGraph;
// Where the traffic to an endport leaves the fabric: the switch itself (port 0) when the endport is a
// switch's port 0, else the switch a usable link from the CA port leads to, by its port there. sw is
// kNoSwitch when no switch forwards to it (no such node or port, link down, a CA cabled to a CA).
struct LidExit {
  SwitchIndex sw = kNoSwitch;
  uint8_t port = 0;
  bool toCa = false;
};
LidExit lidExit(const fabric::Topology& topo, const SwitchGraph& graph, fabric::NodeIndex node,
                fabric::PortNum port);

class SwitchGraph {
 public:
  struct Arc {
    SwitchIndex from;
    SwitchIndex to;
    uint8_t port;      // egress port on `from`
    uint8_t peerPort;  // ingress port on `to`
  };

  explicit SwitchGraph(const fabric::Topology& topo);

  size_t size() const { return nodeOf_.size(); }
  fabric::NodeIndex node(SwitchIndex s) const { return nodeOf_[s]; }
  // kNoSwitch for a node that is not a switch.
  SwitchIndex index(fabric::NodeIndex n) const { return n < indexOf_.size() ? indexOf_[n] : kNoSwitch; }

  // Arcs leaving switch s, ordered by egress port: arcs()[arcBegin(s) .. arcEnd(s)).
  uint32_t arcBegin(SwitchIndex s) const { return arcBegin_[s]; }
  uint32_t arcEnd(SwitchIndex s) const { return arcBegin_[s + 1]; }
  const std::vector<Arc>& arcs() const { return arcs_; }
  // The arc leaving switch s through `port`; kNoArc when that port is no usable switch-switch link.
  uint32_t arcOfPort(SwitchIndex s, unsigned port) const {
    return port < portCount_[s] ? arcOfPort_[portBase_[s] + port] : kNoArc;
  }

 private:
  std::vector<fabric::NodeIndex> nodeOf_;
  std::vector<SwitchIndex> indexOf_;
  std::vector<uint32_t> arcBegin_;
  std::vector<Arc> arcs_;
  std::vector<uint32_t> portBase_;   // s -> offset into arcOfPort_
  std::vector<uint16_t> portCount_;  // s -> numPorts + 1
  std::vector<uint32_t> arcOfPort_;
};

// All-pairs hop counts between switches over the graph's arcs (BFS from every switch), S x S uint16 entries;
// kUnreachable between disconnected parts. Rows are computed in parallel when threads > 1; the result does
// not depend on the thread count.
class HopMatrix {
 public:
  HopMatrix(const SwitchGraph& graph, unsigned threads);
  uint16_t at(SwitchIndex from, SwitchIndex to) const { return d_[static_cast<size_t>(from) * n_ + to]; }
  const uint16_t* row(SwitchIndex from) const { return d_.data() + static_cast<size_t>(from) * n_; }

 private:
  size_t n_;
  std::vector<uint16_t> d_;
};

}  // namespace ibsm::routing
