// Route checker: walks the forwarding tables of a fabric from every CA port to every endport LID and reports
// what a routing engine (or a real fabric, with tables parsed from dump_lfts/ibroute output) gets wrong or
// how well it does: unreachable pairs (no entry, dead link, wrong endport, loop), hop stretch against the
// min-hop distance, route load per directed switch-to-switch link, deadlock freedom on one VL (the channel
// dependency graph over directed switch-switch links must be acyclic) and, when the tables carry AR groups,
// that every AR member is on a shortest remaining path (or, where the tables allow it and the VL-aware AR CDG
// is checked, within RoutingTables::arStretch hops of it over its next switch's route) and that the
// alternatives keep the CDG acyclic (per VL when the check is VL-aware: a packet keeps its SL on whichever
// member it takes, so every SL that reaches a switch for a LID meets all of that switch's members).
//
// Cost: per destination LID one memoized walk over the switches (O(switches)), so O(LIDs x switches) overall
// rather than O(sources x LIDs x hops); the CDG is one bitset of next ports per directed link.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fabric/topology.h"
#include "routing/lid_assignment.h"
#include "routing/routing_tables.h"
#include "routing/sl_to_vl.h"
#include "routing/switch_graph.h"

namespace ibsm::routing {

struct CheckOptions {
  bool allLids = false;    // every LID of each LMC range as destination, not only base LIDs
  bool checkCdg = true;    // channel dependency graph of the static routes
  bool checkAr = true;     // AR group members equal-cost (only when tables.ar is filled)
  bool checkArCdg = true;  // CDG with every AR alternative included (only when tables.ar is filled); VL-aware
                           // like checkCdg: each member hop on the VL the path's SL gets on that output
  size_t maxExamples = 5;  // per kind of problem
  unsigned threads = 1;
  // SL-to-VL tables of the fabric (e.g. read back from the switches). With these, or when the tables carry
  // path SLs (RoutingTables::sl), the CDG check is VL-aware: its channels are (directed link, VL), the VL of
  // each hop from the path's SL through the map (identity when null or unset), and it must be acyclic.
  const SlToVlMap* slToVl = nullptr;
};

// One directed switch-to-switch link, named for reports.
struct LinkRef {
  Guid from;
  uint8_t port = 0;  // egress port on `from`
  Guid to;
  uint8_t toPort = 0;
  std::string fromDesc, toDesc;
  uint8_t vl = 0;  // the VL of the channel (VL-aware CDG only)
};

struct CheckReport {
  std::string engine;
  // What was checked.
  size_t switches = 0;
  size_t sources = 0;       // CA ports with a link
  size_t destinations = 0;  // destination LIDs
  size_t pairs = 0;         // (source, destination LID) pairs, a port to its own LID excluded

  // Reachability. unreachable = noRoute + deadLink + misdelivered + loops.
  size_t reachable = 0;
  size_t unreachable = 0;
  size_t noRoute = 0;       // a switch had no LFT entry (kNoPort) for the LID
  size_t deadLink = 0;      // an LFT entry pointed at a missing, unlinked or Down port
  size_t misdelivered = 0;  // delivered to an endport that does not own the LID (or port 0 of another switch)
  size_t loops = 0;         // the walk revisited a switch
  // Of the unreachable pairs, those to a switch's own LID (on degraded trees: a host whose switch has no
  // legal way there and no admissible down-up one, routing/turn_guard.h; management traffic only).
  size_t unreachableToSwitches = 0;
  std::vector<std::string> examples;  // a few of each kind, one line each

  // Hops (links traversed, CA to CA) of the reachable pairs, and the stretch over the min-hop distance.
  uint32_t maxHops = 0;
  double meanHops = 0;
  uint32_t maxStretch = 0;  // extra hops of the worst pair
  double meanStretch = 0;
  size_t stretchedPairs = 0;

  // Routes per directed switch-to-switch link over all usable such links: reachable pairs with a CA (or
  // router) destination; routes to switch LIDs are management traffic and not counted.
  size_t switchLinks = 0;
  uint64_t maxLoad = 0, minLoad = 0;
  double meanLoad = 0;
  LinkRef maxLink;  // the (first) most loaded link
  // Lower bound on maxLoad for the CA-to-CA routes of any routing: for every switch with CA ports, its CA
  // ports x the CA ports elsewhere / its switch-to-switch links, rounded up; the max over those switches (on
  // a fat-tree: the leaves' up-links).
  uint64_t loadBound = 0;

  // Channel dependency graph of the static routes. VL-aware (cdgVls > 0, see CheckOptions::slToVl): channels
  // are (link, VL) and cdgVls counts the VLs the CA traffic uses on switch-to-switch links.
  bool cdgChecked = false;
  uint8_t cdgVls = 0;
  size_t cdgChannels = 0;  // directed links with at least one dependency in or out
  size_t cdgEdges = 0;
  bool cdgAcyclic = true;
  std::vector<LinkRef> cdgCycle;  // one cycle, when there is one

  // Adaptive routing (only when tables.ar was filled).
  bool arChecked = false;
  size_t arGroups = 0;         // groups over all switches (identical port sets of one switch share one)
  size_t arEntries = 0;        // (switch, LID) pairs with an AR group
  size_t arMembers = 0;        // ports in those groups, summed
  size_t arNotShortest = 0;    // members not on a shortest remaining path (or leading nowhere useful)
                               // and not within the tables' arStretch either
  size_t arStretched = 0;      // members accepted within RoutingTables::arStretch hops of the shortest: their
                               // next switch's route arrives, and the VL-aware AR CDG includes them
  size_t arMissingStatic = 0;  // groups that do not contain the LFT port
  bool arCdgChecked = false;
  bool arCdgVlAware = false;  // channels are (link, VL), CA destinations only, as in the VL-aware CDG
  size_t arCdgEdges = 0;
  bool arCdgAcyclic = true;
  std::vector<LinkRef> arCdgCycle;

  // No unreachable pair, no dead-link route, acyclic CDGs (when checked), AR members all shortest.
  bool ok() const { return unreachable == 0 && cdgAcyclic && arNotShortest == 0 && arCdgAcyclic; }
};

CheckReport checkRoutes(const Topology& topo, const LidAssignment& lids, const RoutingTables& tables,
                        const CheckOptions& options = {});

// Human-readable, one metric per line; and the same as one JSON object.
std::string formatReportText(const CheckReport& report);
std::string formatReportJson(const CheckReport& report);

// Pieces of the reports, shared with the other checkers (routing/pattern_checker.h).
LinkRef linkRefOf(const Topology& topo, const SwitchGraph& graph, uint32_t arc);
std::string formatLinkText(const LinkRef& link);  // 0x..[3] 'leaf-0' -> 0x..[1] 'spine-2'
std::string formatLinkJson(const LinkRef& link);
std::string formatFixed(double v, int digits = 3);  // "%.*f"; 0 for NaN and infinities
std::string jsonQuote(std::string_view s);          // a JSON string literal

}  // namespace ibsm::routing
