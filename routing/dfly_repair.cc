#include "routing/dfly_repair.h"

#include <algorithm>
#include <tuple>
#include <utility>
#include <vector>

#include "routing/dfly_vls.h"
#include "routing/engine.h"
#include "routing/scheme_repair.h"

namespace ibsm::routing {
namespace {

using dfly::kCa;
using dfly::kLocal;
using dfly::kNone;
using dfly::PortKind;

// A dfly path has at most 6 switch-to-switch hops (L L G L G L); a walk longer than this is a loop.
constexpr size_t kMaxHops = 8;

constexpr const char* kWholeAgain = "dfly: the dragonfly is whole again, its routes from scratch";

// The engine's routes from scratch on topo, routed as `routed` was (AR, VLs, spread), when topo is a whole
// dragonfly again with the groups `routed` knew (group: [node of topo] -> its group in `routed`); why not
// otherwise. Written once for the repair and the rebalance.
fabric::Result<RoutingTables> wholeAgain(const Topology& topo, const LidAssignment& lids,
                                         const RoutingTables& routed, const std::vector<uint32_t>& group,
                                         uint32_t arGroupCap) {
  Options o;
  o.computeAr = !routed.ar.empty();
  o.arGroupCap = arGroupCap;
  o.vlLayers = routed.dflyVls;
  o.dflySpread = routed.dflySpread;
  auto t = makeDflyEngine()->compute(topo, lids, o);
  if (!t) return fabric::makeError("the dragonfly is not whole (" + t.error().message + ")");
  // The same partition into groups (numbered by their lowest switch, which may differ): one to one.
  std::vector<uint32_t> toNew(topo.size(), UINT32_MAX), toOld(topo.size(), UINT32_MAX);
  for (fabric::NodeIndex s : topo.switches()) {
    const uint32_t was = group[s], now = t->dflyGroup[s];
    if (toNew[was] == UINT32_MAX) toNew[was] = now;
    if (toOld[now] == UINT32_MAX) toOld[now] = was;
    if (toNew[was] != now || toOld[now] != was) return fabric::makeError("dfly: its groups changed");
  }
  return t;
}

class DflyRepairer final : public SchemeRepair {
 public:
  DflyRepairer(const Topology& oldTopo, const RoutingTables& old, const Topology& topo, RepairResult& out)
      : SchemeRepair("dfly", oldTopo, old, topo, out) {
    maxHops_ = kMaxHops;
  }

  // Why the change cannot be repaired here; empty when it can.
  std::string prepare(const LidAssignment& oldLids, const LidAssignment& lids) {
    if (old_.dflyGroup.size() != oldTopo_.size()) return "dfly: the routes carry no dragonfly groups";
    if (std::string why = SchemeRepair::prepare(oldLids, lids); !why.empty()) return why;
    const size_t S = g_.size();
    group_.resize(S);
    uint32_t groups = 0;
    for (SwitchIndex s = 0; s < S; ++s) {
      group_[s] = old_.dflyGroup[og_.node(oldOfNew_[s])];
      groups = std::max(groups, group_[s] + 1);
    }
    // Port kinds of the new topology.
    kindBase_.resize(S + 1);
    for (SwitchIndex s = 0; s < S; ++s) {
      kindBase_[s] = static_cast<uint32_t>(kind_.size());
      kind_.resize(kind_.size() + topo_.node(g_.node(s)).numPorts + 1u, kNone);
      for (const uint8_t* q = caBegin(s); q != caEnd(s); ++q) kind_[kindBase_[s] + *q] = kCa;
      for (uint32_t a = g_.arcBegin(s); a < g_.arcEnd(s); ++a) {
        const auto& arc = g_.arcs()[a];
        const uint32_t x = group_[s], y = group_[arc.to];
        kind_[kindBase_[s] + arc.port] = x == y ? kLocal : dfly::globalPort(x, y, groups);
      }
    }
    kindBase_[S] = static_cast<uint32_t>(kind_.size());
    return {};
  }

