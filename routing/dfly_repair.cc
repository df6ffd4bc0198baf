#include "routing/dfly_repair.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "routing/dfly_vls.h"
#include "routing/engine.h"
#include "routing/switch_graph.h"

namespace ibsm::routing {
namespace {

using dfly::kCa;
using dfly::kLocal;
using dfly::kNone;
using dfly::PortKind;

// A dfly path has at most 6 switch-to-switch hops (L L G L G L); a walk longer than this is a loop.
constexpr size_t kMaxHops = 8;

class DflyRepairer {
 public:
  DflyRepairer(const Topology& oldTopo, const RoutingTables& old, const Topology& topo, RepairResult& out)
      : oldTopo_(oldTopo), old_(old), topo_(topo), out_(out), og_(oldTopo), g_(topo) {}

  // Why the change cannot be repaired here; empty when it can.
  std::string prepare(const LidAssignment& oldLids, const LidAssignment& lids) {
    if (old_.dflyGroup.size() != oldTopo_.size()) return "dfly: the routes carry no dragonfly groups";
    const size_t S = g_.size();
    if (og_.size() != S) return "dfly: switches came or went";
    newOfOld_.assign(S, kNoSwitch);
    oldOfNew_.assign(S, kNoSwitch);
    for (SwitchIndex s = 0; s < S; ++s) {
      const auto o = oldTopo_.findNode(topo_.node(g_.node(s)).guid);
      const SwitchIndex os = o ? og_.index(*o) : kNoSwitch;
      if (os == kNoSwitch) return "dfly: switch " + fabric::toString(topo_.node(g_.node(s)).guid) + " is new";
      oldOfNew_[s] = os;
      newOfOld_[os] = s;
    }
    group_.resize(S);
    uint32_t groups = 0;
    for (SwitchIndex s = 0; s < S; ++s) {
      group_[s] = old_.dflyGroup[og_.node(oldOfNew_[s])];
      groups = std::max(groups, group_[s] + 1);
    }
    // Port kinds and hosts of the new topology.
    kindBase_.resize(S + 1);
    hosts_.assign(S, 0);
    for (SwitchIndex s = 0; s < S; ++s) {
      const fabric::NodeIndex n = g_.node(s);
      const fabric::Node& node = topo_.node(n);
      kindBase_[s] = static_cast<uint32_t>(kind_.size());
      kind_.resize(kind_.size() + node.numPorts + 1u, kNone);
      for (unsigned q = 1; q <= node.numPorts; ++q) {
        const fabric::Port& p = node.ports[q];
        if (p.connected() && !topo_.node(p.peerNode).isSwitch() &&
            portUsable(topo_, n, fabric::PortNum{static_cast<uint8_t>(q)})) {
          kind_[kindBase_[s] + q] = kCa;
          ++hosts_[s];
        }
      }
      for (uint32_t a = g_.arcBegin(s); a < g_.arcEnd(s); ++a) {
        const auto& arc = g_.arcs()[a];
        const uint32_t x = group_[s], y = group_[arc.to];
        kind_[kindBase_[s] + arc.port] = x == y ? kLocal : dfly::globalPort(x, y, groups);
      }
    }
    kindBase_[S] = static_cast<uint32_t>(kind_.size());
    oldHosts_.assign(S, 0);
    for (SwitchIndex os = 0; os < S; ++os) {
      const fabric::Node& node = oldTopo_.node(og_.node(os));
      for (unsigned q = 1; q <= node.numPorts; ++q) {
        const fabric::Port& p = node.ports[q];
        oldHosts_[os] += p.connected() && !oldTopo_.node(p.peerNode).isSwitch() &&
                         portUsable(oldTopo_, og_.node(os), fabric::PortNum{static_cast<uint8_t>(q)});
      }
    }
    // Where each LID leaves the fabric, before and now: a LID that is new or moved is not a repair's.
    const size_t maxLid = std::max(lids.maxLid().value, oldLids.maxLid().value);
    exit_.assign(maxLid + 1u, LidExit{});
    oldExit_.assign(maxLid + 1u, LidExit{});
    for (size_t l = 1; l <= maxLid; ++l) {
      const fabric::Lid lid{static_cast<uint16_t>(l)};
      if (l <= lids.maxLid().value) {
        const LidOwner o = lids.owner(lid);
        exit_[l] = lidExit(topo_, g_, o.node, o.port);
      }
      if (l <= oldLids.maxLid().value) {
        const LidOwner o = oldLids.owner(lid);
        oldExit_[l] = lidExit(oldTopo_, og_, o.node, o.port);
      }
      const LidExit &e = exit_[l], &o = oldExit_[l];
      if (e.sw == kNoSwitch) continue;
      if (o.sw == kNoSwitch || newOfOld_[o.sw] != e.sw || o.port != e.port || o.toCa != e.toCa)
        return "dfly: LID " + std::to_string(l) + " is new or moved";
    }
    return {};
  }

