// Deadlock-free balanced shortest-path routing for any topology ("dfsp"), in the spirit of DFSSSP (Domke,
// Hoefler, Nagel, "Deadlock-free oblivious routing for arbitrary topologies", IPDPS 2011) and Nue (Domke et
// al., HPDC 2016): balanced shortest paths first, deadlock freedom by virtual-lane layers second.
//
// 1. Paths. Every destination LID gets a tree of minimal-hop paths towards the switch it leaves the fabric
//    at: each switch picks, among its egress links one hop closer, the one whose path to the destination has
//    the least load so far (the sum of the routes already on its links). After each CA destination the links
//    its tree uses are charged with the number of CA sources whose traffic crosses them (DFSSSP's weight
//    update). Then `kRefinePasses` rip-up-and-reroute passes take each destination out, re-route it against
//    everyone else's load and put it back, which evens out what the one-pass greedy order got wrong. Unlike
//    DFSSSP, paths never get longer than min-hop: load only breaks ties between minimal paths.
// 2. Layers. A path is (ingress switch, CA destination LID): every CA cabled to one switch shares it. All
//    paths start in layer 0. While the channel dependency graph (CDG: directed switch-switch links, an edge
//    where a path goes from one to the next) of a layer has a cycle, the cycle's dependency with the fewest
//    paths is broken by moving those paths (all their dependencies) up one layer; a layer without cycles is
//    done and the next one is checked. Needing more layers than Options::vlLayers is an Error naming the
//    count, so the chain falls back to an engine that needs fewer.
// Layer i is SL i, meant to be mapped to VL i on every port (RoutingTables::sl). Routes to switch LIDs carry
// only SMPs on VL15, which are not flow controlled, so they take part in neither the load nor the CDG.
// 3. AR groups (Options::computeAr; the LFTs and SLs are the same without). A packet keeps its SL, hence its
//    layer, on whichever member it takes, so a member must add no dependency to that layer's CDG. Let E_L
//    be the dependencies of the static paths of layer L. Per CA destination, switches in order of
//    increasing distance: switch w with static arc s0 gets member b != s0 (a link one hop closer, so every
//    member is on a shortest path) iff (i) for every static arc a into w from a child u, (a, b) is in E_L for
//    every layer L of the paths through u, and (ii) every layer of the paths through w is in ok(b), where
//    ok(b) = the layers L with (b, c) in E_L and L in ok(c) for every member c of b's head (all layers at the
//    destination's switch; its members were chosen before, being closer). A switch no static path to the
//    destination crosses keeps its LFT port alone, which leaves its upstream neighbours the most choice.
//    Proof that every dependency of a packet on layer L is in E_L: until its first alternative it follows
//    its static path, whose dependencies are in E_L; the first alternative b at w comes from a static state,
//    so (i) covers its first dependency and (ii) puts L in ok(b), which by its definition covers every later
//    hop whatever member it takes. So each layer's CDG is E_L with AR too, acyclic by step 2.
//
// Cost: an all-pairs BFS (S x S hops), then per pass O(LIDs x switch links); the layering walks the paths
// of a layer once, and a broken dependency visits only the trees that have it and, in each, the sources
// below it (an index per dependency and a preorder of every destination's tree, built in parallel); the
// CDG is one flat array of path counts per possible dependency. On a 1,020-switch dragonfly (1,020 hosts,
// 164,000 broken dependencies) the layering went from 9.7 s to 0.1 s. Memory: four bytes per (switch, LID)
// for the routes (transposed into the LFTs at the end), one per (ingress switch, CA LID) for the layers
// and about six per (switch, CA LID) for the tree index.
#include <algorithm>
#include <numeric>
#include <string>

#include "routing/ar_groups.h"
#include "routing/engine.h"
#include "routing/mix.h"
#include "routing/parallel.h"
#include "routing/switch_graph.h"

