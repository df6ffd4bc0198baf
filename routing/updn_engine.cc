// Up/down routing (after OpenSM's updn): switches are ranked by BFS hop count from the root switches; with
// ties broken by node GUID this orders all switches, and a hop towards a smaller (rank, GUID) key is "up".
// Every route is a run of up hops followed by a run of down hops and never turns from down to up, so the
// channel dependency graph is acyclic and one VL is deadlock-free.
//
// Destination-based tables cannot see how a packet arrived, so the routes must be consistent: a switch that
// has a down-only path to the destination switch always uses its shortest down-only path (a packet that
// arrived going down must keep going down), and any other switch goes up to a neighbour on its shortest
// remaining legal path. In trees this is the shortest legal path; in arbitrary graphs it can be longer than
// the shortest up*/down* path of that source, which is the price of consistency (OpenSM has the same
// limitation with its per-switch direction marks). With a single root every pair of a connected fabric is
// reachable.
//
// Balancing is min-hop's: per switch, each LID goes out of the least-loaded equal-cost legal port. The load
// of a port counts routes, i.e. the source CA ports whose route to the LID crosses it (switches are visited
// farthest first, so each knows the traffic it forwards), not just LIDs: counting LIDs would make the
// switches of one level advance in lockstep and use only a diagonal of the core (all LIDs of leaf port j
// through core j of spine j). Switch LIDs follow but do not count. The LIDs of one endport's LMC range prefer
// ports none of its earlier LIDs use at that switch, so they take distinct paths.
//
// Roots: options.roots (node GUIDs of switches); otherwise, per connected component, the switches farthest
// from the switches that have CAs (the top of a fat tree); if every switch has CAs (meshes, tori) a single
// central switch (least eccentricity, see centralSwitch). A component with none of the given roots is
// auto-detected the same way. If auto-detected roots leave a switch with CAs without a legal path to a CA LID
// (possible only when they are not the top of a tree), the fabric is routed from central roots instead. With
// several roots, one root cannot reach another (down then up): roots given by the operator that carry CAs
// leave those CA pairs unreachable, as in OpenSM without connect_roots.
#include <algorithm>
#include <numeric>

#include "routing/ar_groups.h"
#include "routing/engine.h"
#include "routing/routing_graph.h"

