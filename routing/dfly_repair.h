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
// A link that comes back breaks no route: the repaired routes stay valid without it. When the dragonfly is
// whole again (the engine accepts it, with the groups as before) the engine's routes from scratch replace the
// repaired ones (the original tables, max load and all; a diff against them moves only what the repairs
// moved); while another link is still down the repaired routes stay and the new link waits. Routing from
// scratch takes long on a large dragonfly (about 2 s at 1,020 switches with Options::dflySpread), so when an
// incremental rebalance follows the repair (rebalanceFollows) the repair keeps the routes and
// rebalanceDragonfly, off the daemon's event loop, gives the engine's routes back; without a rebalance the
// repair does it itself.
//
// Pure: old and new snapshots in, new tables out.
#pragma once

#include "routing/rebalance.h"
#include "routing/repair.h"

namespace ibsm::routing {

fabric::Result<RepairResult> repairDragonfly(const Topology& oldTopo, const LidAssignment& oldLids,
                                             const RoutingTables& old, const PortLoads& oldLoads,
                                             const Topology& topo, const LidAssignment& lids,
                                             uint32_t arGroupCap, bool rebalanceFollows);

// dfly's rebalance (rebalanceRoutes; its routes obey no up/down order for single moves): the engine's routes
// from scratch when the dragonfly is whole again and they take a link that the routes in place leave idle
// both ways (one that came back, which the repair left to this), sharing every row they leave as it was;
// every entry that differs counts as restored (the SM writes them whatever the load gain). An Error (the
// routes stay) when the dragonfly is not whole (another link still down), its groups changed, or no link
// waits (after a link or a host went away the repaired routes are as good a stopgap as any).
fabric::Result<RebalanceResult> rebalanceDragonfly(const Topology& topo, const LidAssignment& lids,
                                                   const RoutingTables& tables, const PortLoads& loads,
                                                   uint32_t arGroupCap);

}  // namespace ibsm::routing
