#include "routing/dor_repair.h"

#include <algorithm>
#include <map>
#include <span>
#include <utility>

#include "routing/channel_graph.h"
#include "routing/engine.h"
#include "routing/scheme_repair.h"

namespace ibsm::routing {
namespace {

// A way out of a switch: dimension and direction (0 up, 1 down).
struct DorWay {
  uint32_t dim = UINT32_MAX;
  uint8_t dir = 0;
};

class DorRepairer final : public SchemeRepair {
 public:
  DorRepairer(const Topology& oldTopo, const RoutingTables& old, const Topology& topo, RepairResult& out)
      : SchemeRepair("dor", oldTopo, old, topo, out), grid_(old.dorGrid) {}

  std::string prepare(const LidAssignment& oldLids, const LidAssignment& lids) {
    const size_t D = grid_.dims();
    if (D == 0 || grid_.coord.size() != oldTopo_.size() * D) return "dor: the routes carry no grid";
    if (std::string why = SchemeRepair::prepare(oldLids, lids); !why.empty()) return why;
    const size_t S = g_.size();
    // Coordinates of the new switches, and the switch at each cell of the grid.
    uint64_t cells = 1;
    for (uint32_t k : grid_.size) cells *= k;
    if (cells != S) return "dor: the switches do not fill the grid";
    coord_.resize(S * D);
    cell_.assign(S, kNoSwitch);
    for (SwitchIndex s = 0; s < S; ++s) {
      uint64_t index = 0;
      for (size_t d = D; d-- > 0;) {
        const uint32_t c = grid_.coord[og_.node(oldOfNew_[s]) * D + d];
        if (c >= grid_.size[d]) return "dor: switch " + describe(s) + " is not on the grid";
        coord_[s * D + d] = c;
        index = index * grid_.size[d] + c;
      }
      if (cell_[index] != kNoSwitch) return "dor: switch " + describe(s) + " shares its cell of the grid";
      cell_[index] = s;
    }
    // The live ports of every way, and the grid links with none.
    std::vector<uint32_t> wayOfArc(g_.arcs().size(), UINT32_MAX);
    wayBegin_.assign(S * D * 2 + 1, 0);
    for (uint32_t a = 0; a < g_.arcs().size(); ++a) {
      const auto& arc = g_.arcs()[a];
      const DorWay w = wayOf(arc.from, arc.to);
      if (w.dim == UINT32_MAX) continue;
      wayOfArc[a] = static_cast<uint32_t>(way(arc.from, w.dim, w.dir));
      ++wayBegin_[wayOfArc[a] + 1];
    }
    for (size_t i = 1; i < wayBegin_.size(); ++i) wayBegin_[i] += wayBegin_[i - 1];
    wayPort_.resize(wayBegin_.back());
    std::vector<uint32_t> fill(wayBegin_.begin(), wayBegin_.end() - 1);
    for (uint32_t a = 0; a < g_.arcs().size(); ++a)
      if (wayOfArc[a] != UINT32_MAX) wayPort_[fill[wayOfArc[a]]++] = g_.arcs()[a].port;
    for (SwitchIndex s = 0; s < S; ++s)
      for (uint32_t d = 0; d < D; ++d) lost_ += step(s, d, 0) != kNoSwitch && ports(way(s, d, 0)).empty();
    layers_ = grid_.rings() > 0 ? 2 : 1;
    flag_ = uint8_t(1u << grid_.rings());
    // Representatives of the merged switch pairs, for the check of layer 1.
    rep_.resize(g_.arcs().size());
    for (SwitchIndex s = 0; s < S; ++s)
      for (uint32_t a = g_.arcBegin(s); a < g_.arcEnd(s); ++a) {
        rep_[a] = a;
        for (uint32_t b = g_.arcBegin(s); b < a && rep_[a] == a; ++b)
          if (g_.arcs()[b].to == g_.arcs()[a].to) rep_[a] = b;
      }
    return {};
  }

