#include "routing/adopt.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <vector>

#include "routing/routing_graph.h"
#include "routing/turn_guard.h"

namespace ibsm::routing {
namespace {

uint8_t entryOf(const LftRow& row, size_t lid) {
  return lid < row.size() ? row[lid] : kNoPort;
}

// One destination: the fresh and held entries of every switch, and the mix being built.
class Adopter {
 public:
  Adopter(const Topology& topo, const RoutingTables& fresh, const Rows<LftRow>& held, AdoptResult& out)
      : fresh_(fresh), held_(held), out_(out), g_(topo) {
    const uint32_t n = static_cast<uint32_t>(g_.size());
    key_.resize(n);
    for (uint32_t s = 0; s < n; ++s) key_[s] = fresh.upKey[g_.node(s)];
    byKey_.resize(n);
    std::iota(byKey_.begin(), byKey_.end(), 0u);
    std::stable_sort(byKey_.begin(), byKey_.end(), [&](uint32_t a, uint32_t b) { return key_[a] < key_[b]; });
    ddown_.assign(n, kInf);
    dany_.assign(n, kInf);
    want_.assign(n, kNoPort);
    state_.assign(n, 0);
  }

  const RoutingGraph& graph() const { return g_; }
  // The down-up turns of the adopted tables' ways (RoutingTables::downUpTurns).
  std::vector<DownUpTurn> turns() const { return guard_ ? guard_->turns() : fresh_.downUpTurns; }

  // Shortest down-only and legal distances of every switch to exit switch `to` under the order.
  void distancesTo(uint32_t to) {
    if (to == distFor_) return;
    distFor_ = to;
    std::fill(ddown_.begin(), ddown_.end(), kInf);
    std::vector<uint32_t> queue{to};
    ddown_[to] = 0;
    for (size_t i = 0; i < queue.size(); ++i) {
      const uint32_t v = queue[i];
      for (const auto& a : g_.arcs(v)) {
        const uint32_t x = a.to;  // the hop x -> v is down when v is not up from x
        if (ddown_[x] != kInf || isUp(x, v)) continue;
        ddown_[x] = ddown_[v] + 1;
        queue.push_back(x);
      }
    }
    // A switch without a down-only way goes up first: its up neighbours (smaller keys) come first in byKey_.
    for (uint32_t s : byKey_) {
      uint32_t d = ddown_[s];
      if (d == kInf)
        for (const auto& a : g_.arcs(s))
          if (isUp(s, a.to) && dany_[a.to] != kInf) d = std::min(d, dany_[a.to] + 1);
      dany_[s] = d;
    }
  }

  // Decides the entries of every switch for one destination LID; writes them into out_.tables.
  void destination(const DestLid& d) {
    const size_t lid = d.lid.value;
    distancesTo(d.sw);
    bool anyHeld = false;
    for (uint32_t s = 0; s < g_.size(); ++s) {
      const NodeIndex n = g_.node(s);
      const uint8_t f = entryOf(fresh_.lft[n], lid);
      want_[s] = f;
      if (n >= held_.size() || held_[n].empty() || lid >= held_[n].size()) continue;
      const uint8_t h = held_[n][lid];
      if (h == f) continue;
      if (legal(s, d, h)) {
        want_[s] = h;
        anyHeld = true;
      }
    }
    if (anyHeld && (!reachesEverywhere(d) || (d.isSwitch && !turnsAdmitted()))) {
      ++out_.destinationsRejected;
      for (uint32_t s = 0; s < g_.size(); ++s) want_[s] = entryOf(fresh_.lft[g_.node(s)], lid);
    }
    for (uint32_t s = 0; s < g_.size(); ++s) {
      const NodeIndex n = g_.node(s);
      const uint8_t f = entryOf(fresh_.lft[n], lid);
      const bool known = n < held_.size() && !held_[n].empty() && lid < held_[n].size();
      if (want_[s] != f) {
        auto& row = out_.tables.lft[n];
        if (row.size() <= lid) row.resize(lid + 1, kNoPort);
        row[lid] = want_[s];
        ++out_.kept;
      }
      if (known && held_[n][lid] != want_[s]) ++out_.replaced;
    }
  }

  // Held entries of LIDs no endport uses that differ from the fresh (empty) ones: they will be written.
  void countUnused(const std::vector<bool>& used) {
    for (uint32_t s = 0; s < g_.size(); ++s) {
      const NodeIndex n = g_.node(s);
      if (n >= held_.size()) continue;
      const LftRow& h = held_[n];
      for (size_t lid = 0; lid < h.size(); ++lid)
        if ((lid >= used.size() || !used[lid]) && h[lid] != entryOf(out_.tables.lft[n], lid)) ++out_.replaced;
    }
  }

 private:
  bool isUp(uint32_t from, uint32_t to) const { return key_[to] < key_[from]; }

  bool legal(uint32_t s, const DestLid& d, uint8_t port) const {
    if (s == d.sw) return port == d.port;
    const uint32_t a = arcOf_(s, port);
    if (a == kInf) return false;
    const uint32_t v = g_.arc(a).to;
    if (d.isSwitch && dany_[s] == kInf) return true;  // no legal way: turnsAdmitted() decides
    return legalHop(isUp(s, v), ddown_[s], dany_[s], ddown_[v], dany_[v]);
  }