  // The engine's routes from scratch when the dragonfly is whole again (its groups as before); false when it
  // is not.
  bool fromScratch(const LidAssignment& lids, uint32_t arGroupCap) {
    auto t = wholeAgain(topo_, lids, old_, groupByNode(), arGroupCap);
    if (!t) return false;
    takeFresh(std::move(*t), lids, kWholeAgain);
    return true;
  }

  // The old tables on the new topology's node numbers.
  void copyTables(const PortLoads& oldLoads) {
    SchemeRepair::copyTables(oldLoads);
    RoutingTables& t = out_.tables;
    t.dflyVls = old_.dflyVls;
    t.dflySpread = old_.dflySpread;
    t.dflyGroup = groupByNode();
  }

  std::string run(uint32_t arGroupCap) {
    decided_.assign(g_.size(), 0);
    newSl_.assign(g_.size(), 0);
    if (std::string why = SchemeRepair::run(arGroupCap); !why.empty()) return why;
    out_.tables.slLayers = std::max<uint8_t>(out_.tables.slLayers, static_cast<uint8_t>(maxVl_ + 1));
    out_.note = "dfly: " + std::to_string(detours_) + " route(s) through a third group (SL 1, 2, 5, 6), " +
                std::to_string(twoLocal_) + " with two local hops (SL 0, 3, 4), on VLs 0-" +
                std::to_string(out_.tables.slLayers - 1);
    return {};
  }

 private:
  // [node of the new topology] -> dragonfly group (0 for non-switches), as RoutingTables::dflyGroup.
  std::vector<uint32_t> groupByNode() const {
    std::vector<uint32_t> group(topo_.size(), 0);
    for (SwitchIndex s = 0; s < g_.size(); ++s) group[g_.node(s)] = group_[s];
    return group;
  }

  PortKind kindOf(SwitchIndex s, unsigned port) const {
    return kindBase_[s] + port < kindBase_[s + 1] ? kind_[kindBase_[s] + port] : kNone;
  }

  // The route from u to the destination over the entries as they are now, appended to `path` (arcs); false
  // when it does not get there (a dead end, a loop, a switch still to decide).
  bool walk(SwitchIndex u, std::vector<uint32_t>& path) const {
    for (size_t steps = 0; u != dest_.sw; ++steps) {
      if (steps > kMaxHops || (inB_[u] == serial_ && decided_[u] != serial_)) return false;
      const uint8_t p = entry(u, lid_);
      const uint32_t a = p == kNoPort ? kNoArc : g_.arcOfPort(u, p);
      if (a == kNoArc) return false;
      path.push_back(a);
      u = g_.arcs()[a].to;
    }
    return path.size() <= kMaxHops;
  }

  // The SL under which the path (from a CA of its first switch) rises through the VL ranks of
  // dfly_engine.cc's header, and its highest VL; -1 when there is none.
  int slOf(const std::vector<uint32_t>& path, uint8_t* maxVl) const {
    return dfly::risingSl(
        path.size(),
        [&](size_t i) {
          const auto& arc = g_.arcs()[path[i]];
          return std::pair{kindOf(arc.from, arc.port), kindOf(arc.to, arc.peerPort)};
        },
        out_.tables.dflyVls, maxVl);
  }

  struct Choice {
    uint32_t arc = kNoArc;
    int sl = -1;
    uint8_t maxVl = 0;
    std::pair<size_t, size_t> cost{};  // (global hops, hops) of the way
    bool twoLocal = false;             // two local hops in a row somewhere on the way
    std::tuple<int, size_t, size_t, int, uint64_t, uint8_t> rank{};
  };