  // dor's routes from scratch when the grid is whole again; false when it is not.
  bool fromScratch(const LidAssignment& lids, uint32_t arGroupCap) {
    if (lost_ > 0) return false;
    Options o;
    o.computeAr = !old_.ar.empty();
    o.arGroupCap = arGroupCap;
    o.vlLayers = grid_.vls;
    auto t = makeDorEngine()->compute(topo_, lids, o);
    if (!t) return false;
    takeFresh(std::move(*t), lids, "dor: the grid is whole again, its routes from scratch");
    return true;
  }

  void copyTables(const PortLoads& oldLoads) {
    SchemeRepair::copyTables(oldLoads);
    DorGrid& t = out_.tables.dorGrid;
    const size_t D = grid_.dims();
    t.size = grid_.size;
    t.ring = grid_.ring;
    t.vls = grid_.vls;
    t.coord.assign(topo_.size() * D, DorGrid::kNoCoord);
    for (SwitchIndex s = 0; s < g_.size(); ++s)
      std::copy_n(coord_.begin() + s * D, D, t.coord.begin() + g_.node(s) * D);
  }

  std::string run(uint32_t arGroupCap) {
    // A check of layer 1 unless the proof of dor_repair.h covers it: one lost link, from the grid whole.
    const bool check = lost_ > 1 || old_.slLayers > layers_;
    if (std::string why = SchemeRepair::run(arGroupCap); !why.empty()) return why;
    if (check && detours_ > 0)
      if (std::string why = checkLayer1(); !why.empty()) return why;
    out_.note = "dor: ";
    if (detours_ > 0)
      out_.note += std::to_string(detours_) + " route(s) around " + std::to_string(around_.size()) +
                   " link(s) by a sidestep, on SL bit " + std::to_string(grid_.rings()) + " and VLs " +
                   std::to_string(layers_) + "-" + std::to_string(2 * layers_ - 1) +
                   (check ? " (checked)" : "") + ", ";
    else
      out_.note += "no detour, ";
    out_.note += std::to_string(kept_) + " on a parallel link or the other way round";
    return {};
  }

 private:
  std::string describe(SwitchIndex s) const { return "'" + topo_.node(g_.node(s)).description + "'"; }
  uint32_t at(SwitchIndex s, size_t d) const { return coord_[s * grid_.dims() + d]; }
  size_t way(SwitchIndex s, uint32_t d, uint8_t dir) const { return (s * grid_.dims() + d) * 2 + dir; }
  // The neighbour of s one step up (dir 0) or down in dimension d on the grid; kNoSwitch past a line's end.
  SwitchIndex step(SwitchIndex s, uint32_t d, uint8_t dir) const {
    const uint32_t k = grid_.size[d], c = at(s, d);
    uint32_t to;
    if (grid_.ring[d])
      to = dir == 0 ? (c + 1) % k : (c + k - 1) % k;
    else if (dir == 0 ? c + 1 < k : c > 0)
      to = dir == 0 ? c + 1 : c - 1;
    else
      return kNoSwitch;
    uint64_t index = 0, stride = 1;
    for (size_t e = 0; e < grid_.dims(); ++e) {
      index += stride * (e == d ? to : at(s, e));
      stride *= grid_.size[e];
    }
    return cell_[index];
  }
  // The way from s to its grid neighbour t; dim UINT32_MAX when t is none.
  DorWay wayOf(SwitchIndex s, SwitchIndex t) const {
    for (uint32_t d = 0; d < grid_.dims(); ++d)
      if (at(s, d) != at(t, d)) {
        for (uint8_t dir : {0, 1})
          if (step(s, d, dir) == t) return {d, dir};
        return {};
      }
    return {};
  }
  // The minimal ways of dimension order from s towards t: the first dimension in which they differ, one
  // direction or, at the antipode of an even ring, both (dirs bit 0 up, bit 1 down).
  std::pair<uint32_t, uint8_t> dorWays(SwitchIndex s, SwitchIndex t) const {
    for (uint32_t d = 0; d < grid_.dims(); ++d) {
      const uint32_t from = at(s, d), to = at(t, d), k = grid_.size[d];
      if (from == to) continue;
      if (!grid_.ring[d]) return {d, to > from ? 1 : 2};
      const uint32_t ahead = (to + k - from) % k, back = k - ahead;
      return {d, ahead < back ? 1 : back < ahead ? 2 : 3};
    }
    return {UINT32_MAX, 0};
  }
  // The live ports of a way, and the one of them LID lid_ takes (the LIDs in turn).
  std::span<const uint8_t> ports(size_t w) const {
    return {wayPort_.data() + wayBegin_[w], wayBegin_[w + 1] - wayBegin_[w]};
  }
  uint8_t pick(std::span<const uint8_t> live) const { return live[lid_ % live.size()]; }

