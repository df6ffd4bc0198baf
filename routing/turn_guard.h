// Ways for hosts to switch LIDs that an engine's up/down order leaves without a legal route, kept
// deadlock-free.
//
// Why: on a degraded fat tree a host's switch can have no up*/down* way to some switches (a leaf that lost
// its link to a level-1 switch has none to it or the switches above it: only the level-1 switches of the
// other indices are above the leaf, and none of them is above that one). Traffic to a switch LID is not all
// VL15: GMPs to a switch's port 0 (PMA counter reads from ibsmd's PerfManager and from tools on any host)
// travel on data VLs, so the routes hosts take to switch LIDs belong to the channel dependency graph as much
// as those between hosts. Such a way must come down and go up again somewhere: a down-up turn. One turn
// cannot close a cycle with legal routes unless the switches on its two sides share an ancestor; two turns
// can, each leading back into the other (on a 6-ary 3-tree without two leaf links of one pod: leaf A reaching
// level1-1 through level1-2, leaf B reaching level1-2 through level1-1).
//
// The rule: write a turn as (D, V), a route coming down from switch D into a switch and going on up towards
// V. From the up hop into V, legal routes (up*, then down*) reach exactly the down hops out of switches that
// share an ancestor with V (climb to it, descend to them). So turn (D2, V2) can follow turn (D1, V1) in a
// dependency chain iff Up*(V1) and Up*(D2) meet, which holds iff the tops reachable going up only (the
// switches with no up link) from V1 and from D2 meet. The channel dependency graph of the legal routes plus
// the turns is acyclic iff no chain of turns leads back to its start; TurnGuard admits a turn only when it
// keeps it so. The legal routes' dependencies are taken as everything up*/down* permits, so the rule is
// conservative: it holds whatever the engine, repair or rebalance chose among legal ports.
//
// Pure: graph and order in; the turns admitted are kept in RoutingTables::downUpTurns (by GUID) so that later
// repairs respect the ones routes already take.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <tuple>
#include <utility>
#include <vector>

#include "routing/routing_graph.h"

namespace ibsm::routing {

// (D, V): routes come down from switch D into some switch and turn up towards switch V.
using DownUpTurn = std::pair<Guid, Guid>;  // as RoutingTables::downUpTurns

class TurnGuard {
 public:
  // upKey: by node, RoutingTables::upKey (a hop towards a smaller key is up); turns: those routes take
  // already.
  TurnGuard(const RoutingGraph& g, const std::vector<uint32_t>& upKey, const std::vector<DownUpTurn>& turns);

  bool isUp(uint32_t from, uint32_t to) const { return key_[to] < key_[from]; }
  // Admits the turns (D, V) (switch indices) together when no chain of admitted turns closes a cycle with
  // them; false (nothing admitted) when one would. Turns admitted before pass at no cost.
  bool admit(std::span<const std::pair<uint32_t, uint32_t>> turns);
  // Whether admit(turns) would admit them (and change nothing).
  bool allows(std::span<const std::pair<uint32_t, uint32_t>> turns) const;
  // Whether routes may take turn (D, V) at no cost: one of its kind (the same top sets) is admitted.
  bool has(uint32_t d, uint32_t v) const;
  // The admitted turns by GUID, sorted (those given to the constructor included).
  std::vector<DownUpTurn> turns() const;

 private:
  bool meet(uint32_t classA, const std::vector<uint64_t>& set) const;
  uint32_t classOf(uint32_t sw) const { return class_[sw]; }