  // The best way for s among its neighbours decided so far.
  Choice choose(SwitchIndex s) {
    Choice best;
    const uint8_t was = entry(s, lid_);
    const bool needsSl = dest_.toCa && hosts(s) > 0;
    for (uint32_t a = g_.arcBegin(s); a < g_.arcEnd(s); ++a) {
      const auto& arc = g_.arcs()[a];
      if (inB_[arc.to] == serial_ && decided_[arc.to] != serial_) continue;
      path_.clear();
      path_.push_back(a);
      if (!walk(arc.to, path_)) continue;
      uint8_t top = 0;
      const int sl = slOf(path_, &top);
      // A source needs a deadlock-free way; a switch without CAs (or a switch LID's SMPs, on VL 15) any, a
      // deadlock-free one first, so the sources that reach it through it can use it.
      if (sl < 0 && needsSl) continue;
      // Global links are a dragonfly's scarce resource: the fewest global hops first (a local link down is
      // routed around inside its group, not through a third one), then the fewest hops.
      size_t global = 0;
      for (uint32_t h : path_) global += dfly::isGlobal(kindOf(g_.arcs()[h].from, g_.arcs()[h].port));
      const auto rank = std::tuple(sl < 0 ? 1 : 0, global, path_.size(), arc.port == was ? 0 : 1,
                                   out_.loads[g_.node(s)][arc.port], arc.port);
      if (best.arc != kNoArc && !(rank < best.rank)) continue;
      bool twoLocal = false;
      for (size_t i = 1; i < path_.size(); ++i)
        twoLocal =
            twoLocal || (kindOf(g_.arcs()[path_[i - 1]].from, g_.arcs()[path_[i - 1]].port) == kLocal &&
                         kindOf(g_.arcs()[path_[i]].from, g_.arcs()[path_[i]].port) == kLocal);
      best = Choice{a, sl, top, {global, path_.size()}, twoLocal, rank};
    }
    return best;
  }

  std::string repairDestination() override {
    // Nearest first (in global hops, then hops, of the resulting way), as Dijkstra's algorithm: every switch
    // chooses among neighbours whose way is final.
    std::vector<SwitchIndex> open = b_;
    std::vector<std::pair<SwitchIndex, Choice>> round;
    while (!open.empty()) {
      round.clear();
      std::pair<size_t, size_t> nearest{SIZE_MAX, SIZE_MAX};
      for (SwitchIndex s : open) {
        Choice c = choose(s);
        if (c.arc == kNoArc) continue;
        nearest = std::min(nearest, c.cost);
        round.emplace_back(s, c);
      }
      if (round.empty()) break;
      for (const auto& [s, c] : round) {
        if (c.cost != nearest) continue;
        setEntry(s, lid_, g_.arcs()[c.arc].port);
        decided_[s] = serial_;
        newSl_[s] = static_cast<uint8_t>(std::max(c.sl, 0));
        if (c.sl >= 0 && dest_.toCa && hosts(s) > 0) {
          maxVl_ = std::max(maxVl_, c.maxVl);
          detours_ += dfly::isDetour(static_cast<uint8_t>(c.sl));
          twoLocal_ += c.twoLocal;
        }
      }
      std::erase_if(open, [&](SwitchIndex s) { return decided_[s] == serial_; });
    }
    for (SwitchIndex s : open) {
      if (dest_.toCa && hosts(s) > 0)
        return "dfly: switch " + fabric::toString(topo_.node(g_.node(s)).guid) +
               " has no deadlock-free way to LID " + std::to_string(lid_) + " left";
      setEntry(s, lid_, kNoPort);
    }
    for (SwitchIndex s : b_)
      if (dest_.toCa && hosts(s) > 0) setSl(s, lid_, decided_[s] == serial_ ? newSl_[s] : 0);
    return {};
  }