  // Lost and new switch-to-switch arcs.
  void compareLinks() {
    for (SwitchIndex os = 0; os < og_.size(); ++os)
      for (uint32_t a = og_.arcBegin(os); a < og_.arcEnd(os); ++a) {
        const auto& arc = og_.arcs()[a];
        const SwitchIndex s = newOfOld_[os];
        const uint32_t na = g_.arcOfPort(s, arc.port);
        if (na == kNoArc || g_.arcs()[na].to != newOfOld_[arc.to]) dead_.push_back(a);
      }
    for (SwitchIndex s = 0; s < g_.size(); ++s)
      for (uint32_t a = g_.arcBegin(s); a < g_.arcEnd(s); ++a) {
        const auto& arc = g_.arcs()[a];
        const uint32_t oa = og_.arcOfPort(oldOfNew_[s], arc.port);
        if (oa == kNoArc || og_.arcs()[oa].to != oldOfNew_[arc.to]) ++born_;
      }
  }
  bool linksCameUp() const { return born_ > 0; }
  bool linksWentDown() const { return !dead_.empty(); }

  // The engine's routes from scratch when the dragonfly is whole again (its groups as before); false when it
  // is not.
  bool fromScratch(const LidAssignment& lids, uint32_t arGroupCap) {
    Options o;
    o.computeAr = !old_.ar.empty();
    o.arGroupCap = arGroupCap;
    o.vlLayers = old_.dflyVls;
    o.dflySpread = old_.dflySpread;
    auto t = makeDflyEngine()->compute(topo_, lids, o);
    if (!t) return false;
    // The same partition into groups (numbered by their lowest switch, which may differ).
    std::vector<uint32_t> map(g_.size(), UINT32_MAX);
    for (SwitchIndex s = 0; s < g_.size(); ++s) {
      uint32_t& m = map[group_[s]];
      const uint32_t now = t->dflyGroup[g_.node(s)];
      if (m == UINT32_MAX) m = now;
      if (m != now) return false;
    }
    size_t moved = 0;
    for (SwitchIndex s = 0; s < g_.size(); ++s) {
      const auto& was = old_.lft[og_.node(oldOfNew_[s])];
      const auto& now = t->lft[g_.node(s)];
      for (size_t l = 1; l < now.size(); ++l) moved += now[l] != (l < was.size() ? was[l] : kNoPort);
    }
    out_.tables = std::move(*t);
    out_.moved = moved;
    out_.destinations = exit_.size() - 1;
    out_.loads = computePortLoads(topo_, lids, out_.tables);
    out_.note = "dfly: the dragonfly is whole again, its routes from scratch";
    return true;
  }

  // The old tables on the new topology's node numbers.
  void copyTables(const PortLoads& oldLoads) {
    RoutingTables& t = out_.tables;
    t.engine = old_.engine;
    t.slLayers = old_.slLayers;
    t.dflyVls = old_.dflyVls;
    t.dflySpread = old_.dflySpread;
    t.lft.resize(topo_.size());
    if (!old_.ar.empty()) t.ar.resize(topo_.size());
    t.dflyGroup.assign(topo_.size(), 0);
    out_.loads.assign(topo_.size(), {});
    bool sameNodes = topo_.size() == oldTopo_.size();
    for (SwitchIndex s = 0; s < g_.size(); ++s) {
      const fabric::NodeIndex n = g_.node(s), o = og_.node(oldOfNew_[s]);
      sameNodes = sameNodes && n == o;
      t.lft.share(n, old_.lft, o);
      if (!old_.ar.empty() && o < old_.ar.size()) t.ar.share(n, old_.ar, o);
      t.dflyGroup[n] = group_[s];
      out_.loads[n].assign(topo_.node(n).numPorts + 1u, 0);
      if (o < oldLoads.size())
        for (size_t p = 0; p < oldLoads[o].size() && p < out_.loads[n].size(); ++p)
          out_.loads[n][p] = oldLoads[o][p];
      if (o < old_.sl.size() && !old_.sl[o].empty()) {
        if (t.sl.empty()) t.sl.resize(topo_.size());
        t.sl[n] = old_.sl[o];
      }
    }
    if (sameNodes) {
      t.slToVl = old_.slToVl;
    } else {
      for (SwitchIndex s = 0; s < g_.size(); ++s) {
        const fabric::NodeIndex n = g_.node(s), o = og_.node(oldOfNew_[s]);
        const unsigned ports = topo_.node(n).numPorts;
        for (unsigned in = 0; in <= ports; ++in)
          for (unsigned outPort = 0; outPort <= ports; ++outPort)
            if (const uint64_t v = old_.slToVl.packed(o, in, outPort))
              t.slToVl.setPacked(n, ports, in, outPort, v);
      }
    }
  }