namespace ibsm::routing {

using fabric::Node;

namespace {

// Measured on a 5-cube, a 9x4 dragonfly and a 4x4x4 torus (2 hosts per switch): max link load 96/96/204
// after the first pass, 68/72/138 after 3 refining passes, 66-68/72/132-134 after 6 to 8.
constexpr int kRefinePasses = 6;

// Paths (ingress switch x CA LID) up to which the first-fit layering is tried too: it costs one CDG search
// per path and layer (about a second at this size).
constexpr size_t kFirstFitMaxPaths = 200000;

struct LidDest {
  Lid lid;
  SwitchIndex sw = kNoSwitch;  // where the LID leaves the switch fabric
  uint8_t lastPort = 0;        // egress port there: 0 for a switch's own LID, else the CA's link
  bool toCa = false;
};

class Router {
 public:
  Router(const Topology& topo, const LidAssignment& lids, const Options& options)
      : topo_(topo), options_(options), g_(topo), hops_(g_, options.threads) {
    const size_t S = g_.size();
    hosts_.assign(S, 0);
    for (NodeIndex i = 0; i < topo.size(); ++i) {
      const Node& n = topo.node(i);
      if (n.isSwitch()) continue;
      for (unsigned q = 1; q <= n.numPorts && q < n.ports.size(); ++q) {
        const fabric::Port& p = n.ports[q];
        if (!p.connected() || !portUsable(topo, i, PortNum{static_cast<uint8_t>(q)})) continue;
        SwitchIndex s = g_.index(p.peerNode);
        if (s != kNoSwitch) ++hosts_[s];
      }
    }
    maxLid_ = lids.maxLid().value;
    for (uint32_t l = 1; l <= maxLid_; ++l) {
      Lid lid{static_cast<uint16_t>(l)};
      LidOwner o = lids.owner(lid);
      const LidExit leaves = lidExit(topo, g_, o.node, o.port);
      if (leaves.sw == kNoSwitch) continue;
      LidDest d;
      d.lid = lid;
      d.sw = leaves.sw;
      d.lastPort = leaves.port;
      d.toCa = leaves.toCa;
      dests_.push_back(d);
    }
    route_.assign(dests_.size() * S, kNoArc);
    load_.assign(g_.arcs().size(), 0);
    cost_.assign(S, 0);
    flow_.assign(S, 0);
  }

  void routeAll() {
    for (size_t i = 0; i < dests_.size(); ++i) {
      chooseTree(i);
      if (dests_[i].toCa) charge(i, +1);
    }
    for (int pass = 0; pass < kRefinePasses; ++pass)
      for (size_t i = 0; i < dests_.size(); ++i) {
        if (!dests_[i].toCa) continue;
        charge(i, -1);
        chooseTree(i);
        charge(i, +1);
      }
  }

  fabric::Result<void> layer(std::vector<uint8_t>& layerOf, uint8_t& layersUsed);
  // LASH-like alternative: each path goes to the lowest layer it keeps acyclic. Often fewer layers, but
  // one graph search per path and layer, so only for fabrics with few paths (see DfspEngine::compute).
  fabric::Result<void> layerFirstFit(std::vector<uint8_t>& layerOf, uint8_t& layersUsed);
  size_t pathCount() const {
    size_t n = 0;
    for (uint32_t h : hosts_) n += h ? 1 : 0;
    return n * dests_.size();
  }
  RoutingTables tables(const std::vector<uint8_t>& layerOf, uint8_t layersUsed) const;
  // Fills tables.ar with the groups of step 3 (see the file comment).
  void arGroups(const std::vector<uint8_t>& layerOf, RoutingTables& tables);

 private:
  // The arc switch s takes towards dests_[i]; kNoArc at the destination's own switch or when unreachable.
  uint32_t& next(size_t i, SwitchIndex s) { return route_[i * g_.size() + s]; }
  uint32_t next(size_t i, SwitchIndex s) const { return route_[i * g_.size() + s]; }

  // Switches in order of increasing hop distance to t (t first), unreachable ones left out.
  const std::vector<SwitchIndex>& byDistance(SwitchIndex t) {
    if (orderTarget_ == t) return order_;
    const uint16_t* d = hops_.row(t);  // links are bidirectional: distance to t = distance from t
    const size_t S = g_.size();
    uint16_t maxD = 0;
    for (size_t s = 0; s < S; ++s)
      if (d[s] != kUnreachable) maxD = std::max(maxD, d[s]);
    std::vector<uint32_t> start(maxD + 2u, 0);
    for (size_t s = 0; s < S; ++s)
      if (d[s] != kUnreachable) ++start[d[s] + 1u];
    for (size_t k = 1; k < start.size(); ++k) start[k] += start[k - 1];
    order_.assign(start.back(), 0);
    for (size_t s = 0; s < S; ++s)
      if (d[s] != kUnreachable) order_[start[d[s]]++] = static_cast<SwitchIndex>(s);
    orderTarget_ = t;
    return order_;
  }

