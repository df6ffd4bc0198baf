// Fat-tree routing (after OpenSM's ftree and Zahavi's D-mod-K), for k-ary n-trees, 2/3-level fat trees with
// parallel links, oversubscribed or partially populated leaves, and degraded trees.
//
// Tree detection: leaves are the switches with CAs; levels are BFS hop counts from the leaves (or, when
// options.roots are given, the roots are the top level and levels count down from them). Every
// switch-to-switch link must join adjacent levels; otherwise the engine declines so the chain falls back.
//
// Routing, per destination LID in a fixed order (leaf switches by GUID, then port, then LMC offset; then the
// switches' own LIDs), with D the switch the LID leaves from:
//  1. Ancestors of D (switches that reach D going only down) route down; every other switch must first go up.
//     A switch's distance is the length of its shortest legal (up*, then down*) path; only ports that keep
//     that distance are candidates, so every route is minimal and up*/down* (acyclic CDG on one VL), and so
//     is any mix of the candidates, which become the AR groups.
//  2. Main path: from D upwards, each switch takes the up-link whose downward direction carries the fewest
//     main paths so far (ties: port order); the switch above routes the LID down that link. This is D-mod-K:
//     the hosts of a leaf get distinct up-links, and at each level above the destinations are spread the
//     same way. Counting main paths rather than load keeps that spread on degraded trees too, where the load
//     a link has carried depends on lost links elsewhere: a load-driven choice there moves whole runs of
//     destinations onto other links, and consecutive destinations (a shift's flows out of one leaf or pod)
//     then share them (on a 6-ary 3-tree without 6 links: mean flow bandwidth over all shifts 0.84 by
//     load, 0.92 by count, at the same max link load).
//  3. Convergence: going down from the main path, every non-ancestor switch whose candidates include a switch
//     on (or converging to) the main path takes the least-loaded such candidate link. All traffic to a LID
//     thus meets on the main path, so downward links carry one destination's traffic each — the classic
//     optimum (max link load = hosts per leaf x (hosts outside the leaf) / up-links per leaf on full trees).
//  4. What is left (degraded trees, or switches no host traffic passes): other ancestors take the
//  least-loaded
//     down candidate; other non-ancestors carrying traffic take the least-loaded up candidate; switches no
//     host's route crosses take their candidates in turn.
//  5. Target: the cut lower bound on the max link load (see cutBound). If the routes above would push a link
//     past it, the LID is re-routed by split(): its traffic is spread over the candidates that still have
//     room, so on degraded trees one destination may enter its leaf over several links.
//  6. Shifts: on a degraded tree the traffic steps 4b and 5 place by load can put 3 or more flows of one
//     shift (host i to host i + t) on a link; when any CA traffic took such a way, polishShifts
//     (routing/shift_polish.h) moves single entries among the same candidates until every shift is at most
//     2-congested where it can, trading up to 5 % of all-pairs load above the bound for it. Full trees
//     take no such way (every switch converges on the main path) and keep D-mod-K untouched.
// Link load is counted as routes: after each CA LID, each switch-to-switch link used gets the number of
// source CA ports whose route to the LID crosses it. Switch LIDs are routed the same way but not counted.
// Switches with no legal path to a LID (e.g. a top switch that lost its only link into a pod) get kNoPort.
// Single-threaded (options.threads is not used): the greedy balance is sequential over destinations.
#include <algorithm>
#include <memory>
#include <numeric>
#include <string>
#include <tuple>
#include <utility>

#include "routing/ar_groups.h"
#include "routing/engine.h"
#include "routing/routing_graph.h"
#include "routing/shift_polish.h"

