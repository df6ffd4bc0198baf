#include "routing/rebalance.h"

#include <algorithm>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "routing/dfly_repair.h"
#include "routing/pattern_checker.h"
#include "routing/routing_graph.h"
#include "routing/shift_polish.h"

namespace ibsm::routing {
namespace {

uint64_t boundOf(const RoutingGraph& g, const std::vector<DestLid>& dests) {
  std::vector<uint64_t> destsAt(g.size(), 0);
  uint64_t total = 0;
  for (const DestLid& d : dests)
    if (!d.isSwitch) ++destsAt[d.sw], ++total;
  uint64_t bound = 0;
  for (uint32_t s = 0; s < g.size(); ++s) {
    const uint64_t links = g.arcs(s).size();
    if (g.hosts(s) > 0 && links > 0)
      bound = std::max(bound, (g.hosts(s) * (total - destsAt[s]) + links - 1) / links);
  }
  return bound;
}

// Everything is read from the tables as they are being changed: a route is walked where it is needed (a few
// hops), so no per-LID state is kept and memory does not grow with LIDs x switches.
class Rebalancer {
 public:
  Rebalancer(const Topology& topo, const LidAssignment& lids, const RoutingTables& in, const PortLoads& loads,
             const RebalanceOptions& options, RebalanceResult& out)
      : topo_(topo),
        lids_(lids),
        in_(in),
        options_(options),
        out_(out),
        g_(topo),
        arcs_(g_),
        shiftShare_(options.maxShiftShare) {
    const uint32_t n = static_cast<uint32_t>(g_.size());
    key_.resize(n);
    for (uint32_t s = 0; s < n; ++s) key_[s] = in.upKey[g_.node(s)];
    const std::vector<DestLid> dests = collectDestLids(topo, lids, g_);
    destSw_.assign(static_cast<size_t>(lids.maxLid().value) + 1, kInf);
    for (const DestLid& d : dests) destSw_[d.lid.value] = d.sw;
    switchLid_.assign(destSw_.size(), 0);
    for (const DestLid& d : dests)
      if (d.isSwitch) switchLid_[d.lid.value] = 1;
    out_.target = options.target ? options.target : boundOf(g_, dests);
    load_.assign(g_.arcCount(), 0);
    for (uint32_t a = 0; a < g_.arcCount(); ++a) {
      const NodeIndex from = g_.node(g_.arc(g_.arc(a).reverse).to);
      const uint8_t p = g_.arc(a).port;
      if (from < loads.size() && p < loads[from].size()) load_[a] = loads[from][p];
    }
    stamp_.assign(n, 0);
    memo_.assign(n, kInf);
    if (shiftShare_ > 0) initRanks(topo, lids);
  }

  void run() {
    out_.tables = in_;  // rows shared until a move writes them
    rows();
    out_.maxLoadBefore = maxLoad();
    restoreRoutes();  // touches the cleared entries first, then the restored ones
    const size_t restoreTouches = touched_.size();
    keepShiftsIfKept();
    // Passes over the links above the target, most loaded first, while a pass lowers the max load: past
    // that, moves would only even out links below the max (churn for little). Every move lowers the sum of
    // squared excesses over the target (or, within the slack, keeps it and frees shared links), so this
    // ends. With shifts, the passes after the last one that lowered the max load are taken back when they
    // made more flows share links: they only made fewer links carry the max, at the cost of the shifts'
    // bandwidth (a link that came back, which no flow shares yet, keeps what moved onto it).
    size_t moves = 0;
    std::vector<uint32_t> idle;
    for (uint32_t a = 0; a < g_.arcCount(); ++a)
      if (load_[a] == 0 && load_[g_.arc(a).reverse] == 0) idle.push_back(a);
    struct Kept {
      RoutingTables tables;
      std::vector<uint64_t> load;
      size_t touched;
      uint64_t max;
      int64_t shared;
    } kept{out_.tables, load_, touched_.size(), maxLoad(), 0};
    for (auto peak = peakLoads(); moves < options_.maxMoves;) {
      hot_.clear();
      for (uint32_t a = 0; a < g_.arcCount(); ++a)
        if (load_[a] > out_.target) hot_.push_back(a);
      std::sort(hot_.begin(), hot_.end(), [&](uint32_t x, uint32_t y) { return load_[x] > load_[y]; });
      for (uint32_t a : hot_)
        while (load_[a] > out_.target && moves < options_.maxMoves && relieve(a)) ++moves;
      const auto now = peakLoads();
      if (shiftShare_ > 0 && now.first < kept.max)
        kept = {out_.tables, load_, touched_.size(), now.first, sharedSoFar_};
      if (now >= peak) break;
      peak = now;
    }
    bool tookIdle = false;  // a link no route used (one that came back) carries traffic now
    for (uint32_t a : idle) tookIdle = tookIdle || load_[a] > 0;
    if (shiftShare_ > 0 && maxLoad() >= kept.max && sharedSoFar_ > kept.shared && !tookIdle) {
      out_.tables = std::move(kept.tables);
      rows();
      load_ = std::move(kept.load);
      touched_.resize(kept.touched);
    }
    // Shifts the repair left above maxShiftShare (the moves above only keep them from getting worse): the
    // polish's entries count as moves of this rebalance.
    if (options_.maxShiftShare > 0) {
      ShiftPolishOptions po;
      po.maxShare = options_.maxShiftShare;
      po.maxLoad = out_.maxLoadBefore;  // the max load only falls
      const ShiftPolishResult p = polishShifts(topo_, lids_, out_.tables, po);
      for (auto [node, lid, was] : p.changed) {
        touched_.emplace_back(g_.indexOf(node), lid, was);
        ++out_.polished;
      }
      out_.polishedShare = p.shareAfter;
      if (out_.polished) rows();
    }
    // An entry moved more than once counts once, against the port it had first; a moved entry's port joins
    // its AR group.
    forEachChanged({touched_.begin() + static_cast<ptrdiff_t>(out_.cleared),
                    touched_.begin() + static_cast<ptrdiff_t>(restoreTouches)},
                   [&](uint32_t, uint16_t) { ++out_.restored; });
    forEachChanged(std::move(touched_), [&](uint32_t x, uint16_t lid) {
      ++out_.moved;
      joinGroup(g_.node(x), lid, entry(x, lid));
    });
    if (out_.polished) {  // its moves are not in load_: the loads counted again, the arcs' taken from them
      out_.loads = computePortLoads(topo_, lids_, out_.tables, 1);
      for (uint32_t a = 0; a < g_.arcCount(); ++a)
        load_[a] = out_.loads[g_.node(g_.arc(g_.arc(a).reverse).to)][g_.arc(a).port];
    } else {
      out_.loads.assign(topo_.size(), {});
      for (uint32_t s = 0; s < g_.size(); ++s)
        out_.loads[g_.node(s)].assign(topo_.node(g_.node(s)).numPorts + 1u, 0);
      for (uint32_t a = 0; a < g_.arcCount(); ++a)
        out_.loads[g_.node(g_.arc(g_.arc(a).reverse).to)][g_.arc(a).port] = load_[a];
    }
    out_.maxLoadAfter = maxLoad();
  }

