#include "routing/shift_polish.h"

#include <algorithm>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "routing/pattern_checker.h"
#include "routing/rebalance.h"
#include "routing/switch_graph.h"

namespace ibsm::routing {
namespace {

constexpr unsigned kMaxHops = 64;   // a longer walk loops
constexpr int64_t kOver = 1000;     // the cost of a flow above maxShare, against 1 for a shared link
constexpr size_t kEscapeTries = 8;  // first steps of a two-step move tried per (shift, link)

class Polisher {
 public:
  Polisher(const Topology& topo, const LidAssignment& lids, RoutingTables& tables,
           const ShiftPolishOptions& options)
      : tables_(tables), options_(options), g_(topo) {
    arcs_ = g_.arcs().size();
    size_t caPorts = 0;  // at least the ranks: the budget is checked before they are sorted
    for (fabric::NodeIndex ca : topo.cas()) caPorts += topo.node(ca).numPorts;
    if (tables.upKey.size() != topo.size() || static_cast<uint64_t>(caPorts) * arcs_ > options.maxCounters)
      return;
    const std::vector<Rank> ranks = defaultRanks(topo, lids);
    n_ = ranks.size();
    src_.resize(n_);
    exit_.resize(n_);
    lid_.resize(n_);
    lidCount_.resize(n_);
    std::vector<std::vector<uint32_t>> at(g_.size());
    for (size_t r = 0; r < n_; ++r) {
      const LidExit e = lidExit(topo, g_, ranks[r].node, ranks[r].port);
      src_[r] = e.sw;
      exit_[r] = e.port;
      const LidRange range = lids.range(ranks[r].node, ranks[r].port);
      lid_[r] = range.base.value;
      lidCount_[r] = range.count();
      if (e.sw != kNoSwitch) at[e.sw].push_back(static_cast<uint32_t>(r));
    }
    for (SwitchIndex s = 0; s < g_.size(); ++s)
      if (!at[s].empty()) {
        leaves_.push_back(s);
        leafRanks_.push_back(std::move(at[s]));
      }
    key_.resize(g_.size());
    for (SwitchIndex s = 0; s < g_.size(); ++s) key_[s] = tables.upKey[g_.node(s)];
    bound_ = loadLowerBound(topo, lids);  // of the load counted as load_ is (every CA LID of a range)
  }

  ShiftPolishResult run() {
    ShiftPolishResult result;
    if (key_.empty() || n_ < 3 || n_ > UINT16_MAX) {
      result.skipped = true;
      return result;
    }
    count();
    result.shareBefore = result.shareAfter = maxShare();
    for (size_t pass = 0; pass < options_.maxPasses && result.shareAfter > options_.maxShare; ++pass) {
      std::vector<std::pair<uint32_t, uint32_t>> over;  // (shift, arc)
      for (uint32_t t = 1; t < n_; ++t)
        for (uint32_t a = 0; a < arcs_; ++a)
          if (at(t, a) > options_.maxShare) over.emplace_back(t, a);
      size_t took = 0;
      for (auto [t, a] : over)
        if (at(t, a) > options_.maxShare && relieve(t, a)) ++took;
      if (took == 0)
        for (auto [t, a] : over)
          if (at(t, a) > options_.maxShare && escape(t, a)) ++took;
      result.shareAfter = maxShare();
      if (took == 0) break;
    }
    // An entry moved more than once counts once, against what it held first.
    std::stable_sort(was_.begin(), was_.end(), [](const auto& p, const auto& q) {
      return std::pair(std::get<0>(p), std::get<1>(p)) < std::pair(std::get<0>(q), std::get<1>(q));
    });
    for (size_t i = 0; i < was_.size(); ++i) {
      const auto [x, lid, port] = was_[i];
      if (i > 0 && std::get<0>(was_[i - 1]) == x && std::get<1>(was_[i - 1]) == lid) continue;
      if (entry(x, lid) != port) result.changed.emplace_back(g_.node(x), lid, port);
    }
    return result;
  }

 private:
  struct Move {
    int64_t delta = 0;
    SwitchIndex x = kNoSwitch;
    uint32_t rank = 0;  // the destination
    uint32_t arc = kNoArc;
    std::vector<uint32_t> from, to;  // the arcs the affected flows leave and take
    std::vector<uint32_t> leaves;    // indices into leaves_ of the switches whose routes pass x
    uint8_t was = kNoPort;           // x's port for the LID before the move
  };

  uint16_t& at(size_t t, uint32_t a) { return counts_[t * arcs_ + a]; }
  uint32_t maxShare() const {
    return counts_.empty() ? 0 : *std::max_element(counts_.begin(), counts_.end());
  }
  uint8_t entry(SwitchIndex x, uint16_t lid) const {
    const LftRow& row = std::as_const(tables_.lft)[g_.node(x)];
    return lid < row.size() ? row[lid] : kNoPort;
  }
  int64_t cost(uint32_t k) const {
    return (k > 1 ? k - 1 : 0) + (k > options_.maxShare ? kOver * (k - options_.maxShare) : 0);
  }
  size_t shiftOf(size_t from, size_t to) const { return (to + n_ - from) % n_; }

