// Minimal routing for dragonflies ("dfly") on 2 VLs whatever the fabric's size: groups of switches linked
// all-to-all (local links), every pair of groups linked by at least one global link. A path is at most one
// local hop in the source group, one global hop and one local hop in the destination group.
//
// Groups are detected, not configured: a link is local when its ends share more than half as many neighbours
// as the most any linked pair shares (a local link of a group of A switches has A - 2 in common, a global
// link of a dragonfly with one link per group pair none); the groups are what local links join. The fabric is
// accepted only when every group is a clique of at least 3 switches, there are at least 2 groups and every
// pair of them is linked (a link down inside a group or the only one between two groups: declined, dfsp
// routes what is left).
//
// Paths. To a switch of the same group: the direct local link. To another group: among the global links
// between the two groups the ones that make the path shortest (a link from this switch first, then one that
// lands on the destination switch), spread over the destinations of the group pair. Every switch takes its
// own shortest choice, so a switch reached by a local hop always leaves by one of its own global links: were
// another way as short from there, the first switch would have had a shorter one.
//
// Deadlocks (VLs from the SL-to-VL table of each switch (input, output) pair, RoutingTables::slToVl; every
// path is SL 0): a local hop out of a switch that the packet entered from a CA goes on VL 1, every other hop
// on VL 0 (the pairs' reset table). VL 1 holds first local hops only, each followed by a global hop or a CA:
// no dependency within VL 1. On VL 0 a global hop is followed by a local hop or a CA and a local hop (the
// last) by a CA only, so no dependency leads back to a global link: acyclic. So 2 VLs, and only the
// (CA port, local port) pairs of each switch and the arbitration tables of the local ports need a Set.
//
// AR groups (Options::computeAr): the parallel links to the LFT port's neighbour, which enter that switch on
// the same kind of link (same VL on the next hop), nothing else.
//
// Cost: O(switches x degree^2) to detect the groups, O(LIDs x switches x global links per group pair) to fill
// the tables.
#include <algorithm>
#include <numeric>
#include <string>

#include "routing/ar_groups.h"
#include "routing/engine.h"
#include "routing/switch_graph.h"