namespace ibsm::routing {
namespace {

std::string portName(const RoutingGraph& g, uint32_t sw, uint8_t port) {
  return fabric::toString(g.guid(sw)) + "[" + std::to_string(port) + "]";
}

// Levels and the up/down arcs of each switch (arc indices into the graph, in port order).
struct Tree {
  std::vector<uint32_t> level;
  uint32_t height = 0;
  std::vector<std::vector<uint32_t>> byLevel;
  std::vector<uint32_t> upBegin, up, downBegin, down;
  std::vector<uint32_t> upTo, downTo;  // the switch at the far end of up[k] / down[k]
};

fabric::Result<Tree> detectTree(const Topology& topo, const RoutingGraph& g, const Options& options) {
  const uint32_t n = static_cast<uint32_t>(g.size());
  Tree tree;
  std::vector<uint32_t> leaves;
  for (uint32_t s = 0; s < n; ++s)
    if (g.hosts(s) > 0) leaves.push_back(s);
  if (leaves.empty()) return fabric::makeError("ftree: no CA is attached to any switch");

  if (options.roots.empty()) {
    tree.level = g.distances(leaves);
  } else {
    std::vector<uint32_t> roots;
    for (Guid guid : options.roots) {
      auto node = topo.findNode(guid);
      if (!node || g.indexOf(*node) == kInf)
        return fabric::makeError("ftree: root " + fabric::toString(guid) + " is not a switch of this fabric");
      roots.push_back(g.indexOf(*node));
    }
    std::vector<uint32_t> rank = g.distances(roots);
    uint32_t top = 0;
    for (uint32_t s = 0; s < n; ++s)
      if (rank[s] != kInf) top = std::max(top, rank[s]);
    tree.level.assign(n, kInf);
    for (uint32_t s = 0; s < n; ++s)
      if (rank[s] != kInf) tree.level[s] = top - rank[s];
    for (uint32_t s : leaves)
      if (tree.level[s] != 0 && tree.level[s] != kInf)
        return fabric::makeError("ftree: not a fat-tree: switch " + fabric::toString(g.guid(s)) +
                                 " has CAs but is " + std::to_string(tree.level[s]) +
                                 " levels above the leaves");
  }
  for (uint32_t s = 0; s < n; ++s) {
    if (tree.level[s] == kInf)
      return fabric::makeError("ftree: not a fat-tree: switch " + fabric::toString(g.guid(s)) +
                               (options.roots.empty() ? " is not connected to any switch with CAs"
                                                      : " is not connected to any root"));
    tree.height = std::max(tree.height, tree.level[s]);
  }
  tree.byLevel.resize(tree.height + 1);
  for (uint32_t s = 0; s < n; ++s) tree.byLevel[tree.level[s]].push_back(s);
  tree.upBegin.assign(n + 1, 0);
  tree.downBegin.assign(n + 1, 0);
  for (uint32_t s = 0; s < n; ++s) {
    tree.upBegin[s] = static_cast<uint32_t>(tree.up.size());
    tree.downBegin[s] = static_cast<uint32_t>(tree.down.size());
    for (uint32_t a = g.firstArc(s); a < g.firstArc(s + 1); ++a) {
      const auto& arc = g.arc(a);
      const uint32_t ls = tree.level[s], lt = tree.level[arc.to];
      if (lt == ls + 1) {
        tree.up.push_back(a);
        tree.upTo.push_back(arc.to);
      } else if (lt + 1 == ls) {
        tree.down.push_back(a);
        tree.downTo.push_back(arc.to);
      } else {
        return fabric::makeError("ftree: not a fat-tree: link " + portName(g, s, arc.port) + " - " +
                                 portName(g, arc.to, arc.peerPort) + " joins levels " + std::to_string(ls) +
                                 " and " + std::to_string(lt));
      }
    }
  }
  tree.upBegin[n] = static_cast<uint32_t>(tree.up.size());
  tree.downBegin[n] = static_cast<uint32_t>(tree.down.size());
  return tree;
}

class FatTreeRouter {
 public:
  FatTreeRouter(const Topology& topo, const LidAssignment& lids, const Options& options,
                const RoutingGraph& g, const Tree& tree)
      : topo_(topo), lids_(lids), options_(options), g_(g), t_(tree), n_(static_cast<uint32_t>(g.size())) {
    lftSize_ = static_cast<size_t>(lids.maxLid().value) + 1;
    tables_.engine = "ftree";
    tables_.lft.resize(topo.size());
    tables_.upKey.assign(topo.size(), 0);  // up = towards a higher level
    for (uint32_t s = 0; s < n_; ++s) tables_.upKey[g.node(s)] = tree.height - tree.level[s];
    for (uint32_t s = 0; s < n_; ++s) tables_.lft[g.node(s)].assign(lftSize_, kNoPort);
    cols_.resize((lftSize_ + LftRow::kBlock - 1) / LftRow::kBlock);
    for (auto& c : cols_) {
      c = std::make_unique<uint8_t[]>(LftRow::kBlock * n_);
      std::fill_n(c.get(), LftRow::kBlock * n_, kNoPort);
    }
    if (options.computeAr) ar_.assign(n_, ArGroupBuilder(lftSize_, options.arGroupCap));
    load_.assign(g.arcCount(), 0);
    mainPaths_.assign(g.arcCount(), 0);
    ancStamp_.assign(n_, 0);
    dist_.assign(n_, kInf);
    candBegin_.assign(n_ + 1, 0);
    mainStamp_.assign(n_, 0);
    chosen_.assign(n_, kInf);
    offer_.assign(n_, kInf);
    acc_.assign(n_, 0);
    dm_.assign(n_, 0);
    est_.assign(n_, 0);
    next_.assign(n_, kInf);
    pred_.assign(n_, kInf);
    predTo_.assign(n_, kInf);
    turn_.assign(n_, 0);
    frontier_.resize(tree.height + 1);
    dests_ = collectDestLids(topo, lids, g);
    target_ = cutBound();
  }

