// The VL rules of dfly's paths, shared by the engine (routing/dfly_engine.cc, whose header proves them
// deadlock-free) and its repairs (routing/dfly_repair.cc): the SL-to-VL table of each switch (input, output)
// pair follows from the kinds of the two ports alone, and the channel classes (link kind, VL) are ranked so
// that a path whose ranks rise hop by hop can never close a cycle.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace ibsm::routing::dfly {

// What a switch port leads to, seen from that switch: a CA, a switch of its own group (local) or of another
// group (global). A global port also says whether the peer's group comes after this switch's group in each
// of two orders of the groups: A, by group number, and B, the numbers rotated by half (groups G: rank
// (g + (G + 1) / 2) mod G), so that every pair of groups has third groups outside its interval in one of
// them.
using PortKind = uint8_t;
inline constexpr PortKind kNone = 0, kCa = 1, kLocal = 2, kGlobal = 3;
inline constexpr PortKind kUpA = 4, kUpB = 8;  // flags of a global port

inline PortKind globalPort(uint32_t own, uint32_t peer, uint32_t groups) {
  const uint32_t shift = (groups + 1) / 2;
  const uint32_t ownB = (own + shift) % groups, peerB = (peer + shift) % groups;
  return static_cast<PortKind>(kGlobal | (peer > own ? kUpA : 0) | (peerB > ownB ? kUpB : 0));
}
inline bool isGlobal(PortKind k) {
  return (k & 3) == kGlobal;
}

// The SLs of dfly's paths (RoutingTables::sl). A detour passes a third group above both ends (a peak: up
// first, then down) or below both (a valley), in order A or B.
inline constexpr uint8_t kSlMinimal = 0;      // [L] G [L], and L [L] inside a group
inline constexpr uint8_t kSlPeakA = 1;        // [L] [L] G+ [L] G- [L] in order A
inline constexpr uint8_t kSlValleyA = 2;      // [L] [L] G- [L] G+ [L] in order A
inline constexpr uint8_t kSlLastLocals = 3;   // [L] G L L: two local hops in the destination group
inline constexpr uint8_t kSlFirstLocals = 4;  // L L G [L]: two local hops in the source group
inline constexpr uint8_t kSlPeakB = 5;
inline constexpr uint8_t kSlValleyB = 6;
inline constexpr uint8_t kSls = 7;
// The order a repair tries them in for a path: the minimal SL first, detours last.
inline constexpr uint8_t kSlOrder[kSls] = {kSlMinimal, kSlFirstLocals, kSlLastLocals, kSlPeakA,
                                           kSlValleyA, kSlPeakB,       kSlValleyB};

inline bool isDetour(uint8_t sl) {
  return sl == kSlPeakA || sl == kSlValleyA || sl == kSlPeakB || sl == kSlValleyB;
}

// The VL of a packet on `sl` that came in by a port of kind `in` and leaves by one of kind `out`.
inline uint8_t hopVl(PortKind in, PortKind out, uint8_t sl) {
  const bool peak = sl == kSlPeakA || sl == kSlPeakB, valley = sl == kSlValleyA || sl == kSlValleyB;
  const PortKind up = sl == kSlPeakA || sl == kSlValleyA ? kUpA : kUpB;  // the order of a detour's SL
  if (isGlobal(out)) {
    // A global hop: the first of a detour on VL 0 (with the minimal paths' global hop), the second on VL 2.
    // A peak goes up first, a valley down.
    if (peak) return (out & up) ? 0 : 2;
    if (valley) return (out & up) ? 2 : 0;
    return 0;
  }
  if (out != kLocal) return 0;
  if (in == kCa) return 1;  // a host's first local hop
  if (in == kLocal) {
    // The second of two local hops: before the global hop(s) on VL 3, after them (SL 3) on VL 2. SL 0 stays
    // on VL 0 as in the reset table, so that pairs no repaired path uses need no Set.
    if (sl == kSlLastLocals) return 2;
    return peak || valley || sl == kSlFirstLocals ? 3 : 0;
  }
  if (isGlobal(in)) {
    // After a global hop: the arrival of a detour's first global hop (for a peak one that went up, so came
    // in by a port whose peer is below) on VL 0, of its second on VL 2.
    const bool cameUp = !(in & up);
    if (peak) return cameUp ? 0 : 2;
    if (valley) return cameUp ? 2 : 0;
    return 0;
  }
  return 0;
}

// The packed SLtoVLMappingTable of a pair (SlToVlMap::setPacked): hopVl for every SL.
inline uint64_t packedTable(PortKind in, PortKind out) {
  uint64_t v = 0;
  for (uint8_t sl = 0; sl < 16; ++sl) v |= uint64_t{hopVl(in, out, sl)} << (4 * sl);
  return v;
}

// The rank of a channel class: L/1 < L/3 < G/0 < L/0 < G/2 < L/2; -1 for a class no path may use.
inline int classRank(bool global, uint8_t vl) {
  if (global) return vl == 0 ? 2 : vl == 2 ? 4 : -1;
  switch (vl) {
    case 1:
      return 0;
    case 3:
      return 1;
    case 0:
      return 3;
    case 2:
      return 5;
    default:
      return -1;
  }
}

// Whether a path from a CA of its first switch on `sl` rises through the ranks above (every hop's class
// strictly above the one before, every VL below `vls`), and its highest VL through maxVl. hop(i) gives the
// i-th switch-to-switch hop of the path as (the kind of the port it leaves by, the kind of the port it enters
// the next switch by).
template <typename Hop>
bool rises(size_t hops, Hop&& hop, uint8_t sl, uint8_t vls, uint8_t* maxVl = nullptr) {
  PortKind in = kCa;
  int prev = -1;
  uint8_t top = 0;
  for (size_t i = 0; i < hops; ++i) {
    const auto [out, next] = hop(i);
    const uint8_t vl = hopVl(in, out, sl);
    const int rank = classRank(isGlobal(out), vl);
    if (vl >= vls || rank <= prev) return false;
    prev = rank;
    top = std::max(top, vl);
    in = next;
  }
  if (maxVl) *maxVl = top;
  return true;
}

// The first SL of kSlOrder under which a path rises (rises above), and its highest VL through maxVl; -1
// when there is none.
template <typename Hop>
int risingSl(size_t hops, Hop&& hop, uint8_t vls, uint8_t* maxVl = nullptr) {
  for (uint8_t sl : kSlOrder)
    if (rises(hops, hop, sl, vls, maxVl)) return sl;
  return -1;
}

}  // namespace ibsm::routing::dfly