  std::string run(uint32_t arGroupCap) {
    arCap_ = arGroupCap;
    std::vector<std::pair<uint16_t, SwitchIndex>> seeds;  // (LID, new switch) whose entry took a lost link
    for (uint32_t a : dead_) {
      const auto& arc = og_.arcs()[a];
      const SwitchIndex s = newOfOld_[arc.from];
      dropArMember(g_.node(s), arc.port);
      const auto& row = old_.lft[og_.node(arc.from)];
      for (size_t l = 1; l < row.size() && l < exit_.size(); ++l)
        if (row[l] == arc.port && exit_[l].sw != kNoSwitch) seeds.emplace_back(static_cast<uint16_t>(l), s);
    }
    std::sort(seeds.begin(), seeds.end());
    seeds.erase(std::unique(seeds.begin(), seeds.end()), seeds.end());
    // LIDs that no longer leave the fabric anywhere: no routes at all.
    for (size_t l = 1; l < exit_.size(); ++l)
      if (exit_[l].sw == kNoSwitch && oldExit_[l].sw != kNoSwitch) dropDestination(static_cast<uint16_t>(l));
    decided_.assign(g_.size(), 0);
    inB_.assign(g_.size(), 0);
    newSl_.assign(g_.size(), 0);
    for (size_t i = 0; i < seeds.size();) {
      size_t j = i;
      seed_.clear();
      while (j < seeds.size() && seeds[j].first == seeds[i].first) seed_.push_back(seeds[j++].second);
      if (std::string why = repairDestination(seeds[i].first); !why.empty()) return why;
      ++out_.destinations;
      i = j;
    }
    for (uint32_t a : dead_) {
      const auto& arc = og_.arcs()[a];
      out_.loads[g_.node(newOfOld_[arc.from])][arc.port] = 0;  // what the old routes had booked there
    }
    out_.tables.slLayers = std::max<uint8_t>(out_.tables.slLayers, static_cast<uint8_t>(maxVl_ + 1));
    out_.note = "dfly: " + std::to_string(detours_) + " route(s) through a third group (SL 1, 2, 5, 6), " +
                std::to_string(twoLocal_) + " with two local hops (SL 0, 3, 4), on VLs 0-" +
                std::to_string(out_.tables.slLayers - 1);
    return {};
  }

 private:
  PortKind kindOf(SwitchIndex s, unsigned port) const {
    return kindBase_[s] + port < kindBase_[s + 1] ? kind_[kindBase_[s] + port] : kNone;
  }
  uint8_t entry(SwitchIndex s, uint16_t lid) const {
    const auto& row = std::as_const(out_.tables.lft)[g_.node(s)];
    return lid < row.size() ? row[lid] : kNoPort;
  }
  void setEntry(SwitchIndex s, uint16_t lid, uint8_t port) {
    if (entry(s, lid) == port) return;
    auto& row = out_.tables.lft[g_.node(s)];
    if (row.size() <= lid) row.resize(lid + 1u, kNoPort);
    row[lid] = port;
    ++out_.moved;
  }
  void setSl(SwitchIndex s, uint16_t lid, uint8_t sl) {
    auto& t = out_.tables.sl;
    const fabric::NodeIndex n = g_.node(s);
    if (n >= t.size() || t[n].size() <= lid) {
      if (sl == 0) return;
      if (t.size() < topo_.size()) t.resize(topo_.size());
      t[n].resize(exit_.size(), 0);
    }
    t[n][lid] = sl;
  }