  // Picks every switch's next hop towards dests_[i]: among the links one hop closer, the least loaded path.
  void chooseTree(size_t i) {
    const LidDest& d = dests_[i];
    const auto& order = byDistance(d.sw);
    const uint16_t* dist = hops_.row(d.sw);
    const auto& arcs = g_.arcs();
    cost_[d.sw] = 0;
    next(i, d.sw) = kNoArc;
    for (size_t k = 1; k < order.size(); ++k) {
      SwitchIndex u = order[k];
      uint64_t best = UINT64_MAX, bestTie = 0;
      uint32_t bestArc = kNoArc;
      const uint64_t salt = mix(options_.seed ^ (uint64_t{u} << 20) ^ d.lid.value);
      for (uint32_t a = g_.arcBegin(u); a < g_.arcEnd(u); ++a) {
        SwitchIndex v = arcs[a].to;
        if (dist[v] + 1u != dist[u]) continue;
        uint64_t c = cost_[v] + load_[a];
        uint64_t tie = mix(salt + a);
        if (c < best || (c == best && tie < bestTie)) {
          best = c;
          bestTie = tie;
          bestArc = a;
        }
      }
      cost_[u] = best;
      next(i, u) = bestArc;
    }
  }

  // Adds (sign +1) or removes (-1) the CA traffic towards dests_[i] on the links of its tree: each link
  // carries the CAs of every switch upstream of it.
  void charge(size_t i, int sign) {
    const LidDest& d = dests_[i];
    const auto& order = byDistance(d.sw);
    const auto& arcs = g_.arcs();
    for (SwitchIndex u : order) flow_[u] = hosts_[u];
    for (size_t k = order.size(); k-- > 1;) {
      SwitchIndex u = order[k];
      uint32_t a = next(i, u);
      if (a == kNoArc) continue;
      if (sign > 0)
        load_[a] += flow_[u];
      else
        load_[a] -= flow_[u];
      flow_[arcs[a].to] += flow_[u];
    }
  }

  const Topology& topo_;
  const Options& options_;
  SwitchGraph g_;
  HopMatrix hops_;
  std::vector<uint32_t> hosts_;  // by switch: usable CA ports cabled to it
  uint32_t maxLid_ = 0;
  std::vector<LidDest> dests_;
  std::vector<uint32_t> route_;  // [dest][switch] -> arc
  std::vector<uint64_t> load_;   // by arc: CA routes over it
  std::vector<uint64_t> cost_, flow_;
  std::vector<SwitchIndex> order_;
  SwitchIndex orderTarget_ = kNoSwitch;
};

// The CDG of one layer: per channel (arc), its successors with the number of paths that induce each edge.
class LayerCdg {
 public:
  explicit LayerCdg(size_t arcs) : succ_(arcs) {}
  void add(uint32_t a, uint32_t b, int delta) {
    auto& v = succ_[a];
    for (auto& e : v)
      if (e.to == b) {
        e.paths = static_cast<uint32_t>(static_cast<int64_t>(e.paths) + delta);
        return;
      }
    if (delta > 0) v.push_back({b, static_cast<uint32_t>(delta)});
  }
  // Adds the dependencies of a path (its channels in order) unless that would close a cycle; returns
  // whether it did. The graph must be acyclic before. A new cycle would use a path edge c[j] -> c[j+1], so
  // c[j] would be reachable from c[j+1]; Reach(c[j+1]) contains Reach(c[j+2]), so one search that grows
  // from the path's end backwards answers every j.
  bool tryAddPath(const std::vector<uint32_t>& c) {
    if (c.size() < 2) return true;
    for (size_t j = 0; j + 1 < c.size(); ++j) add(c[j], c[j + 1], +1);
    if (seen_.size() < succ_.size()) seen_.assign(succ_.size(), 0);
    if (++epoch_ == 0) {
      std::fill(seen_.begin(), seen_.end(), 0);
      epoch_ = 1;
    }
    bool cycle = false;
    for (size_t j = c.size() - 1; j-- > 0 && !cycle;) {
      // Grow Reach by c[j+1]; then c[j] must not be in it.
      if (seen_[c[j + 1]] != epoch_) {
        seen_[c[j + 1]] = epoch_;
        stack_.assign(1, c[j + 1]);
        while (!stack_.empty()) {
          uint32_t x = stack_.back();
          stack_.pop_back();
          for (const Edge& e : succ_[x])
            if (e.paths && seen_[e.to] != epoch_) {
              seen_[e.to] = epoch_;
              stack_.push_back(e.to);
            }
        }
      }
      cycle = seen_[c[j]] == epoch_;
    }
    if (cycle)
      for (size_t j = 0; j + 1 < c.size(); ++j) add(c[j], c[j + 1], -1);
    return !cycle;
  }

