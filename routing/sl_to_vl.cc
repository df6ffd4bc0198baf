#include "routing/sl_to_vl.h"

#include <algorithm>

namespace ibsm::routing {

uint8_t offeredDataVls(const fabric::Topology& topo) {
  // PortInfo.VLCap: 1 = VL0, 2 = VL0-1, 3 = VL0-3, 4 = VL0-7, 5 = VL0-14.
  static constexpr uint8_t kVls[] = {0, 1, 2, 4, 8, 15};
  uint8_t vls = 15;
  bool any = false;
  for (const fabric::Link& l : topo.links()) {
    const fabric::PortAttrs& a = topo.node(l.a).ports[l.portA.value].attrs;
    const fabric::PortAttrs& b = topo.node(l.b).ports[l.portB.value].attrs;
    if (!a.valid || !b.valid) continue;
    uint8_t cap = std::min(a.vlCap, b.vlCap);
    vls = std::min(vls, cap < 6 ? std::max<uint8_t>(kVls[cap], 1) : uint8_t{15});
    any = true;
  }
  return any ? vls : 1;
}

VlPairs layeredVlPairs(const fabric::Topology& topo, const RoutingTables& tables,
                       const std::vector<uint16_t>* lids) {
  VlPairs out;
  std::vector<uint8_t> caPorts;
  // With SL i on VL i, only paths on an SL above 0 need tables; with the engine's own tables, also the pairs
  // those map SL 0 off VL 0 (dfly's first local hop).
  const bool perPair = !tables.slToVl.empty();
  static const std::vector<uint8_t> kAllSl0;
  // Whether an engine table sends SL 0 off VL 0 anywhere but on a path's first hop (dor's datelines; not
  // dfly, whose SL 0 leaves VL 0 only on a host's first local hop). When not, a path on SL 0 needs only its
  // first hop looked at: one scan of the source switch's row instead of a walk per (source, LID), which on a
  // 1,020-switch dragonfly is the difference between about 5 ms and 280 ms, on every programming run.
  bool sl0Beyond = false;
  if (perPair)
    for (fabric::NodeIndex u : topo.switches()) {
      const fabric::Node& n = topo.node(u);
      for (unsigned in = 1; in <= n.numPorts && !sl0Beyond; ++in) {
        const fabric::Port& p = n.ports[in];
        if (!p.connected() || !topo.node(p.peerNode).isSwitch()) continue;
        for (unsigned o = 1; o <= n.numPorts && !sl0Beyond; ++o) sl0Beyond = tables.hopVl(u, in, o, 0) != 0;
      }
    }
  std::vector<uint8_t> firstHops;  // [port]: some SL-0 path of the source switch leaves by it
  for (fabric::NodeIndex s = 0; s < topo.size(); ++s) {
    const auto& row = s < tables.sl.size() ? tables.sl[s] : kAllSl0;
    const fabric::Node& sw = topo.node(s);
    if ((row.empty() && !perPair) || !sw.isSwitch()) continue;
    // The CA ports cabled to this ingress switch: each is an input of the first hop, and the CA's own port
    // sends the SL.
    caPorts.clear();
    for (unsigned q = 1; q < sw.ports.size(); ++q) {
      const fabric::Port& p = sw.ports[q];
      if (p.connected() && !topo.node(p.peerNode).isSwitch()) caPorts.push_back(static_cast<uint8_t>(q));
    }
    if (caPorts.empty()) continue;
    bool any = false;
    const size_t end = perPair ? tables.lft[s].size() : row.size();
    firstHops.assign(sw.ports.size(), 0);
    for (size_t i = lids ? 0 : 1; i < (lids ? lids->size() : end); ++i) {
      const size_t lid = lids ? (*lids)[i] : i;
      if (lid == 0 || lid >= end) continue;
      const uint8_t sl = lid < row.size() ? row[lid] : 0;
      if (sl == 0 && !perPair) continue;
      if (sl == 0 && !sl0Beyond) {
        const uint8_t o = tables.port(s, fabric::Lid{static_cast<uint16_t>(lid)});
        if (o != kNoPort && o < firstHops.size()) firstHops[o] = 1;
        continue;
      }
      any = any || sl > 0;
      // The path from first hop `first` on.
      auto walk = [&](uint8_t first) {
        fabric::NodeIndex u = s;
        unsigned in = 0;
        // At most one hop per switch: a loop in the tables is the route checker's to report, not ours.
        for (size_t hop = 0; hop < topo.switches().size(); ++hop) {
          const fabric::Node& n = topo.node(u);
          uint8_t o = hop == 0 ? first : tables.port(u, fabric::Lid{static_cast<uint16_t>(lid)});
          if (o == kNoPort || o == 0 || o >= n.ports.size() || !n.ports[o].connected()) break;
          if (u == s) {
            for (uint8_t q : caPorts)
              if (sl > 0 || tables.hopVl(u, q, o, sl) != 0) out.mark(u, n.numPorts, q, o);
          } else if (sl > 0 || tables.hopVl(u, in, o, sl) != 0) {
            out.mark(u, n.numPorts, in, o);
          }
          const fabric::Port& p = n.ports[o];
          if (!topo.node(p.peerNode).isSwitch()) break;
          u = p.peerNode;
          in = p.peerPort.value;
        }
      };
      const uint8_t first = tables.port(s, fabric::Lid{static_cast<uint16_t>(lid)});
      walk(first);
      // An engine's AR members beyond the shortest (RoutingTables::arStretch: dfly's detours, which only the
      // source switch offers) take the packets, on their SL, over pairs the path may not: their ways too.
      if (tables.arStretch > 0 && s < tables.ar.size())
        if (const uint16_t g = tables.ar[s].groupOf(lid); g != ArTable::kNoGroup)
          for (unsigned q = 1; q < sw.ports.size(); ++q)
            if (q != first && tables.ar[s].groups[g].test(q)) walk(static_cast<uint8_t>(q));
    }
    for (unsigned o = 1; o < firstHops.size(); ++o)
      if (firstHops[o] && sw.ports[o].connected())
        for (uint8_t q : caPorts)
          if (tables.hopVl(s, q, o, 0) != 0) out.mark(s, sw.numPorts, q, o);
    for (uint8_t q : caPorts) {
      const fabric::Port& p = sw.ports[q];
      if (any || tables.hopVl(p.peerNode, 0, p.peerPort.value, 0) != 0)
        out.mark(p.peerNode, topo.node(p.peerNode).numPorts, 0, p.peerPort.value);
    }
  }
  return out;
}

}  // namespace ibsm::routing