  // Adds (or, remove: takes off) w on every egress port of the route from switch s to `lid`: on the old
  // tables and topology (old switch index) or on the new ones.
  void bookOld(SwitchIndex os, uint16_t lid, uint64_t w) {
    for (size_t hops = 0; hops < kMaxHops; ++hops) {
      const auto& row = old_.lft[og_.node(os)];
      const uint8_t p = lid < row.size() ? row[lid] : kNoPort;
      const uint32_t a = p == kNoPort ? kNoArc : og_.arcOfPort(os, p);
      if (a == kNoArc) return;
      auto& l = out_.loads[g_.node(newOfOld_[os])];
      if (p < l.size()) l[p] -= std::min(l[p], w);
      os = og_.arcs()[a].to;
    }
  }
  void bookNew(SwitchIndex s, uint16_t lid, uint64_t w) {
    for (size_t hops = 0; hops < kMaxHops; ++hops) {
      const uint8_t p = entry(s, lid);
      const uint32_t a = p == kNoPort ? kNoArc : g_.arcOfPort(s, p);
      if (a == kNoArc) return;
      out_.loads[g_.node(s)][p] += w;
      s = g_.arcs()[a].to;
    }
  }

  void dropDestination(uint16_t lid) {
    if (oldExit_[lid].toCa)
      for (SwitchIndex os = 0; os < og_.size(); ++os)
        if (oldHosts_[os] > 0) bookOld(os, lid, oldHosts_[os]);
    for (SwitchIndex s = 0; s < g_.size(); ++s) {
      setEntry(s, lid, kNoPort);
      setGroup(s, lid, {});
    }
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
    const bool needsSl = dest_.toCa && hosts_[s] > 0;
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

  std::string repairDestination(uint16_t lid) {
    ++serial_;
    lid_ = lid;
    dest_ = exit_[lid];
    // The broken set: the seeds and every switch whose route runs into one (upstream closure).
    b_.clear();
    for (SwitchIndex s : seed_)
      if (inB_[s] != serial_) inB_[s] = serial_, b_.push_back(s);
    for (size_t i = 0; i < b_.size(); ++i) {
      const SwitchIndex x = b_[i];
      for (uint32_t a = g_.arcBegin(x); a < g_.arcEnd(x); ++a) {
        const auto& arc = g_.arcs()[a];
        const SwitchIndex q = arc.to;  // q -> x over the reverse link
        if (inB_[q] == serial_) continue;
        const uint8_t p = entry(q, lid);
        const uint32_t qa = p == kNoPort ? kNoArc : g_.arcOfPort(q, p);
        if (qa == kNoArc || g_.arcs()[qa].to != x) continue;
        inB_[q] = serial_;
        b_.push_back(q);
      }
    }
    // The broken sources' old routes leave the loads; their new ones are added at the end.
    if (dest_.toCa)
      for (SwitchIndex x : b_)
        if (oldHosts_[oldOfNew_[x]] > 0) bookOld(oldOfNew_[x], lid, oldHosts_[oldOfNew_[x]]);
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
        setEntry(s, lid, g_.arcs()[c.arc].port);
        decided_[s] = serial_;
        newSl_[s] = static_cast<uint8_t>(std::max(c.sl, 0));
        if (c.sl >= 0 && dest_.toCa && hosts_[s] > 0) {
          maxVl_ = std::max(maxVl_, c.maxVl);
          detours_ += dfly::isDetour(static_cast<uint8_t>(c.sl));
          twoLocal_ += c.twoLocal;
        }
      }
      std::erase_if(open, [&](SwitchIndex s) { return decided_[s] == serial_; });
    }
    for (SwitchIndex s : open) {
      if (dest_.toCa && hosts_[s] > 0)
        return "dfly: switch " + fabric::toString(topo_.node(g_.node(s)).guid) +
               " has no deadlock-free way to LID " + std::to_string(lid) + " left";
      setEntry(s, lid, kNoPort);
    }
    for (SwitchIndex s : b_) {
      if (dest_.toCa && hosts_[s] > 0) {
        setSl(s, lid, decided_[s] == serial_ ? newSl_[s] : 0);
        bookNew(s, lid, hosts_[s]);
      }
      updateGroup(s);
    }
    return {};
  }