 private:
  struct Edge {
    uint32_t to;
    uint32_t paths;
  };
  std::vector<std::vector<Edge>> succ_;
  std::vector<uint32_t> seen_, stack_;
  uint32_t epoch_ = 0;
};

// Dense ids of the dependencies minimal paths can have: arc a (into switch v) can only be followed by an arc
// leaving v, so the dependency (a, b) has the id base(a) + (b - arcBegin(v)).
class DependencyIds {
 public:
  explicit DependencyIds(const SwitchGraph& g) : g_(g), base_(g.arcs().size() + 1, 0) {
    const auto& arcs = g.arcs();
    for (size_t a = 0; a < arcs.size(); ++a)
      base_[a + 1] = base_[a] + (g.arcEnd(arcs[a].to) - g.arcBegin(arcs[a].to));
  }
  uint32_t deps() const { return base_.back(); }
  uint32_t id(uint32_t a, uint32_t b) const { return base_[a] + (b - g_.arcBegin(g_.arcs()[a].to)); }

 protected:
  const SwitchGraph& g_;
  std::vector<uint32_t> base_;
};

// The CDG of one layer for the cycle breaking: one flat array of path counts by dependency id (no per-edge
// search).
class FlatCdg : public DependencyIds {
 public:
  explicit FlatCdg(const SwitchGraph& g) : DependencyIds(g) { count_.assign(deps(), 0); }
  uint32_t& paths(uint32_t dep) { return count_[dep]; }
  uint32_t paths(uint32_t a, uint32_t b) const { return count_[id(a, b)]; }
  // Empties the graph for the next layer.
  void clear() {
    std::fill(count_.begin(), count_.end(), 0);
    colour_.assign(g_.arcs().size(), 0);
    root_ = 0;
  }
  // One cycle as the channels on it (c0 -> c1 -> ... -> c0), or empty when the graph is acyclic. The search
  // resumes where the previous call stopped: between calls only edges are removed (cycle breaking), and a
  // channel already found to reach no cycle cannot come to reach one by losing edges, so it stays done; the
  // channels of the stack are searched again. Work over all calls: about one pass over the graph plus the
  // stacks of the cycles found, instead of one pass per cycle.
  const std::vector<uint32_t>& findCycle() {
    const auto& arcs = g_.arcs();
    const uint32_t A = static_cast<uint32_t>(arcs.size());
    cycle_.clear();
    for (; root_ < A; ++root_) {
      if (colour_[root_]) continue;
      colour_[root_] = 1;
      stack_.assign(1, {root_, 0});
      while (!stack_.empty()) {
        Frame& f = stack_.back();
        const SwitchIndex v = arcs[f.arc].to;
        const uint32_t deg = g_.arcEnd(v) - g_.arcBegin(v), base = base_[f.arc];
        while (f.next < deg && count_[base + f.next] == 0) ++f.next;
        if (f.next == deg) {
          colour_[f.arc] = 2;
          stack_.pop_back();
          continue;
        }
        uint32_t c = g_.arcBegin(v) + f.next++;
        if (colour_[c] == 2) continue;
        if (colour_[c] == 1) {
          auto it = std::find_if(stack_.begin(), stack_.end(), [&](const Frame& fr) { return fr.arc == c; });
          for (; it != stack_.end(); ++it) cycle_.push_back(it->arc);
          for (const Frame& fr : stack_) colour_[fr.arc] = 0;
          return cycle_;
        }
        colour_[c] = 1;
        stack_.push_back({c, 0});
      }
    }
    return cycle_;
  }

