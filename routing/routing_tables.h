// What a routing engine produces: per switch, a linear forwarding table and (optionally) adaptive-routing
// groups.
#pragma once

#include <bitset>
#include <cstdint>
#include <string>
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
  bool capped = false;  // the group cap was reached; LIDs past it fall back to static routing
  bool operator==(const ArTable&) const = default;
};

// One switch's LFT in blocks of 64 entries, the unit the SM writes (LinearForwardingTable): versions of the
// tables share the blocks a change does not touch, and the programmer skips a block it wrote that is still
// the very same.
using LftRow = Blocks<uint8_t, 64>;

struct RoutingTables {
  std::string engine;  // which engine produced them
  // Rows (fabric/rows.h): per switch, shared with other versions of the tables until written.
  Rows<LftRow> lft;  // [node] -> LID -> egress port (kNoPort = none); empty for non-switches
  Rows<ArTable> ar;  // [node]; empty when AR was not computed
  // Service level of each path, for engines that keep their routes deadlock-free by spreading them over
  // virtual-lane layers (SL i travels on VL i on every hop, unless slToVl says otherwise): sl[switch
  // node][LID] is the SL of the traffic that enters the fabric at that switch (from a CA cabled to it)
  // towards that LID. Empty (or a switch's row empty or short) means SL 0. slLayers is how many VLs the paths
  // use: 1 when the engine needs no VL layering, and then sl stays empty.
  std::vector<std::vector<uint8_t>> sl;
  uint8_t slLayers = 1;
  // For engines whose VL depends on the output port rather than being the SL (dor's datelines): [node][output
  // port] -> SL -> VL table, 4 bits per SL (SlToVlMap::pack), for every input port of that output; ports past
  // a row's end send every SL on VL 0. Empty: SL i on VL i.
  std::vector<std::vector<uint64_t>> slToVl;
  // The order the routes to CA LIDs obey, for incremental repair (routing/repair.h): [node] -> key of each
  // switch; a hop towards a smaller key is "up", and every route is up* then down*, a switch with a down-only
  // way to the destination taking its shortest one. All keys equal: plain shortest paths. Empty: the engine
  // promises no such order and its tables are only ever recomputed.
  std::vector<uint32_t> upKey;
  uint8_t port(fabric::NodeIndex sw, fabric::Lid lid) const {
    const auto& t = lft[sw];
    return lid.value < t.size() ? t[lid.value] : kNoPort;
  }
  // The VL a packet on `sl` leaves port `out` of `node` on.
  uint8_t hopVl(fabric::NodeIndex node, unsigned out, uint8_t sl) const {
    if (slToVl.empty()) return sl & 0xF;
    if (node >= slToVl.size() || out >= slToVl[node].size()) return 0;
    return static_cast<uint8_t>((slToVl[node][out] >> (4 * (sl & 0xF))) & 0xF);
  }
  // The SL of a path from a CA cabled to switch `ingress` to `lid`.
  uint8_t pathSl(fabric::NodeIndex ingress, fabric::Lid lid) const {
    if (ingress >= sl.size()) return 0;
    const auto& t = sl[ingress];
    return lid.value < t.size() ? t[lid.value] : 0;
  }
};

}  // namespace ibsm::routing