 private:
  struct Move {
    uint16_t lid = 0;
    uint32_t x = kInf, arc = kInf;
    double change = 0;  // of the cost
    uint64_t traffic = 0;
    // With it, the route of x's new neighbour (which carries no traffic to the LID) moves onto arc2.
    uint32_t x2 = kInf, arc2 = kInf;
    int64_t shared = 0;  // flows of a shift that newly share a link, less those that no longer do (fitShifts)
    bool freed = false;  // it takes a flow off the hot link that shares it with one of its shift
    bool operator<(const Move& o) const {
      return std::pair(change, traffic) < std::pair(o.change, o.traffic);
    }
  };
  static constexpr size_t kSecondTries = 4;  // first moves of a pair tried per stuck link
  static constexpr size_t kNearScored = 8;   // the same for a link within the slack of the target
  static constexpr size_t kScored = 16;      // moves of a search weighed by the flows they share links with

  uint8_t entry(uint32_t s, uint16_t lid) const {
    const LftRow& row = *row_[s];
    return lid < row.size() ? row[lid] : kNoPort;
  }
  // row_: each switch's row of out_.tables, looked up again where a write may have made it a new one.
  void rows() {
    row_.resize(g_.size());
    for (uint32_t s = 0; s < g_.size(); ++s) row_[s] = &std::as_const(out_.tables.lft)[g_.node(s)];
  }
  void write(uint32_t s, uint16_t lid, uint8_t port) {
    out_.tables.lft[g_.node(s)][lid] = port;  // this version's own row (block) from now on
    row_[s] = &std::as_const(out_.tables.lft)[g_.node(s)];
    written();
  }
  // The arc s forwards the LID on; kInf at the destination switch or without a route. Memoized for the LID
  // last asked about until the tables change (written()): searches walk the same few hops many times.
  uint32_t next(uint32_t s, uint16_t lid) {
    if (lid != memoLid_) {
      memoLid_ = lid;
      written();
    }
    if (stamp_[s] == serial_) return memo_[s];
    const uint8_t p = entry(s, lid);
    stamp_[s] = serial_;
    return memo_[s] = s == destSw_[lid] || p == kNoPort ? kInf : arcs_(s, p);
  }
  void written() {
    if (++serial_ == 0) std::fill(stamp_.begin(), stamp_.end(), 0), serial_ = 1;
  }
  bool isUp(uint32_t s, uint32_t to) const { return key_[to] < key_[s]; }
  uint64_t maxLoad() const { return peakLoads().first; }
  // The max link load and how many links carry it.
  std::pair<uint64_t, size_t> peakLoads() const {
    std::pair<uint64_t, size_t> p{0, 0};
    for (uint64_t v : load_)
      if (v > p.first)
        p = {v, 1};
      else if (v == p.first)
        ++p.second;
    return p;
  }
  // Squared excess over the target: what the moves lower.
  double cost(uint64_t load) const {
    const double e = load > out_.target ? static_cast<double>(load - out_.target) : 0.0;
    return e * e;
  }

  // The arcs of the route that leaves over `first` to the destination; false when it does not get there
  // (a dead end or a loop: never so after a repair, but the walk is bounded all the same).
  bool walk(uint16_t lid, uint32_t first, std::vector<uint32_t>& arcs) {
    arcs.clear();
    for (uint32_t a = first; a != kInf; a = next(g_.arc(a).to, lid)) {
      if (arcs.size() > g_.size()) return false;
      arcs.push_back(a);
    }
    return !arcs.empty() && g_.arc(arcs.back()).to == destSw_[lid];
  }
  // Whether every hop of the route is down.
  bool downOnly(uint32_t from, const std::vector<uint32_t>& arcs) const {
    for (uint32_t a : arcs) {
      if (isUp(from, g_.arc(a).to)) return false;
      from = g_.arc(a).to;
    }
    return true;
  }

