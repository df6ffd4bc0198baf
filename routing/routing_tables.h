// What a routing engine produces: per switch, a linear forwarding table and (optionally) adaptive-routing
// groups.
#pragma once

#include <algorithm>
#include <array>
#include <bitset>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "fabric/rows.h"
#include "fabric/topology.h"

namespace ibsm::routing {

using fabric::Blocks;
using fabric::Rows;

inline constexpr uint8_t kNoPort = 0xFF;  // LFT entry: drop
using PortMask = std::bitset<256>;

// Adaptive-routing groups of one switch: identical port sets share one group number.
struct ArTable {
  std::vector<PortMask> groups;  // group number -> equal-cost egress ports
  Blocks<uint16_t> lidToGroup;   // LID -> group number, kNoGroup when the LID has no AR group
  static constexpr uint16_t kNoGroup = 0xFFFF;
  // The group of `lid`, kNoGroup when it has none (also past the end of lidToGroup).
  uint16_t groupOf(size_t lid) const { return lid < lidToGroup.size() ? lidToGroup[lid] : kNoGroup; }
  bool capped = false;  // the group cap was reached; LIDs past it fall back to static routing
  bool operator==(const ArTable&) const = default;
};

// SL -> VL tables of a fabric's ports (IBA 14.2.5.8, SLtoVLMappingTable), one per switch (input port,
// output port) pair and per CA port (input 0): what VL a packet of a given SL leaves a port on. Pairs not set
// hold `unset`: the identity (SL i on VL i) unless said otherwise. Used by the route checker to build the
// channel dependency graph per VL, from the tables an engine implies or the ones read back from a fabric.
class SlToVlMap {
 public:
  using Table = std::array<uint8_t, 16>;  // SL -> VL
  static constexpr uint64_t kIdentity = 0xFEDCBA9876543210ull;
  explicit SlToVlMap(uint64_t unset = kIdentity) : unset_(unset) {}

  static uint64_t pack(const Table& t) {
    uint64_t v = 0;
    for (unsigned sl = 0; sl < 16; ++sl) v |= uint64_t{t[sl] & 0xFu} << (4 * sl);
    return v;
  }
  // numPorts: the node's port count (a switch's tables are indexed by in/out port 0..numPorts).
  void set(fabric::NodeIndex node, unsigned numPorts, unsigned in, unsigned out, const Table& table) {
    setPacked(node, numPorts, in, out, pack(table));
  }
  void setPacked(fabric::NodeIndex node, unsigned numPorts, unsigned in, unsigned out, uint64_t packed) {
    if (node >= nodes_.size()) nodes_.resize(node + 1u);
    NodeTables& n = nodes_[node];
    if (n.packed.empty()) {
      n.width = numPorts + 1u;
      n.packed.assign(size_t{n.width} * n.width, unset_);
    }
    if (in < n.width && out < n.width) n.packed[size_t{in} * n.width + out] = packed;
  }
  uint64_t packed(fabric::NodeIndex node, unsigned in, unsigned out) const {
    if (node >= nodes_.size()) return unset_;
    const NodeTables& n = nodes_[node];
    return in < n.width && out < n.width ? n.packed[size_t{in} * n.width + out] : unset_;
  }
  uint8_t vl(fabric::NodeIndex node, unsigned in, unsigned out, uint8_t sl) const {
    return static_cast<uint8_t>((packed(node, in, out) >> (4 * (sl & 0xF))) & 0xF);
  }
  bool empty() const { return nodes_.empty(); }
  bool operator==(const SlToVlMap&) const = default;

