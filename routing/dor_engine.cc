// Dimension-order routing ("dor") for meshes, tori and hypercubes: every path corrects the coordinates in
// which source and destination switch differ, dimension 0 first, each on a minimal way (in a ring the shorter
// direction; on a tie, at the antipode of an even ring, half of each target's destinations go each way).
// Parallel links between two switches take the destinations in turn, per distance to the target.
//
// The coordinates are detected, not configured. Two links that meet at a switch belong to different
// dimensions exactly when they span a square without diagonals (their far ends share one more neighbour);
// otherwise, in a line or ring (or a triangle: a ring of 3), the same one. The union of these relations over
// all switches, with the opposite sides of every square in the same dimension, colours the links. A ring of 4
// is a square itself, so it becomes two dimensions of size 2, as a hypercube is one of size 2 per dimension.
// Then every switch gets one coordinate per colour (its position along the colour's line or ring, carried
// over the other colours' links), and the fabric is accepted only when those coordinates are a bijection to
// the full grid and its links are exactly the grid's (so a torus missing a link is declined: dfsp routes it).
// The origin is the switch of lowest GUID at the end of every line, dimensions are ordered by its lowest port
// in each and the positive direction of a ring leaves it by its lower port: the generator's --torus X,Y,Z,
// and a hypercube is routed as e-cube routing always did here.
//
// Deadlocks: dependencies only go from a lower dimension to a higher one, and a line has no cycle. A ring
// of 5 or more needs a dateline: the path's SL has bit j set iff it crosses the ring's wrap link (k-1 -> 0,
// or 0 -> k-1 going down) of the j-th such dimension, and a switch port of that dimension sends SL s on VL
// (bit j of s) (RoutingTables::slToVl); every other port (rings of 3, lines, hosts) on VL 0. On VL 0 no path
// uses a wrap link, so each ring direction is a line; on VL 1 only the paths that cross the wrap use the
// ring and, being minimal (at most k/2 hops), none holds the dependency opposite the wrap link. So 2 VLs,
// 2^(rings) SLs: at most 4 such rings (SLs are 4 bits), and fewer VLs than 2 is declined with the reason.
//
// AR groups (Options::computeAr; the LFTs and SLs are the same without): a switch's group for a LID is the
// parallel links of its LFT port's way (same neighbour, hence same dimension, direction and VL for every
// SL), nothing else. Proof: merge the parallel links of each switch pair into one channel per VL.
// The argument above is about these merged channels (it never looks at which of the parallel links a path
// takes), so the static paths' dependencies between them are acyclic. A packet that takes another parallel
// link reaches the same switch, which forwards it as its static path goes on: it visits the same switches
// on the same VLs, so each of its dependencies merges into one of its static path's. A cycle of channels
// would merge into a cycle of merged channels: there is none. Other minimal ports would break the argument:
// one of a dimension still to correct after the current one breaks the order (its dependencies back into
// the lower dimension close cycles), and at an even ring's antipode the other way crosses the wrap link iff
// the static way does not, so the packet's SL would put it on the wrong VL of that ring.
//
// Cost: O(switches x degree^3) for the colouring, then O(LIDs x switches x dimensions) to fill the tables
// (the 12x12x12 torus of 6,912 hosts: about 0.4 s CPU).
#include <algorithm>
#include <numeric>
#include <string>

#include "routing/ar_groups.h"
#include "routing/engine.h"
#include "routing/switch_graph.h"

