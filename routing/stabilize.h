// Minimal-change re-routing: after a failure, keep every old route that is still one of the engine's legal
// equal-cost choices (a member of the new AR group of that switch and LID), so only the routes that broke
// move. Pure: takes the old and new snapshots' tables, edits the new ones.
#pragma once

#include "routing/lid_assignment.h"
#include "routing/routing_tables.h"

namespace ibsm::routing {

struct StabilizeStats {
  size_t kept = 0;   // entries where the old port was kept instead of the engine's new choice
  size_t moved = 0;  // entries that differ from the old tables afterwards
};

// Switches are matched by GUID and LIDs by owner port GUID, so the snapshots may number nodes differently.
// Entries without an AR group in `fresh` keep the engine's choice.
StabilizeStats keepStableRoutes(const Topology& oldTopo, const LidAssignment& oldLids,
                                const RoutingTables& old, const Topology& topo, const LidAssignment& lids,
                                RoutingTables& fresh);

}  // namespace ibsm::routing