  const RoutingGraph& g_;
  std::vector<uint32_t> key_;    // by switch index
  size_t words_ = 0;             // of a top set
  std::vector<uint32_t> class_;  // switch -> index of its distinct top set
  std::vector<std::vector<uint64_t>> classTops_;
  std::vector<std::pair<uint32_t, uint32_t>> classTurns_;  // admitted, by (class of D, class of V), unique
  mutable std::vector<std::pair<uint32_t, uint32_t>> refused_;  // kinds refused alone (they stay refused)
  std::vector<DownUpTurn> turns_;                               // admitted, by GUID
};

// What fillFromHosts' `way` says of a switch whose way leaves the switch fabric there (the target itself).
inline constexpr uint32_t kWayEnds = RoutingGraph::kNone - 1;

// Whether x's way to the target (way(x) as below) gets there taking only turns of admitted kinds, appending
// them to *out when given; false when x has none, it leads into a hole or loops, or it takes another turn
// (an SMP-only way filled without the guard).
template <typename Way>
bool admittedWay(const RoutingGraph& g, const TurnGuard& guard, uint32_t x, Way way,
                 std::vector<std::pair<uint32_t, uint32_t>>* out) {
  uint32_t prev = RoutingGraph::kNone, w = way(x);
  for (size_t steps = 0; w != kWayEnds; ++steps) {
    if (w == RoutingGraph::kNone || steps > g.size()) return false;
    const uint32_t next = g.arc(w).to;
    if (prev != RoutingGraph::kNone && !guard.isUp(prev, x) && guard.isUp(x, next)) {
      if (!guard.has(prev, next)) return false;
      if (out) out->emplace_back(prev, next);
    }
    prev = x;
    x = next;
    w = way(x);
  }
  return true;
}

// Gives the hosts of each switch in `starts` a way to a switch LID where `way` says it has none (a hole):
// from each such switch, hop by hop through holes to a switch with a way, each hole taking the neighbour that
// adds no turn, else one whose turns the guard admits, then the one with the fewest hops to go (dist, hops to
// the target; a hole only steps strictly closer), then the arc `used` least, depth first so that a way whose
// later turn is refused gives way to the next. A switch whose way takes admitted turns only (admittedWay)
// keeps it (routes are by destination: every route into it goes on the same way), which is loop-free as
// no such way leads into a hole or through a switch without one; any other switch counts as a hole, and
// the way found through it replaces its own. A switch with
// hosts that no admitted way leaves stays a hole and goes into `blocked`: its hosts do not reach the LID, and
// nothing may fill it later.
//   way(x) -> arc index of x's way, kWayEnds where it leaves the switch fabric, RoutingGraph::kNone for a
//   hole; give(x, arc) sets it.
// salt varies the order equal neighbours are tried in (per LID). Returns how many holes got a way.
template <typename Way, typename Give>
size_t fillFromHosts(const RoutingGraph& g, TurnGuard& guard, std::span<const uint32_t> dist,
                     std::span<const uint32_t> starts, std::vector<uint32_t>& used, uint32_t salt, Way way,
                     Give give, std::vector<uint32_t>& blocked);

// ---------------------------------------------------------------------------------------------------------------

template <typename Way, typename Give>
size_t fillFromHosts(const RoutingGraph& g, TurnGuard& guard, std::span<const uint32_t> dist,
                     std::span<const uint32_t> starts, std::vector<uint32_t>& used, uint32_t salt, Way way,
                     Give give, std::vector<uint32_t>& blocked) {
  constexpr uint32_t kNone = RoutingGraph::kNone;
  using Turn = std::pair<uint32_t, uint32_t>;
  auto isBlocked = [&](uint32_t x) { return std::find(blocked.begin(), blocked.end(), x) != blocked.end(); };
  struct Candidate {
    std::tuple<bool, uint32_t, uint32_t> rank;  // (adds a kind of turn, hops to go, uses of the arc)
    uint32_t arc;
    std::array<Turn, 2> turns;
    uint8_t nturns;
  };
  std::vector<uint32_t> arcs;                       // the way being tried, from the start
  std::vector<Turn> turns;                          // its turns
  std::vector<std::pair<uint32_t, uint32_t>> dead;  // (switch, previous switch) that lead nowhere admitted
  size_t budget = 0;
  auto wayTurns = [&](uint32_t x, std::vector<Turn>* out) { return admittedWay(g, guard, x, way, out); };
  // Depth first, best candidate first: a way from cur (entered from prev) through holes, each strictly
  // closer, to a switch with a way, whose turns together the guard allows.
  auto search = [&](auto& self, uint32_t cur, uint32_t prev) -> bool {
    if (budget == 0 || std::find(dead.begin(), dead.end(), std::pair(cur, prev)) != dead.end()) return false;
    --budget;
    const uint32_t first = g.firstArc(cur), deg = g.firstArc(cur + 1) - first;
    std::vector<Candidate> cands;
    for (uint32_t i = 0; i < deg; ++i) {
      const uint32_t a = first + (cur + salt + i) % deg, v = g.arc(a).to;
      const uint32_t vw = wayTurns(v, nullptr) ? way(v) : kNone;
      if (vw == kNone && (isBlocked(v) || dist[v] == kInf || dist[v] + 1 != dist[cur])) continue;
      Candidate c{{}, a, {}, 0};
      if (prev != kNone && !guard.isUp(prev, cur) && guard.isUp(cur, v)) c.turns[c.nturns++] = {prev, v};
      if (vw != kNone && vw != kWayEnds && !guard.isUp(cur, v) && guard.isUp(v, g.arc(vw).to))
        c.turns[c.nturns++] = {cur, g.arc(vw).to};
      bool adds = false;
      for (uint8_t t = 0; t < c.nturns; ++t) adds = adds || !guard.has(c.turns[t].first, c.turns[t].second);
      c.rank = {adds, dist[v], used[a]};
      cands.push_back(c);
    }
    std::stable_sort(cands.begin(), cands.end(),
                     [](const Candidate& x, const Candidate& y) { return x.rank < y.rank; });
    for (const Candidate& c : cands) {
      const size_t mark = turns.size();
      turns.insert(turns.end(), c.turns.begin(), c.turns.begin() + c.nturns);
      if (c.nturns == 0 || guard.allows(turns)) {
        arcs.push_back(c.arc);
        const uint32_t v = g.arc(c.arc).to;
        if (wayTurns(v, nullptr) || self(self, v, cur)) return true;
        arcs.pop_back();
      }
      turns.resize(mark);
    }
    dead.emplace_back(cur, prev);
    return false;
  };
  size_t filled = 0;
  for (uint32_t start : starts) {
    if (wayTurns(start, nullptr) || isBlocked(start)) continue;
    arcs.clear();
    turns.clear();
    dead.clear();
    budget = 4096;
    // The way it joins: its turns are of admitted kinds; admitting them again records them by GUID.
    if (!search(search, start, kNone) || !wayTurns(g.arc(arcs.back()).to, &turns) || !guard.admit(turns)) {
      blocked.push_back(start);
      continue;
    }
    for (uint32_t a : arcs) {
      ++used[a];
      give(g.arc(g.arc(a).reverse).to, a);
      ++filled;
    }
  }
  return filled;
}

}  // namespace ibsm::routing