namespace ibsm::routing {

namespace {

constexpr uint32_t kUnset = UINT32_MAX;

// The fabric as a grid: per dimension its size and whether it wraps; per switch its coordinates and, per
// dimension and direction (0 = up, 1 = down), its ports towards that neighbour.
struct Grid {
  std::vector<uint32_t> size;
  std::vector<bool> ring;
  size_t dims = 0;
  std::vector<uint32_t> coord;              // [s * dims + d]
  std::vector<std::vector<uint8_t>> ports;  // [(s * dims + d) * 2 + direction]
  uint32_t at(SwitchIndex s, size_t d) const { return coord[s * dims + d]; }
};

class UnionFind {
 public:
  explicit UnionFind(size_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), uint32_t{0}); }
  uint32_t find(uint32_t x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void join(uint32_t a, uint32_t b) {
    a = find(a);
    b = find(b);
    if (a != b) parent_[std::max(a, b)] = std::min(a, b);
  }

 private:
  std::vector<uint32_t> parent_;
};

fabric::Result<Grid> detectGrid(const Topology& topo, const SwitchGraph& g) {
  const size_t S = g.size();
  const auto& arcs = g.arcs();
  auto name = [&](SwitchIndex s) { return "'" + topo.node(g.node(s)).description + "'"; };
  auto decline = [](const std::string& why) {
    return fabric::makeError("dor: not a mesh or torus (" + why + ")");
  };
  if (S < 2) return decline(std::to_string(S) + " switch");
  // Distinct switch neighbours (in port order) and the id of the (undirected) link to each.
  std::vector<std::vector<SwitchIndex>> adj(S);
  std::vector<std::vector<uint32_t>> edgeOf(S);
  std::vector<std::pair<SwitchIndex, SwitchIndex>> edges;
  auto edge = [&](SwitchIndex u, SwitchIndex v) {
    for (size_t i = 0; i < adj[u].size(); ++i)
      if (adj[u][i] == v) return edgeOf[u][i];
    return kUnset;
  };
  for (SwitchIndex s = 0; s < S; ++s)
    for (uint32_t a = g.arcBegin(s); a < g.arcEnd(s); ++a) {
      SwitchIndex t = arcs[a].to;
      if (t == s || edge(s, t) != kUnset) continue;
      uint32_t e = t < s ? edge(t, s) : kUnset;
      if (e == kUnset) {
        e = static_cast<uint32_t>(edges.size());
        edges.emplace_back(std::min(s, t), std::max(s, t));
      }
      adj[s].push_back(t);
      edgeOf[s].push_back(e);
    }
  // Colour the links: same dimension along a line, ring or triangle, opposite sides of a square alike.
  UnionFind colour(edges.size());
  std::vector<uint32_t> mark(S, kUnset);
  for (SwitchIndex v = 0; v < S; ++v)
    for (size_t i = 0; i < adj[v].size(); ++i) {
      const SwitchIndex u = adj[v][i];
      for (SwitchIndex x : adj[u]) mark[x] = u;
      for (size_t j = i + 1; j < adj[v].size(); ++j) {
        const SwitchIndex w = adj[v][j];
        SwitchIndex corner = kNoSwitch;
        unsigned shared = 0;
        for (SwitchIndex x : adj[w])
          if (x != v && mark[x] == u) corner = x, ++shared;
        if (shared > 1)
          return decline(name(u) + " and " + name(w) + " share " + std::to_string(shared + 1) +
                         " neighbours");
        if (mark[w] == u || shared == 0) {
          colour.join(edgeOf[v][i], edgeOf[v][j]);
        } else {
          colour.join(edgeOf[v][i], edge(w, corner));
          colour.join(edgeOf[v][j], edge(u, corner));
        }
      }
    }
  // Dimensions: the colours, numbered later; each switch has at most 2 links of each.
  std::vector<uint32_t> colourOf(edges.size()), roots;
  for (uint32_t e = 0; e < edges.size(); ++e) {
    uint32_t r = colour.find(e);
    auto it = std::find(roots.begin(), roots.end(), r);
    colourOf[e] = static_cast<uint32_t>(it - roots.begin());
    if (it == roots.end()) roots.push_back(r);
  }
  const size_t C = roots.size();
  std::vector<uint32_t> degree(S * C, 0);
  for (SwitchIndex s = 0; s < S; ++s)
    for (uint32_t e : edgeOf[s])
      if (++degree[s * C + colourOf[e]] > 2)
        return decline(name(s) + " has more than 2 switch neighbours in one dimension");
  // Each colour's lines or rings: all rings or all lines, of one length (a missing link breaks this).
  std::vector<uint32_t> size(C, 0);
  std::vector<bool> ring(C, false);
  std::vector<uint8_t> seen(S);
  for (size_t c = 0; c < C; ++c) {
    std::fill(seen.begin(), seen.end(), 0);
    for (SwitchIndex s0 = 0; s0 < S; ++s0) {
      if (seen[s0] || degree[s0 * C + c] == 0) continue;
      uint32_t n = 0, ends = 0;
      std::vector<SwitchIndex> stack{s0};
      seen[s0] = 1;
      while (!stack.empty()) {
        SwitchIndex s = stack.back();
        stack.pop_back();
        ++n;
        ends += degree[s * C + c] < 2;
        for (size_t i = 0; i < adj[s].size(); ++i)
          if (colourOf[edgeOf[s][i]] == c && !seen[adj[s][i]])
            seen[adj[s][i]] = 1, stack.push_back(adj[s][i]);
      }
      if (size[c] == 0) size[c] = n, ring[c] = ends == 0;
      if (size[c] != n || ring[c] != (ends == 0))
        return decline("the line or ring through " + name(s0) + " differs from the others of its dimension" +
                       " (a missing link?)");
    }
  }
  // Origin: of the switches at an end of every line, the one with the lowest GUID (not the first in discovery
  // order, which may change from sweep to sweep). Dimensions in the order of its lowest port in each.
  SwitchIndex origin = kNoSwitch;
  for (SwitchIndex s = 0; s < S; ++s) {
    bool corner = true;
    for (size_t c = 0; c < C; ++c) corner = corner && (ring[c] || degree[s * C + c] < 2);
    if (corner && (origin == kNoSwitch || topo.node(g.node(s)).guid < topo.node(g.node(origin)).guid))
      origin = s;
  }
  if (origin == kNoSwitch) return decline("no switch is at the end of every line");
  std::vector<uint32_t> dimOf(C, kUnset), colourAt;
  for (uint32_t a = g.arcBegin(origin); a < g.arcEnd(origin); ++a) {
    uint32_t c = colourOf[edge(origin, arcs[a].to)];
    if (dimOf[c] == kUnset) dimOf[c] = static_cast<uint32_t>(colourAt.size()), colourAt.push_back(c);
  }
  if (colourAt.size() != C) return decline("the switches are not connected");
  Grid grid;
  grid.dims = C;
  grid.coord.assign(S * C, kUnset);
  for (size_t d = 0; d < C; ++d) {
    const uint32_t c = colourAt[d];
    grid.size.push_back(size[c]);
    grid.ring.push_back(ring[c]);
    // Along the origin's line or ring, leaving by its lowest port; then over the other colours' links.
    std::vector<SwitchIndex> queue;
    SwitchIndex prev = kNoSwitch, s = origin;
    for (uint32_t k = 0; k < size[c]; ++k) {
      grid.coord[s * C + d] = k;
      queue.push_back(s);
      SwitchIndex next = kNoSwitch;
      for (size_t i = 0; i < adj[s].size() && next == kNoSwitch; ++i)
        if (colourOf[edgeOf[s][i]] == c && adj[s][i] != prev && grid.coord[adj[s][i] * C + d] == kUnset)
          next = adj[s][i];
      prev = s;
      s = next;
      if (s == kNoSwitch) break;
    }
    for (size_t q = 0; q < queue.size(); ++q)
      for (size_t i = 0; i < adj[queue[q]].size(); ++i) {
        SwitchIndex t = adj[queue[q]][i];
        if (colourOf[edgeOf[queue[q]][i]] == c || grid.coord[t * C + d] != kUnset) continue;
        grid.coord[t * C + d] = grid.coord[queue[q] * C + d];
        queue.push_back(t);
      }
    if (queue.size() != S) return decline("the switches are not connected");
  }
  // The coordinates must be a bijection onto the grid, and every link one step in its own dimension.
  uint64_t cells = 1, expected = 0;
  for (size_t d = 0; d < C; ++d) cells *= grid.size[d];
  for (size_t d = 0; d < C; ++d) expected += cells / grid.size[d] * (grid.size[d] - (grid.ring[d] ? 0 : 1));
  if (cells != S) return decline(std::to_string(S) + " switches do not fill the grid of their dimensions");
  std::vector<uint8_t> taken(S, 0);
  for (SwitchIndex s = 0; s < S; ++s) {
    uint64_t index = 0;
    for (size_t d = C; d-- > 0;) index = index * grid.size[d] + grid.at(s, d);
    if (taken[index]++) return decline(name(s) + " gets no coordinates of its own");
  }
  if (edges.size() != expected) return decline("the links are not those of the grid");
  grid.ports.resize(S * C * 2);
  for (SwitchIndex s = 0; s < S; ++s)
    for (uint32_t a = g.arcBegin(s); a < g.arcEnd(s); ++a) {
      const SwitchIndex t = arcs[a].to;
      if (t == s) return decline(name(s) + " is linked to itself");
      const size_t d = dimOf[colourOf[edge(s, t)]];
      bool oneStep = true;
      for (size_t e = 0; e < C; ++e) oneStep = oneStep && (e == d || grid.at(s, e) == grid.at(t, e));
      const uint32_t k = grid.size[d], from = grid.at(s, d), to = grid.at(t, d);
      const bool up = grid.ring[d] ? to == (from + 1) % k : to == from + 1;
      const bool down = grid.ring[d] ? to == (from + k - 1) % k : to + 1 == from;
      if (!oneStep || (!up && !down))
        return decline("the link from " + name(s) + " port " + std::to_string(arcs[a].port) +
                       " is not one step in one dimension");
      grid.ports[(s * C + d) * 2 + (up ? 0 : 1)].push_back(arcs[a].port);
    }
  return grid;
}

class DorEngine final : public Engine {
 public:
  std::string_view name() const override { return "dor"; }