  RoutingTables run() && {
    // Destination switches: leaves (by GUID) first, so CA LIDs are balanced in leaf order; then the rest.
    std::vector<uint32_t> order(n_);
    std::iota(order.begin(), order.end(), 0u);
    std::sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
      bool lx = g_.hosts(x) > 0, ly = g_.hosts(y) > 0;
      return lx != ly ? lx : g_.guid(x) < g_.guid(y);
    });
    std::vector<uint32_t> rankOf(n_);
    for (uint32_t i = 0; i < n_; ++i) rankOf[order[i]] = i;
    // Per destination switch: CA LIDs by (egress port, LID), then the switch's own LIDs.
    std::sort(dests_.begin(), dests_.end(), [&](const DestLid& x, const DestLid& y) {
      if (x.sw != y.sw) return rankOf[x.sw] < rankOf[y.sw];
      if (x.isSwitch != y.isSwitch) return !x.isSwitch;
      if (x.port != y.port) return x.port < y.port;
      return x.lid < y.lid;
    });
    std::vector<uint32_t> groupOf(dests_.size());  // dest LID -> index of its destination switch group
    size_t groups = 0;
    for (size_t i = 0; i < dests_.size(); ++i) {
      if (i > 0 && dests_[i].sw != dests_[i - 1].sw) ++groups;
      groupOf[i] = static_cast<uint32_t>(groups);
    }
    groups_ = dests_.empty() ? 0 : groups + 1;
    if (options_.computeAr) destSets_.assign(static_cast<size_t>(n_) * groups_, ArGroupBuilder::kNoSet);
    for (size_t first = 0; first < dests_.size();) {
      size_t last = first;
      while (last < dests_.size() && dests_[last].sw == dests_[first].sw) ++last;
      prepare(dests_[first].sw, groupOf[first]);
      for (size_t i = first; i < last; ++i) route(dests_[i]);
      first = last;
    }
    if (options_.computeAr) {
      // All LIDs leaving from one switch share each switch's set: assign them per switch, row by row.
      tables_.ar.resize(topo_.size());
      for (uint32_t s = 0; s < n_; ++s) {
        const uint32_t* row = destSets_.data() + static_cast<size_t>(s) * groups_;
        for (size_t i = 0; i < dests_.size(); ++i) ar_[s].assign(dests_[i].lid, row[groupOf[i]]);
        tables_.ar[g_.node(s)] = ar_[s].build();
        ar_[s] = ArGroupBuilder(0, 0);  // release its memory early
      }
    }
    // The LFT rows, a block of every switch at a time.
    for (size_t k = 0; k < cols_.size(); ++k) {
      for (uint32_t s = 0; s < n_; ++s) {
        uint8_t* block = tables_.lft[g_.node(s)].writableBlock(k);
        for (size_t i = 0; i < LftRow::kBlock; ++i) block[i] = cols_[k][i * n_ + s];
      }
      cols_[k].reset();
    }
    if (detoured_) polishShifts(topo_, lids_, tables_);
    return std::move(tables_);
  }