  // The sidestep around the lost link from x to y in dimension d: (e, direction), chosen once per link for
  // both ways; e UINT32_MAX when every candidate has a link down.
  std::pair<uint32_t, uint8_t> sidestep(SwitchIndex x, SwitchIndex y, uint32_t d) {
    const std::pair<SwitchIndex, SwitchIndex> key{std::min(x, y), std::max(x, y)};
    if (auto it = around_.find(key); it != around_.end()) return it->second;
    std::pair<uint32_t, uint8_t> best{UINT32_MAX, 0};
    std::vector<uint32_t> order;
    for (uint32_t e = d + 1; e < grid_.dims(); ++e) order.push_back(e);
    for (uint32_t e = d; e-- > 0;) order.push_back(e);
    const DorWay xy = wayOf(x, y);
    for (uint32_t e : order) {
      for (uint8_t dir : {0, 1}) {
        const SwitchIndex x2 = step(x, e, dir), y2 = step(y, e, dir);
        if (x2 == kNoSwitch || y2 == kNoSwitch) continue;
        if (!ports(way(x, e, dir)).empty() && !ports(way(y, e, dir)).empty() &&
            !ports(way(x2, xy.dim, xy.dir)).empty()) {
          best = {e, dir};
          break;
        }
      }
      if (best.first != UINT32_MAX) break;
    }
    around_.emplace(key, best);
    return best;
  }

  // The new entry of seed x, whose entry for lid_ took a lost link towards (old) neighbour y.
  std::string decide(SwitchIndex x, SwitchIndex y) {
    const SwitchIndex target = dest_.sw;
    const DorWay lostWay = wayOf(x, y);
    if (lostWay.dim != UINT32_MAX && !ports(way(x, lostWay.dim, lostWay.dir)).empty()) {
      setEntry(x, lid_, pick(ports(way(x, lostWay.dim, lostWay.dir))));  // a parallel link
      return {};
    }
    const auto [d, dirs] = dorWays(x, target);
    if (d == UINT32_MAX)
      return "dor: switch " + describe(x) + " has no grid way to LID " + std::to_string(lid_);
    for (uint8_t dir : {0, 1})
      if ((dirs >> dir & 1u) && !ports(way(x, d, dir)).empty()) {
        setEntry(x, lid_, pick(ports(way(x, d, dir))));  // the other way round, as short
        return {};
      }
    // Around the lost link of the way it took (or the dimension-order one).
    const uint8_t dir = lostWay.dim == d && (dirs >> lostWay.dir & 1u) ? lostWay.dir : (dirs & 1u ? 0 : 1);
    const SwitchIndex far = step(x, d, dir);
    if (far == kNoSwitch)
      return "dor: switch " + describe(x) + " has no grid way to LID " + std::to_string(lid_);
    const auto [e, side] = sidestep(x, far, d);
    if (e == UINT32_MAX)
      return "dor: no way around the link between " + describe(x) + " and " + describe(far) +
             " (every sidestep has a link down)";
    if (2 * layers_ > grid_.vls)
      return "dor: a detour needs " + std::to_string(2 * layers_) + " VLs; dor routed on " +
             std::to_string(grid_.vls);
    if (grid_.rings() >= 4) return "dor: 4 rings with datelines leave no SL bit for detours";
    const SwitchIndex x2 = step(x, e, side);
    setEntry(x, lid_, pick(ports(way(x, e, side))));
    if (e < d) {
      // x2's route went back to x: now across the row next to the lost link, and y2's takes e back to far.
      const uint8_t p = entry(x2, lid_);
      const uint32_t a = p == kNoPort ? kNoArc : g_.arcOfPort(x2, p);
      if (a != kNoArc && g_.arcs()[a].to == x) setEntry(x2, lid_, pick(ports(way(x2, d, dir))));
    }
    return {};
  }

