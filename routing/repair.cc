#include "routing/repair.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <span>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "routing/dfly_repair.h"
#include "routing/dor_repair.h"
#include "routing/parallel.h"
#include "routing/routing_graph.h"
#include "routing/turn_guard.h"

namespace ibsm::routing {
namespace {

using Exit = RepairIndex::Exit;

uint8_t entry(const RoutingTables& t, NodeIndex node, uint16_t lid) {
  const auto& row = t.lft[node];
  return lid < row.size() ? row[lid] : kNoPort;
}

// The repair of one run: the new graph, the old tables mapped onto it, and per-destination scratch.
class Repairer {
 public:
  Repairer(const Topology& oldTopo, const LidAssignment& oldLids, const RoutingTables& old,
           RepairIndexPtr oldIndex, const Topology& topo, const LidAssignment& lids, RepairResult& out)
      : oldTopo_(oldTopo),
        old_(old),
        topo_(topo),
        out_(out),
        oldIndex_(oldIndex ? std::move(oldIndex) : std::make_shared<const RepairIndex>(oldTopo, oldLids)),
        index_(RepairIndex::patched(*oldIndex_, oldTopo, oldLids, topo, lids)),
        og_(oldIndex_->graph),
        g_(index_->graph),
        oarcs_(oldIndex_->arcs),
        arcs_(index_->arcs),
        oldExit_(oldIndex_->exits),
        exit_(index_->exits) {
    const uint32_t n = static_cast<uint32_t>(g_.size());
    newOfOld_.assign(og_.size(), kInf);
    oldNode_.assign(n, fabric::kNoNode);
    for (uint32_t s = 0; s < n; ++s)
      if (auto o = topo.findIn(oldTopo, g_.node(s)); o && og_.indexOf(*o) != kInf) {
        oldNode_[s] = *o;
        newOfOld_[og_.indexOf(*o)] = s;
      }
    key_.assign(n, 0);
    stamp_.assign(n, 0);
    inB_.assign(n, 0);
    len_.assign(n, 0);
    downOnly_.assign(n, 0);
    ddown_.assign(n, kInf);
    dany_.assign(n, kInf);
    weight_.assign(n, 0);
    next_.assign(n, kInf);
    nextStamp_.assign(n, 0);
    blocks_.assign(n, nullptr);
    blockOf_.assign(n, SIZE_MAX);
    rowSize_.assign(n, 0);
    extra_.assign(g_.arcCount(), 0);
    extraStamp_.assign(g_.arcCount(), 0);
    arIndex_.resize(n);
    lastMask_.resize(n);
    lastGroup_.assign(n, ArTable::kNoGroup);
  }

  const RepairIndexPtr& index() const { return index_; }

  // Why the change cannot be repaired; empty when it can.
  std::string check() {
    if (old_.upKey.size() != oldTopo_.size())
      return "the " + old_.engine + " engine's routes follow no up/down order it can keep";
    for (uint32_t s = 0; s < g_.size(); ++s) {
      if (oldNode_[s] == fabric::kNoNode) return "switch " + fabric::toString(g_.guid(s)) + " is new";
      key_[s] = old_.upKey[oldNode_[s]];
    }
    for (NodeIndex c : topo_.cas())
      if (!topo_.findIn(oldTopo_, c)) return "node " + fabric::toString(topo_.node(c).guid) + " is new";
    if (exit_.size() > oldExit_.size()) return "new LIDs are in use";
    for (size_t lid = 1; lid < exit_.size(); ++lid) {
      const Exit& e = exit_[lid];
      if (e.sw == kInf) continue;
      const Exit& o = oldExit_[lid];
      if (o.sw == kInf || newOfOld_[o.sw] != e.sw || o.port != e.port || o.isSwitch != e.isSwitch)
        return "LID " + std::to_string(lid) + " is new or moved";
    }
    return {};
  }

  std::string run(const PortLoads& oldLoads, uint32_t arGroupCap, bool clearDeparted) {
    copyTables(oldLoads);
    arCap_ = arGroupCap;
    arcLoad_.resize(g_.arcCount());
    load_.resize(g_.arcCount());
    for (uint32_t a = 0; a < g_.arcCount(); ++a) {
      const auto& arc = g_.arc(a);
      arcLoad_[a] = &out_.loads[g_.node(g_.arc(arc.reverse).to)][arc.port];
      load_[a] = *arcLoad_[a];
    }
    // Dead arcs: an old switch-to-switch link that is gone. Their entries are the seeds of the repair.
    // Links that came up are left unused until the rebalancing run (every route stays legal without them).
    std::vector<std::pair<uint16_t, uint32_t>> seeds;  // (LID, new switch index) with a dead entry
    std::vector<std::pair<NodeIndex, uint8_t>> dead;
    for (uint32_t o = 0; o < og_.size(); ++o) {
      const uint32_t s = newOfOld_[o];
      for (const auto& a : og_.arcs(o)) {
        if (s != kInf) {
          const uint32_t na = arcs_(s, a.port);
          if (na != kInf && g_.arc(na).to == newOfOld_[a.to]) continue;
          dropArMember(s, a.port);
          dead.emplace_back(g_.node(s), a.port);
          const auto& row = old_.lft[og_.node(o)];
          for (size_t lid = 1; lid < row.size() && lid < exit_.size(); ++lid)
            if (row[lid] == a.port && exit_[lid].sw != kInf)
              seeds.emplace_back(static_cast<uint16_t>(lid), s);
        }
      }
    }
    std::sort(seeds.begin(), seeds.end());
    // LIDs that no longer leave the fabric anywhere (their port or switch is gone): no traffic, and unless
    // clearDeparted, their entries stay (see repairRoutes).
    for (size_t lid = 1; lid < exit_.size() && lid < oldExit_.size(); ++lid)
      if (exit_[lid].sw == kInf && oldExit_[lid].sw != kInf)
        dropDestination(static_cast<uint16_t>(lid), clearDeparted);
    for (size_t i = 0; i < seeds.size();) {
      loadBlocks(seeds[i].first);
      size_t j = i;
      seed_.clear();
      while (j < seeds.size() && seeds[j].first == seeds[i].first) seed_.push_back(seeds[j++].second);
      if (std::string why = repairDestination(seeds[i].first); !why.empty()) return why;
      ++out_.destinations;
      i = j;
    }
    for (uint32_t a = 0; a < g_.arcCount(); ++a) *arcLoad_[a] = load_[a];
    for (auto [n, p] : dead) out_.loads[n][p] = 0;  // what the old routes had booked there
    if (guard_) out_.tables.downUpTurns = guard_->turns();
    return {};
  }