  // The switch-to-switch arcs from switch `from` to rank b's exit (to its base LID, or the LID `offset`
  // past it); false when the walk does not get there.
  bool walk(SwitchIndex from, size_t b, std::vector<uint32_t>& out, uint16_t offset = 0) const {
    out.clear();
    for (SwitchIndex sw = from; out.size() < kMaxHops;) {
      const uint8_t p = entry(sw, static_cast<uint16_t>(lid_[b] + offset));
      if (sw == src_[b] && p == exit_[b]) return true;
      const uint32_t a = p == kNoPort ? kNoArc : g_.arcOfPort(sw, p);
      if (a == kNoArc) return false;
      out.push_back(a);
      sw = g_.arcs()[a].to;
    }
    return false;
  }

  void count() {
    counts_.assign(n_ * arcs_, 0);
    load_.assign(arcs_, 0);
    std::vector<uint32_t> path;
    for (size_t l = 0; l < leaves_.size(); ++l)
      for (size_t b = 0; b < n_; ++b) {
        if (!walk(leaves_[l], b, path)) continue;
        for (uint32_t r : leafRanks_[l]) {
          if (r == b) continue;
          for (uint32_t a : path) ++at(shiftOf(r, b), a), ++load_[a];
        }
        // The load counts the routes to the other LIDs of b's range too (as PortLoads does); they stay.
        for (uint16_t k = 1; k < lidCount_[b]; ++k)
          if (walk(leaves_[l], b, path, k))
            for (uint32_t a : path) load_[a] += leafRanks_[l].size();
      }
    // The limit moves keep to: the lower bound plus the slack, or the max load the routes had if higher.
    limit_ = std::min(options_.maxLoad, std::max(*std::max_element(load_.begin(), load_.end()),
                                                 bound_ * (100 + options_.loadSlackPct) / 100));
  }

  // The routes to rank b from every leaf (paths_; reached_: whether they get there).
  void routesTo(size_t b) {
    if (routesOf_ == b) return;
    routesOf_ = b;
    paths_.resize(leaves_.size());
    reached_.resize(leaves_.size());
    for (size_t l = 0; l < leaves_.size(); ++l) reached_[l] = walk(leaves_[l], b, paths_[l]);
  }
  // Whether leaf l's route to that rank passes switch x.
  bool passes(size_t l, SwitchIndex x) const {
    if (!reached_[l]) return false;
    if (leaves_[l] == x) return true;
    for (uint32_t a : paths_[l])
      if (g_.arcs()[a].to == x) return true;
    return false;
  }
  // Route length from x to rank b and whether no hop of it is up; length -1 without a route.
  std::pair<int, bool> way(SwitchIndex x, size_t b) {
    if (!walk(x, b, scratch_)) return {-1, false};
    bool down = true;
    for (uint32_t a : scratch_) {
      down = down && key_[g_.arcs()[a].to] >= key_[x];
      x = g_.arcs()[a].to;
    }
    return {static_cast<int>(scratch_.size()), down};
  }

  // Calls f(move) for every move of a flow of shift t on arc `hot` that fits the load limit: at a switch of
  // the flow's path up to the arc, to another port of the same order, with the cost change it brings.
  template <typename F>
  void candidates(uint32_t t, uint32_t hot, F f) {
    std::vector<uint32_t> flow, alt;
    for (size_t i = 0; i < n_; ++i) {
      const size_t b = (i + t) % n_;
      if (src_[i] == kNoSwitch || !walk(src_[i], b, flow)) continue;
      const auto k = std::find(flow.begin(), flow.end(), hot);
      if (k == flow.end()) continue;
      routesTo(b);
      for (size_t h = 0; h <= static_cast<size_t>(k - flow.begin()); ++h) {
        const SwitchIndex x = h == 0 ? src_[i] : g_.arcs()[flow[h - 1]].to;
        std::vector<uint32_t> leaves;
        uint64_t affected = 0;
        for (size_t l = 0; l < leaves_.size(); ++l)
          if (passes(l, x)) {
            leaves.push_back(static_cast<uint32_t>(l));
            affected += leafRanks_[l].size();
          }
        const auto [len, down] = way(x, b);
        for (uint32_t c = g_.arcBegin(x); c < g_.arcEnd(x); ++c) {
          const SwitchIndex y = g_.arcs()[c].to;
          if (c == flow[h]) continue;
          const auto [ylen, ydown] = way(y, b);
          if (ylen != len - 1 || (key_[y] < key_[x] ? down : !ydown)) continue;  // not the same order
          std::vector<uint32_t> from(flow.begin() + static_cast<ptrdiff_t>(h), flow.end());
          walk(y, b, alt);
          std::vector<uint32_t> to{c};
          to.insert(to.end(), alt.begin(), alt.end());
          while (!from.empty() && !to.empty() && from.back() == to.back()) from.pop_back(), to.pop_back();
          bool fits = true;
          for (uint32_t e : to) fits = fits && load_[e] + affected <= limit_;
          if (!fits) continue;
          int64_t delta = 0;
          for (uint32_t l : leaves)
            for (uint32_t r : leafRanks_[l]) {
              if (r == b) continue;
              const size_t s = shiftOf(r, b);
              for (uint32_t e : from) delta += cost(at(s, e) - 1u) - cost(at(s, e));
              for (uint32_t e : to) delta += cost(at(s, e) + 1u) - cost(at(s, e));
            }
          f(Move{delta, x, static_cast<uint32_t>(b), c, std::move(from), std::move(to), leaves,
                 g_.arcs()[flow[h]].port});
        }
      }
    }
  }