namespace ibsm::routing {
namespace {

constexpr uint64_t kLoadCap = (uint64_t{1} << 43) - 1;

// The central switch of a component with no better root candidate: least eccentricity, smallest GUID on ties.
// Small components try every switch; large ones the midpoints of a double-sweep BFS diameter (the centre of a
// mesh or torus lies among them), at most kMaxCandidates of them.
uint32_t centralSwitch(const RoutingGraph& g, const std::vector<uint32_t>& members) {
  constexpr size_t kExhaustive = 256, kMaxCandidates = 32;
  auto byGuid = [&](uint32_t x, uint32_t y) { return g.guid(x) < g.guid(y); };
  auto eccentricity = [&](uint32_t from, std::vector<uint32_t>& dist, uint32_t& farthest) {
    uint32_t src[1] = {from};
    dist = g.distances(src);
    farthest = from;
    for (uint32_t s : members)
      if (dist[s] > dist[farthest] || (dist[s] == dist[farthest] && byGuid(s, farthest))) farthest = s;
    return dist[farthest];
  };
  std::vector<uint32_t> candidates, da, db;
  if (members.size() <= kExhaustive) {
    candidates = members;
  } else {
    uint32_t a, b, ignored;
    eccentricity(*std::min_element(members.begin(), members.end(), byGuid), da, a);
    const uint32_t diameter = eccentricity(a, da, b);
    eccentricity(b, db, ignored);
    for (uint32_t s : members)
      if (da[s] + db[s] == diameter && (da[s] == diameter / 2 || da[s] == (diameter + 1) / 2))
        candidates.push_back(s);
    std::sort(candidates.begin(), candidates.end(), byGuid);
    if (candidates.size() > kMaxCandidates) candidates.resize(kMaxCandidates);
  }
  uint32_t best = kInf, bestEcc = kInf, ignored;
  for (uint32_t s : candidates) {
    uint32_t e = eccentricity(s, da, ignored);
    if (e < bestEcc || (e == bestEcc && byGuid(s, best))) {
      best = s;
      bestEcc = e;
    }
  }
  return best;
}

// centralOnly: one central switch per component (the fallback when the tree-top roots leave CA pairs apart).
fabric::Result<std::vector<uint32_t>> chooseRoots(const Topology& topo, const RoutingGraph& g,
                                                  const Options& options, bool centralOnly = false) {
  std::vector<char> isRoot(g.size(), 0);
  for (Guid guid : options.roots) {
    auto node = topo.findNode(guid);
    if (!node || g.indexOf(*node) == kInf)
      return fabric::makeError("updn: root " + fabric::toString(guid) + " is not a switch of this fabric");
    isRoot[g.indexOf(*node)] = 1;
  }
  std::vector<uint32_t> comp = g.components();
  const uint32_t comps = g.size() == 0 ? 0 : *std::max_element(comp.begin(), comp.end()) + 1;
  std::vector<std::vector<uint32_t>> members(comps);
  for (uint32_t s = 0; s < g.size(); ++s) members[comp[s]].push_back(s);
  std::vector<uint32_t> leaves;
  for (uint32_t s = 0; s < g.size(); ++s)
    if (g.hosts(s) > 0) leaves.push_back(s);
  std::vector<uint32_t> fromLeaves = g.distances(leaves);
  for (const auto& m : members) {
    if (std::any_of(m.begin(), m.end(), [&](uint32_t s) { return isRoot[s]; })) continue;
    uint32_t top = 0;
    for (uint32_t s : m)
      if (fromLeaves[s] != kInf) top = std::max(top, fromLeaves[s]);
    if (top > 0 && !centralOnly) {
      for (uint32_t s : m)
        if (fromLeaves[s] == top) isRoot[s] = 1;
    } else {
      isRoot[centralSwitch(g, m)] = 1;
    }
  }
  std::vector<uint32_t> roots;
  for (uint32_t s = 0; s < g.size(); ++s)
    if (isRoot[s]) roots.push_back(s);
  return roots;
}

// Routes with the given roots. caGap: some switch with CAs has no legal path to a CA LID in its component.
RoutingTables route(const Topology& topo, const LidAssignment& lids, const Options& options,
                    const RoutingGraph& g, const std::vector<uint32_t>& roots, bool& caGap) {
  const uint32_t n = static_cast<uint32_t>(g.size());
  const std::vector<uint32_t> comp = g.components();
  caGap = false;
  // Total order of switches: (rank, GUID); up = towards a smaller key.
  const std::vector<uint32_t> rank = g.distances(roots);
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
    return rank[x] != rank[y] ? rank[x] < rank[y] : g.guid(x) < g.guid(y);
  });
  std::vector<uint32_t> key(n);
  for (uint32_t i = 0; i < n; ++i) key[order[i]] = i;

  const size_t lftSize = static_cast<size_t>(lids.maxLid().value) + 1;
  RoutingTables tables;
  tables.engine = "updn";
  tables.lft.resize(topo.size());
  tables.upKey.assign(topo.size(), 0);
  for (uint32_t s = 0; s < n; ++s) tables.upKey[g.node(s)] = key[s];
  std::vector<LftRow*> lft(n);
  for (uint32_t s = 0; s < n; ++s) {
    tables.lft[g.node(s)].assign(lftSize, kNoPort);
    lft[s] = &tables.lft[g.node(s)];
  }
  std::vector<ArGroupBuilder> ar;
  if (options.computeAr) ar.assign(n, ArGroupBuilder(lftSize, options.arGroupCap));

