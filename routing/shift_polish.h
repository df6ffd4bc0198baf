// Shift polish: collective traffic runs permutations (rank i to rank i + t, ranks: hosts in name order,
// defaultRanks), and a flow gets 1/k of its bandwidth, k the most flows of its shift on a link of its path.
// On a full fat tree ftree's D-mod-K routes put one flow of every shift on a link; on a degraded one the
// destinations a lost link orphans take links by load, and three or more flows of a shift can meet on one
// (up to 5 on an 8-ary 3-tree without 8 links) although a leaf that lost one up-link needs only share 2.
//
// This takes the tables an engine made and moves single (switch, CA LID) entries to other ports of the same
// up/down order (RoutingTables::upKey, the rule of routing/rebalance.h: every route keeps its length and
// stays up* then down*, so it stays minimal and the CDG acyclic on one VL, and the new port is one of the
// switch's equal-cost ports for the LID, i.e. in its AR group) until no shift puts more than maxShare flows
// on a link, or no move helps. For each (shift, link) above maxShare, in order, the move that lowers the
// cost most is taken among those of the flows on the link, at the switches of their paths up to it: a flow
// sharing a link costs (k - 1), one above maxShare much more. Where no single move helps, two steps are
// tried: a move that does not (the least bad of a few), then the best moves off the links it overloaded,
// kept only when together they lower the cost. Moves may raise a link's all-pairs load up to loadSlackPct
// above the lower bound (loadLowerBound), or up to the max load the routes had if that was higher, and never
// past options.maxLoad (the rebalance's: the max load before it): a few percent of all-pairs load buys every
// shift its bandwidth back (on a 6-ary 3-tree without 6 links: max congestion 3 -> 2 at 1.048x the bound, 21
// entries moved).
//
// Cost: a counter per (shift, link) (2 bytes each), so fabrics where ranks x directed switch links exceeds
// maxCounters are left as they are (about 2,000 hosts on a 3-level tree with the default); counting walks
// every pair's route once. Deterministic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <tuple>
#include <vector>

#include "fabric/topology.h"
#include "routing/lid_assignment.h"
#include "routing/routing_tables.h"

namespace ibsm::routing {

struct ShiftPolishOptions {
  uint32_t maxShare = 2;                     // flows of one shift a link may carry
  uint32_t loadSlackPct = 5;                 // over the all-pairs load lower bound
  uint64_t maxLoad = UINT64_MAX;             // and no link's load past this in any case
  uint64_t maxCounters = uint64_t{1} << 24;  // ranks x directed switch links
  size_t maxPasses = 8;                      // over the (shift, link) pairs above maxShare
};

struct ShiftPolishResult {
  bool skipped = false;  // the fabric is past maxCounters, or its routes obey no up/down order
  uint32_t shareBefore = 0, shareAfter = 0;  // the most flows of one shift on a link
  // The entries that differ now: (switch node, LID, the port it had), each once.
  std::vector<std::tuple<fabric::NodeIndex, uint16_t, uint8_t>> changed;
};

ShiftPolishResult polishShifts(const Topology& topo, const LidAssignment& lids, RoutingTables& tables,
                               const ShiftPolishOptions& options = {});

}  // namespace ibsm::routing
