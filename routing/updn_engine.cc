// Up/down routing (after OpenSM's updn): switches are ranked by BFS hop count from the root switches; with ties
// broken by node GUID this orders all switches, and a hop towards a smaller (rank, GUID) key is "up". Every route
// is a run of up hops followed by a run of down hops and never turns from down to up, so the channel dependency
// graph is acyclic and one VL is deadlock-free.
//
// Destination-based tables cannot see how a packet arrived, so the routes must be consistent: a switch that has a
// down-only path to the destination switch always uses its shortest down-only path (a packet that arrived going
// down must keep going down), and any other switch goes up to a neighbour on its shortest remaining legal path.
// In trees this is the shortest legal path; in arbitrary graphs it can be longer than the shortest up*/down*
// path of that source, which is the price of consistency (OpenSM has the same limitation with its per-switch
// direction marks). Every switch pair of a connected fabric is then reachable except one root to another (as in
// OpenSM without connect_roots).
//
// Balancing is min-hop's: per switch, each LID goes out of the least-loaded equal-cost legal port, the load of a
// port being the number of CA LIDs already routed through it (switch LIDs follow but do not count). The LIDs of
// one endport's LMC range prefer ports none of its earlier LIDs use at that switch, so they take distinct paths.
//
// Roots: options.roots (node GUIDs of switches); otherwise, per connected component, the switches farthest from
// the switches that have CAs (the top of a fat tree); if every switch has CAs (meshes, tori) a single central
// switch (midpoint of a double-sweep BFS diameter, smallest GUID on ties). A component with none of the given
// roots is auto-detected the same way.
#include <algorithm>
#include <numeric>

#include "routing/ar_groups.h"
#include "routing/engine.h"
#include "routing/ranking.h"

