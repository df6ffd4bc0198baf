// Minimal-change rebalancing: after a repair (routing/repair.h) the routes are complete and legal, but the
// traffic the broken ones carried may pile up on a few links. Instead of routing the whole fabric again and
// writing every switch's tables, this starts from the routes in place and moves single (switch, LID) entries
// off the links loaded above the target (by default the lower bound that no destination-based routing can
// beat, loadLowerBound) until none is, or no move helps. Every other entry stays as the switches hold it.
//
// A move changes the egress port of switch x for one LID to another port whose neighbour's route to the LID
// is one hop shorter, under the same up/down order the routes obey (RoutingTables::upKey): to a switch "up"
// from x only when x's own route does not run down-only, to one "down" only when that neighbour's route runs
// down-only. So every switch keeps the length of its route and its route stays up* then down*: no route gets
// longer, none can loop, and the channel dependency graph stays acyclic on one VL. A moved entry's port
// joins the switch's AR group for the LID (it is an equal-cost port; a port of a link that came back is not
// in the groups the repair left). Switches left without a route to a CA LID that have a legal way again (a
// link came back) first get one, which moves no traffic. Before that, the entries of LIDs that left the
// fabric, which a repair leaves in place (repairRoutes), are cleared.
//
// A move is taken when it lowers the sum of squared excesses of the link loads over the target and loads no
// link past the load of the link it relieves; the best of a sample of such moves is taken. Where none
// exists, a pair is tried: a move that raises the sum, then one off a link it loaded that lowers it more
// (swapping traffic between two links, e.g. a leaf's routes out of its pod for routes within it). Passes
// over the links above the target repeat until one moves nothing, so the max load only falls.
//
// Shifts (options.maxShiftShare, on by default): collectives run permutations, rank i to rank i + t (ranks:
// hosts in name order, defaultRanks), and a flow gets 1/k of its bandwidth, k the most flows of its shift on
// a link of its path. On a full fat tree D-mod-K puts one flow of each shift on a link, a single repair at
// most two. Moving single entries towards the load bound without regard to that stacked consecutive
// destinations of several leaves on one link (up to 15 flows of a shift at 11,664 hosts). So a move is taken
// only when no flow it moves finds maxShiftShare or more flows of its shift on a link it newly crosses, and
// of the candidates (those taking a flow off the loaded link that shares it with one of its shift first) the
// one that makes the fewest flows newly share a link; where the new next switch carries no traffic to the
// LID its route may follow a sibling destination's (the same switch, already sent that way: the
// destination's column), so the moved flows follow one other flow instead of meeting several. A link within
// options.shareSlackPct of the target is relieved only by moves that make no more flows share links than
// before (and no pairs): the last percent of load is not worth the shifts' bandwidth. The shifts are kept
// only where the repair kept them: when a link above the target carries more than maxShiftShare flows of a
// shift already (a whole switch lost), the moves chase the load alone (RebalanceResult::shiftShare).
// Shifts the repair itself left above maxShiftShare are then brought back by polishShifts
// (routing/shift_polish.h: single entries among the same legal ports, loading no link past the max load
// before the rebalance, on fabrics within its budget); its entries count as moved.
//
// Cost: per search, the LFT row of the loaded link's switch and a walk of a few hops per candidate port;
// with shifts, per candidate weighed, for each moved flow the flows of its shift on the links it leaves and
// joins, counted once per (link, shift) by walking the routes of the ranks below the link (a pod on a
// 3-level tree) and then kept up to date. No per-LID state, so memory does not grow with LIDs x switches.
//
// Pure: tables and their link loads in, new tables (sharing every row not written) out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "fabric/result.h"
#include "routing/lid_assignment.h"
#include "routing/repair.h"
#include "routing/routing_tables.h"

namespace ibsm::routing {

// Lower bound on the max switch-to-switch link load (as PortLoads counts it: CA source ports x CA
// destination LIDs) of any destination-based routing: for every switch with CA sources, the routes from them
// to the CA LIDs that leave the fabric elsewhere cross its live switch-to-switch links, so one of them
// carries at least the share, rounded up.
uint64_t loadLowerBound(const Topology& topo, const LidAssignment& lids);

struct RebalanceOptions {
  uint64_t target = 0;         // stop once the max load is at or below this; 0: loadLowerBound
  size_t maxMoves = SIZE_MAX;  // stop after this many moves
  uint32_t arGroupCap = 2048;  // per switch, as Options::arGroupCap
  // No move puts more than this many flows of one shift (ranks: hosts in name order, rank i to i + t) on a
  // link, unless the flows it moves leave a link that carries more; 0: shifts are not looked at (the moves
  // chase the load alone).
  uint32_t maxShiftShare = 2;
  // A link loaded at most this many percent above the target is relieved only by moves that make no more
  // flows of a shift share a link than they free.
  uint32_t shareSlackPct = 2;
};

struct RebalanceResult {
  RoutingTables tables;  // shares every row it did not change
  PortLoads loads;       // of tables
  size_t moved = 0;      // (switch, LID) entries that differ from the input tables
  size_t polished = 0;   // entries the shift polish changed (shifts the repair left above maxShiftShare)
  uint32_t polishedShare = 0;  // then the most flows of one shift on a link
  size_t restored = 0;  // of those, routes given back to a switch without one or made shorter by a link
                        // that came back (worth writing whatever the load gain); dfly: all of them
  size_t cleared = 0;   // and entries of LIDs that left the fabric, which a repair leaves (the same)
  uint64_t maxLoadBefore = 0, maxLoadAfter = 0, target = 0;
  std::string note;  // what an engine's own rebalance did, for the event ("dfly: ..."); empty for the moves
  // With options.maxShiftShare: the most flows of one shift on a link above the target before the moves.
  // Above maxShiftShare the repair did not keep the shifts, and the moves chase the load alone.
  uint32_t shiftShare = 0;
};

// dfly's routes (tables.engine "dfly") obey no up/down order but a dragonfly's scheme: their rebalance gives
// the engine's routes from scratch back once the dragonfly is whole again after a link came back, which the
// repair leaves to it (routing/dfly_repair.h, rebalanceDragonfly), and declines otherwise.
// An Error when the routes obey no up/down order (upKey empty: the engine's tables are only ever recomputed).
fabric::Result<RebalanceResult> rebalanceRoutes(const Topology& topo, const LidAssignment& lids,
                                                const RoutingTables& tables, const PortLoads& loads,
                                                const RebalanceOptions& options = {});

}  // namespace ibsm::routing