 private:
  void copyTables(const PortLoads& oldLoads) {
    RoutingTables& t = out_.tables;
    t.engine = old_.engine;
    t.lft.resize(topo_.size());
    t.upKey.assign(topo_.size(), 0);
    t.downUpTurns = old_.downUpTurns;
    if (!old_.ar.empty()) t.ar.resize(topo_.size());
    out_.loads.assign(topo_.size(), {});
    for (uint32_t s = 0; s < g_.size(); ++s) {
      const NodeIndex n = g_.node(s), o = oldNode_[s];
      t.lft.share(n, old_.lft, o);  // shared until the repair writes it
      t.upKey[n] = key_[s];
      if (!old_.ar.empty() && o < old_.ar.size()) t.ar.share(n, old_.ar, o);
      out_.loads[n].assign(topo_.node(n).numPorts + 1u, 0);
      if (o < oldLoads.size())
        for (size_t p = 0; p < oldLoads[o].size() && p < out_.loads[n].size(); ++p)
          out_.loads[n][p] = oldLoads[o][p];
    }
  }

  // Writes go through the non-const Rows access, which makes the switch's row its own (copy on write): only
  // when the entry changes.
  void setEntry(uint32_t s, uint16_t lid, uint8_t port) {
    if (lid == lid_) {  // the route's arc as nextArc() reads it
      next_[s] = port == kNoPort ? kInf : arcs_(s, port);
      nextStamp_[s] = serial_;
    }
    const uint8_t cur = entry(out_.tables, g_.node(s), lid);
    if (cur == port) return;
    auto& row = out_.tables.lft[g_.node(s)];
    if (row.size() <= lid) row.resize(lid + 1u, kNoPort);
    row[lid] = port;
    // moved: the entries that differ from the old tables' (one may be written twice, or back).
    const uint8_t was = oldNode_[s] == fabric::kNoNode ? kNoPort : entry(old_, oldNode_[s], lid);
    if (cur != was) --out_.moved;
    if (port != was) ++out_.moved;
    if (lid / LftRow::kBlock == block_) refreshBlock(s);  // the write cloned the block
  }

  // nextArc() reads a switch's LFT block of the current LID through blocks_, looked up when the switch is
  // first read in that block: the seeds come in LID order, so the destinations of one block read the same
  // cache lines, a read costs one load instead of following the row's pointers, and a switch no route
  // of the block reaches is never looked up (the cost follows the switches read, not the fabric).
  void loadBlocks(uint16_t lid) { block_ = lid / LftRow::kBlock; }
  void refreshBlock(uint32_t s) {
    const LftRow& row = std::as_const(out_.tables.lft)[g_.node(s)];
    const size_t first = block_ * LftRow::kBlock;
    rowSize_[s] = static_cast<uint32_t>(row.size());
    blocks_[s] = first < row.size() ? &row[first] : nullptr;
    blockOf_[s] = block_;
  }

  void dropDestination(uint16_t lid, bool clear) {
    const Exit& e = oldExit_[lid];
    if (!e.isSwitch)
      for (uint32_t o = 0; o < og_.size(); ++o)
        if (og_.hosts(o) > 0) unbookOld(o, lid, og_.hosts(o));
    if (!clear) return;
    for (uint32_t s = 0; s < g_.size(); ++s) {
      setEntry(s, lid, kNoPort);
      setGroup(s, lid, {});
    }
  }

  // An AR port that no longer leads anywhere leaves every group of its switch.
  void dropArMember(uint32_t s, uint8_t port) {
    if (out_.tables.ar.empty()) return;
    const NodeIndex n = g_.node(s);
    const ArTable& now = std::as_const(out_.tables.ar)[n];
    if (std::none_of(now.groups.begin(), now.groups.end(), [&](const PortMask& m) { return m.test(port); }))
      return;
    for (PortMask& m : out_.tables.ar[n].groups) m.reset(port);
    arIndex_[s].reset();
    lastGroup_[s] = ArTable::kNoGroup;
  }

