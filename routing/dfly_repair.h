// Incremental repair of dfly's routes after links went down (or came back), inside the dragonfly scheme whose
// deadlock freedom routing/dfly_engine.cc's header proves: a global link that was its group pair's only one
// is routed around through a third group (a peak or a valley in group numbers, on SL 1 or 2), a local link
// by two local hops (SL 0, 3 or 4), on up to 4 VLs. The SL-to-VL table of every pair was set by the engine
// already, so only LFT entries and path SLs (RoutingTables::sl) change, and the VL programmer writes just the
// pairs the repaired paths start to use.
//
// What moves: per destination LID whose routes crossed a lost link, the switches whose way to it ran into
// that link (the upstream closure), nothing else. They choose again, nearest first, each the shortest way
// over what stays whose full path, from its own CAs, rises through the VL ranks under some SL; among equal
// ones the one it had, then the least loaded first link. A source switch left without such a way makes the
// repair decline (the caller then routes from scratch). Cost: per affected destination O(broken switches x
// degree x path length).
//
// A link that comes back: when the dragonfly is whole again the engine's routes from scratch replace the
// repaired ones (the original tables, max load and all; a diff against them moves only what the repairs
// moved); while another link is still down the repaired routes stay and the new link waits.
//
// Pure: old and new snapshots in, new tables out.
#pragma once

#include "routing/repair.h"

namespace ibsm::routing {

fabric::Result<RepairResult> repairDragonfly(const Topology& oldTopo, const LidAssignment& oldLids,
                                             const RoutingTables& old, const PortLoads& oldLoads,
                                             const Topology& topo, const LidAssignment& lids,
                                             uint32_t arGroupCap);

}  // namespace ibsm::routing