namespace ibsm::routing {
namespace {

constexpr uint32_t kInf = RoutingGraph::kNone;

// The central switch of a component with no better root candidate.
uint32_t centralSwitch(const RoutingGraph& g, const std::vector<uint32_t>& members) {
  auto farthest = [&](uint32_t from, std::vector<uint32_t>& dist) {
    uint32_t src[1] = {from};
    dist = g.distances(src);
    uint32_t best = from;
    for (uint32_t s : members)
      if (dist[s] > dist[best] || (dist[s] == dist[best] && g.guid(s) < g.guid(best))) best = s;
    return best;
  };
  uint32_t start = *std::min_element(members.begin(), members.end(),
                                     [&](uint32_t x, uint32_t y) { return g.guid(x) < g.guid(y); });
  std::vector<uint32_t> da, db;
  uint32_t a = farthest(start, da);
  uint32_t b = farthest(a, da);
  farthest(b, db);
  const uint32_t diameter = da[b];
  uint32_t best = kInf;
  for (uint32_t s : members) {
    if (da[s] + db[s] != diameter || da[s] != diameter / 2) continue;
    if (best == kInf || g.guid(s) < g.guid(best)) best = s;
  }
  return best == kInf ? a : best;
}

fabric::Result<std::vector<uint32_t>> chooseRoots(const Topology& topo, const RoutingGraph& g, const Options& options) {
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
    if (top > 0) {
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

class UpDownEngine final : public Engine {
 public:
  std::string_view name() const override { return "updn"; }
  fabric::Result<RoutingTables> compute(const Topology& topo, const LidAssignment& lids,
                                        const Options& options) const override;
};

fabric::Result<RoutingTables> UpDownEngine::compute(const Topology& topo, const LidAssignment& lids,
                                                    const Options& options) const {
  RoutingGraph g(topo);
  const uint32_t n = static_cast<uint32_t>(g.size());
  if (n == 0) return fabric::makeError("updn: the fabric has no switches");
  auto roots = chooseRoots(topo, g, options);
  if (!roots) return roots.error();

  // Total order of switches: (rank, GUID); up = towards a smaller key.
  const std::vector<uint32_t> rank = g.distances(*roots);
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
  for (uint32_t s = 0; s < n; ++s) tables.lft[g.node(s)].assign(lftSize, kNoPort);
  std::vector<ArGroupBuilder> ar;
  if (options.computeAr) ar.assign(n, ArGroupBuilder(lftSize, options.arGroupCap));

  // Destination LIDs grouped by the switch they leave from, switches in GUID order (stable across sweeps).
  std::vector<DestLid> dests = collectDestLids(topo, lids, g);
  std::stable_sort(dests.begin(), dests.end(),
                   [&](const DestLid& x, const DestLid& y) { return g.guid(x.sw) < g.guid(y.sw); });

  const uint32_t stride = g.maxPort() + 1;
  std::vector<uint32_t> load(static_cast<size_t>(n) * stride, 0);
  std::vector<uint32_t> usedBy(static_cast<size_t>(n) * stride, kInf);  // endport serial that used the port last
  std::vector<uint32_t> distDown(n), dist(n), candBegin(n + 1), queue;
  std::vector<uint8_t> cands;
  std::vector<uint32_t> arSet(n, ArGroupBuilder::kNoSet);

  uint32_t endportSerial = 0;
  NodeIndex lastOwner = fabric::kNoNode;
  PortNum lastOwnerPort;
  for (size_t first = 0; first < dests.size();) {
    const uint32_t d = dests[first].sw;
    size_t last = first;
    while (last < dests.size() && dests[last].sw == d) ++last;

    // Shortest down-only distance to d: BFS from d backwards over down hops (s -> x is down when key(x) > key(s)).
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
    for (uint32_t s : order) {
      dist[s] = distDown[s];
      if (dist[s] != kInf) continue;
      for (const auto& a : g.arcs(s))
        if (key[a.to] < key[s] && dist[a.to] != kInf) dist[s] = std::min(dist[s], dist[a.to] + 1);
    }
    // Equal-cost legal egress ports of every switch towards d.
    cands.clear();
    for (uint32_t s = 0; s < n; ++s) {
      candBegin[s] = static_cast<uint32_t>(cands.size());
      if (s == d || dist[s] == kInf) continue;
      const bool down = distDown[s] != kInf;
      for (const auto& a : g.arcs(s)) {
        if (down ? (key[a.to] > key[s] && distDown[a.to] == distDown[s] - 1)
                 : (key[a.to] < key[s] && dist[a.to] == dist[s] - 1))
          cands.push_back(a.port);
      }
    }
    candBegin[n] = static_cast<uint32_t>(cands.size());
    if (options.computeAr) {
      for (uint32_t s = 0; s < n; ++s) {
        PortMask mask;
        for (uint32_t c = candBegin[s]; c < candBegin[s + 1]; ++c) mask.set(cands[c]);
        arSet[s] = ar[s].intern(mask);
      }
    }

    for (size_t i = first; i < last; ++i) {
      const DestLid& t = dests[i];
      if (t.owner != lastOwner || t.ownerPort != lastOwnerPort || t.offset == 0) {
        ++endportSerial;
        lastOwner = t.owner;
        lastOwnerPort = t.ownerPort;
      }
      for (uint32_t s = 0; s < n; ++s) {
        auto& lft = tables.lft[g.node(s)];
        if (s == d) {
          lft[t.lid.value] = t.port;
          continue;
        }
        if (candBegin[s] == candBegin[s + 1]) continue;  // unreachable: stays kNoPort
        uint32_t* portLoad = &load[static_cast<size_t>(s) * stride];
        uint32_t* portUser = &usedBy[static_cast<size_t>(s) * stride];
        uint8_t best = cands[candBegin[s]];
        for (uint32_t c = candBegin[s] + 1; c < candBegin[s + 1]; ++c) {
          uint8_t p = cands[c];
          bool pUsed = portUser[p] == endportSerial, bestUsed = portUser[best] == endportSerial;
          if (pUsed != bestUsed ? !pUsed : portLoad[p] < portLoad[best]) best = p;
        }
        lft[t.lid.value] = best;
        portUser[best] = endportSerial;
        if (!t.isSwitch) ++portLoad[best];
        if (options.computeAr) ar[s].assign(t.lid, arSet[s]);
      }
    }
    first = last;
  }

  if (options.computeAr) {
    tables.ar.resize(topo.size());
    for (uint32_t s = 0; s < n; ++s) tables.ar[g.node(s)] = ar[s].build();
  }
  return tables;
}

}  // namespace

std::unique_ptr<Engine> makeUpDownEngine() { return std::make_unique<UpDownEngine>(); }

}  // namespace ibsm::routing