  // Destination LIDs grouped by the switch they leave from, switches in GUID order (stable across sweeps).
  std::vector<DestLid> dests = collectDestLids(topo, lids, g);
  std::stable_sort(dests.begin(), dests.end(),
                   [&](const DestLid& x, const DestLid& y) { return g.guid(x.sw) < g.guid(y.sw); });

  // Per directed switch-to-switch arc: routes (source CA port, CA LID) so far, LIDs so far, and the endport
  // whose LID used it last (so the LIDs of one LMC range prefer distinct ports).
  std::vector<uint64_t> load(g.arcCount(), 0);
  std::vector<uint32_t> lidCount(g.arcCount(), 0), usedBy(g.arcCount(), kInf);
  std::vector<uint32_t> distDown(n), dist(n), candBegin(n + 1), queue, byDist, acc(n);
  std::vector<uint32_t> cands;  // arc indices
  // AR: per switch and destination switch group, the interned set (all LIDs of a group share it).
  std::vector<uint32_t> groupOf(dests.size());
  size_t groups = 0;
  for (size_t i = 0; i < dests.size(); ++i) {
    if (i > 0 && dests[i].sw != dests[i - 1].sw) ++groups;
    groupOf[i] = static_cast<uint32_t>(groups);
  }
  groups = dests.empty() ? 0 : groups + 1;
  std::vector<uint32_t> destSets(options.computeAr ? static_cast<size_t>(n) * groups : 0,
                                 ArGroupBuilder::kNoSet);

  uint32_t endportSerial = 0;
  NodeIndex lastOwner = fabric::kNoNode;
  PortNum lastOwnerPort;
  for (size_t first = 0; first < dests.size();) {
    const uint32_t d = dests[first].sw;
    size_t last = first;
    while (last < dests.size() && dests[last].sw == d) ++last;

    // Shortest down-only distance to d: BFS from d backwards over down hops (s -> x is down when key(x) >
    // key(s)).
    std::fill(distDown.begin(), distDown.end(), kInf);
    distDown[d] = 0;
    queue.assign(1, d);
    for (size_t i = 0; i < queue.size(); ++i) {
      uint32_t x = queue[i];
      for (const auto& a : g.arcs(x))
        if (key[a.to] < key[x] && distDown[a.to] == kInf) {
          distDown[a.to] = distDown[x] + 1;
          queue.push_back(a.to);
        }
    }
    // Switches without a down path go up: in key order, so every up neighbour is final before it is used.
    uint32_t maxDist = 0;
    for (uint32_t s : order) {
      dist[s] = distDown[s];
      if (dist[s] == kInf)
        for (const auto& a : g.arcs(s))
          if (key[a.to] < key[s] && dist[a.to] != kInf) dist[s] = std::min(dist[s], dist[a.to] + 1);
      if (dist[s] != kInf) maxDist = std::max(maxDist, dist[s]);
    }
    // Equal-cost legal egress arcs of every switch towards d.
    cands.clear();
    for (uint32_t s = 0; s < n; ++s) {
      candBegin[s] = static_cast<uint32_t>(cands.size());
      if (s == d || dist[s] == kInf) continue;
      const bool down = distDown[s] != kInf;
      for (uint32_t a = g.firstArc(s); a < g.firstArc(s + 1); ++a) {
        const uint32_t x = g.arc(a).to;
        if (down ? (key[x] > key[s] && distDown[x] == distDown[s] - 1)
                 : (key[x] < key[s] && dist[x] == dist[s] - 1))
          cands.push_back(a);
      }
    }
    candBegin[n] = static_cast<uint32_t>(cands.size());
    if (!caGap && std::any_of(dests.begin() + first, dests.begin() + last,
                              [](const DestLid& t) { return !t.isSwitch; }))
      for (uint32_t s = 0; s < n; ++s)
        if (g.hosts(s) > 0 && comp[s] == comp[d] && dist[s] == kInf) caGap = true;
    if (options.computeAr) {
      for (uint32_t s = 0; s < n; ++s) {
        PortMask mask;
        for (uint32_t c = candBegin[s]; c < candBegin[s + 1]; ++c) mask.set(g.arc(cands[c]).port);
        destSets[static_cast<size_t>(s) * groups + groupOf[first]] = ar[s].intern(mask);
      }
    }
    // Farthest switches first, so a switch's traffic (its own CAs plus what the switches behind it send
    // through it) is known when it picks its port.
    byDist.clear();
    for (uint32_t h = maxDist; h > 0; --h)
      for (uint32_t s = 0; s < n; ++s)
        if (dist[s] == h) byDist.push_back(s);

    for (size_t i = first; i < last; ++i) {
      const DestLid& t = dests[i];
      if (t.owner != lastOwner || t.ownerPort != lastOwnerPort || t.offset == 0) {
        ++endportSerial;
        lastOwner = t.owner;
        lastOwnerPort = t.ownerPort;
      }
      (*lft[d])[t.lid.value] = t.port;
      for (uint32_t s : byDist) acc[s] = 0;
      for (uint32_t s : byDist) {
        // Least-loaded equal-cost port; one the endport's earlier LIDs do not use first; then fewest LIDs;
        // then the lowest port (arcs are in port order). Packed into one key: loads stay far below 2^43.
        auto rank = [&](uint32_t a) {
          return (usedBy[a] == endportSerial ? uint64_t{1} << 63 : 0) |
                 std::min<uint64_t>(load[a], kLoadCap) << 20 |
                 std::min<uint32_t>(lidCount[a], (1u << 20) - 1);
        };
        uint32_t best = cands[candBegin[s]];
        uint64_t bestRank = rank(best);
        for (uint32_t c = candBegin[s] + 1; c < candBegin[s + 1]; ++c) {
          const uint64_t r = rank(cands[c]);
          if (r < bestRank) {
            best = cands[c];
            bestRank = r;
          }
        }
        (*lft[s])[t.lid.value] = g.arc(best).port;
        usedBy[best] = endportSerial;
        if (t.isSwitch) continue;
        const uint64_t w = g.hosts(s) + acc[s];
        load[best] += w;
        ++lidCount[best];
        acc[g.arc(best).to] += static_cast<uint32_t>(w);
      }
    }
    first = last;
  }

