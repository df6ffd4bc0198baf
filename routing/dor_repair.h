// Incremental repair of dor's routes (routing/dor_engine.cc) after switch-to-switch links went down (or came
// back), inside dimension-order routing. The grid comes from the routes (RoutingTables::dorGrid): a torus
// missing a link no longer shows it.
//
// What moves: per destination LID, the switches whose entry took a lost link (the seeds) choose again,
// nothing else; the switches whose route runs into a seed keep their entries but may take a new path SL.
//  - Another live link to the same neighbour (parallel links), or at the antipode of an even ring the other
//    way round (as minimal): that one. The route stays one of dimension order, on its SL and VLs.
//  - Else the lost link between x and its neighbour y in dimension d is routed around by a sidestep in
//    another dimension e, chosen per link: the lowest e > d, else the highest e < d, and a direction in e
//    for which the three links x-x', y-y', x'-y' are up (x' = x + u_e, y' = y + u_e, u_e a step in e).
//      e > d: x sends to x' (one entry), whose own dimension-order route corrects d in the row next to the
//             failed one and e on the way: x x' ... replaces x y ...
//      e < d: x sends to x', and x', whose route to the LID went back to x, now to y'; y''s own route takes
//             e back to y: x x' y' y replaces x y (two entries).
//    Both ways of the link are routed around on the same side.
// AR groups stay dor's (the parallel links of the LFT port's way) on routes that stay of dimension order; a
// broken switch whose route takes a detour gets none (neither its way nor its parallel links are shortest).
//
// SLs and VLs: dor's own paths use the dateline SLs 0..2^r-1 (r rings of 5 or more switches) on VLs 0..L-1
// (L = 2 with datelines, else 1): layer 0. A path that takes a detour hop (one that is not a minimal step in
// the first dimension its switch still has to correct) gets SL bit r, the detour flag, and travels on layer
// 1, from its first hop to its last: VL L + the VL its SL would take on layer 0 (datelines by the ring wrap
// links the path takes). The SL-to-VL tables change only on the (input, output) pairs those paths traverse,
// and only for the SLs with the flag; without datelines there are none and SL 1 is VL 1 already. So 2L VLs
// (4 on a torus with datelines, 2 on a mesh, a hypercube or a torus with rings of 3) and r + 1 SL bits; the
// repair declines when dor routed with fewer VLs or r = 4. Every path that took no lost link keeps its
// route, its SL and its VLs.
//
// Deadlock freedom. No dependency joins the layers: a path is on one layer from end to end. Layer 0 carries
// dimension-order paths only (minimal; SL bits of the wrap links they take): acyclic by the engine's
// argument. Layer 1 after one lost link from the grid whole (the case taken without the check below): put it
// all on one VL and merge parallel links; acyclic there is acyclic on its VLs (splitting channels by VL maps
// a cycle onto one) and with any AR member (merged channels). Let the link join x = (R, f) and y = (R, f+1)
// (R: the coordinates but d), U the routes that crossed it from x to y, D from y to x. Every layer-1 path
// is A S C with
//   A  a dimension-order route into the detour: to x (U) or y (D), or, for e < d, to x' or y' arriving in
//      e from the far side (the routes that passed x' on their way to x, which now turn at x');
//   S  the detour hops: e > d: x x' (U), y y' (D); e < d: x x' y' y or x' y' y (U), y y' x' x or y' x' x (D);
//   C  a dimension-order route out of it: from x' or y' (e > d), from y or x (e < d).
//  (1) No channel is of two kinds. A takes dimensions <= d, C dimensions >= d; in d, A only row R, C row
//      R + u_e (e > d) or the part of row R past the link (e < d; A has the part before it, and a minimal way
//      is at most half a ring, so the two parts of a direction do not meet). S's hops in d are in row
//      R + u_e. For e > d, S is in e, where A has no hops and C's hops start from x''s and y''s coordinate,
//      one step from R's: a minimal way from there never takes the step from R's coordinate to it (that is
//      the whole ring the other way). For e < d, C has no hops in e, and A's hops in the rings of e through x
//      and y (coordinates f
//      and f+1 in d: U's sources are all on one side, D's on the other) head for x or x', y or y', so none is
//      x x', x' x, y y' or y' y (a route that reached x' does not go on to x).
//  (2) So the dependencies go A->A, A->S, S->S, S->C and C->C, and a cycle lies within A, S or C.
//  (3) A: between dimensions its dependencies go up; inside a ring or line and direction every A hop heads
//      for one coordinate, the destination's (x''s or y''s for the routes turning there), which no A hop
//      passes: no dependency at that switch, no cycle. In d, row R is cut by the lost link. C likewise: every
//      C hop of a ring and direction leaves from one coordinate, which no C hop of that direction enters (x'
//      and y', or x and y, share theirs but d; in d the U routes leave from x' or y, the D ones from y' or
//      x). S is a chain of at most three hops.
// Several lost links, or a layer 1 left from an earlier repair: the repair builds the channel dependency
// graph of layer 1 from every path on it (merged links, VLs from the tables) and declines when it has a
// cycle. A declined change is routed from scratch by the caller.
//
// A link that comes back: when the grid is whole again dor's routes from scratch replace the repaired ones
// (the original tables; a diff against them moves only what the repairs moved); while another link is still
// down the repaired routes stay and the new link waits.
//
// Cost: per destination whose routes took a lost link, the broken switches (seeds and upstream closure)
// times their path length; the check, when needed, one pass over the path SLs of the switches with CAs and a
// walk per layer-1 path. Pure: old and new snapshots in, new tables out.
#pragma once

#include "routing/repair.h"

namespace ibsm::routing {

fabric::Result<RepairResult> repairDor(const Topology& oldTopo, const LidAssignment& oldLids,
                                       const RoutingTables& old, const PortLoads& oldLoads,
                                       const Topology& topo, const LidAssignment& lids, uint32_t arGroupCap);

}  // namespace ibsm::routing