  // The shifts are kept only where the repair kept them: when a link above the target already carries more
  // than maxShiftShare flows of one shift (a whole switch lost: up to 12 at 11,664 hosts), the moves chase
  // the load alone. The rule would barely bind there (a move off such a link may put as many elsewhere) and
  // its counting grows with the flows each move takes along: 80 s against 4 s at that size, for the same
  // shifts afterwards and a higher max load.
  void keepShiftsIfKept() {
    if (shiftShare_ == 0) return;
    for (uint32_t a = 0; a < g_.arcCount(); ++a) {
      if (load_[a] <= out_.target) continue;
      const uint32_t s = g_.arc(g_.arc(a).reverse).to;
      countOnHot(s, g_.arc(a).port, *row_[s]);
      for (uint32_t t : onHotSet_) out_.shiftShare = std::max(out_.shiftShare, onHot_[t]);
    }
    if (out_.shiftShare > shiftShare_) shiftShare_ = 0;
  }

  // Takes traffic off arc `hot`: the best single move that lowers the cost; else a move that would raise it
  // followed by one off a link the first loaded past the target that lowers it more (the pair swaps traffic,
  // e.g. a leaf's routes out of its pod onto another spine for routes inside the pod back onto this one).
  // No link gets more than hot's load. False when neither exists.
  bool relieve(uint32_t hot) {
    const uint64_t cap = load_[hot];
    // A link near the target is relieved only by moves that make no more flows share links than before.
    // Such a link gets no pairs and few tries: it is within the slack already.
    const bool near = shiftShare_ > 0 && cap * 100 <= out_.target * (100 + options_.shareSlackPct);
    const int64_t allowed = near ? 0 : INT64_MAX;
    std::vector<Move> blocked;
    if (auto m = bestMove(hot, cap, 0, near ? nullptr : &blocked, allowed, near ? kNearScored : kScored)) {
      apply(*m);
      sharedSoFar_ += m->shared;
      return true;
    }
    std::stable_sort(blocked.begin(), blocked.end());
    size_t tries = 0;
    for (Move first : blocked) {
      if (tries == kSecondTries) break;
      if (!fitShifts(first)) continue;
      ++tries;
      const uint32_t back = next(first.x, first.lid);
      const uint32_t back2 = first.x2 == kInf ? kInf : next(first.x2, first.lid);
      apply(first);
      walk(first.lid, first.arc, firstArcs_);
      std::sort(firstArcs_.begin(), firstArcs_.end(),
                [&](uint32_t a, uint32_t b) { return load_[a] > load_[b]; });
      for (uint32_t b : firstArcs_) {
        if (load_[b] <= out_.target) break;
        if (auto m = bestMove(b, cap, -first.change, nullptr, allowed, kScored)) {
          apply(*m);
          sharedSoFar_ += first.shared + m->shared;
          return true;
        }
      }
      apply({first.lid, first.x, back, 0, 0});  // undo
      if (first.x2 != kInf) apply({first.lid, first.x2, back2, 0, 0});
    }
    return false;
  }

  // The best move taking traffic off `hot` whose cost change is below `below`, loading no link past `cap`,
  // keeping every shift within the share and making at most `allowed` more flows share a link (fitShifts;
  // `tries` candidates weighed); the moves that fit but do not lower the cost enough go to `blocked` when
  // given.
  std::optional<Move> bestMove(uint32_t hot, uint64_t cap, double below, std::vector<Move>* blocked,
                               int64_t allowed, size_t tries) {
    const uint32_t s = g_.arc(g_.arc(hot).reverse).to;
    const uint8_t port = g_.arc(hot).port;
    const LftRow& row = *row_[s];
    auto in = [](const std::vector<uint32_t>& v, uint32_t a) {
      return std::find(v.begin(), v.end(), a) != v.end();
    };
    std::vector<Move> good;
    countOnHot(s, port, row);
    for (size_t l = 1; l < row.size() && l < destSw_.size(); ++l) {
      if (row[l] != port || destSw_[l] == kInf || destSw_[l] == s || switchLid_[l]) continue;
      const uint16_t lid = static_cast<uint16_t>(l);
      upstream(s, lid);
      doubledUpstream(lid);
      for (size_t k = 0; k < up_.size(); ++k) {
        const uint32_t x = up_[k];
        const uint64_t f = flow_[k];
        if (f == 0 || !walk(lid, next(x, lid), oldArcs_)) continue;
        const bool xDown = downOnly(x, oldArcs_);
        for (uint32_t b = g_.firstArc(x); b < g_.firstArc(x + 1); ++b) {
          // Legal: b's far end v has a route one hop shorter, and the hop keeps x's route up* then down*.
          const uint32_t v = g_.arc(b).to;
          if (b == oldArcs_.front() || !walk(lid, b, newArcs_) || newArcs_.size() != oldArcs_.size())
            continue;
          if (isUp(x, v) ? xDown : !downOnly(x, newArcs_)) continue;
          if (in(newArcs_, hot)) continue;
          bool fits = true;
          double change = 0;
          for (uint32_t a : newArcs_)
            if (!in(oldArcs_, a)) {
              fits = fits && load_[a] + f <= cap;
              change += cost(load_[a] + f) - cost(load_[a]);
            }
          for (uint32_t a : oldArcs_)
            if (!in(newArcs_, a)) change += cost(load_[a] - f) - cost(load_[a]);
          if (!fits) continue;
          Move m{lid, x, b, change, f};
          m.freed = doubled_[k] > 0;
          // Within the slack, a move that leaves the load cost as it is may still free shared links.
          if (change < below || (change == below && allowed == 0))
            good.push_back(m);
          else if (blocked)
            blocked->push_back(m);
        }
      }
    }
    // Best first (ties: the first found); with shifts, first those that take a flow off hot that shares it
    // with one of its shift. Of the first `tries` that keep the shifts within the share, the one that makes
    // the fewest flows share a link (ties: the better for the load).
    if (shiftShare_ > 0)
      std::stable_sort(good.begin(), good.end(),
                       [](const Move& a, const Move& b) { return a.freed != b.freed ? a.freed : a < b; });
    else
      std::stable_sort(good.begin(), good.end());
    std::optional<Move> best;
    size_t scored = 0;
    for (Move& m : good) {
      if (fitShifts(m) && m.shared <= allowed && (m.change < below || m.shared < 0) &&
          (!best || m.shared < best->shared))
        best = m;
      if ((best && best->shared <= 0) || ++scored == tries || shiftShare_ == 0) break;
    }
    return best;
  }