  std::string repairDestination() override {
    const SwitchIndex target = dest_.sw;
    for (SwitchIndex x : seed_) {
      // The neighbour the old entry led to.
      const auto& row = old_.lft[og_.node(oldOfNew_[x])];
      const uint8_t p = lid_ < row.size() ? row[lid_] : kNoPort;
      const uint32_t oa = p == kNoPort ? kNoArc : og_.arcOfPort(oldOfNew_[x], p);
      if (oa == kNoArc) continue;
      if (std::string why = decide(x, newOfOld_[og_.arcs()[oa].to]); !why.empty()) return why;
    }
    // Every broken switch's route, checked; the SL of those with CAs and, on layer 1, their VL pairs.
    for (SwitchIndex x : b_) {
      path_.clear();
      SwitchIndex u = x;
      while (u != target && path_.size() <= maxHops_) {
        const uint8_t p = entry(u, lid_);
        const uint32_t a = p == kNoPort ? kNoArc : g_.arcOfPort(u, p);
        if (a == kNoArc) break;
        path_.push_back(a);
        u = g_.arcs()[a].to;
      }
      if (u != target)
        return "dor: the route from " + describe(x) + " to LID " + std::to_string(lid_) +
               " finds no way around the lost link(s)";
      uint8_t sl = 0;
      bool detour = false;
      for (uint32_t a : path_) {
        const auto& arc = g_.arcs()[a];
        const DorWay w = wayOf(arc.from, arc.to);
        const auto [d, dirs] = dorWays(arc.from, target);
        detour = detour || w.dim != d || !(dirs >> w.dir & 1u);
        if (w.dim == UINT32_MAX) continue;
        const int bit = grid_.slBit(w.dim);
        if (bit >= 0 && at(arc.from, w.dim) == (w.dir == 0 ? grid_.size[w.dim] - 1 : 0))
          sl = static_cast<uint8_t>(sl | 1u << bit);  // the ring's wrap link
      }
      // A detour is no shortest way, nor are the parallel links of its first hop: no AR group.
      if (detour) keepStatic(x);
      if (!dest_.toCa || hosts(x) == 0) continue;
      if (detour) {
        sl = static_cast<uint8_t>(sl | flag_);
        ++detours_;
        liftPairs(x);
      } else {
        ++kept_;
      }
      setSl(x, lid_, sl);
    }
    return {};
  }

  // Puts the (input, output) pairs of path_ (from x's CAs) on layer 1 for the SLs with the detour flag.
  void liftPairs(SwitchIndex x) {
    out_.tables.slLayers = std::max<uint8_t>(out_.tables.slLayers, static_cast<uint8_t>(2 * layers_));
    if (out_.tables.slToVl.empty()) return;  // SL i on VL i: SL L + b is VL L + b already
    auto lift = [&](SwitchIndex s, unsigned in, unsigned outPort) {
      const fabric::NodeIndex n = g_.node(s);
      const uint64_t v = out_.tables.slToVl.packed(n, in, outPort);
      uint64_t w = v;
      for (unsigned b = 0; b < flag_; ++b) {
        const uint64_t vl = layers_ + ((v >> (4 * b)) & 0xF);
        w = (w & ~(uint64_t{0xF} << (4 * (flag_ | b)))) | vl << (4 * (flag_ | b));
      }
      if (w != v) out_.tables.slToVl.setPacked(n, topo_.node(n).numPorts, in, outPort, w);
    };
    for (size_t i = 0; i < path_.size(); ++i) {
      const auto& arc = g_.arcs()[path_[i]];
      if (i == 0)
        for (const uint8_t* q = caBegin(x); q != caEnd(x); ++q) lift(x, *q, arc.port);
      else
        lift(arc.from, g_.arcs()[path_[i - 1]].peerPort, arc.port);
    }
  }

