// Incremental re-routing after links or switches went away: only the destinations whose routes crossed what
// was lost are looked at, and of their routes only the switches whose way to the destination broke choose
// again, among the same legal equal-cost ports the engine would offer (a shortest up*/down* path under the
// order the engine's routes obey, RoutingTables::upKey; any shortest path for min-hop). A switch left without
// a legal way to a switch LID (SMPs only, on VL15) takes any loop-free way, through the switches that have
// one (as the engine chain fills such entries, fillSwitchLidHoles); one left without a legal way to a CA LID
// makes the repair decline.
// Every other entry stays as it was. A switch that must choose takes the port whose way to the destination is
// least loaded, counting the traffic it forwards, so the repaired routes spread over what is left. Cost: per
// affected destination O(switches); nothing is recomputed for the others.
//
// Why the result is sound: removing links never shortens a legal path, so an entry whose way to the
// destination is intact is still minimal; the new choices are minimal by construction; the up/down order is
// the one the old routes obey (mapped by GUID), so every route stays up* then down* under one order and the
// channel dependency graph on one VL stays acyclic.
//
// Pure: old and new snapshots in, new tables out.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fabric/result.h"
#include "routing/lid_assignment.h"
#include "routing/routing_graph.h"
#include "routing/routing_tables.h"

namespace ibsm::routing {

// Routes crossing each switch egress port: (CA source port, CA destination LID) pairs, switch LIDs not
// counted. [node] -> [port]; empty rows for non-switches.
using PortLoads = std::vector<std::vector<uint64_t>>;

PortLoads computePortLoads(const Topology& topo, const LidAssignment& lids, const RoutingTables& tables,
                           unsigned threads = 1);

// A fabric as a repair reads it: its switch graph and where each LID leaves it. A repair builds the one of
// its new fabric and hands it out (RepairResult::index): the next repair, whose old fabric that is, does not
// build it again (the daemon builds the one of a fabric routed from scratch off the event loop, with its
// loads). Read-only once built; shared between threads.
struct RepairIndex {
  struct Exit {
    uint32_t sw = kInf;  // kInf: the LID does not leave the fabric (unused, or its port is unlinked)
    uint8_t port = 0;
    bool isSwitch = false;
  };
  RepairIndex(const Topology& topo, const LidAssignment& lids);
  RepairIndex(RoutingGraph g, std::vector<Exit> e) : graph(std::move(g)), arcs(graph), exits(std::move(e)) {}
  // topo's index made from base, the index of baseTopo (a version topo was made from): when both have the
  // same switches under the same numbers and the same LIDs, only the switches whose row differs or that sit
  // behind a port whose link or Down state differs, and the LIDs behind them, are read again (the cost
  // follows the change, not the fabric); otherwise built from scratch.
  static std::shared_ptr<const RepairIndex> patched(const RepairIndex& base, const Topology& baseTopo,
                                                    const LidAssignment& baseLids, const Topology& topo,
                                                    const LidAssignment& lids);
  RoutingGraph graph;
  ArcIndex arcs;
  std::vector<Exit> exits;  // by LID
};
using RepairIndexPtr = std::shared_ptr<const RepairIndex>;

struct RepairResult {
  RoutingTables tables;
  PortLoads loads;
  RepairIndexPtr index;     // of the new fabric, for the next repair; null from dfly's and dor's repairs
  size_t destinations = 0;  // LIDs whose routes were looked at again
  size_t moved = 0;         // (switch, LID) entries that changed
  std::string note;         // what an engine-specific repair did, for the event ("dfly: ..."); may be empty
};

// dfly's routes (old.engine "dfly") are repaired inside the dragonfly scheme instead, links that came back
// included (routing/dfly_repair.h), and dor's inside dimension-order routing (routing/dor_repair.h).
// An Error when the change is not one a repair can follow (a link or node came up, LIDs moved, the engine's
// routes obey no known order, a switch with CAs lost every legal way to a LID): the reason, for the log; the
// caller then recomputes from scratch. oldIndex: oldTopo's with oldLids (built when null).
// The entries of a LID that left the fabric (its host or switch is gone) lead only towards where it was, to a
// port whose link is down, so they carry nothing: without clearDeparted they stay (a whole switch lost: one
// LFT block less on every switch for its LID, on the update that has to be fast) and a later rebalance
// clears them (rebalanceRoutes). dfly's and dor's repairs always clear them; without clearDeparted (an
// incremental rebalance follows) dfly's leaves the links that came back to the rebalance instead of routing
// from scratch (routing/dfly_repair.h).
fabric::Result<RepairResult> repairRoutes(const Topology& oldTopo, const LidAssignment& oldLids,
                                          const RoutingTables& old, const PortLoads& oldLoads,
                                          const Topology& topo, const LidAssignment& lids,
                                          uint32_t arGroupCap = 2048, bool clearDeparted = true,
                                          RepairIndexPtr oldIndex = nullptr);

}  // namespace ibsm::routing