  // up_: s and the switches whose route to the LID runs through s (where a move takes its traffic off s's
  // next hop), parents before children; flow_: the CA sources whose route runs through each of them.
  void upstream(uint32_t s, uint16_t lid) {
    up_.assign(1, s);
    parent_.assign(1, kInf);
    for (size_t i = 0; i < up_.size(); ++i)
      for (const auto& a : g_.arcs(up_[i]))
        if (next(a.to, lid) == a.reverse) {
          up_.push_back(a.to);
          parent_.push_back(static_cast<uint32_t>(i));
        }
    flow_.assign(up_.size(), 0);
    for (size_t i = up_.size(); i-- > 0;) {
      flow_[i] += g_.hosts(up_[i]);
      if (parent_[i] != kInf) flow_[parent_[i]] += flow_[i];
    }
  }

  // Moves x's route to the LID onto arc b: the traffic through x leaves its old way for the new one.
  void apply(const Move& m) {
    if (m.x2 != kInf) apply({m.lid, m.x2, m.arc2, 0, 0});  // no traffic: the way for x's
    upstream(m.x, m.lid);
    const uint64_t f = flow_[0];
    walk(m.lid, next(m.x, m.lid), oldArcs_);
    walk(m.lid, m.arc, newArcs_);
    if (!switchLid_[m.lid]) {  // the loads count CA traffic only
      for (uint32_t a : oldArcs_) load_[a] -= f;
      for (uint32_t a : newArcs_) load_[a] += f;
    }
    if (!shares_.empty() && rankOfLid_[m.lid] != kInf) bookShares(m.lid);  // before the tables change
    touched_.emplace_back(m.x, m.lid, entry(m.x, m.lid));
    write(m.x, m.lid, g_.arc(m.arc).port);
  }

  // Calls f(x, lid) once for every entry of `touches` (switch, LID, the port it had first) that differs now.
  template <class F>
  void forEachChanged(std::vector<std::tuple<uint32_t, uint16_t, uint8_t>> touches, F f) {
    std::stable_sort(touches.begin(), touches.end(), [](const auto& p, const auto& q) {
      return std::tie(std::get<0>(p), std::get<1>(p)) < std::tie(std::get<0>(q), std::get<1>(q));
    });
    for (size_t i = 0; i < touches.size(); ++i) {
      auto [x, lid, was] = touches[i];
      if ((i > 0 && std::get<0>(touches[i - 1]) == x && std::get<1>(touches[i - 1]) == lid) ||
          entry(x, lid) == was)
        continue;
      f(x, lid);
    }
  }

  // A repair keeps every route and leaves a link that came back unused. Here, for every LID, switches
  // left without a route that have a legal way again get one, and routes the link makes shorter take it
  // (minimal again, as the engine's): nearest first; a switch without a route goes down-only where it can,
  // one whose route runs down-only stays so (a switch above may come down into it). The traffic through a
  // switch whose route gets shorter moves with it.
  // Entries of LIDs that left the fabric, which the repair leaves (repairRoutes), are cleared first.
  void restoreRoutes() {
    const uint32_t n = static_cast<uint32_t>(g_.size());
    std::vector<uint8_t> missing(destSw_.size(), 0);
    std::vector<std::pair<uint32_t, uint16_t>> departed;
    for (uint32_t s = 0; s < n; ++s) {
      const LftRow& row = *row_[s];
      for (size_t lid = 1; lid < std::max(row.size(), destSw_.size()); ++lid) {
        const uint8_t p = lid < row.size() ? row[lid] : kNoPort;
        if (lid >= destSw_.size() || destSw_[lid] == kInf) {
          if (p != kNoPort) departed.emplace_back(s, static_cast<uint16_t>(lid));
        } else if (destSw_[lid] != s && p == kNoPort) {
          missing[lid] = 1;
        }
      }
    }
    for (auto [s, lid] : departed) clear(s, lid);
    out_.cleared = departed.size();
    // Links no route uses in either direction: one that came back (or one no route needs).
    std::vector<uint32_t> unused;
    for (uint32_t a = 0; a < g_.arcCount(); ++a)
      if (load_[a] == 0 && load_[g_.arc(a).reverse] == 0) unused.push_back(a);
    for (size_t l = 1; l < destSw_.size(); ++l) {
      if (destSw_[l] == kInf) continue;
      const uint16_t lid = static_cast<uint16_t>(l);
      bool shorter = false;
      for (size_t i = 0; i < unused.size() && !missing[l] && !shorter; ++i) {
        const uint32_t x = g_.arc(g_.arc(unused[i]).reverse).to, v = g_.arc(unused[i]).to;
        shorter = x != destSw_[l] && lengthTo(v, lid) + 1 < lengthTo(x, lid);
      }
      if (missing[l] || shorter) relax(lid);
    }
  }