  // Gives (s, lid) the group of `mask` (no group for fewer than two ports or past the cap).
  void setGroup(uint32_t s, uint16_t lid, const PortMask& mask) {
    if (out_.tables.ar.empty()) return;
    const ArTable& now = std::as_const(out_.tables.ar)[g_.node(s)];
    const uint16_t current = now.groupOf(lid);
    if (current == ArTable::kNoGroup ? mask.count() < 2 : now.groups[current] == mask) return;
    ArTable& ar = out_.tables.ar[g_.node(s)];
    if (ar.lidToGroup.size() <= lid) ar.lidToGroup.resize(lid + 1u, ArTable::kNoGroup);
    uint16_t group = ArTable::kNoGroup;
    if (mask.count() >= 2) {
      // Groups are only appended from here on, so the group last found for a mask stays its group.
      if (lastGroup_[s] != ArTable::kNoGroup && lastMask_[s] == mask) {
        group = lastGroup_[s];
      } else {
        auto& index = arIndex_[s];
        if (!index) {
          index = std::make_unique<std::unordered_map<PortMask, uint16_t>>();
          for (size_t i = 0; i < ar.groups.size(); ++i)
            index->emplace(ar.groups[i], static_cast<uint16_t>(i));
        }
        if (auto f = index->find(mask); f != index->end()) {
          group = f->second;
        } else if (ar.groups.size() < std::min<uint32_t>(arCap_, ArTable::kNoGroup)) {
          group = static_cast<uint16_t>(ar.groups.size());
          ar.groups.push_back(mask);
          index->emplace(mask, group);
        } else {
          ar.capped = true;
        }
        if (group != ArTable::kNoGroup) {
          lastMask_[s] = mask;
          lastGroup_[s] = group;
        }
      }
    }
    ar.lidToGroup[lid] = group;
  }

  bool isUp(uint32_t s, uint32_t to) const { return key_[to] < key_[s]; }

  // Length and direction of the (intact) route from s, a switch outside the broken set; false when it has
  // none (a dead end, a loop, or a way into the broken set). Memoized per destination.
  bool intact(uint32_t s) {
    if (stamp_[s] == serial_) return len_[s] != kInf;  // known (callers never ask about a broken switch)
    constexpr uint32_t kVisiting = kInf - 1;
    path_.clear();
    uint32_t x = s, endLen = kInf;
    bool endDown = true;
    while (true) {
      if (inB_[x] == serial_) break;
      if (stamp_[x] == serial_) {
        if (len_[x] != kVisiting) {
          endLen = len_[x];
          endDown = downOnly_[x];
        }
        break;
      }
      stamp_[x] = serial_;
      if (x == dest_.sw) {
        len_[x] = endLen = 0;
        downOnly_[x] = 1;
        break;
      }
      len_[x] = kVisiting;
      path_.push_back(x);
      const uint32_t a = nextArc(x);
      if (a == kInf) break;
      x = g_.arc(a).to;
    }
    // Unwind: each switch is one hop further than the one it forwards to.
    for (size_t i = path_.size(); i-- > 0;) {
      const uint32_t y = path_[i], to = i + 1 < path_.size() ? path_[i + 1] : x;
      if (endLen != kInf) {
        ++endLen;
        endDown = endDown && !isUp(y, to);
      }
      len_[y] = endLen;
      downOnly_[y] = endDown;
    }
    return len_[s] != kInf;
  }
  // Shortest down-only / any legal distance from v (in the broken set or not).
  uint32_t downDist(uint32_t v) {
    if (inB_[v] == serial_) return ddown_[v];
    return intact(v) && downOnly_[v] ? len_[v] : kInf;
  }
  uint32_t anyDist(uint32_t v) {
    if (inB_[v] == serial_) return dany_[v];
    return intact(v) ? len_[v] : kInf;
  }
  // Both distances of v at once (downDist, anyDist).
  std::pair<uint32_t, uint32_t> dists(uint32_t v) {
    if (inB_[v] == serial_) return {ddown_[v], dany_[v]};
    if (!intact(v)) return {kInf, kInf};
    return {downOnly_[v] ? len_[v] : kInf, len_[v]};
  }
  // The legal equal-cost next hops of s (arcs) given the distances.
  template <typename Fn>
  void candidates(uint32_t s, uint32_t down, uint32_t any, Fn&& fn) {
    if (any == kInf) return;
    for (uint32_t a = g_.firstArc(s); a < g_.firstArc(s + 1); ++a) {
      const uint32_t v = g_.arc(a).to;
      const bool up = isUp(s, v);
      if (down != kInf ? up : !up) continue;  // legalHop's direction, before v's distances are looked up
      const auto [vDown, vAny] = dists(v);
      if (legalHop(up, down, any, vDown, vAny)) fn(a);
    }
  }
  // The arc s's route to the destination takes (kInf: none), read from its LFT block once per destination.
  uint32_t nextArc(uint32_t s) {
    if (nextStamp_[s] != serial_) {
      if (blockOf_[s] != block_) refreshBlock(s);
      const uint8_t p = lid_ < rowSize_[s] ? blocks_[s][lid_ % LftRow::kBlock] : kNoPort;
      next_[s] = p == kNoPort ? kInf : arcs_(s, p);
      nextStamp_[s] = serial_;
    }
    return next_[s];
  }
  uint64_t load(uint32_t a) const { return load_[a] + (extraStamp_[a] == serial_ ? extra_[a] : 0); }
  // Worst load on the way from s to the destination (decided switches only: the route exists).
  uint64_t worstFrom(uint32_t s) {
    uint64_t m = 0;
    for (size_t hops = 0; s != dest_.sw && hops < g_.size(); ++hops) {
      const uint32_t a = nextArc(s);
      if (a == kInf) break;
      m = std::max(m, load(a));
      s = g_.arc(a).to;
    }
    return m;
  }
  void bookTentative(uint32_t s, uint64_t w) {
    for (size_t hops = 0; s != dest_.sw && hops < g_.size(); ++hops) {
      const uint32_t a = nextArc(s);
      if (a == kInf) break;
      if (extraStamp_[a] != serial_) {
        extraStamp_[a] = serial_;
        extra_[a] = 0;
      }
      extra_[a] += w;
      s = g_.arc(a).to;
    }
  }
  // Removes w along the old route from old switch index o (into load_; the arcs that died are zeroed at the
  // end anyway).
  void unbookOld(uint32_t o, uint16_t lid, uint64_t w) {
    for (size_t hops = 0; hops < og_.size(); ++hops) {
      const uint8_t p = entry(old_, og_.node(o), lid);
      const uint32_t a = p == kNoPort ? kInf : oarcs_(o, p);
      if (a == kInf) return;
      if (const uint32_t s = newOfOld_[o]; s != kInf)
        if (const uint32_t na = arcs_(s, p); na != kInf) load_[na] -= w;
      o = og_.arc(a).to;
    }
  }
  // Adds w along s's (new) route.
  void bookNew(uint32_t s, uint64_t w) {
    for (size_t hops = 0; hops < g_.size(); ++hops) {
      const uint32_t a = nextArc(s);
      if (a == kInf) return;
      load_[a] += w;
      s = g_.arc(a).to;
    }
  }