  // AR groups (dfly's: the parallel links to the LFT port's neighbour) of a switch that chose again.
  void updateGroup(SwitchIndex s) {
    if (out_.tables.ar.empty()) return;
    PortMask mask;
    const uint8_t p = entry(s, lid_);
    const uint32_t a = p == kNoPort ? kNoArc : g_.arcOfPort(s, p);
    if (a != kNoArc)
      for (uint32_t b = g_.arcBegin(s); b < g_.arcEnd(s); ++b)
        if (g_.arcs()[b].to == g_.arcs()[a].to) mask.set(g_.arcs()[b].port);
    setGroup(s, lid_, mask);
  }
  // An AR port that no longer leads anywhere leaves every group of its switch.
  void dropArMember(fabric::NodeIndex n, uint8_t port) {
    if (out_.tables.ar.empty()) return;
    const ArTable& now = std::as_const(out_.tables.ar)[n];
    if (std::none_of(now.groups.begin(), now.groups.end(), [&](const PortMask& m) { return m.test(port); }))
      return;
    for (PortMask& m : out_.tables.ar[n].groups) m.reset(port);
  }
  // Gives (s, lid) the group of `mask` (no group for fewer than two ports or past the cap).
  void setGroup(SwitchIndex s, uint16_t lid, const PortMask& mask) {
    if (out_.tables.ar.empty()) return;
    const fabric::NodeIndex n = g_.node(s);
    const ArTable& now = std::as_const(out_.tables.ar)[n];
    const uint16_t current = lid < now.lidToGroup.size() ? now.lidToGroup[lid] : ArTable::kNoGroup;
    if (current == ArTable::kNoGroup ? mask.count() < 2 : now.groups[current] == mask) return;
    ArTable& ar = out_.tables.ar[n];
    if (ar.lidToGroup.size() <= lid) ar.lidToGroup.resize(lid + 1u, ArTable::kNoGroup);
    uint16_t group = ArTable::kNoGroup;
    if (mask.count() >= 2) {
      auto it = std::find(ar.groups.begin(), ar.groups.end(), mask);
      if (it != ar.groups.end()) {
        group = static_cast<uint16_t>(it - ar.groups.begin());
      } else if (ar.groups.size() < std::min<uint32_t>(arCap_, ArTable::kNoGroup)) {
        group = static_cast<uint16_t>(ar.groups.size());
        ar.groups.push_back(mask);
      } else {
        ar.capped = true;
      }
    }
    ar.lidToGroup[lid] = group;
  }

  const Topology& oldTopo_;
  const RoutingTables& old_;
  const Topology& topo_;
  RepairResult& out_;
  SwitchGraph og_, g_;
  std::vector<SwitchIndex> newOfOld_, oldOfNew_;
  std::vector<uint32_t> group_;  // new switch -> dragonfly group
  std::vector<uint32_t> kindBase_;
  std::vector<PortKind> kind_;  // [kindBase_[s] + port]
  std::vector<uint32_t> hosts_, oldHosts_;
  std::vector<LidExit> exit_, oldExit_;
  std::vector<uint32_t> dead_;  // old arcs that are gone
  size_t born_ = 0;             // new arcs
  uint32_t arCap_ = 0;
  uint8_t maxVl_ = 0;
  size_t detours_ = 0, twoLocal_ = 0;
  // Per destination.
  uint32_t serial_ = 0;
  uint16_t lid_ = 0;
  LidExit dest_;
  std::vector<SwitchIndex> seed_, b_;
  std::vector<uint32_t> inB_, decided_;
  std::vector<uint8_t> newSl_;
  std::vector<uint32_t> path_;
};

}  // namespace

fabric::Result<RepairResult> repairDragonfly(const Topology& oldTopo, const LidAssignment& oldLids,
                                             const RoutingTables& old, const PortLoads& oldLoads,
                                             const Topology& topo, const LidAssignment& lids,
                                             uint32_t arGroupCap) {
  RepairResult out;
  DflyRepairer r(oldTopo, old, topo, out);
  if (std::string why = r.prepare(oldLids, lids); !why.empty()) return fabric::makeError(why);
  r.compareLinks();
  if (r.linksCameUp() && r.fromScratch(lids, arGroupCap)) return out;
  r.copyTables(oldLoads);
  if (!r.linksWentDown()) {
    if (r.linksCameUp()) out.note = "dfly: the new link(s) wait until the dragonfly is whole";
    return out;
  }
  if (std::string why = r.run(arGroupCap); !why.empty()) return fabric::makeError(why);
  return out;
}

}  // namespace ibsm::routing