  void clear(uint32_t s, uint16_t lid) {
    const NodeIndex node = g_.node(s);
    if (!out_.tables.ar.empty()) {
      const auto& groups = std::as_const(out_.tables.ar)[node].lidToGroup;
      if (lid < groups.size() && groups[lid] != ArTable::kNoGroup)
        out_.tables.ar[node].lidToGroup[lid] = ArTable::kNoGroup;
    }
    touched_.emplace_back(s, lid, entry(s, lid));
    write(s, lid, kNoPort);
  }

  // Hops of s's route to the LID; kInf without one.
  uint32_t lengthTo(uint32_t s, uint16_t lid) {
    if (s == destSw_[lid]) return 0;
    return walk(lid, next(s, lid), oldArcs_) ? static_cast<uint32_t>(oldArcs_.size()) : kInf;
  }

  void relax(uint16_t lid) {
    const uint32_t n = static_cast<uint32_t>(g_.size());
    struct Step {
      uint32_t x, arc, len;
      uint8_t down;
    };
    std::vector<Step> steps;
    for (;;) {
      len_.resize(n);
      down_.resize(n);
      for (uint32_t s = 0; s < n; ++s) {
        len_[s] = lengthTo(s, lid);
        down_[s] = len_[s] != kInf && (len_[s] == 0 || switchLid_[lid] || downOnly(s, oldArcs_));
      }
      steps.clear();
      uint32_t nearest = kInf;
      for (uint32_t x = 0; x < n; ++x) {
        if (x == destSw_[lid]) continue;
        const bool routed = len_[x] != kInf;
        if (routed ? entry(x, lid) == kNoPort : entry(x, lid) != kNoPort)
          continue;  // a broken route: leave it
        Step best{x, kInf, kInf, 0};
        for (uint32_t b = g_.firstArc(x); b < g_.firstArc(x + 1); ++b) {
          const uint32_t v = g_.arc(b).to;
          const uint8_t d = !isUp(x, v) || switchLid_[lid];  // switch LIDs: plain shortest paths
          if (len_[v] == kInf || len_[v] + 1 >= len_[x] || (d ? !down_[v] : routed && down_[x])) continue;
          auto rank = [&](const Step& s) {  // (first, second, load)
            const uint64_t notDown = !s.down;
            return routed ? std::tuple(uint64_t{s.len}, notDown, load_[s.arc])
                          : std::tuple(notDown, uint64_t{s.len}, load_[s.arc]);
          };
          const Step step{x, b, len_[v] + 1, d};
          if (best.arc == kInf || rank(step) < rank(best)) best = step;
        }
        if (best.arc == kInf) continue;
        steps.push_back(best);
        nearest = std::min(nearest, best.len);
      }
      if (steps.empty()) return;
      for (const Step& st : steps)
        if (st.len == nearest) apply({lid, st.x, st.arc, 0, 0});
    }
  }

  // Shifts (the permutations collectives run, routing/pattern_checker.h): ranks are the CA ports in the
  // order a job scheduler numbers them (defaultRanks); shift t sends rank i to rank i + t (mod N), and a
  // flow gets 1/k of its bandwidth, k the most flows of its shift on one link of its path. On a full fat tree
  // a link carries about one flow of each shift, and a single repair puts a second one on some; a move that
  // put a third there would cost a shift a third of its bandwidth on that link for a gain of one flow of
  // all-pairs load. So every flow a move takes along must find, on each link it newly crosses, at most
  // maxShiftShare - 1 flows of its shift (or no more than on the worst link it leaves, where the routes are
  // more congested than that already). And of the moves that lower the load about as well, the one taken
  // makes the fewest flows newly share a link: a flow that shared a link before and follows, after the
  // move, the way of one other flow of its shift (the destination's "column": D-mod-K spreads consecutive
  // destinations over consecutive ports) changes nothing. For that, where the new next switch carries no
  // traffic to the LID, its route may move too (no load changes), onto the port that shares least.
  struct Share {
    uint32_t count = 0;
    uint32_t src[2] = {kInf, kInf};  // the sources of the flows while count <= 2
  };