  // The repair of the common case (an up-link of a fat tree): each seed is offered, by neighbours whose own
  // ways are intact, a way as long and in the same direction (down-only or not) as the one it had. The
  // switches whose routes run into a seed then keep theirs, as long, legal and minimal as they were, so only
  // the seeds choose: the work per destination follows the seeds, not the switches upstream of them. False,
  // with nothing written, when a seed is not offered such a way: the general repair follows.
  bool repairSeeds() {
    for (uint32_t x : seed_) inB_[x] = serial_;
    for (uint32_t x : seed_) {
      const auto [len, wasDown] = oldWay(x);
      if (len == kInf) return false;
      // A seed whose way climbed had no down-only way, and losing links makes none: its lower neighbours
      // are not asked.
      uint32_t down = kInf, up = kInf;
      for (const auto& a : g_.arcs(x)) {
        if (inB_[a.to] == serial_) continue;
        if (isUp(x, a.to)) {
          if (const uint32_t d = anyDist(a.to); d != kInf) up = std::min(up, d + 1);
        } else if (const uint32_t d = wasDown ? downDist(a.to) : kInf; d != kInf) {
          down = std::min(down, d + 1);
        }
      }
      if (wasDown ? down != len : down != kInf || up != len) return false;
      ddown_[x] = down;
      dany_[x] = len;
    }
    // Nearest first: a seed may take another one, whose way is then settled.
    order_ = seed_;
    std::sort(order_.begin(), order_.end(), [&](uint32_t x, uint32_t y) { return dany_[x] < dany_[y]; });
    for (uint32_t x : order_) {
      const uint64_t w = dest_.isSwitch ? 0 : sourcesThrough(x);
      if (w > 0) unbookOld(og_.indexOf(oldNode_[x]), lid_, w);
      setEntry(x, lid_, g_.arc(choose(x)).port);  // there is a candidate: the way offered above
      if (w > 0) bookNew(x, w);
      if (dest_.isSwitch)
        setGroup(x, lid_, {});
      else
        groupFor(x, ddown_[x], dany_[x]);
    }
    return true;
  }
  // The arc switch x takes among its legal equal-cost ones (its distances ddown_, dany_): its old port when
  // it is still one, else the one whose way to the destination is least loaded; kInf when there is none.
  uint32_t choose(uint32_t x) {
    const uint8_t was = entry(out_.tables, g_.node(x), lid_);
    uint32_t best = kInf;
    std::tuple<uint64_t, uint64_t, uint8_t> bestRank{};
    candidates(x, ddown_[x], dany_[x], [&](uint32_t a) {
      if (best != kInf && g_.arc(best).port == was) return;  // the old port stands when it is still legal
      auto rank = std::tuple(std::max(load(a), worstFrom(g_.arc(a).to)), load(a), g_.arc(a).port);
      if (g_.arc(a).port == was || best == kInf || rank < bestRank) {
        best = a;
        bestRank = rank;
      }
    });
    return best;
  }
  // Length and direction (down-only or not) of x's way before the change, from the old tables; kInf when it
  // had none.
  std::pair<uint32_t, bool> oldWay(uint32_t x) const {
    const auto& key = old_.upKey;
    uint32_t o = og_.indexOf(oldNode_[x]), len = 0;
    bool down = true;
    for (const uint32_t end = oldExit_[lid_].sw; o != end; ++len) {
      const uint8_t p = entry(old_, og_.node(o), lid_);
      const uint32_t a = p == kNoPort ? kInf : oarcs_(o, p);
      if (a == kInf || len >= og_.size()) return {kInf, false};
      const uint32_t to = og_.arc(a).to;
      down = down && key[og_.node(to)] >= key[og_.node(o)];  // not up (isUp)
      o = to;
    }
    return {len, down};
  }
  // The CA sources whose route to the destination runs through seed x: its hosts and those of every switch
  // upstream. When x's way climbs, a route into it came up (routes go up* then down*): only the switches
  // below x are looked at.
  uint64_t sourcesThrough(uint32_t x) {
    const bool climbing = ddown_[x] == kInf;
    uint64_t w = 0;
    path_.assign(1, x);  // the routes into x form a tree: no switch is reached twice
    for (size_t i = 0; i < path_.size(); ++i) {
      const uint32_t y = path_[i];
      w += g_.hosts(y);
      for (const auto& a : g_.arcs(y))
        if ((!climbing || isUp(a.to, y)) && inB_[a.to] != serial_ && nextArc(a.to) == a.reverse)
          path_.push_back(a.to);
    }
    return w;
  }