 private:
  struct Frame {
    uint32_t arc;
    uint32_t next;  // index of the next successor among the arcs leaving the arc's head
  };
  std::vector<uint32_t> count_, cycle_;
  std::vector<Frame> stack_;
  std::vector<uint8_t> colour_;  // 0 new, 1 on the stack, 2 reaches no cycle
  uint32_t root_ = 0;
};

fabric::Result<void> Router::layer(std::vector<uint8_t>& layerOf, uint8_t& layersUsed) {
  const size_t S = g_.size();
  const auto& arcs = g_.arcs();
  // Paths: (ingress switch with CAs, CA destination) with a route between different switches.
  std::vector<uint32_t> srcIndex(S, UINT32_MAX);
  std::vector<SwitchIndex> sources;
  for (SwitchIndex s = 0; s < S; ++s)
    if (hosts_[s]) {
      srcIndex[s] = static_cast<uint32_t>(sources.size());
      sources.push_back(s);
    }
  const size_t nSrc = sources.size();
  layerOf.assign(dests_.size() * nSrc, 0);
  auto layerAt = [&](size_t i, size_t k) -> uint8_t& { return layerOf[i * nSrc + k]; };
  std::vector<uint32_t> caDest;  // the CA destinations (indices into dests_)
  for (size_t i = 0; i < dests_.size(); ++i)
    if (dests_[i].toCa) caDest.push_back(static_cast<uint32_t>(i));
  const size_t C = caDest.size();

  // Per CA destination c, the sources of its tree in preorder (srcOrd[c * nSrc ..]) and per switch u the
  // range of them in u's subtree, [subLo, subLo + subCount): exactly the sources whose path passes u. Each
  // destination owns its slices, so the trees are walked in parallel with the same result.
  // Every switch has a unicast LID, so S (and the counts below) stay under 49,152: 16 bits suffice.
  if (S > UINT16_MAX) return fabric::makeError("dfsp: more switches than unicast LIDs");
  std::vector<uint16_t> srcOrd(C * nSrc, 0), subLo(C * S, 0), subCount(C * S, 0);
  {
    const unsigned workers = workerCount(C, options_.threads);
    std::vector<std::vector<SwitchIndex>> orders(workers);
    std::vector<std::vector<uint32_t>> starts(workers);
    std::vector<std::vector<uint32_t>> nextFree(workers, std::vector<uint32_t>(S));
    parallelFor(C, options_.threads, [&](unsigned w, size_t c) {
      const size_t i = caDest[c];
      const SwitchIndex root = dests_[i].sw;
      const uint16_t* dist = hops_.row(root);
      auto& order = orders[w];
      uint16_t maxD = 0;
      for (size_t s = 0; s < S; ++s)
        if (dist[s] != kUnreachable) maxD = std::max(maxD, dist[s]);
      // Increasing distance (a counting sort): every parent before its children.
      auto& start = starts[w];
      start.assign(maxD + 2u, 0);
      for (size_t s = 0; s < S; ++s)
        if (dist[s] != kUnreachable) ++start[dist[s] + 1u];
      for (size_t d = 1; d < start.size(); ++d) start[d] += start[d - 1];
      order.resize(start.back());
      for (size_t s = 0; s < S; ++s)
        if (dist[s] != kUnreachable) order[start[dist[s]]++] = static_cast<SwitchIndex>(s);
      uint16_t* lo = &subLo[c * S];
      uint16_t* cnt = &subCount[c * S];
      for (SwitchIndex u : order) cnt[u] = hosts_[u] ? 1 : 0;
      for (size_t k = order.size(); k-- > 1;) {
        uint32_t a = next(i, order[k]);
        if (a != kNoArc) cnt[arcs[a].to] = static_cast<uint16_t>(cnt[arcs[a].to] + cnt[order[k]]);
      }
      auto& free = nextFree[w];
      for (SwitchIndex u : order) {
        uint32_t a = u == root ? kNoArc : next(i, u);
        if (u != root && a == kNoArc) {
          cnt[u] = 0;
          continue;
        }
        lo[u] = static_cast<uint16_t>(u == root ? 0 : free[arcs[a].to]);
        if (u != root) free[arcs[a].to] += cnt[u];
        free[u] = lo[u];
        if (hosts_[u]) srcOrd[c * nSrc + free[u]++] = static_cast<uint16_t>(srcIndex[u]);
      }
    });
  }

  FlatCdg cdg(g_);
  // Per dependency, the CA destinations whose tree has it (CSR, ascending).
  std::vector<uint32_t> depStart(cdg.deps() + 1, 0), depDests;
  auto forEachTreeDep = [&](size_t i, auto&& fn) {
    for (SwitchIndex u = 0; u < S; ++u) {
      uint32_t a = next(i, u);
      if (a == kNoArc) continue;
      uint32_t b = next(i, arcs[a].to);
      if (b != kNoArc) fn(cdg.id(a, b));
    }
  };
  for (size_t c = 0; c < C; ++c) forEachTreeDep(caDest[c], [&](uint32_t e) { ++depStart[e + 1]; });
  for (size_t e = 0; e < cdg.deps(); ++e) depStart[e + 1] += depStart[e];
  depDests.resize(depStart.back());
  {
    std::vector<uint32_t> fill(depStart.begin(), depStart.end() - 1);
    for (size_t c = 0; c < C; ++c)
      forEachTreeDep(caDest[c], [&](uint32_t e) { depDests[fill[e]++] = static_cast<uint32_t>(c); });
  }

  // Adds delta to every dependency of the path from sources[k] to dests_[i].
  auto addPath = [&](size_t i, size_t k, int delta) {
    uint32_t a = next(i, sources[k]);
    while (a != kNoArc) {
      uint32_t b = next(i, arcs[a].to);
      if (b == kNoArc) break;
      uint32_t& n = cdg.paths(cdg.id(a, b));
      n = static_cast<uint32_t>(static_cast<int64_t>(n) + delta);
      a = b;
    }
  };
  const unsigned maxLayers = std::max<unsigned>(1, options_.vlLayers);
  layersUsed = 1;
  for (unsigned L = 0; L < maxLayers; ++L) {
    cdg.clear();
    bool any = false;
    for (size_t c = 0; c < C; ++c)
      for (size_t k = 0; k < nSrc; ++k)
        if (layerAt(caDest[c], k) == L) {
          any = true;
          addPath(caDest[c], k, +1);
        }
    if (!any) break;
    layersUsed = static_cast<uint8_t>(L + 1);
    while (true) {
      const std::vector<uint32_t>& cycle = cdg.findCycle();
      if (cycle.empty()) break;
      if (L + 1 == maxLayers) {
        const Node& n = topo_.node(g_.node(arcs[cycle[0]].from));
        std::string why = "dfsp: the balanced shortest paths need more than ";
        why += std::to_string(maxLayers);
        why += maxLayers == 1 ? " VL layer" : " VL layers";
        why += " to be deadlock-free (a channel dependency cycle of ";
        why += std::to_string(cycle.size());
        why += " links remains, through '";
        why += n.description;
        why += "' port ";
        why += std::to_string(arcs[cycle[0]].port);
        why += "); the fabric offers ";
        why += std::to_string(maxLayers);
        return fabric::makeError(why);
      }
      // The weakest dependency of the cycle: the fewest paths to move.
      uint32_t a = cycle.back(), b = cycle.front(), fewest = cdg.paths(a, b);
      for (size_t c = 0; c + 1 < cycle.size(); ++c) {
        uint32_t n = cdg.paths(cycle[c], cycle[c + 1]);
        if (n < fewest) {
          fewest = n;
          a = cycle[c];
          b = cycle[c + 1];
        }
      }
      // Its paths: in each tree that has it, the sources in the subtree of the switch it starts at.
      const SwitchIndex via = arcs[a].from;
      const uint32_t e = cdg.id(a, b);
      for (uint32_t x = depStart[e]; x < depStart[e + 1]; ++x) {
        const size_t c = depDests[x], i = caDest[c];
        const uint32_t lo = subLo[c * S + via], hi = lo + subCount[c * S + via];
        for (uint32_t j = lo; j < hi; ++j) {
          const uint32_t k = srcOrd[c * nSrc + j];
          if (layerAt(i, k) != L) continue;
          addPath(i, k, -1);
          ++layerAt(i, k);
        }
      }
    }
  }
  return {};
}

fabric::Result<void> Router::layerFirstFit(std::vector<uint8_t>& layerOf, uint8_t& layersUsed) {
  const size_t S = g_.size();
  const auto& arcs = g_.arcs();
  std::vector<SwitchIndex> sources;
  for (SwitchIndex s = 0; s < S; ++s)
    if (hosts_[s]) sources.push_back(s);
  const size_t nSrc = sources.size();
  const unsigned maxLayers = std::max<unsigned>(1, options_.vlLayers);
  layerOf.assign(dests_.size() * nSrc, 0);
  std::vector<LayerCdg> layers;
  layersUsed = 1;
  std::vector<uint32_t> chans;
  for (size_t i = 0; i < dests_.size(); ++i) {
    if (!dests_[i].toCa) continue;
    for (size_t k = 0; k < nSrc; ++k) {
      chans.clear();
      for (uint32_t a = next(i, sources[k]); a != kNoArc; a = next(i, arcs[a].to)) chans.push_back(a);
      if (chans.size() < 2) continue;
      unsigned L = 0;
      for (; L < maxLayers; ++L) {
        if (L == layers.size()) layers.emplace_back(arcs.size());
        if (layers[L].tryAddPath(chans)) break;
      }
      if (L == maxLayers)
        return fabric::makeError(
            "dfsp: the balanced shortest paths need more than " + std::to_string(maxLayers) + " VL layer" +
            (maxLayers == 1 ? "" : "s") + " to be deadlock-free (the path from '" +
            topo_.node(g_.node(sources[k])).description + "' to LID " + std::to_string(dests_[i].lid.value) +
            " fits none); the fabric offers " + std::to_string(maxLayers));
      layerOf[i * nSrc + k] = static_cast<uint8_t>(L);
      layersUsed = std::max<uint8_t>(layersUsed, static_cast<uint8_t>(L + 1));
    }
  }
  return {};
}

RoutingTables Router::tables(const std::vector<uint8_t>& layerOf, uint8_t layersUsed) const {
  const size_t S = g_.size();
  RoutingTables t;
  t.engine = "dfsp";
  t.lft.resize(topo_.size());
  for (SwitchIndex s = 0; s < S; ++s) t.lft[g_.node(s)].assign(maxLid_ + 1u, kNoPort);
  for (size_t i = 0; i < dests_.size(); ++i) {
    const LidDest& d = dests_[i];
    t.lft[g_.node(d.sw)][d.lid.value] = d.lastPort;
    for (SwitchIndex s = 0; s < S; ++s) {
      uint32_t a = next(i, s);
      if (a != kNoArc) t.lft[g_.node(s)][d.lid.value] = g_.arcs()[a].port;
    }
  }
  t.slLayers = layersUsed;
  if (layersUsed > 1) {
    std::vector<SwitchIndex> sources;
    for (SwitchIndex s = 0; s < S; ++s)
      if (hosts_[s]) sources.push_back(s);
    t.sl.resize(topo_.size());
    for (SwitchIndex s : sources) t.sl[g_.node(s)].assign(maxLid_ + 1u, 0);
    for (size_t i = 0; i < dests_.size(); ++i)
      for (size_t k = 0; k < sources.size(); ++k)
        t.sl[g_.node(sources[k])][dests_[i].lid.value] = layerOf[i * sources.size() + k];
  }
  return t;
}

void Router::arGroups(const std::vector<uint8_t>& layerOf, RoutingTables& tables) {
  const size_t S = g_.size();
  const auto& arcs = g_.arcs();
  std::vector<uint32_t> srcIndex(S, UINT32_MAX);
  uint32_t nSrc = 0;
  for (SwitchIndex s = 0; s < S; ++s)
    if (hosts_[s]) srcIndex[s] = nSrc++;
  // through[u]: the layers of the static paths towards dests_[i] that cross u (from u or its subtree), as
  // bits; returns the switches by distance to the destination.
  std::vector<uint16_t> through(S, 0);
  auto layersThrough = [&](size_t i) -> const std::vector<SwitchIndex>& {
    const auto& order = byDistance(dests_[i].sw);
    for (SwitchIndex u : order)
      through[u] = hosts_[u] ? static_cast<uint16_t>(1u << layerOf[i * nSrc + srcIndex[u]]) : 0;
    for (size_t k = order.size(); k-- > 1;)
      if (uint32_t a = next(i, order[k]); a != kNoArc) through[arcs[a].to] |= through[order[k]];
    return order;
  };
  // E_L for every L: the layers each dependency has static paths on.
  DependencyIds ids(g_);
  std::vector<uint16_t> depLayers(ids.deps(), 0);
  for (size_t i = 0; i < dests_.size(); ++i) {
    if (!dests_[i].toCa) continue;
    for (SwitchIndex u : layersThrough(i))
      if (uint32_t a = next(i, u); a != kNoArc)
        if (uint32_t b = next(i, arcs[a].to); b != kNoArc) depLayers[ids.id(a, b)] |= through[u];
  }

  std::vector<ArGroupBuilder> builders(S, ArGroupBuilder(maxLid_ + 1u, options_.arGroupCap));
  std::vector<uint32_t> members, memberBegin(S, 0), memberEnd(S, 0);  // members[memberBegin[w] ..)
  std::vector<uint16_t> ok(arcs.size(), 0);
  std::vector<uint32_t> okEpoch(arcs.size(), 0);
  uint32_t epoch = 0;
  SwitchIndex target = kNoSwitch;
  // ok(b) of the file comment, memoized per destination. The recursion goes one hop closer each time.
  auto okLayers = [&](auto&& self, uint32_t b) -> uint16_t {
    const SwitchIndex y = arcs[b].to;
    if (y == target) return UINT16_MAX;
    if (okEpoch[b] == epoch) return ok[b];
    uint16_t m = UINT16_MAX;
    for (uint32_t j = memberBegin[y]; j < memberEnd[y] && m; ++j) {
      m &= depLayers[ids.id(b, members[j])];
      if (m) m &= self(self, members[j]);
    }
    okEpoch[b] = epoch;
    return ok[b] = m;
  };
  for (size_t i = 0; i < dests_.size(); ++i) {
    const LidDest& d = dests_[i];
    if (!d.toCa) continue;  // switch LIDs: management traffic on VL15, outside the CDG (see above)
    const auto& order = layersThrough(i);
    const uint16_t* dist = hops_.row(d.sw);
    target = d.sw;
    ++epoch;
    members.clear();
    for (size_t k = 1; k < order.size(); ++k) {
      const SwitchIndex w = order[k];
      const uint32_t s0 = next(i, w);
      memberBegin[w] = static_cast<uint32_t>(members.size());
      members.push_back(s0);
      PortMask ports;
      for (uint32_t b = g_.arcBegin(w); b < g_.arcEnd(w) && through[w]; ++b) {
        if (b == s0 || dist[arcs[b].to] + 1u != dist[w]) continue;
        if (through[w] & ~okLayers(okLayers, b)) continue;  // (ii)
        bool legal = true;                                  // (i): the children's static arcs into w
        for (uint32_t r = g_.arcBegin(w); r < g_.arcEnd(w) && legal; ++r) {
          const SwitchIndex u = arcs[r].to;
          const uint32_t a = dist[u] == dist[w] + 1u ? next(i, u) : kNoArc;
          legal = a == kNoArc || arcs[a].to != w || !(through[u] & ~depLayers[ids.id(a, b)]);
        }
        if (!legal) continue;
        members.push_back(b);
        ports.set(arcs[b].port);
      }
      memberEnd[w] = static_cast<uint32_t>(members.size());
      if (ports.any()) builders[w].set(d.lid, ports, arcs[s0].port);
    }
  }
  tables.ar.resize(topo_.size());
  for (SwitchIndex s = 0; s < S; ++s) tables.ar[g_.node(s)] = builders[s].build();
}

class DfspEngine final : public Engine {
 public:
  std::string_view name() const override { return "dfsp"; }