  void initRanks(const Topology& topo, const LidAssignment& lids) {
    const std::vector<Rank> ranks = defaultRanks(topo, lids);
    rankOfLid_.assign(destSw_.size(), kInf);
    rankLid_.clear();
    std::vector<std::pair<uint32_t, uint32_t>> at;  // (switch, rank)
    for (const Rank& r : ranks) {
      const uint16_t lid = lids.base(r.node, r.port).value;
      if (lid >= destSw_.size() || destSw_[lid] == kInf || switchLid_[lid]) continue;
      rankOfLid_[lid] = static_cast<uint32_t>(rankLid_.size());
      at.emplace_back(destSw_[lid], static_cast<uint32_t>(rankLid_.size()));
      rankLid_.push_back(lid);
    }
    ranks_ = static_cast<uint32_t>(rankLid_.size());
    std::sort(at.begin(), at.end());
    hostBegin_.assign(g_.size() + 1, 0);
    hostRank_.clear();
    for (auto [sw, r] : at) {
      ++hostBegin_[sw + 1];
      hostRank_.push_back(r);
    }
    for (size_t s = 0; s < g_.size(); ++s) hostBegin_[s + 1] += hostBegin_[s];
    below_.assign(g_.size(), {});
    belowDone_.assign(g_.size(), 0);
  }

  // The ranks on the switches s reaches going down only: the only sources of the flows that cross an up
  // link out of s, and the only destinations of those that cross a down link into s (routes are up* then
  // down*).
  const std::vector<uint32_t>& below(uint32_t s) {
    if (belowDone_[s]) return below_[s];
    belowDone_[s] = 1;
    std::vector<uint32_t> seen(1, s), ranks;
    std::vector<uint8_t> mark(g_.size(), 0);
    mark[s] = 1;
    for (size_t i = 0; i < seen.size(); ++i) {
      const uint32_t x = seen[i];
      ranks.insert(ranks.end(), hostRank_.begin() + hostBegin_[x], hostRank_.begin() + hostBegin_[x + 1]);
      for (const auto& a : g_.arcs(x))
        if (!isUp(x, a.to) && !mark[a.to]) {
          mark[a.to] = 1;
          seen.push_back(a.to);
        }
    }
    return below_[s] = std::move(ranks);
  }

  // Whether the route from switch `sw` to the LID crosses arc e (read from the tables as they are now).
  bool crosses(uint32_t sw, uint16_t lid, uint32_t e) const {
    const uint32_t dst = destSw_[lid];
    for (size_t hops = 0; sw != dst && hops <= g_.size(); ++hops) {
      const uint8_t p = entry(sw, lid);
      const uint32_t a = p == kNoPort ? kInf : arcs_(sw, p);
      if (a == kInf) return false;
      if (a == e) return true;
      sw = g_.arc(a).to;
    }
    return false;
  }

  // The flows of shift t that cross arc e: counted on first use, then kept up to date by bookShares().
  const Share& share(uint32_t e, uint32_t t) {
    const uint64_t key = static_cast<uint64_t>(e) * ranks_ + t;
    if (auto it = shares_.find(key); it != shares_.end()) return it->second;
    const uint32_t from = g_.arc(g_.arc(e).reverse).to, to = g_.arc(e).to;
    const uint8_t port = g_.arc(e).port;
    Share sh;
    auto count = [&](uint32_t i, uint32_t j) {
      // Most flows do not leave `from` over e: one look at its entry before walking the route.
      if (entry(from, rankLid_[j]) != port || !crosses(destSw_[rankLid_[i]], rankLid_[j], e)) return;
      if (sh.count < 2) sh.src[sh.count] = i;
      ++sh.count;
    };
    if (isUp(from, to)) {
      for (uint32_t i : below(from)) count(i, (i + t) % ranks_);
    } else {
      for (uint32_t j : below(to)) count((j + ranks_ - t) % ranks_, j);
    }
    return shares_.emplace(key, sh).first->second;
  }

  // The flows to the LID through x move from oldArcs_ to newArcs_ (apply(), before the tables change).
  void bookShares(uint16_t lid) {
    const uint32_t d = rankOfLid_[lid];
    auto in = [](const std::vector<uint32_t>& v, uint32_t a) {
      return std::find(v.begin(), v.end(), a) != v.end();
    };
    for (uint32_t y : up_)
      for (uint32_t h = hostBegin_[y]; h < hostBegin_[y + 1]; ++h) {
        const uint32_t r = hostRank_[h], t = (d + ranks_ - r) % ranks_;
        for (uint32_t a : oldArcs_) {
          if (in(newArcs_, a)) continue;
          auto it = shares_.find(static_cast<uint64_t>(a) * ranks_ + t);
          if (it == shares_.end()) continue;
          Share& sh = it->second;
          if (sh.count > 2) {  // the sources left are not all known: count them again when asked
            shares_.erase(it);
            continue;
          }
          if (sh.src[0] == r) sh.src[0] = sh.src[1];
          sh.src[1] = kInf;
          --sh.count;
        }
        for (uint32_t a : newArcs_) {
          if (in(oldArcs_, a)) continue;
          auto it = shares_.find(static_cast<uint64_t>(a) * ranks_ + t);
          if (it == shares_.end()) continue;
          Share& sh = it->second;
          if (sh.count < 2) sh.src[sh.count] = r;
          ++sh.count;
        }
      }
  }

  // onHot_[t]: the flows of shift t that leave switch s over `port` (row: s's LFT row), all at once: one
  // walk up the routes of each LID s sends that way (the link's load in flows), rather than one count per
  // shift.
  void countOnHot(uint32_t s, uint8_t port, const LftRow& row) {
    for (uint32_t t : onHotSet_) onHot_[t] = 0;
    onHotSet_.clear();
    if (shiftShare_ == 0 || ranks_ < 2) return;
    onHot_.resize(ranks_, 0);
    for (size_t l = 1; l < row.size() && l < destSw_.size(); ++l) {
      if (row[l] != port || destSw_[l] == kInf || destSw_[l] == s || rankOfLid_[l] == kInf) continue;
      const uint32_t d = rankOfLid_[l];
      upstream(s, static_cast<uint16_t>(l));
      for (uint32_t y : up_)
        for (uint32_t h = hostBegin_[y]; h < hostBegin_[y + 1]; ++h) {
          const uint32_t t = (d + ranks_ - hostRank_[h]) % ranks_;
          if (onHot_[t]++ == 0) onHotSet_.push_back(t);
        }
    }
  }