  std::string repairDestination(uint16_t lid) {
    ++serial_;
    lid_ = lid;
    dest_ = exit_[lid];
    if (repairSeeds()) return {};
    ++serial_;  // the general repair starts afresh
    // The broken set: the seeds and every switch whose route runs into one (upstream closure over live arcs).
    b_.clear();
    parent_.clear();
    for (uint32_t s : seed_)
      if (inB_[s] != serial_) {
        inB_[s] = serial_;
        b_.push_back(s);
        parent_.push_back(kInf);
      }
    for (size_t i = 0; i < b_.size(); ++i) {
      const uint32_t x = b_[i];
      for (const auto& a : g_.arcs(x)) {
        const uint32_t q = a.to;  // q -> x over a.reverse
        if (inB_[q] == serial_ || nextArc(q) != a.reverse) continue;
        inB_[q] = serial_;
        b_.push_back(q);
        parent_.push_back(static_cast<uint32_t>(i));
      }
    }
    // Sources behind each broken switch (the traffic it forwards): children come after their parents in b_.
    for (uint32_t x : b_) weight_[x] = dest_.isSwitch ? 0 : g_.hosts(x);
    for (size_t i = b_.size(); i-- > 0;)
      if (parent_[i] != kInf) weight_[b_[parent_[i]]] += weight_[b_[i]];
    // The broken sources' old routes leave the loads; their new ones are added at the end.
    const bool counted = !dest_.isSwitch;
    if (counted)
      for (uint32_t x : b_) {
        const uint32_t o = og_.indexOf(oldNode_[x]);
        if (og_.hosts(o) > 0) unbookOld(o, lid, og_.hosts(o));
      }
    // Distances of the broken switches (Bellman-Ford from the intact ones; the set is small). What an intact
    // neighbour offers does not change meanwhile: it is read once, and the passes look at the arcs inside the
    // broken set only.
    for (uint32_t x : b_) ddown_[x] = dany_[x] = kInf;
    inner_.clear();
    innerEnd_.clear();
    outer_.clear();
    for (uint32_t x : b_) {
      uint32_t down = kInf, up = kInf;
      for (const auto& a : g_.arcs(x)) {
        if (inB_[a.to] == serial_) {
          inner_.push_back(a.to);
          continue;
        }
        if (isUp(x, a.to)) {
          const uint32_t d = anyDist(a.to);
          if (d != kInf) up = std::min(up, d + 1);
        } else {
          const uint32_t d = downDist(a.to);
          if (d != kInf) down = std::min(down, d + 1);
        }
      }
      innerEnd_.push_back(static_cast<uint32_t>(inner_.size()));
      outer_.emplace_back(down, up);
    }
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t i = 0, k = 0; i < b_.size(); ++i) {
        const uint32_t x = b_[i];
        auto [down, up] = outer_[i];
        for (; k < innerEnd_[i]; ++k) {
          const uint32_t v = inner_[k];
          if (isUp(x, v)) {
            if (dany_[v] != kInf) up = std::min(up, dany_[v] + 1);
          } else {
            if (ddown_[v] != kInf) down = std::min(down, ddown_[v] + 1);
          }
        }
        const uint32_t any = down != kInf ? down : up;
        if (down != ddown_[x] || any != dany_[x]) {
          ddown_[x] = down;
          dany_[x] = any;
          changed = true;
        }
      }
    }
    // Choose, nearest first, so every switch sees the final way of the one it picks.
    order_ = b_;
    std::sort(order_.begin(), order_.end(), [&](uint32_t x, uint32_t y) { return dany_[x] < dany_[y]; });
    unroutable_.clear();
    for (uint32_t x : order_) {
      if (dany_[x] == kInf) {
        if (counted && g_.hosts(x) > 0)
          return "switch " + fabric::toString(g_.guid(x)) + " lost every legal way to LID " +
                 std::to_string(lid);
        if (dest_.isSwitch && !g_.arcs(x).empty())
          unroutable_.push_back(x);
        else
          setEntry(x, lid, kNoPort);
        continue;
      }
      const uint32_t best = choose(x);
      if (best == kInf) return "no legal port found at " + fabric::toString(g_.guid(x));  // cannot happen
      setEntry(x, lid, g_.arc(best).port);
      if (counted && weight_[x] > 0) bookTentative(x, weight_[x]);
    }
    if (counted)
      for (uint32_t x : b_)
        if (g_.hosts(x) > 0) bookNew(x, g_.hosts(x));
    if (dest_.isSwitch) recheckHostWays();
    if (!unroutable_.empty()) fillUnroutable();
    updateGroups();
    return {};
  }