 private:
  bool isAnc(uint32_t s) const { return ancStamp_[s] == destSerial_; }
  uint8_t& entry(uint32_t s, uint16_t lid) {
    return cols_[lid / LftRow::kBlock][(lid % LftRow::kBlock) * n_ + s];
  }
  bool isMain(uint32_t s) const { return mainStamp_[s] == lidSerial_; }
  const RoutingGraph::Arc& arc(uint32_t a) const { return g_.arc(a); }
  // Less-loaded link first, then the lower port number (a and b leave the same switch, whose arcs are
  // numbered in port order).
  bool better(uint32_t a, uint32_t b) const {
    if (b == kInf) return true;
    return load_[a] != load_[b] ? load_[a] < load_[b] : a < b;
  }

  // Ancestors, distances and candidate links towards switch d: shared by every LID that leaves from d.
  void prepare(uint32_t d, uint32_t group) {
    ++destSerial_;
    dest_ = d;
    anc_.clear();
    anc_.push_back(d);
    ancStamp_[d] = destSerial_;
    for (size_t i = 0; i < anc_.size(); ++i)
      for (uint32_t k = t_.upBegin[anc_[i]]; k < t_.upBegin[anc_[i] + 1]; ++k) {
        uint32_t p = t_.upTo[k];
        if (ancStamp_[p] != destSerial_) {
          ancStamp_[p] = destSerial_;
          anc_.push_back(p);
        }
      }
    // anc_ is in BFS order, i.e. by increasing level.
    for (uint32_t l = t_.height + 1; l-- > 0;)
      for (uint32_t s : t_.byLevel[l]) {
        if (isAnc(s)) {
          dist_[s] = t_.level[s] - t_.level[d];
          continue;
        }
        uint32_t best = kInf;
        for (uint32_t k = t_.upBegin[s]; k < t_.upBegin[s + 1]; ++k) best = std::min(best, dist_[t_.upTo[k]]);
        dist_[s] = best == kInf ? kInf : best + 1;
      }
    cands_.clear();
    for (uint32_t s = 0; s < n_; ++s) {
      candBegin_[s] = static_cast<uint32_t>(cands_.size());
      if (s == d || dist_[s] == kInf) continue;
      if (isAnc(s)) {
        for (uint32_t k = t_.downBegin[s]; k < t_.downBegin[s + 1]; ++k) {
          uint32_t c = t_.downTo[k];
          if (isAnc(c) && dist_[c] + 1 == dist_[s]) cands_.push_back(t_.down[k]);
        }
      } else {
        const uint32_t want = dist_[s] - 1;  // dist_[s] is finite here, so want != kInf
        for (uint32_t k = t_.upBegin[s]; k < t_.upBegin[s + 1]; ++k)
          if (dist_[t_.upTo[k]] == want) cands_.push_back(t_.up[k]);
      }
    }
    candBegin_[n_] = static_cast<uint32_t>(cands_.size());
    if (options_.computeAr) {
      for (uint32_t s = 0; s < n_; ++s) {
        PortMask mask;
        for (uint32_t c = candBegin_[s]; c < candBegin_[s + 1]; ++c) mask.set(arc(cands_[c]).port);
        destSets_[static_cast<size_t>(s) * groups_ + group] = ar_[s].intern(mask);
      }
    }
  }

  void choose(uint32_t s, uint32_t a, uint16_t lid) {
    chosen_[s] = a;
    next_[s] = arc(a).to;
    entry(s, lid) = arc(a).port;
  }

