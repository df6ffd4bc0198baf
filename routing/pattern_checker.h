// Permutation congestion: how well a fabric's forwarding tables carry collective traffic. Collectives move
// data as a sequence of permutations over the ranks of a job (ring all-reduce: every rank to the next;
// all-to-all: every shift at once), not as the uniform all-pairs load the route checker scores.
//
// Ranks are CA ports in rank order (by default every linked CA port, hosts in natural name order, as a job
// scheduler numbers them: host-2 before host-10). Pattern `shift`: for each s in 1..N-1 rank i sends one flow
// to rank (i + s) mod N; `ring`: shifts 1 and N-1; `all2all`: all pairs at once. A flow follows the LFTs
// from its source's switch to its destination's base LID and gets 1/k of its bandwidth, k the most flows
// sharing one directed switch-to-switch link of its path (a flow with no such link gets all of it). The
// figures: the max k, the mean flow bandwidth over all flows of all shifts (1.0: every shift
// congestion-free), the share of congestion-free shifts (max k <= 1), and the worst shift (lowest mean
// bandwidth) with its busiest link.
//
// Cost: per shift O(N x path length) over flat arrays, twice (count, then score); shifts run in parallel,
// each worker with its own link counters, and the result does not depend on the thread count. The tables
// are copied once into a [switch][rank] array of egress ports (switches x N bytes).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fabric/result.h"
#include "fabric/topology.h"
#include "routing/lid_assignment.h"
#include "routing/route_checker.h"
#include "routing/routing_tables.h"

namespace ibsm::routing {

enum class Pattern : uint8_t { kShift, kRing, kAll2All };
// "shift", "ring", "all2all"; nullopt for anything else.
std::optional<Pattern> parsePattern(std::string_view name);
std::string_view patternName(Pattern p);

// One rank: a CA port.
struct Rank {
  NodeIndex node = fabric::kNoNode;
  PortNum port;
  bool operator==(const Rank&) const = default;
};

// Every CA port that has a LID and a usable link to a switch, hosts in natural order of their node
// descriptions (digit runs compared as numbers), then by port number.
std::vector<Rank> defaultRanks(const Topology& topo, const LidAssignment& lids);

// A rank file: one rank per line (blank lines and '#' comments skipped), each a port GUID, a node GUID (its
// first linked port), a node description or a host name (the description's first word; it must name one
// node). Errors name the line: "ranks.txt:3: no CA port 'host-99'"; a port listed twice is an error too.
fabric::Result<std::vector<Rank>> parseRanks(const Topology& topo, const LidAssignment& lids,
                                             std::string_view text, std::string_view fileName);

struct PatternOptions {
  Pattern pattern = Pattern::kShift;
  unsigned threads = 1;
};

struct PatternReport {
  Pattern pattern = Pattern::kShift;
  bool ranksFromFile = false;
  size_t ranks = 0;
  size_t shifts = 0;    // permutations evaluated (all2all: 1)
  size_t flows = 0;     // over all of them
  size_t unrouted = 0;  // flows whose walk did not reach the destination (no entry, dead link, loop)
  uint32_t maxCongestion = 0;
  double meanBandwidth = 0;                // mean of 1/k over all flows of all shifts (unrouted flows: 0)
  size_t congestionFreeShifts = 0;         // max k <= 1
  std::vector<size_t> shiftsByCongestion;  // [k] -> shifts whose max k is k (index 0 unused but for N < 2)
  // The shift with the lowest mean bandwidth (ties: higher max k, then the smaller shift); 0 for all2all.
  uint32_t worstShift = 0;
  double worstBandwidth = 0;
  uint32_t worstCongestion = 0;
  LinkRef worstLink;  // its busiest link (the first of them)
  bool hasWorstLink = false;
};

// ranks empty: defaultRanks.
PatternReport checkPattern(const Topology& topo, const LidAssignment& lids, const RoutingTables& tables,
                           std::vector<Rank> ranks, const PatternOptions& options = {});

std::string formatPatternText(const PatternReport& report);
std::string formatPatternJson(const PatternReport& report);

}  // namespace ibsm::routing