  // doubled_[k]: of the flows to the LID that cross the hot link (countOnHot) from up_[k] and the switches
  // upstream of it (as upstream() left up_), those that share it with another flow of their shift.
  void doubledUpstream(uint16_t lid) {
    doubled_.assign(up_.size(), 0);
    if (shiftShare_ == 0 || ranks_ < 2 || rankOfLid_[lid] == kInf) return;
    const uint32_t d = rankOfLid_[lid];
    for (size_t i = up_.size(); i-- > 0;) {
      for (uint32_t h = hostBegin_[up_[i]]; h < hostBegin_[up_[i] + 1]; ++h)
        doubled_[i] += onHot_[(d + ranks_ - hostRank_[h]) % ranks_] >= 2;
      if (parent_[i] != kInf) doubled_[parent_[i]] += doubled_[i];
    }
  }

  // Whether move m keeps every shift within the share; if so, m.shared is set, and where x's new next
  // switch carries no traffic to the LID, m.x2 / m.arc2 to the re-route of it that shares least.
  bool fitShifts(Move& m) {
    if (shiftShare_ == 0 || ranks_ < 2 || rankOfLid_[m.lid] == kInf) return true;
    const uint16_t lid = m.lid;
    const uint32_t v = g_.arc(m.arc).to;
    variants_.assign(1, kInf);
    if (v != destSw_[lid]) {
      upstream(v, lid);
      const uint32_t now = next(v, lid);
      if (flow_[0] == 0 && walk(lid, now, oldArcs_)) {
        // Where v carries no traffic to the LID, its route may follow that of a sibling: a destination on
        // the same switch that x already forwards over m.arc (in the tree, the destination's column).
        const size_t len = oldArcs_.size();
        const bool vDown = downOnly(v, oldArcs_);
        const uint32_t dsw = destSw_[lid];
        const uint8_t port = g_.arc(m.arc).port;
        for (uint32_t h = hostBegin_[dsw]; h < hostBegin_[dsw + 1]; ++h) {
          const uint16_t sib = rankLid_[hostRank_[h]];
          if (sib == lid || entry(m.x, sib) != port) continue;
          const uint8_t p = entry(v, sib);
          const uint32_t b = p == kNoPort ? kInf : arcs_(v, p);
          if (b == kInf || b == now || std::find(variants_.begin(), variants_.end(), b) != variants_.end())
            continue;
          if (!walk(lid, b, newArcs_) || newArcs_.size() != len) continue;
          if (isUp(v, g_.arc(b).to) ? vDown : !downOnly(v, newArcs_)) continue;
          variants_.push_back(b);
        }
      }
    }
    upstream(m.x, lid);
    if (!walk(lid, next(m.x, lid), oldArcs_)) return false;
    const bool xUp = isUp(m.x, v);
    bool fits = false;
    for (uint32_t b : variants_) {
      if (b == kInf) {
        walk(lid, m.arc, path_);
      } else {
        walk(lid, b, path_);
        path_.insert(path_.begin(), m.arc);
        if (!xUp && !downOnly(m.x, path_)) continue;
      }
      const auto shared = sharing(lid, m.x, path_);
      if (shared && (!fits || *shared < m.shared)) {
        fits = true;
        m.shared = *shared;
        m.x2 = b == kInf ? kInf : v;
        m.arc2 = b;
      }
    }
    return fits;
  }

  // For the flows to the LID through x (up_) moving from oldArcs_ onto `path`: nullopt when one would find
  // too many flows of its shift on a link; otherwise the flows that newly share a link with one of their
  // shift (each moved flow that did not before, each flow it joins) less those that no longer do (a moved
  // flow that shared before and does not after, the flows it leaves).
  std::optional<int64_t> sharing(uint16_t lid, uint32_t x, const std::vector<uint32_t>& path) {
    const uint32_t d = rankOfLid_[lid];
    auto in = [](const std::vector<uint32_t>& v, uint32_t a) {
      return std::find(v.begin(), v.end(), a) != v.end();
    };
    fresh_.clear();
    left_.clear();
    common_.clear();
    for (uint32_t a : path) (in(oldArcs_, a) ? common_ : fresh_).push_back(a);
    for (uint32_t a : oldArcs_)
      if (!in(path, a)) left_.push_back(a);
    int64_t total = 0;
    for (uint32_t y : up_) {
      // The way from y to x: the same before and after.
      pre_.clear();
      for (uint32_t sw = y; sw != x && pre_.size() <= g_.size();) {
        const uint32_t a = next(sw, lid);
        if (a == kInf) break;
        pre_.push_back(a);
        sw = g_.arc(a).to;
      }
      for (uint32_t h = hostBegin_[y]; h < hostBegin_[y + 1]; ++h) {
        const uint32_t r = hostRank_[h], t = (d + ranks_ - r) % ranks_;
        uint32_t kept = 1, before = 1, after = 1;  // most flows on a link: unchanged ones, old way, new way
        for (uint32_t a : pre_) kept = std::max(kept, share(a, t).count);
        for (uint32_t a : common_) kept = std::max(kept, share(a, t).count);
        for (uint32_t a : left_) before = std::max(before, share(a, t).count);
        joined_.clear();
        for (uint32_t a : fresh_) {
          const Share& sh = share(a, t);
          after = std::max(after, sh.count + 1);
          if (sh.count > 2)
            total += sh.count;  // not all known: as if none shared before
          else
            for (uint32_t i = 0; i < sh.count; ++i) joined_.push_back(sh.src[i]);
        }
        if (after > std::max(shiftShare_, before)) return std::nullopt;
        std::sort(joined_.begin(), joined_.end());
        joined_.erase(std::unique(joined_.begin(), joined_.end()), joined_.end());
        total += static_cast<int64_t>(joined_.size());
        relieved_.clear();
        for (uint32_t a : left_) {
          const Share& sh = share(a, t);
          const uint32_t other = sh.src[sh.src[0] == r];
          if (sh.count == 2 && !std::binary_search(joined_.begin(), joined_.end(), other))
            relieved_.push_back(other);
        }
        std::sort(relieved_.begin(), relieved_.end());
        total -= std::unique(relieved_.begin(), relieved_.end()) - relieved_.begin();
        total += (std::max(kept, after) > 1) - (std::max(kept, before) > 1);
      }
    }
    return total;
  }