  void route(const DestLid& t) {
    ++lidSerial_;
    const uint32_t d = dest_;
    const uint16_t lid = t.lid.value;
    const bool count = !t.isSwitch;
    entry(d, lid) = t.port;

    // 2. Main path up from d.
    for (auto& f : frontier_) f.clear();
    mainStamp_[d] = lidSerial_;
    for (uint32_t s = d;;) {
      uint32_t best = kInf;
      for (uint32_t k = t_.upBegin[s]; k < t_.upBegin[s + 1]; ++k) {
        uint32_t down = arc(t_.up[k]).reverse;  // ties: the first of s's up-ports, in port order
        if (best == kInf || mainPaths_[down] < mainPaths_[best]) best = down;
      }
      if (best == kInf) break;
      s = arc(arc(best).reverse).to;
      if (count) ++mainPaths_[best];
      choose(s, best, lid);
      mainStamp_[s] = lidSerial_;
      frontier_[t_.level[s]].push_back(s);
    }
    // 3. Convergence, level by level downwards from the top of the main path.
    for (uint32_t l = t_.height + 1; l-- > 0;) {
      for (size_t i = 0; i < frontier_[l].size(); ++i) {
        uint32_t u = frontier_[l][i];
        if (!isAnc(u)) choose(u, offer_[u], lid);
        for (uint32_t k = t_.downBegin[u]; k < t_.downBegin[u + 1]; ++k) {
          const auto& down = arc(t_.down[k]);
          uint32_t c = down.to;
          if (isAnc(c) || dist_[c] != dist_[u] + 1) continue;
          if (!isMain(c)) {
            mainStamp_[c] = lidSerial_;
            offer_[c] = down.reverse;
            frontier_[l - 1].push_back(c);
          } else if (better(down.reverse, offer_[c])) {
            offer_[c] = down.reverse;
          }
        }
      }
    }
    // 4a. Other ancestors route down (candidates exist: every ancestor but d has a child on the way to d).
    for (size_t i = 1; i < anc_.size(); ++i) {
      uint32_t a = anc_[i];
      if (isMain(a)) continue;
      uint32_t best = kInf;
      for (uint32_t c = candBegin_[a]; c < candBegin_[a + 1]; ++c)
        if (better(cands_[c], best)) best = cands_[c];
      choose(a, best, lid);
    }
    // 4b. Remaining non-ancestors bottom-up (a switch's traffic is known once the switches below have
    // chosen), and the traffic of every non-ancestor pushed up the links it takes; then down the ancestors,
    // top first.
    adds_.clear();  // acc_ is all zero between LIDs: every entry is consumed (and cleared) where it is read
    for (uint32_t l = 0; l <= t_.height; ++l)
      for (uint32_t s : t_.byLevel[l]) {
        if (isAnc(s) || dist_[s] == kInf) continue;
        const uint64_t w = g_.hosts(s) + std::exchange(acc_[s], 0);
        if (!isMain(s)) {
          const uint32_t b = candBegin_[s], e = candBegin_[s + 1];
          uint32_t best = kInf;
          if (w > 0) {
            for (uint32_t c = b; c < e; ++c)
              if (better(cands_[c], best)) best = cands_[c];
          } else {
            best = cands_[b + turn_[s]++ % (e - b)];
          }
          choose(s, best, lid);
        }
        if (w > 0) {
          detoured_ = detoured_ || (count && !isMain(s));
          adds_.push_back({chosen_[s], w});
          acc_[next_[s]] += w;
        }
      }
    for (size_t i = anc_.size(); i-- > 1;) {
      uint32_t a = anc_[i];
      const uint64_t w = std::exchange(acc_[a], 0);
      if (w == 0) continue;
      adds_.push_back({chosen_[a], w});
      acc_[next_[a]] += w;
    }
    acc_[dest_] = 0;
    if (!count) return;
    // 5. Commit, unless converging pushes a link past the target (the cut lower bound): then re-route this
    // LID's traffic splitting it over the links that still have room.
    bool fits = true;
    for (auto [a, w] : adds_) fits = fits && load_[a] + w <= target_;
    if (fits) {
      for (auto [a, w] : adds_) load_[a] += w;
    } else {
      detoured_ = true;
      split(lid);
    }
  }

  // Lower bound on the max link load of any destination-based routing: for each level l and each connected
  // group K of switches at levels <= l, the routes between K's CA ports and the CA LIDs outside K cross the
  // links leaving K (in both directions).
  uint64_t cutBound() const {
    std::vector<uint64_t> destsAt(n_, 0);
    uint64_t sources = 0, dests = 0;
    for (const DestLid& d : dests_)
      if (!d.isSwitch) ++destsAt[d.sw], ++dests;
    for (uint32_t s = 0; s < n_; ++s) sources += g_.hosts(s);
    uint64_t bound = 0;
    std::vector<uint32_t> seen(n_, kInf), queue;
    for (uint32_t l = 0; l < t_.height; ++l)
      for (uint32_t s = 0; s < n_; ++s) {
        if (t_.level[s] > l || seen[s] == l) continue;
        seen[s] = l;
        queue.assign(1, s);
        uint64_t src = 0, dst = 0, links = 0;
        for (size_t i = 0; i < queue.size(); ++i) {
          uint32_t x = queue[i];
          src += g_.hosts(x);
          dst += destsAt[x];
          for (const auto& a : g_.arcs(x)) {
            if (t_.level[a.to] > l) {
              ++links;
            } else if (seen[a.to] != l) {
              seen[a.to] = l;
              queue.push_back(a.to);
            }
          }
        }
        if (links == 0) continue;
        // A single switch sends all its sources' traffic to one LID over one link: whole multiples of src.
        uint64_t out = queue.size() == 1 ? (dests - dst + links - 1) / links * src
                                         : (src * (dests - dst) + links - 1) / links;
        bound = std::max({bound, out, ((sources - src) * dst + links - 1) / links});
      }
    return bound;
  }

