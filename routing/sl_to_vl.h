// SL-to-VL mapping of a fabric's ports (IBA 14.2.5.8, SLtoVLMappingTable): what VL a packet of a given SL
// travels on when it leaves a port. A switch has one table per (input port, output port); a CA port one
// (input port 0 here). Unset tables are the identity (SL i on VL i), which is what ibsm programs for an
// engine that spreads its paths over VL layers (RoutingTables::sl). Used by the route checker to build the
// channel dependency graph per VL, from the tables an engine implies or the ones read back from a fabric.
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
// every switch that carry a CA-to-CA path on an SL above 0, and the CA ports that send one (input 0, output
// the port). Pairs carrying only SL 0 need none: every port's reset table maps SL 0 to VL 0, as the SM's
// one-VL routing (and OpenSM without QoS) relies on. Pure: from the tables and the topology alone.
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

 private:
  struct Node {
    unsigned width = 0;
    std::vector<uint8_t> used;  // [in * width + out]
  };
  std::vector<Node> nodes_;
  size_t count_ = 0;
};
VlPairs layeredVlPairs(const fabric::Topology& topo, const RoutingTables& tables);

class SlToVlMap {
 public:
  using Table = std::array<uint8_t, 16>;  // SL -> VL
  static constexpr uint64_t kIdentity = 0xFEDCBA9876543210ull;

  static uint64_t pack(const Table& t) {
    uint64_t v = 0;
    for (unsigned sl = 0; sl < 16; ++sl) v |= uint64_t{t[sl] & 0xFu} << (4 * sl);
    return v;
  }
  // numPorts: the node's port count (a switch's tables are indexed by in/out port 0..numPorts).
  void set(fabric::NodeIndex node, unsigned numPorts, unsigned in, unsigned out, const Table& table) {
    if (node >= nodes_.size()) nodes_.resize(node + 1u);
    NodeTables& n = nodes_[node];
    if (n.packed.empty()) {
      n.width = numPorts + 1u;
      n.packed.assign(size_t{n.width} * n.width, kIdentity);
    }
    if (in < n.width && out < n.width) n.packed[size_t{in} * n.width + out] = pack(table);
  }
  uint8_t vl(fabric::NodeIndex node, unsigned in, unsigned out, uint8_t sl) const {
    if (node >= nodes_.size() || nodes_[node].packed.empty()) return sl & 0xF;
    const NodeTables& n = nodes_[node];
    if (in >= n.width || out >= n.width) return sl & 0xF;
    return static_cast<uint8_t>((n.packed[size_t{in} * n.width + out] >> (4 * (sl & 0xF))) & 0xF);
  }
  bool empty() const { return nodes_.empty(); }

 private:
  struct NodeTables {
    unsigned width = 0;
    std::vector<uint64_t> packed;  // [in * width + out]
  };
  std::vector<NodeTables> nodes_;
};

}  // namespace ibsm::routing