  fabric::Result<RoutingTables> compute(const Topology& topo, const LidAssignment& lids,
                                        const Options& options) const override {
    if (options.vlLayers > 15) return fabric::makeError("dfsp: at most 15 data VLs exist");
    Router router(topo, lids, options);
    router.routeAll();
    // Both layerings when the paths are few enough for first-fit's searches; the one with fewer layers wins
    // (first-fit on a tie: it packs the low layers, cycle breaking spreads).
    std::vector<uint8_t> layerOf, firstFit;
    uint8_t layers = 1, firstFitLayers = 1;
    auto done = [&](const std::vector<uint8_t>& chosen, uint8_t used) {
      RoutingTables t = router.tables(chosen, used);
      if (options.computeAr) router.arGroups(chosen, t);
      return t;
    };
    auto breaking = router.layer(layerOf, layers);
    if (router.pathCount() <= kFirstFitMaxPaths) {
      auto ff = router.layerFirstFit(firstFit, firstFitLayers);
      if (ff && (!breaking || firstFitLayers <= layers)) return done(firstFit, firstFitLayers);
    }
    if (!breaking) return breaking.error();
    return done(layerOf, layers);
  }
};

}  // namespace

std::unique_ptr<Engine> makeDfspEngine() {
  return std::make_unique<DfspEngine>();
}

}  // namespace ibsm::routing
