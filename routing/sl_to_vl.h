// SL-to-VL mapping of a fabric's ports (IBA 14.2.5.8, SLtoVLMappingTable): what VL a packet of a given SL
// travels on when it leaves a port. A switch has one table per (input port, output port); a CA port one
// (input port 0 here). The tables themselves are SlToVlMap (routing/routing_tables.h).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "fabric/topology.h"
#include "routing/routing_tables.h"

namespace ibsm::routing {

// Data VLs every linked port of the fabric offers (the smaller VLCap of the two ends of each link: 1, 2, 4, 8
// or 15 VLs); ports whose PortInfo was not read do not count, and 1 when none was.
uint8_t offeredDataVls(const fabric::Topology& topo);

// Where the VL layers of an engine's paths need SL-to-VL tables: the (input port, output port) pairs of
// every switch that carry a CA-to-CA path on an SL above 0 or whose engine table (RoutingTables::slToVl)
// sends the path's SL 0 off VL 0 (dfly), and the CA ports that send such a path (input 0, output the port).
// Pairs carrying only SL 0 on VL 0 need none: every port's reset table maps SL 0 to VL 0, as the SM's one-VL
// routing (and OpenSM without QoS) relies on. Where the tables allow AR members beyond the shortest
// (RoutingTables::arStretch: dfly's detours, offered by the source switch) the ways over the source's
// members count as paths too. With `lids`, only the paths to those LIDs (the ones whose routes changed, for a
// delta). Pure: from the tables and the topology alone.
class VlPairs {
 public:
  void mark(fabric::NodeIndex node, unsigned numPorts, unsigned in, unsigned out) {
    if (node >= nodes_.size()) nodes_.resize(node + 1u);
    Node& n = nodes_[node];
    if (n.used.empty()) {
      n.width = numPorts + 1u;
      n.used.assign(size_t{n.width} * n.width, 0);
    }
    if (in < n.width && out < n.width && !n.used[size_t{in} * n.width + out]) {
      n.used[size_t{in} * n.width + out] = 1;
      ++count_;
    }
  }
  bool used(fabric::NodeIndex node, unsigned in, unsigned out) const {
    if (node >= nodes_.size()) return false;
    const Node& n = nodes_[node];
    return in < n.width && out < n.width && n.used[size_t{in} * n.width + out];
  }
  // Whether any pair of the node leaves through `out` (its VL arbitration table is needed).
  bool outUsed(fabric::NodeIndex node, unsigned out) const {
    if (node >= nodes_.size()) return false;
    const Node& n = nodes_[node];
    for (unsigned in = 0; in < n.width && out < n.width; ++in)
      if (n.used[size_t{in} * n.width + out]) return true;
    return false;
  }
  size_t count() const { return count_; }
  // Whether any pair of the node is used.
  bool any(fabric::NodeIndex node) const { return node < nodes_.size() && !nodes_[node].used.empty(); }

 private:
  struct Node {
    unsigned width = 0;
    std::vector<uint8_t> used;  // [in * width + out]
  };
  std::vector<Node> nodes_;
  size_t count_ = 0;
};
VlPairs layeredVlPairs(const fabric::Topology& topo, const RoutingTables& tables,
                       const std::vector<uint16_t>* lids = nullptr);

}  // namespace ibsm::routing