  // Takes the best move that lowers the cost among those of the flows of shift t on arc `hot`.
  std::optional<Move> relieve(uint32_t t, uint32_t hot) {
    Move best;
    candidates(t, hot, [&](Move&& m) {
      if (m.delta < best.delta) best = std::move(m);
    });
    if (best.x == kNoSwitch) return std::nullopt;
    apply(best);
    return best;
  }

  // Where no single move helps: a move that does not (the least bad first), then the best moves off the
  // links it put above maxShare; kept when the two steps together lower the cost, else taken back.
  bool escape(uint32_t t, uint32_t hot) {
    std::vector<Move> firsts;
    candidates(t, hot, [&](Move&& m) { firsts.push_back(std::move(m)); });
    std::stable_sort(firsts.begin(), firsts.end(),
                     [](const Move& a, const Move& b) { return a.delta < b.delta; });
    if (firsts.size() > kEscapeTries) firsts.resize(kEscapeTries);
    for (Move& first : firsts) {
      apply(first);
      std::vector<Move> taken{first};
      int64_t total = first.delta;
      for (uint32_t l : first.leaves)
        for (uint32_t r : leafRanks_[l]) {
          if (r == first.rank) continue;
          const uint32_t s = static_cast<uint32_t>(shiftOf(r, first.rank));
          for (uint32_t e : first.to)
            if (at(s, e) > options_.maxShare)
              if (auto m = relieve(s, e)) {
                total += m->delta;
                taken.push_back(std::move(*m));
              }
        }
      if (total < 0) return true;
      for (size_t k = taken.size(); k-- > 0;) undo(taken[k]);
    }
    return false;
  }

  void apply(const Move& m) { write(m, g_.arcs()[m.arc].port, m.from, m.to); }
  void undo(const Move& m) { write(m, m.was, m.to, m.from); }
  void write(const Move& m, uint8_t port, const std::vector<uint32_t>& leave,
             const std::vector<uint32_t>& take) {
    const uint16_t lid = lid_[m.rank];
    was_.emplace_back(m.x, lid, entry(m.x, lid));
    tables_.lft[g_.node(m.x)][lid] = port;
    routesOf_ = SIZE_MAX;
    for (uint32_t l : m.leaves)
      for (uint32_t r : leafRanks_[l]) {
        if (r == m.rank) continue;
        const size_t s = shiftOf(r, m.rank);
        for (uint32_t e : leave) --at(s, e), --load_[e];
        for (uint32_t e : take) ++at(s, e), ++load_[e];
      }
  }

  RoutingTables& tables_;
  const ShiftPolishOptions& options_;
  SwitchGraph g_;
  size_t n_ = 0, arcs_ = 0;
  std::vector<SwitchIndex> src_;  // per rank: the switch its LID leaves from, the port, the base LID
  std::vector<uint8_t> exit_;
  std::vector<uint16_t> lid_, lidCount_;
  std::vector<SwitchIndex> leaves_;               // switches with ranks
  std::vector<std::vector<uint32_t>> leafRanks_;  // their ranks
  std::vector<uint32_t> key_;                     // per switch: upKey
  std::vector<uint16_t> counts_;                  // [shift * arcs + arc]: flows of the shift on the arc
  std::vector<uint64_t> load_;                    // per arc: over all rank pairs
  uint64_t bound_ = 0, limit_ = 0;
  size_t routesOf_ = SIZE_MAX;
  std::vector<std::vector<uint32_t>> paths_;
  std::vector<uint8_t> reached_;
  std::vector<uint32_t> scratch_;
  std::vector<std::tuple<SwitchIndex, uint16_t, uint8_t>> was_;  // entries written, with what they held
};

}  // namespace

ShiftPolishResult polishShifts(const Topology& topo, const LidAssignment& lids, RoutingTables& tables,
                               const ShiftPolishOptions& options) {
  return Polisher(topo, lids, tables, options).run();
}

}  // namespace ibsm::routing