  std::vector<uint32_t> group_;  // new switch -> dragonfly group
  std::vector<uint32_t> kindBase_;
  std::vector<PortKind> kind_;  // [kindBase_[s] + port]
  uint8_t maxVl_ = 0;
  size_t detours_ = 0, twoLocal_ = 0;
  // Per destination.
  std::vector<uint32_t> decided_;
  std::vector<uint8_t> newSl_;
  std::vector<uint32_t> path_;
};

}  // namespace

fabric::Result<RepairResult> repairDragonfly(const Topology& oldTopo, const LidAssignment& oldLids,
                                             const RoutingTables& old, const PortLoads& oldLoads,
                                             const Topology& topo, const LidAssignment& lids,
                                             uint32_t arGroupCap, bool rebalanceFollows) {
  RepairResult out;
  DflyRepairer r(oldTopo, old, topo, out);
  if (std::string why = r.prepare(oldLids, lids); !why.empty()) return fabric::makeError(why);
  // Routing from scratch is left to the rebalance when one follows: the repaired routes stay valid.
  if (r.linksCameUp() && !rebalanceFollows && r.fromScratch(lids, arGroupCap)) return out;
  r.copyTables(oldLoads);
  if (!r.linksWentDown()) {
    if (r.linksCameUp() && rebalanceFollows)
      out.note = "dfly: the routes stay; the rebalance takes the new link(s) off the event loop";
    else if (r.linksCameUp())
      out.note = "dfly: the new link(s) wait until the dragonfly is whole";
    return out;
  }
  if (std::string why = r.run(arGroupCap); !why.empty()) return fabric::makeError(why);
  return out;
}

fabric::Result<RebalanceResult> rebalanceDragonfly(const Topology& topo, const LidAssignment& lids,
                                                   const RoutingTables& tables, const PortLoads& loads,
                                                   uint32_t arGroupCap) {
  auto load = [](const PortLoads& l, fabric::NodeIndex n, unsigned p) -> uint64_t {
    return n < l.size() && p < l[n].size() ? l[n][p] : 0;
  };
  // The ends of the switch-to-switch links that no route to a CA crosses either way: one that came back,
  // which the repair left to this, or none (the routes are the engine's or a repair's after a loss).
  const SwitchGraph g(topo);
  std::vector<std::pair<fabric::NodeIndex, unsigned>> idle;
  for (const auto& arc : g.arcs())
    if (load(loads, g.node(arc.from), arc.port) == 0 && load(loads, g.node(arc.to), arc.peerPort) == 0)
      idle.emplace_back(g.node(arc.from), arc.port);
  if (idle.empty())
    return fabric::makeError("dfly: no link that came back waits (its routes allow no single moves)");
  if (tables.dflyGroup.size() != topo.size()) return fabric::makeError("dfly: the routes carry no groups");
  auto fresh = wholeAgain(topo, lids, tables, tables.dflyGroup, arGroupCap);
  if (!fresh) return fresh.error();
  RebalanceResult out;
  out.loads = computePortLoads(topo, lids, *fresh);
  if (std::none_of(idle.begin(), idle.end(),
                   [&](auto end) { return load(out.loads, end.first, end.second) > 0; }))
    return fabric::makeError("dfly: the engine's routes take no link the routes in place leave idle");
  out.tables = std::move(*fresh);
  // Rows equal to the ones in place are those very rows: only what differs is counted and written.
  const RoutingTables& now = out.tables;
  for (fabric::NodeIndex s : topo.switches()) {
    if (s < tables.ar.size() && s < now.ar.size() && now.ar[s] == tables.ar[s])
      out.tables.ar.share(s, tables.ar, s);
    if (s >= tables.lft.size()) continue;
    const LftRow &row = now.lft[s], &was = tables.lft[s];
    if (row == was) {
      out.tables.lft.share(s, tables.lft, s);
      continue;
    }
    forEachChangedEntry(row, was, [&](size_t) { ++out.moved; });
  }
  out.restored = out.moved;
  for (const auto& ports : loads)
    for (uint64_t v : ports) out.maxLoadBefore = std::max(out.maxLoadBefore, v);
  for (const auto& ports : out.loads)
    for (uint64_t v : ports) out.maxLoadAfter = std::max(out.maxLoadAfter, v);
  out.target = loadLowerBound(topo, lids);
  out.note = kWholeAgain;
  return out;
}

}  // namespace ibsm::routing