  // A broken switch without a legal way to a switch LID takes any way that reaches it instead (the engine
  // chain fills such entries likewise, fillSwitchLidHoles). Those with hosts first: their GMPs travel on
  // data VLs, so their ways take only the down-up turns the TurnGuard admits (routing/turn_guard.h), and
  // one it admits none for keeps no way. The others carry SMPs only there (VL15: no credit loops): from the
  // switches that have a way (the destination, intact neighbours, broken switches with a legal way),
  // outwards, each to its neighbour with the fewest hops to go. No loop: a switch only ever points at one
  // whose way was settled before its own, and that way never changes again.
  void fillUnroutable() {
    fillFromHostsFirst();
    auto togo = [&](uint32_t v) -> uint32_t {  // hops to go from a switch with a way; kInf: none (yet)
      if (v == dest_.sw) return 0;
      if (inB_[v] == serial_) return dany_[v];
      return intact(v) ? len_[v] : kInf;
    };
    for (bool progress = true; progress && !unroutable_.empty();) {
      progress = false;
      size_t kept = 0;
      for (uint32_t x : unroutable_) {
        const RoutingGraph::Arc* best = nullptr;
        uint32_t bestToGo = kInf;
        for (const auto& a : g_.arcs(x))
          if (const uint32_t t = togo(a.to); t < bestToGo) {
            best = &a;
            bestToGo = t;
          }
        if (!best) {
          unroutable_[kept++] = x;
          continue;
        }
        setEntry(x, lid_, best->port);
        dany_[x] = bestToGo + 1;  // settled (no legal distance is read past this point)
        progress = true;
      }
      unroutable_.resize(kept);
    }
    for (uint32_t x : unroutable_) setEntry(x, lid_, kNoPort);
  }

  TurnGuard& guard() {
    if (!guard_) {
      guard_.emplace(g_, out_.tables.upKey, old_.downUpTurns);
      holeUse_.assign(g_.arcCount(), 0);
      pending_.assign(g_.size(), 0);
    }
    return *guard_;
  }

  // The way of switch x to the current destination, as fillFromHosts reads it.
  auto wayOf() {
    return [this](uint32_t x) -> uint32_t {
      if (x == dest_.sw) return kWayEnds;
      const uint8_t p = entry(out_.tables, g_.node(x), lid_);
      if (pending_[x] == serial_ || p == kNoPort) return kInf;
      const uint32_t a = arcs_(x, p);
      return a == kInf ? kWayEnds : a;
    };
  }

  // A broken switch with hosts took a way a neighbour offered, but to a switch LID that neighbour's way may
  // be one filled for SMPs only (where no legal way exists): it is kept only if it takes admitted turns only
  // (routing/turn_guard.h); otherwise the hosts look for one as from a hole (fillFromHostsFirst).
  void recheckHostWays() {
    for (uint32_t x : b_)
      if (g_.hosts(x) > 0 && dany_[x] != kInf && !admittedWay(g_, guard(), x, wayOf(), nullptr))
        unroutable_.push_back(x);
  }

  void fillFromHostsFirst() {
    starts_.clear();
    for (uint32_t x : unroutable_)
      if (g_.hosts(x) > 0) starts_.push_back(x);
    if (starts_.empty()) return;
    guard();
    for (uint32_t x : unroutable_) pending_[x] = serial_;
    const uint32_t target = dest_.sw;
    const std::vector<uint32_t> dist = g_.distances(std::span(&target, 1));
    auto way = wayOf();
    auto give = [&](uint32_t x, uint32_t a) {
      setEntry(x, lid_, g_.arc(a).port);
      pending_[x] = 0;
      dany_[x] = dist[x];  // settled, for the outward fill
    };
    blocked_.clear();
    fillFromHosts(g_, *guard_, dist, starts_, holeUse_, lid_, way, give, blocked_);
    for (uint32_t x : blocked_) {
      setEntry(x, lid_, kNoPort);
      pending_[x] = 0;
    }
    std::erase_if(unroutable_, [&](uint32_t x) { return pending_[x] != serial_; });
  }

  // AR groups of the broken switches and of the switches next to them whose group leads to one (a broken
  // switch's way only gets longer, so it may leave a neighbour's equal-cost set but never joins one).
  void updateGroups() {
    if (out_.tables.ar.empty()) return;
    // Ways to a switch LID: static routes only around the repair (the engine may have filled some with
    // min-hop's choice).
    for (uint32_t x : b_) dest_.isSwitch ? setGroup(x, lid_, {}) : groupFor(x, ddown_[x], dany_[x]);
    // A neighbour's own way is intact, and so is every other member of its group: it only loses the broken
    // switches that are no longer a legal equal-cost hop. A broken switch whose way is as long and in the
    // same direction as its old one (its old route was a shortest legal one, as repairSeeds() relies on)
    // stays a legal hop for every neighbour: its neighbours' groups are not read.
    for (uint32_t x : b_) {
      if (!dest_.isSwitch) {
        const auto [len, wasDown] = oldWay(x);
        if (dany_[x] == len && ddown_[x] == (wasDown ? len : kInf)) continue;
      }
      for (const auto& a : g_.arcs(x)) {
        const uint32_t y = a.to;
        const uint8_t port = g_.arc(a.reverse).port;
        if (inB_[y] == serial_ || !groupHas(y, port) || !intact(y)) continue;
        if (dest_.isSwitch) {
          setGroup(y, lid_, {});
        } else if (!legalHop(isUp(y, x), downOnly_[y] ? len_[y] : kInf, len_[y], ddown_[x], dany_[x])) {
          const ArTable& t = std::as_const(out_.tables.ar)[g_.node(y)];
          const uint16_t g = t.groupOf(lid_);
          if (g == ArTable::kNoGroup) continue;  // capped: no group to lose the port
          PortMask mask = t.groups[g];
          mask.reset(port);
          setGroup(y, lid_, mask);
        }
      }
    }
  }
  // Whether s's group for this LID has `port` (true past the cap: the group s should have is not known).
  bool groupHas(uint32_t s, uint8_t port) const {
    const ArTable& t = std::as_const(out_.tables.ar)[g_.node(s)];
    if (t.capped) return true;
    const uint16_t g = t.groupOf(lid_);
    return g != ArTable::kNoGroup && t.groups[g].test(port);
  }
  void groupFor(uint32_t s, uint32_t down, uint32_t any) {
    if (s == dest_.sw) return;
    PortMask mask;
    candidates(s, down, any, [&](uint32_t a) { mask.set(g_.arc(a).port); });
    const uint8_t p = entry(out_.tables, g_.node(s), lid_);
    if (p != kNoPort && mask.any()) mask.set(p);
    setGroup(s, lid_, mask);
  }

