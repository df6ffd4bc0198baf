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
//
// Cost: an all-pairs BFS (S x S hops), then per pass O(LIDs x switch links); the layering walks the paths
// of a layer once, and for each broken dependency the destinations that use it. Memory: one byte per
// (switch, LID) for the routes (transposed into the LFTs at the end) and one per (ingress switch, CA LID)
// for the layers.
#include <algorithm>
#include <numeric>
#include <string>

#include "routing/engine.h"
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

uint64_t mix(uint64_t x) {  // splitmix64 finalizer, for seeded tie-breaking
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

struct Dest {
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
      if (o.node == fabric::kNoNode || o.node >= topo.size()) continue;
      const Node& n = topo.node(o.node);
      Dest d;
      d.lid = lid;
      if (n.isSwitch()) {
        d.sw = g_.index(o.node);
      } else {
        if (o.port.value == 0 || o.port.value > n.numPorts) continue;
        const fabric::Port& p = n.ports[o.port.value];
        if (!p.connected() || !portUsable(topo, o.node, o.port)) continue;
        d.sw = g_.index(p.peerNode);
        if (d.sw == kNoSwitch) continue;
        d.lastPort = p.peerPort.value;
        d.toCa = true;
      }
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
    const Dest& d = dests_[i];
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
    const Dest& d = dests_[i];
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
  std::vector<Dest> dests_;
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
  // One cycle as the channels on it (c0 -> c1 -> ... -> c0), or empty when the graph is acyclic. The search
  // resumes where the previous call stopped: between calls only edges are removed (cycle breaking), and a
  // channel already found to reach no cycle cannot come to reach one by losing edges, so it stays done; the
  // channels of the stack are searched again. Work over all calls: about one pass over the graph plus the
  // stacks of the cycles found, instead of one pass per cycle.
  std::vector<uint32_t> findCycle() {
    const size_t A = succ_.size();
    if (colour_.size() != A) {
      colour_.assign(A, 0);
      root_ = 0;
    }
    struct Frame {
      uint32_t arc;
      uint32_t next;
    };
    std::vector<Frame> stack;
    for (; root_ < A; ++root_) {
      if (colour_[root_]) continue;
      colour_[root_] = 1;
      stack.push_back({root_, 0});
      while (!stack.empty()) {
        Frame& f = stack.back();
        const auto& v = succ_[f.arc];
        while (f.next < v.size() && v[f.next].paths == 0) ++f.next;
        if (f.next == v.size()) {
          colour_[f.arc] = 2;
          stack.pop_back();
          continue;
        }
        uint32_t c = v[f.next++].to;
        if (colour_[c] == 2) continue;
        if (colour_[c] == 1) {
          std::vector<uint32_t> cycle;
          auto it = std::find_if(stack.begin(), stack.end(), [&](const Frame& fr) { return fr.arc == c; });
          for (; it != stack.end(); ++it) cycle.push_back(it->arc);
          for (const Frame& fr : stack) colour_[fr.arc] = 0;
          return cycle;
        }
        colour_[c] = 1;
        stack.push_back({c, 0});
      }
    }
    return {};
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
  uint32_t paths(uint32_t a, uint32_t b) const {
    for (const auto& e : succ_[a])
      if (e.to == b) return e.paths;
    return 0;
  }

 private:
  struct Edge {
    uint32_t to;
    uint32_t paths;
  };
  std::vector<std::vector<Edge>> succ_;
  std::vector<uint32_t> seen_, stack_;
  uint32_t epoch_ = 0;
  std::vector<uint8_t> colour_;  // findCycle: 0 new, 1 on the stack, 2 reaches no cycle
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
  // Calls fn(arc, nextArc) for each dependency of the path from sources[k] to dests_[i].
  auto forEachDep = [&](size_t i, size_t k, auto&& fn) {
    SwitchIndex u = sources[k];
    uint32_t a = next(i, u);
    while (a != kNoArc) {
      uint32_t b = next(i, arcs[a].to);
      if (b == kNoArc) break;
      fn(a, b);
      a = b;
    }
  };
  const unsigned maxLayers = std::max<unsigned>(1, options_.vlLayers);
  layersUsed = 1;
  std::vector<uint8_t> passes(S);
  for (unsigned L = 0; L < maxLayers; ++L) {
    LayerCdg cdg(arcs.size());
    bool any = false;
    for (size_t i = 0; i < dests_.size(); ++i) {
      if (!dests_[i].toCa) continue;
      for (size_t k = 0; k < nSrc; ++k)
        if (layerAt(i, k) == L) {
          any = true;
          forEachDep(i, k, [&](uint32_t a, uint32_t b) { cdg.add(a, b, +1); });
        }
    }
    if (!any) break;
    layersUsed = static_cast<uint8_t>(L + 1);
    while (true) {
      std::vector<uint32_t> cycle = cdg.findCycle();
      if (cycle.empty()) break;
      if (L + 1 == maxLayers) {
        const Node& n = topo_.node(g_.node(arcs[cycle[0]].from));
        return fabric::makeError(
            "dfsp: the balanced shortest paths need more than " + std::to_string(maxLayers) + " VL layer" +
            (maxLayers == 1 ? "" : "s") + " to be deadlock-free (a channel dependency cycle of " +
            std::to_string(cycle.size()) + " links remains, through '" + n.description + "' port " +
            std::to_string(arcs[cycle[0]].port) + "); the fabric offers " + std::to_string(maxLayers));
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
      const SwitchIndex via = arcs[a].from, mid = arcs[a].to;
      for (size_t i = 0; i < dests_.size(); ++i) {
        if (!dests_[i].toCa || next(i, via) != a || next(i, mid) != b) continue;
        // Which sources' paths to this destination pass `via`: walk each until it meets `via` or ends,
        // remembering the answer of every switch on the way (0 unknown, 1 passes, 2 does not).
        std::fill(passes.begin(), passes.end(), 0);
        passes[via] = 1;
        for (size_t k = 0; k < nSrc; ++k) {
          if (layerAt(i, k) != L) continue;
          SwitchIndex u = sources[k];
          std::vector<SwitchIndex> walked;
          while (passes[u] == 0) {
            walked.push_back(u);
            uint32_t x = next(i, u);
            if (x == kNoArc) break;
            u = arcs[x].to;
          }
          uint8_t verdict = passes[u] == 1 ? 1 : 2;
          for (SwitchIndex w : walked) passes[w] = verdict;
          if (verdict != 1) continue;
          forEachDep(i, k, [&](uint32_t x, uint32_t y) { cdg.add(x, y, -1); });
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
    const Dest& d = dests_[i];
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
    auto breaking = router.layer(layerOf, layers);
    if (router.pathCount() <= kFirstFitMaxPaths) {
      auto ff = router.layerFirstFit(firstFit, firstFitLayers);
      if (ff && (!breaking || firstFitLayers <= layers)) return router.tables(firstFit, firstFitLayers);
    }
    if (!breaking) return breaking.error();
    return router.tables(layerOf, layers);
  }
};

}  // namespace

std::unique_ptr<Engine> makeDfspEngine() {
  return std::make_unique<DfspEngine>();
}

}  // namespace ibsm::routing
