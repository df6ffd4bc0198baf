// Adopting the routes the switches hold: after a takeover or a restart the SM reads the LFTs back, and where
// an entry is valid for the fabric as it is now it stays, even when a fresh engine run would route that LID
// otherwise (after a repair the switches' tables differ from a from-scratch run). So a new master writes no
// LFT entry that does not need writing: no job notices the change of SM.
//
// Valid, per destination LID:
//   - a CA LID: the held entry of switch x, towards neighbour v, is one of the legal equal-cost next hops
//     under the fresh engine's up/down order (RoutingTables::upKey; legalHop in routing_graph.h, the rule
//     repairs apply): v's legal route is one hop shorter, and v is up from x while x has no down-only way,
//     or the hop is down and v's down-only route is one hop shorter than x's. The exit switch must send it
//     out of the port the LID's owner is cabled to. Such routes stay up* then down* under one order, so the
//     channel dependency graph on one VL stays acyclic, whatever mix of held and fresh entries results.
//   - a switch's own LID: the same where the switch has a legal way to it; where it has none, any held way
//     without a loop, but the ways of the hosts of such switches turn down-up, and the mix's turns must
//     close no cycle with the fresh tables' or other mixes' (routing/turn_guard.h).
// Invalid entries take the fresh engine's; a destination whose mix does not reach its LID from every switch
// that can reach it takes the fresh engine's routes entirely. Unused LIDs take the fresh entries (no port).
// Only engines with an order on one VL (ftree, updn, minhop) adopt: with SL layers or SL-to-VL tables
// (dfsp, dor, dfly) deadlock freedom depends on the fresh engine's own routes, and the fresh tables are kept.
// Everything else of the fresh tables (upKey, AR groups, SLs) stays, so later repairs work as after a sweep.
//
// Pure: topology, LIDs and tables in, tables out. Cost: one BFS per exit switch plus one pass over every
// (switch, LID) entry.
#pragma once

#include <cstddef>
#include <string>

#include "routing/lid_assignment.h"
#include "routing/routing_tables.h"

namespace ibsm::routing {

struct AdoptResult {
  RoutingTables tables;
  size_t kept = 0;      // (switch, LID) entries held that differ from the fresh engine's and stay
  size_t replaced = 0;  // entries held that were not valid: the fresh engine's replace them (to be written)
  size_t destinationsRejected = 0;  // destinations whose held routes were dropped whole (a loop or a gap)
  std::string why;                  // non-empty: nothing was adopted, and why
};

// held: per node (switch nodes of topo), the LFT as read back from the switch; an empty row is unknown (the
// fresh engine's is taken).
AdoptResult adoptHeldTables(const Topology& topo, const LidAssignment& lids, RoutingTables fresh,
                            const Rows<LftRow>& held);

}  // namespace ibsm::routing