  // During split(): dm_[a] is the worst load on the (already chosen) way down from ancestor a to the
  // destination switch, kept exact as loads change; downParents_ lists, per switch, the ancestors routing
  // down into it.
  void initDownMax() {
    dpBegin_.assign(n_ + 1, 0);
    for (size_t i = 1; i < anc_.size(); ++i) ++dpBegin_[next_[anc_[i]] + 1];
    for (uint32_t x = 0; x < n_; ++x) dpBegin_[x + 1] += dpBegin_[x];
    downParents_.resize(anc_.size());
    dpFill_.assign(dpBegin_.begin(), dpBegin_.end() - 1);
    for (size_t i = 1; i < anc_.size(); ++i) downParents_[dpFill_[next_[anc_[i]]]++] = anc_[i];
    dm_[dest_] = 0;
    for (size_t i = 1; i < anc_.size(); ++i) {  // anc_ is by increasing level: children first
      uint32_t x = anc_[i];
      dm_[x] = std::max(load_[chosen_[x]], dm_[next_[x]]);
    }
  }
  // Recomputes dm_ of ancestor x and, when it changed (or force), of the ancestors routing down into it.
  void refreshDownMax(uint32_t x, bool force) {
    uint64_t v = std::max(load_[chosen_[x]], dm_[next_[x]]);
    if (v == dm_[x] && !force) return;
    dm_[x] = v;
    for (uint32_t i = dpBegin_[x]; i < dpBegin_[x + 1]; ++i) refreshDownMax(downParents_[i], false);
  }

  // Adds (or removes) w along the predicted way of non-ancestor x (x -> pred_[x] -> ... -> an ancestor ->
  // down).
  void addAlong(uint32_t x, uint64_t w, bool remove = false) {
    auto book = [&](uint32_t a) { load_[a] = remove ? load_[a] - w : load_[a] + w; };
    while (!isAnc(x)) {
      book(pred_[x]);
      x = predTo_[x];
    }
    path_.clear();
    for (; x != dest_; x = next_[x]) {
      book(chosen_[x]);
      path_.push_back(x);
    }
    for (size_t i = path_.size(); i-- > 0;) refreshDownMax(path_[i], /*force=*/true);
  }
  uint64_t maxAlong(uint32_t x) const {
    uint64_t m = 0;
    while (!isAnc(x)) {
      m = std::max(m, load_[pred_[x]]);
      x = predTo_[x];
    }
    return std::max(m, dm_[x]);
  }

