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
#include <unordered_set>
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
  size_t bit(uint32_t classD, uint32_t classV) const;  // of a kind of turn in admitted_ / refused_
  void add(uint32_t classD, uint32_t classV);

  const RoutingGraph& g_;
  std::vector<uint32_t> key_;    // by switch index
  size_t words_ = 0;             // of a top set
  std::vector<uint32_t> class_;  // switch -> index of its distinct top set
  std::vector<std::vector<uint64_t>> classTops_;
  std::vector<std::pair<uint32_t, uint32_t>> classTurns_;  // admitted, by (class of D, class of V), unique
  std::vector<uint64_t> admitted_;                         // a bit per kind (class of D, class of V) admitted
  mutable std::vector<uint64_t> refused_;                  // a bit per kind refused alone (it stays refused)
  std::vector<DownUpTurn> turns_;                          // admitted, by GUID
};

// What fillFromHosts' `way` says of a switch whose way leaves the switch fabric there (the target itself).
inline constexpr uint32_t kWayEnds = RoutingGraph::kNone - 1;

// Follows x's way to the target (way(x) as below), calling onTurn(d, v) at each down-up turn (down from d
// into a switch, up towards v) and stopping with false as soon as it returns false, or when the way leads
// into a hole or loops; true when it gets there, or to a switch done(y) says the rest is known of (after
// the turn into it).
template <typename Way, typename OnTurn, typename Done>
bool followWay(const RoutingGraph& g, const TurnGuard& guard, uint32_t x, Way way, OnTurn onTurn, Done done) {
  uint32_t prev = RoutingGraph::kNone, w = way(x);
  for (size_t steps = 0; w != kWayEnds; ++steps) {
    if (w == RoutingGraph::kNone || steps > g.size()) return false;
    const uint32_t next = g.arc(w).to;
    if (prev != RoutingGraph::kNone && !guard.isUp(prev, x) && guard.isUp(x, next) && !onTurn(prev, next))
      return false;
    if (prev != RoutingGraph::kNone && done(x)) break;
    prev = x;
    x = next;
    w = way(x);
  }
  return true;
}

// Whether x's way gets to the target taking only turns of admitted kinds, appending them to *out when
// given; false when x has none, it leads into a hole or loops, or it takes another turn (an SMP-only way
// filled without the guard). known (optional, by switch, without out): 1 for switches whose way was found
// so; the walk stops at one and marks x.
template <typename Way>
bool admittedWay(const RoutingGraph& g, const TurnGuard& guard, uint32_t x, Way way,
                 std::vector<std::pair<uint32_t, uint32_t>>* out, std::vector<uint8_t>* known = nullptr) {
  const bool ok = followWay(
      g, guard, x, way,
      [&](uint32_t d, uint32_t v) {
        if (!guard.has(d, v)) return false;
        if (out) out->emplace_back(d, v);
        return true;
      },
      [&](uint32_t y) { return known && (*known)[y]; });
  if (ok && known) (*known)[x] = 1;
  return ok;
}

// Gives the hosts of each switch in `starts` a way to a switch LID where `way` says it has none (a hole):
// hop by hop through holes, each hop one closer to the target (dist: hops to it), to a switch with a way,
// whose turns together the guard admits. The fewest holes first (iterative deepening: most ways join one a
// hop or two away), then neighbours that add no kind of turn, then a switch with a way before a hole, then
// the arc `used` least. A switch whose way takes admitted turns only (admittedWay) keeps it (routes are by
// destination: every route into it goes on the same way), which is loop-free as no such way leads into a
// hole or through a switch without one; any other switch counts as a hole, and the way found through it
// replaces its own. A switch with hosts that no admitted way leaves stays a hole and goes into `blocked`: its
// hosts do not reach the LID, and nothing may fill it later.
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
    std::tuple<bool, bool, uint32_t> rank;  // (adds a kind of turn, a hole, uses of the arc)
    uint32_t arc;
    std::array<Turn, 2> turns;
    uint8_t nturns;
  };
  std::vector<uint32_t> arcs;  // the way being tried, from the start
  std::vector<Turn> turns;     // its turns
  // (switch, previous switch, holes it may still pass) that led nowhere admitted, for every start of the
  // call (a later start's other turns before it could change that, rarely; it is then only refused a way the
  // guard might have allowed).
  std::unordered_set<uint64_t> dead;
  auto key = [](uint32_t cur, uint32_t prev, uint32_t depth) {
    return uint64_t{cur} << 40 | uint64_t{prev & 0xFFFFFu} << 20 | depth;
  };
  size_t budget = 0;
  std::vector<uint8_t> usable(g.size(), 0);  // admittedWay's memo: ways of usable switches do not change
  auto wayTurns = [&](uint32_t x, std::vector<Turn>* out) {
    return admittedWay(g, guard, x, way, out, out ? nullptr : &usable);
  };
  // Best candidate first, through at most `depth` more holes: a way from cur (entered from prev) through
  // holes, each one closer, to a switch with a way, whose turns together the guard allows.
  auto search = [&](auto& self, uint32_t cur, uint32_t prev, uint32_t depth) -> bool {
    if (budget == 0 || dead.contains(key(cur, prev, depth))) return false;
    --budget;
    const uint32_t first = g.firstArc(cur), deg = g.firstArc(cur + 1) - first;
    std::vector<Candidate> cands;
    for (uint32_t i = 0; i < deg; ++i) {
      const uint32_t a = first + (cur + salt + i) % deg, v = g.arc(a).to;
      if (dist[v] == kInf || dist[v] + 1 != dist[cur]) continue;
      const uint32_t vw = wayTurns(v, nullptr) ? way(v) : kNone;
      if (vw == kNone && (depth == 0 || isBlocked(v))) continue;
      Candidate c{{}, a, {}, 0};
      if (prev != kNone && !guard.isUp(prev, cur) && guard.isUp(cur, v)) c.turns[c.nturns++] = {prev, v};
      if (vw != kNone && vw != kWayEnds && !guard.isUp(cur, v) && guard.isUp(v, g.arc(vw).to))
        c.turns[c.nturns++] = {cur, g.arc(vw).to};
      bool adds = false;
      for (uint8_t t = 0; t < c.nturns; ++t) adds = adds || !guard.has(c.turns[t].first, c.turns[t].second);
      c.rank = {adds, vw == kNone, used[a]};
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
        if (wayTurns(v, nullptr) || self(self, v, cur, depth - 1)) return true;
        arcs.pop_back();
      }
      turns.resize(mark);
    }
    dead.insert(key(cur, prev, depth));
    return false;
  };
  size_t filled = 0;
  for (uint32_t start : starts) {
    if (wayTurns(start, nullptr) || isBlocked(start)) continue;
    // The fewest holes first (iterative deepening: most ways join one a hop or two away).
    bool found = false;
    budget = 1024;
    for (uint32_t depth = 0; !found && depth < dist[start] && budget > 0; ++depth) {
      arcs.clear();
      turns.clear();
      found = search(search, start, kNone, depth);
    }
    // The way it joins: its turns are of admitted kinds; admitting them again records them by GUID.
    if (!found || !wayTurns(g.arc(arcs.back()).to, &turns) || !guard.admit(turns)) {
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