  // The channel dependency graph of layer 1 (merged parallel links, VLs from the tables): a reason when it
  // has a cycle.
  std::string checkLayer1() {
    std::vector<uint64_t> edges;
    const RoutingTables& t = out_.tables;
    for (SwitchIndex s = 0; s < g_.size(); ++s) {
      if (hosts(s) == 0) continue;
      const fabric::NodeIndex n = g_.node(s);
      for (size_t l = 1; l < exit_.size(); ++l) {
        const uint8_t sl = t.pathSl(n, fabric::Lid{static_cast<uint16_t>(l)});
        if (!(sl & flag_) || !exit_[l].toCa) continue;
        SwitchIndex u = s;
        unsigned in = *caBegin(s);
        uint32_t prev = UINT32_MAX;
        for (size_t hops = 0; u != exit_[l].sw && hops <= maxHops_; ++hops) {
          const uint8_t p = entry(u, static_cast<uint16_t>(l));
          const uint32_t a = p == kNoPort ? kNoArc : g_.arcOfPort(u, p);
          if (a == kNoArc) break;
          const uint32_t ch = rep_[a] * 16 + t.hopVl(g_.node(u), in, p, sl);
          if (prev != UINT32_MAX) edges.push_back(channelEdge(prev, ch));
          prev = ch;
          in = g_.arcs()[a].peerPort;
          u = g_.arcs()[a].to;
        }
      }
    }
    uniqueEdges(edges);
    const std::vector<uint32_t> cycle = findChannelCycle(g_.arcs().size() * 16, edges);
    if (cycle.empty()) return {};
    const auto& arc = g_.arcs()[cycle[0] / 16];
    return "dor: the detours around " + std::to_string(lost_) + " lost links would close a cycle (through " +
           describe(arc.from) + " -> " + describe(arc.to) + " on VL " + std::to_string(cycle[0] % 16) + ")";
  }

  const DorGrid& grid_;
  std::vector<uint32_t> coord_;     // [s * dims + d]
  std::vector<SwitchIndex> cell_;   // grid cell (mixed radix, dimension 0 lowest) -> switch
  std::vector<uint32_t> wayBegin_;  // CSR of wayPort_ per way(s, d, dir)
  std::vector<uint8_t> wayPort_;    // the live ports of each way
  std::vector<uint32_t> rep_;       // arc -> first arc between the same two switches
  size_t lost_ = 0;                 // grid links with no live link
  uint8_t layers_ = 1, flag_ = 1;
  std::map<std::pair<SwitchIndex, SwitchIndex>, std::pair<uint32_t, uint8_t>> around_;  // sidestep per link
  size_t detours_ = 0, kept_ = 0;
  std::vector<uint32_t> path_;
};

}  // namespace

fabric::Result<RepairResult> repairDor(const Topology& oldTopo, const LidAssignment& oldLids,
                                       const RoutingTables& old, const PortLoads& oldLoads,
                                       const Topology& topo, const LidAssignment& lids, uint32_t arGroupCap) {
  RepairResult out;
  DorRepairer r(oldTopo, old, topo, out);
  if (std::string why = r.prepare(oldLids, lids); !why.empty()) return fabric::makeError(why);
  if (r.linksCameUp() && r.fromScratch(lids, arGroupCap)) return out;
  r.copyTables(oldLoads);
  if (!r.linksWentDown()) {
    if (r.linksCameUp()) out.note = "dor: the new link(s) wait until the grid is whole";
    return out;
  }
  if (std::string why = r.run(arGroupCap); !why.empty()) return fabric::makeError(why);
  return out;
}

}  // namespace ibsm::routing