  const Topology& oldTopo_;
  const RoutingTables& old_;
  const Topology& topo_;
  RepairResult& out_;
  const RepairIndexPtr oldIndex_, index_;
  const RoutingGraph &og_, &g_;
  const ArcIndex &oarcs_, &arcs_;
  const std::vector<Exit>&oldExit_, &exit_;
  std::vector<uint32_t> newOfOld_;  // old switch index -> new switch index
  std::vector<NodeIndex> oldNode_;  // new switch index -> old node
  std::vector<uint32_t> key_;
  uint32_t arCap_ = 0;
  std::vector<uint64_t*> arcLoad_;  // arc -> its entry in out_.loads
  std::vector<uint64_t> load_;      // per arc, while the destinations are repaired (written back at the end)
  size_t block_ = SIZE_MAX;         // loadBlocks(): the LFT block of the current LID; per switch its entries
  std::vector<const uint8_t*> blocks_;
  std::vector<size_t> blockOf_;  // the block blocks_[s] points into
  std::vector<uint32_t> rowSize_;
  // Per switch index: its AR groups by mask (built when first needed), and the mask last looked up.
  std::vector<std::unique_ptr<std::unordered_map<PortMask, uint16_t>>> arIndex_;
  std::vector<PortMask> lastMask_;
  std::vector<uint16_t> lastGroup_;
  // Per destination.
  uint32_t serial_ = 0;
  uint16_t lid_ = 0;
  Exit dest_;
  std::vector<uint32_t> seed_, b_, parent_, order_, path_, unroutable_;
  // Ways from hosts to switch LIDs through holes (fillFromHostsFirst), over the whole repair.
  std::optional<TurnGuard> guard_;
  std::vector<uint32_t> starts_, blocked_, holeUse_, pending_;
  std::vector<uint32_t> stamp_, inB_, len_, ddown_, dany_;
  std::vector<uint8_t> downOnly_;
  std::vector<uint64_t> weight_;
  std::vector<uint32_t> next_, nextStamp_;  // nextArc()'s memo
  std::vector<uint64_t> extra_;             // tentative load of this destination's new routes, per arc
  std::vector<uint32_t> extraStamp_;        // extra_[a] counts when extraStamp_[a] == serial_
  std::vector<uint32_t> inner_, innerEnd_;  // the Bellman-Ford's arcs inside the broken set
  std::vector<std::pair<uint32_t, uint32_t>> outer_;  // (down, up) offered by intact neighbours
};

}  // namespace

RepairIndex::RepairIndex(const Topology& topo, const LidAssignment& lids)
    : graph(topo), arcs(graph), exits(static_cast<size_t>(lids.maxLid().value) + 1) {
  for (const DestLid& d : collectDestLids(topo, lids, graph)) exits[d.lid.value] = {d.sw, d.port, d.isSwitch};
}

RepairIndexPtr RepairIndex::patched(const RepairIndex& base, const Topology& baseTopo,
                                    const LidAssignment& baseLids, const Topology& topo,
                                    const LidAssignment& lids) {
  if (topo.size() != baseTopo.size() || topo.switches() != baseTopo.switches() || !(lids == baseLids) ||
      base.exits.size() != static_cast<size_t>(lids.maxLid().value) + 1)
    return std::make_shared<const RepairIndex>(topo, lids);
  // The nodes whose rows differ; the changed switches and, in either version, the switches behind a port
  // whose link or state (what the graph reads of it) differs.
  std::vector<NodeIndex> changed;
  for (NodeIndex i = 0; i < topo.size(); ++i)
    if (!topo.nodes().sameRow(i, baseTopo.nodes(), i)) changed.push_back(i);
  std::vector<bool> reread(topo.size(), false);
  auto markPeer = [&reread](const Topology& t, const fabric::Port& port) {
    if (port.connected() && port.peerNode < t.size() && t.node(port.peerNode).isSwitch())
      reread[port.peerNode] = true;
  };
  for (NodeIndex i : changed) {
    const fabric::Node &n = topo.node(i), &was = baseTopo.node(i);
    if (n.isSwitch()) reread[i] = true;
    const fabric::Port kNone{};
    for (unsigned p = 1; p < std::max(n.ports.size(), was.ports.size()); ++p) {
      const fabric::Port& a = p < n.ports.size() ? n.ports[p] : kNone;
      const fabric::Port& b = p < was.ports.size() ? was.ports[p] : kNone;
      if (a.peerNode == b.peerNode && a.peerPort == b.peerPort && a.attrs.down() == b.attrs.down()) continue;
      markPeer(topo, a);
      markPeer(baseTopo, b);
    }
  }
  RoutingGraph graph(topo, base.graph, reread);
  // The exits of the LIDs of changed CAs and of the CAs linked to a switch read again (a switch's own LID
  // leaves where it did: its number is the same).
  std::vector<Exit> exits = base.exits;
  DestLid d;
  auto again = [&](NodeIndex c, PortNum p) {
    const LidRange r = lids.range(c, p);
    for (uint32_t l = r.base.value; r.base.value != 0 && l < r.base.value + r.count() && l < exits.size();
         ++l)
      exits[l] = destLid(topo, lids, graph, Lid{static_cast<uint16_t>(l)}, d) ? Exit{d.sw, d.port, d.isSwitch}
                                                                              : Exit{};
  };
  auto casAround = [&](const Topology& t, NodeIndex s) {
    const fabric::Node& n = t.node(s);
    for (unsigned p = 1; p <= n.numPorts && p < n.ports.size(); ++p)
      if (const fabric::Port& port = n.ports[p];
          port.connected() && port.peerNode < t.size() && !t.node(port.peerNode).isSwitch())
        again(port.peerNode, port.peerPort);
  };
  for (NodeIndex i : changed)
    if (!topo.node(i).isSwitch())
      for (unsigned p = 1; p <= topo.node(i).numPorts; ++p) again(i, PortNum{static_cast<uint8_t>(p)});
  for (NodeIndex s : topo.switches())
    if (reread[s]) {
      casAround(topo, s);
      casAround(baseTopo, s);
    }
  return std::make_shared<const RepairIndex>(std::move(graph), std::move(exits));
}