  fabric::Result<RoutingTables> compute(const Topology& topo, const LidAssignment& lids,
                                        const Options& options) const override {
    SwitchGraph g(topo);
    auto detected = detectGrid(topo, g);
    if (!detected) return detected.error();
    const Grid& grid = *detected;
    const size_t S = g.size(), D = grid.dims;
    RoutingTables t;
    t.engine = "dor";
    // The grid, for repairs (routing/dor_repair.h).
    DorGrid& kept = t.dorGrid;
    kept.size = grid.size;
    kept.ring.assign(grid.ring.begin(), grid.ring.end());
    kept.vls = options.vlLayers;
    kept.coord.assign(topo.size() * D, DorGrid::kNoCoord);
    for (SwitchIndex s = 0; s < S; ++s)
      for (size_t d = 0; d < D; ++d) kept.coord[g.node(s) * D + d] = grid.at(s, d);
    // The j-th ring that needs a dateline (one where a minimal path can take two hops) gives SL bit j.
    std::vector<int> slBit(D, -1);
    for (size_t d = 0; d < D; ++d) slBit[d] = kept.slBit(d);
    const int rings = kept.rings();
    if (rings > 4)
      return fabric::makeError("dor: " + std::to_string(rings) +
                               " rings need datelines, more than the 4 bits of an SL can tell apart");
    if (rings > 0 && options.vlLayers < 2)
      return fabric::makeError("dor: the datelines of the " + std::to_string(rings) +
                               (rings == 1 ? " ring" : " rings") + " need 2 VLs; the fabric offers " +
                               std::to_string(options.vlLayers));

    t.lft.resize(topo.size());
    const uint32_t maxLid = lids.maxLid().value;
    for (SwitchIndex s = 0; s < S; ++s) t.lft[g.node(s)].assign(maxLid + 1u, kNoPort);
    if (rings > 0) {
      t.slLayers = 2;
      t.sl.resize(topo.size());
      for (SwitchIndex s = 0; s < S; ++s) {
        t.sl[g.node(s)].assign(maxLid + 1u, 0);
        const unsigned numPorts = topo.node(g.node(s)).numPorts;
        for (size_t d = 0; d < D; ++d)
          for (unsigned dir = 0; dir < 2 && slBit[d] >= 0; ++dir)
            for (uint8_t port : grid.ports[(s * D + d) * 2 + dir]) {
              uint64_t table = 0;
              for (unsigned sl = 0; sl < 16; ++sl) table |= uint64_t{(sl >> slBit[d]) & 1u} << (4 * sl);
              for (unsigned in = 0; in <= numPorts; ++in)
                t.slToVl.setPacked(g.node(s), numPorts, in, port, table);
            }
      }
    }
    // Parallel links take the destinations of each way in turn, counted per distance to the target: the
    // routes towards targets at one distance weigh alike (as many sources behind them), so each link's share
    // of every distance is even.
    // AR: per way (switch, dimension, direction) its ports, a group when there are parallel links.
    std::vector<ArGroupBuilder> ar;
    std::vector<PortMask> wayPorts(options.computeAr ? grid.ports.size() : 0);
    for (size_t way = 0; way < wayPorts.size(); ++way)
      for (uint8_t port : grid.ports[way]) wayPorts[way].set(port);
    if (options.computeAr) ar.assign(S, ArGroupBuilder(maxLid + 1u, options.arGroupCap));
    const uint32_t K = *std::max_element(grid.size.begin(), grid.size.end());
    std::vector<uint32_t> rank(S, 0), dealt(S * D * 2 * K, 0);  // rank: destinations seen per target switch
    for (uint32_t l = 1; l <= maxLid; ++l) {
      LidOwner o = lids.owner(Lid{static_cast<uint16_t>(l)});
      const LidExit leaves = lidExit(topo, g, o.node, o.port);
      const SwitchIndex target = leaves.sw;
      const uint8_t last = leaves.port;
      if (target == kNoSwitch) continue;
      const uint32_t r = rank[target]++;
      for (SwitchIndex s = 0; s < S; ++s) {
        uint8_t port = last, sl = 0;
        bool first = true;
        for (size_t d = 0; d < D; ++d) {
          const uint32_t from = grid.at(s, d), to = grid.at(target, d), k = grid.size[d];
          if (from == to) continue;
          // Up on a line when the target is above; in a ring the shorter way. On a tie (the antipode of an
          // even ring) up from an even coordinate for the target's even destinations, the other way for its
          // odd ones, and the reverse from an odd coordinate: both ways carry half of it.
          const uint32_t ahead = (to + k - from) % k, back = k - ahead;
          const bool up = grid.ring[d] ? ahead < back || (ahead == back && (from + r) % 2 == 0) : to > from;
          if (first) {
            const size_t way = (s * D + d) * 2 + (up ? 0 : 1);
            const uint32_t distance = up ? ahead : back;
            port = grid.ports[way][(distance + dealt[way * K + distance]++) % grid.ports[way].size()];
            first = false;
            if (!ar.empty() && grid.ports[way].size() > 1)
              ar[s].set(Lid{static_cast<uint16_t>(l)}, wayPorts[way], port);
          }
          if (slBit[d] >= 0 && (up ? to < from : to > from)) sl = static_cast<uint8_t>(sl | 1u << slBit[d]);
        }
        t.lft[g.node(s)][l] = port;
        if (rings > 0 && leaves.toCa) t.sl[g.node(s)][l] = sl;
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

std::unique_ptr<Engine> makeDorEngine() {
  return std::make_unique<DorEngine>();
}

}  // namespace ibsm::routing
