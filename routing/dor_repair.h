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
// dimension-order paths only, minimal, with the engine's dateline bits: acyclic by the engine's argument.
// Layer 1 after one lost link (from the grid whole; the only case taken without the check below): merge the
// parallel links of each switch pair and put all of layer 1 on one VL; acyclic there means acyclic on its VLs
// (splitting channels by VL cannot close a cycle) and with any AR member (the merged channels are the same).
// Let the link join x = (R, f) and y = (R, f+1), R the row (its coordinates but d). Every layer-1 path is
// A S C: A a dimension-order route into the detour (to x or y, or for e < d to x' or y' arriving in e: the
// routes that passed x' on their way to x), S the detour hops (x x', y y'; for e < d x x' y' y, y y' x' x
// or their tails), C a dimension-order route out of it (from x' or y' for e > d, from y or x for e < d).
//  (1) No channel is of two kinds. A takes dimensions <= d, in d only row R; C dimensions >= d, in d row R +
//  u_e
//      (e > d) or row R (e < d: the other half of a minimal way in d, disjoint from A's half). S's hops in d
//      are in row R + u_e; in e, for e > d C corrects e only at the destination's coordinate in d (not f or
//      f+1 at once: it starts at x' or y' and never passes back through x or y's coordinate in e first), for
//      e < d A's hops in e are x's or y's own ring only at the source's coordinate in d and end at x (or x'),
//      neither of S's two directed hops there.
//  (2) So the dependencies go A->A, A->S, S->S, S->C, C->C, and a cycle lies within A, S or C.
//  (3) A: between dimensions its dependencies go up; inside a ring (or line) and direction every A hop heads
//      for the same coordinate (the destination's; x' or y''s for the routes that turn there), which no A
//      hop passes, so no dependency at that switch and no cycle; in d the row R is cut by the lost link. C
//      likewise: every C hop of a ring and direction starts from one coordinate (x' and y', or x and y, share
//      theirs but d; in d the up routes start at f or f+1, the down ones at f+1 or f, and nothing enters that
//      switch from the lost link's side). S is a chain of at most three hops per way.
// Several lost links, or a layer 1 left from an earlier repair: the repair builds the channel dependency
// graph of layer 1 from every path on it (merged links, VLs from the tables) and declines when it has a
// cycle. Declined changes are routed from scratch by the caller (dfsp).
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