PortLoads computePortLoads(const Topology& topo, const LidAssignment& lids, const RoutingTables& tables,
                           unsigned threads) {
  const RoutingGraph g(topo);
  const ArcIndex arcs(g);
  const std::vector<DestLid> dests = collectDestLids(topo, lids, g);
  const uint32_t n = static_cast<uint32_t>(g.size());
  struct Worker {
    std::vector<uint64_t> load;  // per arc
    std::vector<uint32_t> next, len, order, count;
    std::vector<uint64_t> acc;
  };
  std::vector<Worker> workers(workerCount(dests.size(), threads));
  for (auto& w : workers) {
    w.load.assign(g.arcCount(), 0);
    w.next.resize(n);
    w.len.resize(n);
    w.acc.resize(n);
  }
  parallelFor(dests.size(), threads, [&](unsigned wi, size_t i) {
    const DestLid& d = dests[i];
    if (d.isSwitch) return;
    Worker& w = workers[wi];
    const uint16_t lid = d.lid.value;
    // Route of every switch: the arc it takes (kInf: none, or it is the destination switch).
    for (uint32_t s = 0; s < n; ++s) {
      const uint8_t p = entry(tables, g.node(s), lid);
      w.next[s] = s == d.sw || p == kNoPort ? kInf : arcs(s, p);
      w.len[s] = s == d.sw ? 0 : kInf;
    }
    // Hops to the destination switch (routes that end elsewhere or loop keep kInf), then the traffic pushed
    // along the routes farthest first.
    w.order.clear();
    for (uint32_t s = 0; s < n; ++s) {
      uint32_t x = s, steps = 0;
      while (x != d.sw && w.len[x] == kInf && w.next[x] != kInf && steps++ <= n) x = g.arc(w.next[x]).to;
      if (w.len[x] == kInf) continue;
      for (uint32_t y = s, l = w.len[x] + steps; y != x; y = g.arc(w.next[y]).to) w.len[y] = l--;
    }
    // Counting sort by hops, farthest first.
    w.count.assign(n + 2, 0);
    for (uint32_t s = 0; s < n; ++s)
      if (w.len[s] != kInf && s != d.sw) ++w.count[n - w.len[s]];
    for (uint32_t i = 1; i < w.count.size(); ++i) w.count[i] += w.count[i - 1];
    w.order.resize(w.count.back());
    for (uint32_t s = n; s-- > 0;)
      if (w.len[s] != kInf && s != d.sw) w.order[--w.count[n - w.len[s]]] = s;
    for (uint32_t s : w.order) {
      const uint64_t traffic = g.hosts(s) + std::exchange(w.acc[s], 0);
      w.load[w.next[s]] += traffic;
      w.acc[g.arc(w.next[s]).to] += traffic;
    }
    w.acc[d.sw] = 0;
  });
  PortLoads loads(topo.size());
  for (uint32_t s = 0; s < n; ++s) loads[g.node(s)].assign(topo.node(g.node(s)).numPorts + 1u, 0);
  for (const auto& w : workers)
    for (uint32_t a = 0; a < g.arcCount(); ++a) {
      const auto& arc = g.arc(a);
      loads[g.node(g.arc(arc.reverse).to)][arc.port] += w.load[a];
    }
  return loads;
}

fabric::Result<RepairResult> repairRoutes(const Topology& oldTopo, const LidAssignment& oldLids,
                                          const RoutingTables& old, const PortLoads& oldLoads,
                                          const Topology& topo, const LidAssignment& lids,
                                          uint32_t arGroupCap, bool clearDeparted, RepairIndexPtr oldIndex) {
  // dfly's routes obey no up/down order but a dragonfly's own scheme, which its repair keeps.
  // Without clearDeparted a rebalance follows, which takes the links that came back (rebalanceDragonfly).
  if (old.engine == "dfly")
    return repairDragonfly(oldTopo, oldLids, old, oldLoads, topo, lids, arGroupCap, !clearDeparted);
  // dor's likewise: its detours keep to dimension order's own VL layers (routing/dor_repair.h).
  if (old.engine == "dor") return repairDor(oldTopo, oldLids, old, oldLoads, topo, lids, arGroupCap);
  RepairResult out;
  Repairer r(oldTopo, oldLids, old, std::move(oldIndex), topo, lids, out);
  if (std::string why = r.check(); !why.empty()) return fabric::makeError(why);
  if (std::string why = r.run(oldLoads, arGroupCap, clearDeparted); !why.empty())
    return fabric::makeError(why);
  out.index = r.index();
  return out;
}

}  // namespace ibsm::routing