 private:
  struct NodeTables {
    unsigned width = 0;
    std::vector<uint64_t> packed;  // [in * width + out]
    bool operator==(const NodeTables&) const = default;
  };
  uint64_t unset_;
  Rows<NodeTables> nodes_;  // shared with copies (a repair's tables) until written
};

// One switch's LFT in blocks of 64 entries, the unit the SM writes (LinearForwardingTable): versions of the
// tables share the blocks a change does not touch, and the programmer skips a block it wrote that is still
// the very same.
using LftRow = Blocks<uint8_t, 64>;

// Calls f(lid) for every LID whose entry differs between two versions of a switch's LFT (past a row's end an
// entry is kNoPort), LID 0 included; blocks the two versions share are skipped without being read.
template <typename F>
void forEachChangedEntry(const LftRow& now, const LftRow& was, F&& f) {
  const size_t len = std::max(now.size(), was.size());
  for (size_t k = 0; k * LftRow::kBlock < len; ++k) {
    const size_t end = std::min(len, (k + 1) * LftRow::kBlock);
    // A shrunk row keeps its last block's stale tail (fabric/rows.h): shared, but not equal past its end.
    if (now.sameBlock(k, was) && end <= now.size() && end <= was.size()) continue;
    for (size_t lid = k * LftRow::kBlock; lid < end; ++lid)
      if ((lid < now.size() ? now[lid] : kNoPort) != (lid < was.size() ? was[lid] : kNoPort)) f(lid);
  }
}

// The grid of dor's routes (routing/dor_engine.cc): per dimension its size and whether it wraps, per node its
// coordinates, and the data VLs dor may use (Options::vlLayers when it routed). Empty for other engines.
struct DorGrid {
  static constexpr uint32_t kNoCoord = UINT32_MAX;
  std::vector<uint32_t> size;
  std::vector<uint8_t> ring;
  std::vector<uint32_t> coord;  // [node * dims + d]; kNoCoord for nodes that are no switch of the grid
  uint8_t vls = 0;
  size_t dims() const { return size.size(); }
  // The SL bit of dimension d's dateline (the j-th ring of 4 or more switches gives bit j), or -1.
  int slBit(size_t d) const {
    int bit = 0;
    for (size_t e = 0; e < d; ++e) bit += ring[e] && size[e] >= 4;
    return ring[d] && size[d] >= 4 ? bit : -1;
  }
  int rings() const {
    int n = 0;
    for (size_t d = 0; d < dims(); ++d) n += slBit(d) >= 0;
    return n;
  }
};

struct RoutingTables {
  std::string engine;  // which engine produced them
  // Rows (fabric/rows.h): per switch, shared with other versions of the tables until written.
  Rows<LftRow> lft;  // [node] -> LID -> egress port (kNoPort = none); empty for non-switches
  Rows<ArTable> ar;  // [node]; empty when AR was not computed
  // How many hops an AR member's way (1 + its next switch's route) may be longer than the shortest: 0 for
  // engines whose members are all on shortest paths; more where the engine's VL scheme proves its longer
  // members deadlock-free (dfly's detours: 2), which the route checker accepts only with its VL-aware AR CDG.
  uint8_t arStretch = 0;
  // Service level of each path, for engines that keep their routes deadlock-free by spreading them over
  // virtual-lane layers (SL i travels on VL i on every hop, unless slToVl says otherwise): sl[switch
  // node][LID] is the SL of the traffic that enters the fabric at that switch (from a CA cabled to it)
  // towards that LID. Empty (or a switch's row empty or short) means SL 0. slLayers is how many VLs the paths
  // use: 1 when the engine needs no VL layering, and then sl stays empty (as it does for dfly, whose paths
  // are all SL 0 and take their VLs from slToVl).
  Rows<std::vector<uint8_t>> sl;
  uint8_t slLayers = 1;
  // For engines whose VL is not the SL on every hop (dor's datelines, dfly's first local hop): the table of
  // each switch (input, output) pair and CA port; pairs not set send every SL on VL 0. Empty: SL i on VL i.
  SlToVlMap slToVl{0};
  // The order the routes to CA LIDs obey, for incremental repair (routing/repair.h): [node] -> key of each
  // switch; a hop towards a smaller key is "up", and every route is up* then down*, a switch with a down-only
  // way to the destination taking its shortest one. All keys equal: plain shortest paths. Empty: the engine
  // promises no such order and its tables are only ever recomputed.
  std::vector<uint32_t> upKey;
  // The down-up turns (D, V) routes from hosts to switch LIDs take where upKey's order offers them no legal
  // way: a route comes down from switch D and turns up towards switch V (routing/turn_guard.h). Kept so that
  // a repair's new turns close no cycle with them. Sorted by GUID.
  std::vector<std::pair<fabric::Guid, fabric::Guid>> downUpTurns;
  // dfly only (routing/dfly_repair.h): [node] -> the dragonfly group of each switch, and the data VLs its
  // repairs may spread paths over (Options::vlLayers when it routed). Empty / 0 for the other engines.
  std::vector<uint32_t> dflyGroup;
  uint8_t dflyVls = 0;
  bool dflySpread = false;  // routed with Options::dflySpread (a repair's fresh routes are routed so again)
  // dor only (routing/dor_repair.h): the grid its routes follow, which a torus missing a link no longer
  // shows.
  DorGrid dorGrid;
  uint8_t port(fabric::NodeIndex sw, fabric::Lid lid) const {
    const auto& t = lft[sw];
    return lid.value < t.size() ? t[lid.value] : kNoPort;
  }
  // The VL a packet on `sl` that came into `node` by port `in` leaves port `out` on.
  uint8_t hopVl(fabric::NodeIndex node, unsigned in, unsigned out, uint8_t sl) const {
    return slToVl.empty() ? sl & 0xF : slToVl.vl(node, in, out, sl);
  }
  // The SL of a path from a CA cabled to switch `ingress` to `lid`.
  uint8_t pathSl(fabric::NodeIndex ingress, fabric::Lid lid) const {
    if (ingress >= sl.size()) return 0;
    const auto& t = sl[ingress];
    return lid.value < t.size() ? t[lid.value] : 0;
  }
};

}  // namespace ibsm::routing