  // Target-aware re-routing of one CA LID whose convergent routes overload a link. Top-down, every
  // non-ancestor gets a predicted way up; then bottom-up each non-ancestor with traffic keeps its first-pass
  // (convergent) choice if its way to the destination stays within the target, and otherwise takes the
  // candidate with the most headroom. Traffic committed to a switch that has not decided yet is booked along
  // its predicted way, so switches deciding later see it on the links they share; it is moved when that
  // switch decides.
  void split(uint16_t lid) {
    initDownMax();
    // Predicted way up of every non-ancestor above the leaves (nobody goes up to a leaf): top-down, the
    // candidate with the least worst load; est_ is that worst load, raised as traffic is booked on the
    // switch.
    for (uint32_t l = t_.height + 1; l-- > 1;)
      for (uint32_t s : t_.byLevel[l]) {
        if (isAnc(s) || dist_[s] == kInf) continue;
        uint64_t bestMax = UINT64_MAX;
        for (uint32_t c = candBegin_[s]; c < candBegin_[s + 1]; ++c) {
          uint32_t a = cands_[c], q = arc(a).to;
          uint64_t m = std::max(load_[a], isAnc(q) ? dm_[q] : est_[q]);
          if (m < bestMax || (m == bestMax && better(a, pred_[s]))) {
            bestMax = m;
            pred_[s] = a;
            predTo_[s] = q;
          }
        }
        est_[s] = bestMax;
      }
    for (uint32_t l = 0; l <= t_.height; ++l)
      for (uint32_t s : t_.byLevel[l]) {
        if (isAnc(s) || dist_[s] == kInf) continue;
        if (acc_[s] > 0) addAlong(s, acc_[s], /*remove=*/true);  // leaves never have any
        const uint64_t w = g_.hosts(s) + std::exchange(acc_[s], 0);
        if (w == 0) continue;
        // Fitting the target first; among those the convergent candidate, then the most headroom; among the
        // rest the least bad.
        auto rank = [&](uint32_t a) {
          uint32_t q = arc(a).to;
          uint64_t m = std::max(load_[a], maxAlong(q));
          bool fits = m + w <= target_;
          return std::tuple(!fits, m, !isMain(q), load_[a], a);
        };
        // The convergent choice of the first pass stands when it fits; only otherwise are all candidates
        // ranked.
        uint32_t best = chosen_[s];
        if (std::get<0>(rank(best))) {
          auto bestRank = rank(best);
          for (uint32_t c = candBegin_[s]; c < candBegin_[s + 1]; ++c) {
            auto r = rank(cands_[c]);
            if (r < bestRank) {
              best = cands_[c];
              bestRank = r;
            }
          }
        }
        choose(s, best, lid);
        load_[best] += w;
        uint32_t q = arc(best).to;
        if (!isAnc(q)) acc_[q] += w;
        addAlong(q, w);
      }
  }

  const Topology& topo_;
  const LidAssignment& lids_;
  const Options& options_;
  const RoutingGraph& g_;
  const Tree& t_;
  const uint32_t n_;
  size_t lftSize_ = 0;
  RoutingTables tables_;
  // The LFT entries while routing, by LID: [LID / 64][(LID % 64) * switches + switch]. Every switch's entry
  // for the LID being routed is in one place, which the route writes; the rows are made at the end.
  std::vector<std::unique_ptr<uint8_t[]>> cols_;
  std::vector<ArGroupBuilder> ar_;
  std::vector<DestLid> dests_;
  std::vector<uint64_t> load_;       // per directed switch-to-switch arc: routes counted so far
  std::vector<uint32_t> mainPaths_;  // per arc: CA LIDs whose main path goes down it

  // Per destination switch.
  uint32_t destSerial_ = 0, dest_ = kInf;
  std::vector<uint32_t> ancStamp_, anc_, dist_, candBegin_, cands_;
  size_t groups_ = 0;               // destination switches
  std::vector<uint32_t> destSets_;  // [switch][destination switch] -> interned AR set
  // Per LID.
  uint32_t lidSerial_ = 0;
  std::vector<uint32_t> mainStamp_, chosen_, next_, offer_, turn_, pred_,
      predTo_;  // next_: where chosen_ leads
  std::vector<uint64_t> acc_, est_, dm_;
  std::vector<uint32_t> dpBegin_, dpFill_, downParents_, path_;
  std::vector<std::vector<uint32_t>> frontier_;
  std::vector<std::pair<uint32_t, uint64_t>> adds_;  // load this LID adds, per arc
  uint64_t target_ = UINT64_MAX;                     // max link load the balancing aims at
  bool detoured_ = false;  // some CA traffic left the main paths and their convergence (step 4b or 5)
};

class FatTreeEngine final : public Engine {
 public:
  std::string_view name() const override { return "ftree"; }
  fabric::Result<RoutingTables> compute(const Topology& topo, const LidAssignment& lids,
                                        const Options& options) const override {
    RoutingGraph g(topo);
    if (g.size() == 0) return fabric::makeError("ftree: the fabric has no switches");
    auto tree = detectTree(topo, g, options);
    if (!tree) return tree.error();
    return FatTreeRouter(topo, lids, options, g, *tree).run();
  }
};

}  // namespace

std::unique_ptr<Engine> makeFatTreeEngine() {
  return std::make_unique<FatTreeEngine>();
}

}  // namespace ibsm::routing