  if (options.computeAr) {
    tables.ar.resize(topo.size());
    for (uint32_t s = 0; s < n; ++s) {
      const uint32_t* row = destSets.data() + static_cast<size_t>(s) * groups;
      for (size_t i = 0; i < dests.size(); ++i) ar[s].assign(dests[i].lid, row[groupOf[i]]);
      tables.ar[g.node(s)] = ar[s].build();
      ar[s] = ArGroupBuilder(0, 0);
    }
  }
  return tables;
}

class UpDownEngine final : public Engine {
 public:
  std::string_view name() const override { return "updn"; }
  fabric::Result<RoutingTables> compute(const Topology& topo, const LidAssignment& lids,
                                        const Options& options) const override {
    RoutingGraph g(topo);
    if (g.size() == 0) return fabric::makeError("updn: the fabric has no switches");
    auto roots = chooseRoots(topo, g, options);
    if (!roots) return roots.error();
    bool caGap = false;
    RoutingTables tables = route(topo, lids, options, g, *roots, caGap);
    // Several auto-detected roots that are not the top of a tree (an irregular fabric with CA-less switches)
    // can leave CA pairs without a legal path; one central root per component never does.
    if (caGap && options.roots.empty()) {
      auto central = chooseRoots(topo, g, options, /*centralOnly=*/true);
      if (central && *central != *roots) tables = route(topo, lids, options, g, *central, caGap);
    }
    return tables;
  }
};

}  // namespace

std::unique_ptr<Engine> makeUpDownEngine() {
  return std::make_unique<UpDownEngine>();
}

}  // namespace ibsm::routing