  // To a switch LID, the hosts of a switch without a legal way take a way with down-up turns; those of the
  // mix must close no cycle with the ones the fresh tables take or other mixes took (routing/turn_guard.h).
  // Admits them when they do not.
  bool turnsAdmitted() {
    if (!guard_) guard_.emplace(g_, fresh_.upKey, fresh_.downUpTurns);
    std::vector<std::pair<uint32_t, uint32_t>> turns;
    auto way = [&](uint32_t x) {  // a switch without a port ends the walk (the mix may leave one so)
      if (want_[x] == kNoPort) return kInf;
      const uint32_t a = arcOf_(x, want_[x]);
      return a == kInf ? kWayEnds : a;
    };
    for (uint32_t s = 0; s < g_.size(); ++s)
      if (g_.hosts(s) > 0 && dany_[s] == kInf)
        followWay(
            g_, *guard_, s, way,
            [&](uint32_t d, uint32_t v) {
              turns.emplace_back(d, v);
              return true;
            },
            [](uint32_t) { return false; });
    return guard_->admit(turns);
  }

  // Whether the mix leads every switch that has a way to the destination there, without a loop. Switches
  // the fresh engine leaves without a route (no port) may stay so.
  bool reachesEverywhere(const DestLid& d) {
    constexpr uint8_t kUnknown = 0, kVisiting = 1, kGood = 2, kBad = 3, kNone = 4;
    std::fill(state_.begin(), state_.end(), kUnknown);
    state_[d.sw] = kGood;
    std::vector<uint32_t> path;
    for (uint32_t s0 = 0; s0 < g_.size(); ++s0) {
      path.clear();
      uint32_t x = s0;
      uint8_t end = kBad;
      while (true) {
        if (state_[x] == kGood || state_[x] == kBad || state_[x] == kNone) {
          end = state_[x] == kNone ? kBad : state_[x];
          break;
        }
        if (state_[x] == kVisiting) break;  // a loop
        if (want_[x] == kNoPort) {
          end = kNone;
          state_[x] = kNone;
          break;
        }
        const uint32_t a = arcOf_(x, want_[x]);
        if (a == kInf) break;  // leaves the switch fabric elsewhere
        state_[x] = kVisiting;
        path.push_back(x);
        x = g_.arc(a).to;
      }
      for (uint32_t y : path) state_[y] = end == kNone ? kBad : end;
      // A switch with no port at all (kNone) is no worse than the fresh engine made it.
      if (s0 != d.sw && state_[s0] == kBad) return false;
    }
    return true;
  }

  const RoutingTables& fresh_;
  const Rows<LftRow>& held_;
  AdoptResult& out_;
  RoutingGraph g_;
  ArcIndex arcOf_{g_};
  std::vector<uint32_t> key_, byKey_, ddown_, dany_;
  uint32_t distFor_ = kInf;
  std::vector<uint8_t> want_, state_;
  std::optional<TurnGuard> guard_;  // built at the first switch LID whose held ways differ
};

}  // namespace

AdoptResult adoptHeldTables(const Topology& topo, const LidAssignment& lids, RoutingTables fresh,
                            const Rows<LftRow>& held) {
  AdoptResult out;
  if (fresh.lft.size() != topo.size()) {
    out.why = "the fresh tables do not match the topology";
    out.tables = std::move(fresh);
    return out;
  }
  // Without an order, or with routes spread over VLs, only the fresh engine's own routes are known to be
  // deadlock-free.
  const bool ordered = fresh.upKey.size() == topo.size();
  const bool oneVl = fresh.slLayers <= 1 && fresh.slToVl.empty();
  if (!ordered || !oneVl) {
    out.why = "the " + fresh.engine + " engine's routes " +
              (!ordered ? std::string("follow no up/down order") : std::string("use more than one VL"));
    out.tables = std::move(fresh);
    return out;
  }
  out.tables = fresh;  // rows shared until an entry is adopted
  Adopter adopter(topo, fresh, held, out);
  std::vector<DestLid> dests = collectDestLids(topo, lids, adopter.graph());
  // By exit switch: one BFS serves every LID that leaves the fabric there.
  std::stable_sort(dests.begin(), dests.end(),
                   [](const DestLid& a, const DestLid& b) { return a.sw < b.sw; });
  std::vector<bool> used(static_cast<size_t>(lids.maxLid().value) + 1, false);
  // A LID past every held row is held nowhere (a fresh fabric holds no LFT): its fresh routes stand.
  size_t heldEnd = 0;
  for (size_t n = 0; n < held.size(); ++n) heldEnd = std::max(heldEnd, held[n].size());
  for (const DestLid& d : dests) {
    used[d.lid.value] = true;
    if (d.lid.value < heldEnd) adopter.destination(d);
  }
  adopter.countUnused(used);
  out.tables.downUpTurns = adopter.turns();
  return out;
}

}  // namespace ibsm::routing