namespace ibsm::routing {

namespace {

constexpr uint64_t kAllSlOnVl1 = 0x1111111111111111ull;

struct Global {
  uint32_t toGroup;
  SwitchIndex from, to;
  uint8_t port;
  bool operator<(const Global& o) const { return toGroup < o.toGroup; }
};

struct Dragonfly {
  std::vector<uint32_t> group;                // [switch]
  std::vector<std::vector<Global>> globals;   // [group] -> its global links, by destination group
  std::vector<std::vector<uint32_t>> toward;  // [switch] -> arcs, sorted by neighbour
};

uint32_t findRoot(std::vector<uint32_t>& parent, uint32_t x) {
  while (parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}

fabric::Result<Dragonfly> detect(const SwitchGraph& g) {
  const size_t S = g.size();
  const auto& arcs = g.arcs();
  Dragonfly d;
  d.toward.resize(S);
  for (SwitchIndex s = 0; s < S; ++s) {
    auto& t = d.toward[s];
    for (uint32_t a = g.arcBegin(s); a < g.arcEnd(s); ++a) t.push_back(a);
    std::stable_sort(t.begin(), t.end(), [&](uint32_t x, uint32_t y) { return arcs[x].to < arcs[y].to; });
  }
  // Common neighbours of the ends of every arc.
  std::vector<uint8_t> mark(S, 0);
  std::vector<uint32_t> common(arcs.size(), 0);
  uint32_t most = 0;
  for (SwitchIndex s = 0; s < S; ++s) {
    for (uint32_t a : d.toward[s]) mark[arcs[a].to] = 1;
    for (uint32_t a : d.toward[s]) {
      SwitchIndex prev = kNoSwitch;
      for (uint32_t b : d.toward[arcs[a].to]) {
        if (arcs[b].to != prev && arcs[b].to != s) common[a] += mark[arcs[b].to];
        prev = arcs[b].to;
      }
      most = std::max(most, common[a]);
    }
    for (uint32_t a : d.toward[s]) mark[arcs[a].to] = 0;
  }
  if (most == 0) return fabric::makeError("dfly: not a dragonfly (no two linked switches share a neighbour)");
  std::vector<uint32_t> parent(S);
  std::iota(parent.begin(), parent.end(), uint32_t{0});
  for (uint32_t a = 0; a < arcs.size(); ++a)
    if (2 * common[a] > most) {
      uint32_t x = findRoot(parent, arcs[a].from), y = findRoot(parent, arcs[a].to);
      if (x != y) parent[std::max(x, y)] = std::min(x, y);
    }
  // Groups numbered by their lowest switch.
  d.group.assign(S, 0);
  std::vector<uint32_t> number(S, UINT32_MAX), size;
  for (SwitchIndex s = 0; s < S; ++s) {
    uint32_t r = findRoot(parent, s);
    if (number[r] == UINT32_MAX) number[r] = static_cast<uint32_t>(size.size()), size.push_back(0);
    d.group[s] = number[r];
    ++size[number[r]];
  }
  const size_t G = size.size();
  if (G < 2) return fabric::makeError("dfly: not a dragonfly (one group of switches)");
  d.globals.resize(G);
  for (SwitchIndex s = 0; s < S; ++s) {
    if (size[d.group[s]] < 3)
      return fabric::makeError("dfly: not a dragonfly (a group of " + std::to_string(size[d.group[s]]) +
                               (size[d.group[s]] == 1 ? " switch)" : " switches)"));
    size_t local = 0;
    SwitchIndex prev = kNoSwitch;
    for (uint32_t a : d.toward[s]) {
      const auto& arc = arcs[a];
      if (d.group[arc.to] != d.group[s])
        d.globals[d.group[s]].push_back(Global{d.group[arc.to], s, arc.to, arc.port});
      else if (arc.to != prev)
        ++local;
      prev = arc.to;
    }
    if (local + 1 != size[d.group[s]])
      return fabric::makeError("dfly: not a dragonfly (a switch linked to " + std::to_string(local) +
                               " of the " + std::to_string(size[d.group[s]] - 1) + " others of its group)");
  }
  for (size_t x = 0; x < G; ++x) {
    auto& gl = d.globals[x];
    std::stable_sort(gl.begin(), gl.end());
    size_t linked = 0;
    for (size_t i = 0; i < gl.size(); ++i) linked += i == 0 || gl[i].toGroup != gl[i - 1].toGroup;
    if (linked + 1 != G)
      return fabric::makeError("dfly: not a dragonfly (a group linked to " + std::to_string(linked) +
                               " of the " + std::to_string(G - 1) + " other groups)");
  }
  return d;
}

class DflyEngine final : public Engine {
 public:
  std::string_view name() const override { return "dfly"; }

  fabric::Result<RoutingTables> compute(const Topology& topo, const LidAssignment& lids,
                                        const Options& options) const override {
    SwitchGraph g(topo);
    auto detected = detect(g);
    if (!detected) return detected.error();
    const Dragonfly& df = *detected;
    if (options.vlLayers < 2)
      return fabric::makeError("dfly: needs 2 VLs; the fabric offers " + std::to_string(options.vlLayers));
    const size_t S = g.size();
    const auto& arcs = g.arcs();

    RoutingTables t;
    t.engine = "dfly";
    t.slLayers = 2;
    t.lft.resize(topo.size());
    const uint32_t maxLid = lids.maxLid().value;
    for (SwitchIndex s = 0; s < S; ++s) {
      const fabric::NodeIndex n = g.node(s);
      t.lft[n].assign(maxLid + 1u, kNoPort);
      const fabric::Node& node = topo.node(n);
      for (unsigned q = 1; q <= node.numPorts; ++q) {
        const fabric::Port& p = node.ports[q];
        if (!p.connected() || topo.node(p.peerNode).isSwitch()) continue;
        for (uint32_t a = g.arcBegin(s); a < g.arcEnd(s); ++a)
          if (df.group[arcs[a].to] == df.group[s])
            t.slToVl.setPacked(n, node.numPorts, q, arcs[a].port, kAllSlOnVl1);
      }
    }
    std::vector<ArGroupBuilder> ar;
    if (options.computeAr) ar.assign(S, ArGroupBuilder(maxLid + 1u, options.arGroupCap));
    // The port from s to its neighbour u: the parallel links take the destinations in turn.
    std::vector<uint32_t> dealt(arcs.size(), 0);
    auto portTo = [&](SwitchIndex s, SwitchIndex u, fabric::Lid lid) -> uint8_t {
      const auto& tw = df.toward[s];
      auto lo = std::lower_bound(tw.begin(), tw.end(), u,
                                 [&](uint32_t a, SwitchIndex v) { return arcs[a].to < v; });
      auto hi = lo;
      while (hi != tw.end() && arcs[*hi].to == u) ++hi;
      const uint8_t port = arcs[lo[dealt[*lo]++ % (hi - lo)]].port;
      if (!ar.empty() && hi - lo > 1) {
        PortMask m;
        for (auto it = lo; it != hi; ++it) m.set(arcs[*it].port);
        ar[s].set(lid, m, port);
      }
      return port;
    };
    std::vector<uint32_t> spread(df.globals.size(), 0);  // destinations seen per group
    std::vector<const Global*> best;
    for (uint32_t l = 1; l <= maxLid; ++l) {
      const fabric::Lid lid{static_cast<uint16_t>(l)};
      LidOwner o = lids.owner(lid);
      const LidExit leaves = lidExit(topo, g, o.node, o.port);
      const SwitchIndex target = leaves.sw;
      const uint8_t last = leaves.port;
      if (target == kNoSwitch) continue;
      const uint32_t y = df.group[target], turn = spread[y]++;
      for (SwitchIndex s = 0; s < S; ++s) {
        uint8_t port = last;
        const uint32_t x = df.group[s];
        if (s != target && x == y) {
          port = portTo(s, target, lid);
        } else if (s != target) {
          const auto& gl = df.globals[x];
          auto [lo, hi] = std::equal_range(gl.begin(), gl.end(), Global{y, 0, 0, 0});
          unsigned cost = 3;
          best.clear();
          for (auto it = lo; it != hi; ++it) {
            const unsigned c = unsigned{it->from != s} + unsigned{it->to != target};
            if (c < cost) cost = c, best.clear();
            if (c == cost) best.push_back(&*it);
          }
          const Global& via = *best[(turn + s) % best.size()];
          port = via.from == s ? portTo(s, via.to, lid) : portTo(s, via.from, lid);
        }
        t.lft[g.node(s)][l] = port;
      }
    }
    if (!ar.empty()) {
      t.ar.resize(topo.size());
      for (SwitchIndex s = 0; s < S; ++s) t.ar[g.node(s)] = ar[s].build();
    }
    return t;
  }
};

}  // namespace

std::unique_ptr<Engine> makeDflyEngine() {
  return std::make_unique<DflyEngine>();
}

}  // namespace ibsm::routing