  // Where the switch has an AR group for the LID, the new port joins it (a port of a link that came back
  // is not in the groups the repair left; every other legal port is already).
  void joinGroup(NodeIndex node, uint16_t lid, uint8_t port) {
    if (out_.tables.ar.empty()) return;
    const ArTable& now = std::as_const(out_.tables.ar)[node];
    const uint16_t g = now.groupOf(lid);
    if (g == ArTable::kNoGroup || now.groups[g].test(port)) return;
    PortMask mask = now.groups[g];
    mask.set(port);
    ArTable& ar = out_.tables.ar[node];
    auto it = std::find(ar.groups.begin(), ar.groups.end(), mask);
    if (it == ar.groups.end()) {
      if (ar.groups.size() >= std::min<uint32_t>(options_.arGroupCap, ArTable::kNoGroup)) {
        ar.capped = true;
        ar.lidToGroup[lid] = ArTable::kNoGroup;  // static routing for this LID rather than a wrong group
        return;
      }
      it = ar.groups.insert(ar.groups.end(), mask);
    }
    ar.lidToGroup[lid] = static_cast<uint16_t>(it - ar.groups.begin());
  }

  const Topology& topo_;
  const LidAssignment& lids_;
  const RoutingTables& in_;
  const RebalanceOptions& options_;
  RebalanceResult& out_;
  RoutingGraph g_;
  ArcIndex arcs_;
  std::vector<uint32_t> key_;
  std::vector<uint32_t> destSw_;    // LID -> the switch it leaves the fabric at; kInf for none
  std::vector<uint8_t> switchLid_;  // a switch's own LID: management traffic, in no load, on no order
  std::vector<uint64_t> load_;      // per arc
  std::vector<std::tuple<uint32_t, uint16_t, uint8_t>> touched_;  // (switch, LID, port before)
  std::vector<uint32_t> stamp_, memo_;                            // next()'s memo, valid at serial_
  std::vector<const LftRow*> row_;                                // rows()
  uint32_t serial_ = 1;
  uint16_t memoLid_ = 0;
  // Shifts (shiftShare_ > 0): ranks in job order, their LIDs, the ranks on each switch; the flows of a
  // shift on an arc, key arc x ranks_ + shift, for the (arc, shift) pairs asked about (share()).
  uint32_t shiftShare_;
  uint32_t ranks_ = 0;
  int64_t sharedSoFar_ = 0;                 // Move::shared of the moves taken
  std::vector<uint32_t> onHot_, onHotSet_;  // countOnHot()
  std::vector<uint16_t> rankLid_;
  std::vector<uint32_t> rankOfLid_, hostBegin_, hostRank_;
  std::vector<std::vector<uint32_t>> below_;
  std::vector<uint8_t> belowDone_;
  std::unordered_map<uint64_t, Share> shares_;
  // Scratch.
  std::vector<uint32_t> up_, parent_, hot_, oldArcs_, newArcs_, firstArcs_, len_;
  std::vector<uint32_t> variants_, path_, pre_, fresh_, left_, common_, joined_, relieved_, doubled_;
  std::vector<uint8_t> down_;
  std::vector<uint64_t> flow_;
};

}  // namespace

uint64_t loadLowerBound(const Topology& topo, const LidAssignment& lids) {
  const RoutingGraph g(topo);
  return boundOf(g, collectDestLids(topo, lids, g));
}

fabric::Result<RebalanceResult> rebalanceRoutes(const Topology& topo, const LidAssignment& lids,
                                                const RoutingTables& tables, const PortLoads& loads,
                                                const RebalanceOptions& options) {
  if (tables.engine == "dfly") return rebalanceDragonfly(topo, lids, tables, loads, options.arGroupCap);
  if (tables.upKey.size() != topo.size())
    return fabric::makeError("the " + tables.engine + " engine's routes follow no up/down order to keep");
  RebalanceResult out;
  Rebalancer r(topo, lids, tables, loads, options, out);
  r.run();
  return out;
}

}  // namespace ibsm::routing
