#include "routing/stabilize.h"

namespace ibsm::routing {

namespace {
Guid ownerGuid(const Topology& topo, const LidAssignment& lids, uint16_t lid) {
  LidOwner o = lids.owner(Lid{lid});
  if (o.node == fabric::kNoNode) return Guid{0};
  return topo.node(o.node).port(o.port).guid;
}
}  // namespace

StabilizeStats keepStableRoutes(const Topology& oldTopo, const LidAssignment& oldLids,
                                const RoutingTables& old, const Topology& topo, const LidAssignment& lids,
                                RoutingTables& fresh) {
  StabilizeStats st;
  const size_t maxLid = std::min<size_t>(lids.maxLid().value, oldLids.maxLid().value);
  std::vector<bool> sameOwner(maxLid + 1, false);
  for (size_t lid = 1; lid <= maxLid; ++lid) {
    Guid g = ownerGuid(topo, lids, static_cast<uint16_t>(lid));
    sameOwner[lid] = g.value != 0 && g == ownerGuid(oldTopo, oldLids, static_cast<uint16_t>(lid));
  }
  for (NodeIndex s : topo.switches()) {
    auto o = oldTopo.findNode(topo.node(s).guid);
    std::vector<uint8_t>& table = fresh.lft[s];
    if (!o || *o >= old.lft.size()) {
      st.moved += table.size();
      continue;
    }
    const std::vector<uint8_t>& before = old.lft[*o];
    const ArTable* ar = s < fresh.ar.size() ? &fresh.ar[s] : nullptr;
    for (size_t lid = 0; lid < table.size(); ++lid) {
      uint8_t was = lid < before.size() ? before[lid] : kNoPort;
      if (table[lid] != was && was != kNoPort && lid <= maxLid && sameOwner[lid] && ar &&
          lid < ar->lidToGroup.size()) {
        uint16_t g = ar->lidToGroup[lid];
        if (g != ArTable::kNoGroup && g < ar->groups.size() && ar->groups[g].test(was)) {
          table[lid] = was;
          ++st.kept;
        }
      }
      st.moved += table[lid] != was;
    }
  }
  return st;
}

}  // namespace ibsm::routing
