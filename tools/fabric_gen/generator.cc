#include "tools/fabric_gen/generator.h"

#include <algorithm>
#include <numeric>
#include <set>

namespace ibsm::tools {

using fabric::Error;
using fabric::makeError;
using fabric::NodeType;
using fabric::Result;

namespace {

constexpr unsigned kMaxPorts = 254;
// Keeps CA GUIDs (3 per 2-port host) below the switch range and memory reasonable.
constexpr uint64_t kMaxNodes = 200000;

// splitmix64: a tiny PRNG whose sequence is fixed by the seed on every platform (std distributions are not).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n), n > 0 (rejection sampling avoids modulo bias).
  uint64_t below(uint64_t n) {
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t v;
    do v = next();
    while (v >= limit);
    return v % n;
  }
  template <typename T>
  void shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[below(i)]);
  }

 private:
  uint64_t state_;
};

// The fabric before it becomes a Topology: removal marks nodes and links instead of renumbering, so GUIDs
// (assigned from the draft order) stay stable.
struct Draft {
  struct DNode {
    NodeType type;
    std::string desc;
    unsigned ports;
    bool edge = false;  // a switch that hosts attach to (never removed)
    bool removed = false;
  };
  struct DLink {
    uint32_t a, pa, b, pb;
    bool removed = false;
  };
  std::vector<DNode> nodes;
  std::vector<DLink> links;

  uint32_t addSwitch(std::string desc, unsigned ports, bool edge = false) {
    nodes.push_back({NodeType::kSwitch, std::move(desc), ports, edge});
    return static_cast<uint32_t>(nodes.size() - 1);
  }
  uint32_t addHost(std::string desc, unsigned ports) {
    nodes.push_back({NodeType::kCa, std::move(desc), ports});
    return static_cast<uint32_t>(nodes.size() - 1);
  }
  void link(uint32_t a, unsigned pa, uint32_t b, unsigned pb) { links.push_back({a, pa, b, pb}); }

  // All nodes that are not removed reach each other over links that are not removed.
  bool connected() const {
    std::vector<std::vector<uint32_t>> adj(nodes.size());
    for (const DLink& l : links) {
      if (l.removed) continue;
      adj[l.a].push_back(l.b);
      adj[l.b].push_back(l.a);
    }
    size_t alive = 0, start = nodes.size();
    for (size_t i = 0; i < nodes.size(); ++i)
      if (!nodes[i].removed) {
        ++alive;
        if (start == nodes.size()) start = i;
      }
    if (alive == 0) return true;
    std::vector<char> seen(nodes.size(), 0);
    std::vector<uint32_t> stack{static_cast<uint32_t>(start)};
    seen[start] = 1;
    size_t reached = 1;
    while (!stack.empty()) {
      uint32_t u = stack.back();
      stack.pop_back();
      for (uint32_t v : adj[u])
        if (!seen[v]) {
          seen[v] = 1;
          ++reached;
          stack.push_back(v);
        }
    }
    return reached == alive;
  }
};

// Host ports of one edge switch: ports first .. first+count-1.
struct EdgeSlots {
  uint32_t sw;
  unsigned first, count;
};

std::string hostDesc(size_t i) {
  return "host-" + std::to_string(i) + " HCA-1";
}

// Creates the hosts (after all switches, so switches come first in the file). With 2-port HCAs, edge switches
// pair up and share their host ports: host j of a pair takes port j on both.
void attachHosts(Draft& d, const std::vector<EdgeSlots>& edges, unsigned hcaPorts) {
  size_t host = 0;
  auto single = [&](const EdgeSlots& e, unsigned from) {
    for (unsigned j = from; j < e.count; ++j)
      d.link(d.addHost(hostDesc(host++), hcaPorts), 1, e.sw, e.first + j);
  };
  if (hcaPorts == 1) {
    for (const EdgeSlots& e : edges) single(e, 0);
    return;
  }
  for (size_t i = 0; i < edges.size(); i += 2) {
    if (i + 1 == edges.size()) {
      single(edges[i], 0);
      break;
    }
    const EdgeSlots &a = edges[i], &b = edges[i + 1];
    unsigned both = std::min(a.count, b.count);
    for (unsigned j = 0; j < both; ++j) {
      uint32_t h = d.addHost(hostDesc(host++), hcaPorts);
      d.link(h, 1, a.sw, a.first + j);
      d.link(h, 2, b.sw, b.first + j);
    }
    single(a, both);
    single(b, both);
  }
}

// Checked a*b, a+b: the generator refuses sizes whose arithmetic would overflow instead of wrapping.
bool mulOk(uint64_t a, uint64_t b, uint64_t& out) {
  if (a != 0 && b > UINT64_MAX / a) return false;
  out = a * b;
  return true;
}

struct FatTreeCounts {
  unsigned hostsPerLeaf, spines, leaves, pods, coresPerPlane;
};

Result<FatTreeCounts> fatTreeCounts(const FabricSpec& s) {
  FatTreeCounts c{};
  const unsigned R = s.radix, P = s.parallel;
  c.hostsPerLeaf = s.hostsPerLeaf ? s.hostsPerLeaf : R / 2;
  if (c.hostsPerLeaf >= R) return makeError("--hosts-per-leaf must be below the radix " + std::to_string(R));
  unsigned up = R - c.hostsPerLeaf;
  c.spines = s.spines ? s.spines : up / P;
  if (c.spines == 0 || uint64_t{c.spines} * P > up)
    return makeError("--spines " + std::to_string(c.spines) + " x --parallel " + std::to_string(P) +
                     " does not fit the " + std::to_string(up) + " up ports of a leaf");
  if (s.levels == 2) {
    c.leaves = s.leaves ? s.leaves : R / P;
    if (c.leaves == 0 || uint64_t{c.leaves} * P > R)
      return makeError("--leaves " + std::to_string(c.leaves) + " x --parallel " + std::to_string(P) +
                       " does not fit a spine's " + std::to_string(R) + " ports");
    c.pods = 1;
    return c;
  }
  c.leaves = s.leaves ? s.leaves : (R / 2) / P;
  if (c.leaves == 0 || uint64_t{c.leaves} * P >= R)
    return makeError("--leaves " + std::to_string(c.leaves) + " per pod x --parallel " + std::to_string(P) +
                     " leaves no spine port for the cores");
  unsigned spineUp = R - c.leaves * P;
  if (s.cores) {
    if (s.cores % c.spines != 0)
      return makeError("--cores must be a multiple of the " + std::to_string(c.spines) + " spines per pod");
    c.coresPerPlane = s.cores / c.spines;
  } else {
    c.coresPerPlane = spineUp / P;
  }
  if (c.coresPerPlane == 0 || uint64_t{c.coresPerPlane} * P > spineUp)
    return makeError(std::to_string(c.coresPerPlane) + " cores per spine x --parallel " + std::to_string(P) +
                     " do not fit a spine's " + std::to_string(spineUp) + " up ports");
  c.pods = s.pods ? s.pods : R / P;
  if (c.pods == 0 || uint64_t{c.pods} * P > R)
    return makeError("--pods " + std::to_string(c.pods) + " x --parallel " + std::to_string(P) +
                     " does not fit a core's " + std::to_string(R) + " ports");
  return c;
}

// Host count and switch count of a spec, for the size limit check.
Result<std::pair<uint64_t, uint64_t>> sizeOf(const FabricSpec& s) {
  uint64_t hosts = 0, switches = 0;
  switch (s.shape) {
    case Shape::kKaryNTree: {
      uint64_t perLevel = 1;
      for (unsigned i = 1; i < s.n; ++i)
        if (!mulOk(perLevel, s.k, perLevel) || perLevel > kMaxNodes)
          return makeError("--kary-ntree is too large");
      if (!mulOk(perLevel, s.k, hosts) || !mulOk(perLevel, s.n, switches))
        return makeError("--kary-ntree is too large");
      break;
    }
    case Shape::kFatTree: {
      auto c = fatTreeCounts(s);
      if (!c) return c.error();
      uint64_t leaves = uint64_t{c->leaves} * c->pods;
      hosts = leaves * c->hostsPerLeaf;
      if (s.hosts) hosts = std::min<uint64_t>(hosts, s.hosts);
      switches = leaves + uint64_t{c->spines} * c->pods +
                 (s.levels == 3 ? uint64_t{c->spines} * c->coresPerPlane : 0);
      break;
    }
    case Shape::kMesh:
      switches = s.switches;
      hosts = uint64_t{s.switches} * s.hostsPerSwitch;
      break;
    case Shape::kTorus:
      switches = 1;
      for (unsigned d : s.dims)
        if (!mulOk(switches, d, switches) || switches > kMaxNodes) return makeError("--torus is too large");
      hosts = switches * s.hostsPerSwitch;
      break;
    case Shape::kDragonfly: {
      uint64_t groups = uint64_t{s.dragonflyA} * s.dragonflyH + 1;
      if (!mulOk(groups, s.dragonflyA, switches) || switches > kMaxNodes)
        return makeError("--dragonfly is too large");
      hosts = switches * s.hostsPerSwitch;
      break;
    }
    case Shape::kHypercube:
      if (s.hypercubeD > 17) return makeError("--hypercube is too large");
      switches = uint64_t{1} << s.hypercubeD;
      hosts = switches * s.hostsPerSwitch;
      break;
  }
  if (s.hcaPorts == 2) hosts = (hosts + 1) / 2;  // at most: paired edge switches share host ports
  if (hosts + switches > kMaxNodes)
    return makeError("fabric too large: " + std::to_string(hosts + switches) + " nodes (limit " +
                     std::to_string(kMaxNodes) + ")");
  return std::pair{hosts, switches};
}

void buildKaryNTree(const FabricSpec& s, Draft& d) {
  const unsigned k = s.k, n = s.n;
  unsigned perLevel = 1;
  for (unsigned i = 1; i < n; ++i) perLevel *= k;
  // Switch <w, l>: w = (w_0 .. w_{n-2}) in base k (w_0 most significant), level 0 at the top, n-1 the leaves.
  // <w, l> and <w', l+1> are linked iff w and w' differ at most in digit l: parent port d+1 goes down to the
  // child with w_l = d, which takes it on up port k+1+(parent's w_l).
  std::vector<std::vector<uint32_t>> sw(n, std::vector<uint32_t>(perLevel));
  for (unsigned l = n; l-- > 0;)  // leaves first
    for (unsigned i = 0; i < perLevel; ++i) {
      std::string name = l == n - 1 ? "leaf-" : l == 0 ? "spine-" : "level" + std::to_string(l) + "-";
      sw[l][i] = d.addSwitch(name + std::to_string(i), 2 * k, l == n - 1);
    }
  auto weight = [&](unsigned digit) {  // value of digit position `digit` in the switch index
    unsigned w = 1;
    for (unsigned i = digit + 1; i + 1 < n; ++i) w *= k;
    return w;
  };
  for (unsigned l = 0; l + 1 < n; ++l)
    for (unsigned i = 0; i < perLevel; ++i) {
      unsigned wl = (i / weight(l)) % k;
      for (unsigned dgt = 0; dgt < k; ++dgt) {
        unsigned child = i - wl * weight(l) + dgt * weight(l);
        d.link(sw[l][i], dgt + 1, sw[l + 1][child], k + 1 + wl);
      }
    }
  std::vector<EdgeSlots> edges;
  for (unsigned i = 0; i < perLevel; ++i) edges.push_back({sw[n - 1][i], 1, k});
  attachHosts(d, edges, s.hcaPorts);
}

void buildFatTree(const FabricSpec& s, const FatTreeCounts& c, Draft& d) {
  const unsigned R = s.radix, P = s.parallel, H = c.hostsPerLeaf;
  const unsigned leaves = c.leaves * c.pods, spines = c.spines * c.pods;
  std::vector<uint32_t> leaf(leaves), spine(spines), core;
  for (unsigned i = 0; i < leaves; ++i) leaf[i] = d.addSwitch("leaf-" + std::to_string(i), R, true);
  for (unsigned i = 0; i < spines; ++i) spine[i] = d.addSwitch("spine-" + std::to_string(i), R);
  if (s.levels == 3)
    for (unsigned i = 0; i < c.spines * c.coresPerPlane; ++i)
      core.push_back(d.addSwitch("core-" + std::to_string(i), R));
  // Leaf: hosts on ports 1..H, then P ports per spine of its pod. Spine: P ports per leaf of its pod, then (3
  // levels) P ports per core of its plane. Core: P ports per pod.
  for (unsigned pod = 0; pod < c.pods; ++pod)
    for (unsigned l = 0; l < c.leaves; ++l)
      for (unsigned a = 0; a < c.spines; ++a)
        for (unsigned j = 0; j < P; ++j)
          d.link(leaf[pod * c.leaves + l], H + 1 + a * P + j, spine[pod * c.spines + a], 1 + l * P + j);
  if (s.levels == 3)
    for (unsigned pod = 0; pod < c.pods; ++pod)
      for (unsigned a = 0; a < c.spines; ++a)
        for (unsigned x = 0; x < c.coresPerPlane; ++x)
          for (unsigned j = 0; j < P; ++j)
            d.link(spine[pod * c.spines + a], c.leaves * P + 1 + x * P + j, core[a * c.coresPerPlane + x],
                   1 + pod * P + j);
  // Host ports filled leaf by leaf up to --hosts (with 2-port HCAs a leaf pair shares them, so count pairs'
  // ports).
  uint64_t left = s.hosts ? uint64_t{s.hosts} * s.hcaPorts : UINT64_MAX;
  std::vector<EdgeSlots> edges;
  for (unsigned i = 0; i < leaves; ++i) {
    unsigned count = static_cast<unsigned>(std::min<uint64_t>(H, left));
    left -= count;
    edges.push_back({leaf[i], 1, count});
  }
  if (s.hcaPorts == 2 &&
      s.hosts)  // a pair uses one port on each leaf per host: give both leaves the same count
    for (size_t i = 0; i + 1 < edges.size(); i += 2) {
      unsigned pair = edges[i].count + edges[i + 1].count;
      edges[i].count = (pair + 1) / 2;
      edges[i + 1].count = pair / 2;
    }
  attachHosts(d, edges, s.hcaPorts);
}

void buildMesh(const FabricSpec& s, Draft& d, Rng& rng) {
  const unsigned S = s.switches, D = s.degree, H = s.hostsPerSwitch, P = s.parallel;
  std::vector<uint32_t> sw(S);
  for (unsigned i = 0; i < S; ++i) sw[i] = d.addSwitch("switch-" + std::to_string(i), H + D * P, H > 0);
  std::vector<unsigned> degree(S, 0);
  std::set<std::pair<unsigned, unsigned>> linked;
  auto connect = [&](unsigned a, unsigned b) {
    for (unsigned j = 0; j < P; ++j)
      d.link(sw[a], H + 1 + degree[a] * P + j, sw[b], H + 1 + degree[b] * P + j);
    ++degree[a];
    ++degree[b];
    linked.insert({std::min(a, b), std::max(a, b)});
  };
  // A random spanning tree keeps the mesh connected: each switch, in random order, joins a random earlier one
  // that has a free link (with D >= 2 there always is one).
  std::vector<unsigned> order(S);
  std::iota(order.begin(), order.end(), 0u);
  rng.shuffle(order);
  for (unsigned i = 1; i < S; ++i) {
    std::vector<unsigned> open;
    for (unsigned j = 0; j < i; ++j)
      if (degree[order[j]] < D) open.push_back(order[j]);
    connect(order[i], open[rng.below(open.size())]);
  }
  // Then random links between switches that still have room, until none can be added (or tries run out).
  for (unsigned misses = 0; misses < 50 * S + 100;) {
    std::vector<unsigned> open;
    for (unsigned i = 0; i < S; ++i)
      if (degree[i] < D) open.push_back(i);
    if (open.size() < 2) break;
    unsigned a = open[rng.below(open.size())], b = open[rng.below(open.size())];
    if (a == b || linked.count({std::min(a, b), std::max(a, b)})) {
      ++misses;
      continue;
    }
    connect(a, b);
  }
  std::vector<EdgeSlots> edges;
  for (unsigned i = 0; i < S && H > 0; ++i) edges.push_back({sw[i], 1, H});
  attachHosts(d, edges, s.hcaPorts);
}

void buildTorus(const FabricSpec& s, Draft& d) {
  const unsigned H = s.hostsPerSwitch, P = s.parallel, nd = static_cast<unsigned>(s.dims.size());
  unsigned total = 1;
  for (unsigned x : s.dims) total *= x;
  std::vector<uint32_t> sw(total);
  for (unsigned i = 0; i < total; ++i) {
    std::string name = "torus";
    for (unsigned r = i, dim = 0; dim < nd; r /= s.dims[dim], ++dim) {
      name += '-';  // not "-" + a temporary: GCC 12 at -O3 reports a false -Wrestrict
      name += std::to_string(r % s.dims[dim]);
    }
    sw[i] = d.addSwitch(name, H + 2 * nd * P, H > 0);
  }
  // Ports: hosts 1..H, then for each dimension P ports towards +1 and P towards -1.
  auto port = [&](unsigned dim, unsigned dir, unsigned j) { return H + 1 + (dim * 2 + dir) * P + j; };
  for (unsigned i = 0; i < total; ++i) {
    unsigned stride = 1;
    for (unsigned dim = 0; dim < nd; stride *= s.dims[dim], ++dim) {
      unsigned size = s.dims[dim], coord = (i / stride) % size;
      if (size < 2 || (size == 2 && coord == 1)) continue;  // a ring of 2 is one link, not two
      unsigned next = i - coord * stride + ((coord + 1) % size) * stride;
      for (unsigned j = 0; j < P; ++j) d.link(sw[i], port(dim, 0, j), sw[next], port(dim, 1, j));
    }
  }
  std::vector<EdgeSlots> edges;
  for (unsigned i = 0; i < total && H > 0; ++i) edges.push_back({sw[i], 1, H});
  attachHosts(d, edges, s.hcaPorts);
}

void buildDragonfly(const FabricSpec& s, Draft& d) {
  const unsigned A = s.dragonflyA, H = s.dragonflyH, Hs = s.hostsPerSwitch;
  const unsigned groups = A * H + 1;
  std::vector<uint32_t> sw(groups * A);
  for (unsigned g = 0; g < groups; ++g)
    for (unsigned r = 0; r < A; ++r)
      sw[g * A + r] =
          d.addSwitch("dfly-" + std::to_string(g) + "-" + std::to_string(r), Hs + A - 1 + H, Hs > 0);
  // Local port of router r towards router q of its group (q != r).
  auto local = [&](unsigned r, unsigned q) { return Hs + 1 + (q < r ? q : q - 1); };
  for (unsigned g = 0; g < groups; ++g)
    for (unsigned r = 0; r < A; ++r)
      for (unsigned q = r + 1; q < A; ++q) d.link(sw[g * A + r], local(r, q), sw[g * A + q], local(q, r));
  // Global link k of group g leads to group t = (g+k+1) mod groups; seen from t it is link (g-t-1) mod
  // groups. Each pair of groups is linked once, from the lower group.
  for (unsigned g = 0; g < groups; ++g)
    for (unsigned k = 0; k < A * H; ++k) {
      unsigned t = (g + k + 1) % groups;
      if (t < g) continue;
      unsigned back = (g + groups - t - 1) % groups;
      d.link(sw[g * A + k / H], Hs + A + k % H, sw[t * A + back / H], Hs + A + back % H);
    }
  std::vector<EdgeSlots> edges;
  for (unsigned i = 0; i < sw.size() && Hs > 0; ++i) edges.push_back({sw[i], 1, Hs});
  attachHosts(d, edges, s.hcaPorts);
}

void buildHypercube(const FabricSpec& s, Draft& d) {
  const unsigned D = s.hypercubeD, H = s.hostsPerSwitch, total = 1u << D;
  std::vector<uint32_t> sw(total);
  for (unsigned i = 0; i < total; ++i) sw[i] = d.addSwitch("hcube-" + std::to_string(i), H + D, H > 0);
  for (unsigned i = 0; i < total; ++i)
    for (unsigned dim = 0; dim < D; ++dim) {
      unsigned j = i ^ (1u << dim);
      if (j > i) d.link(sw[i], H + 1 + dim, sw[j], H + 1 + dim);
    }
  std::vector<EdgeSlots> edges;
  for (unsigned i = 0; i < total && H > 0; ++i) edges.push_back({sw[i], 1, H});
  attachHosts(d, edges, s.hcaPorts);
}

// Removes up to `count` of the candidates (draft node or link indices), in random order, each only if the
// fabric stays connected; returns how many were removed.
template <typename Mark>
unsigned removeSome(Draft& d, std::vector<uint32_t> candidates, unsigned count, bool allowDisconnect,
                    Rng& rng, Mark mark) {
  rng.shuffle(candidates);
  unsigned removed = 0;
  for (uint32_t c : candidates) {
    if (removed == count) break;
    mark(c, true);
    if (!allowDisconnect && !d.connected()) {
      mark(c, false);
      continue;
    }
    ++removed;
  }
  return removed;
}

Result<void> degrade(const FabricSpec& s, Draft& d, Rng& rng) {
  if (s.removeSwitches) {
    std::vector<uint32_t> cand;
    for (uint32_t i = 0; i < d.nodes.size(); ++i)
      if (d.nodes[i].type == NodeType::kSwitch && !d.nodes[i].edge) cand.push_back(i);
    unsigned got = removeSome(d, cand, s.removeSwitches, s.allowDisconnect, rng, [&](uint32_t i, bool on) {
      d.nodes[i].removed = on;
      for (auto& l : d.links)  // on undo, a link to a switch removed earlier stays removed
        if (l.a == i || l.b == i) l.removed = on || d.nodes[l.a == i ? l.b : l.a].removed;
    });
    if (got < s.removeSwitches)
      return makeError("--remove-switches: only " + std::to_string(got) + " of " +
                       std::to_string(cand.size()) + " switches without hosts can be removed" +
                       (s.allowDisconnect ? "" : " keeping the fabric connected"));
  }
  if (s.removeLinks) {
    std::vector<uint32_t> cand;
    for (uint32_t i = 0; i < d.links.size(); ++i) {
      const auto& l = d.links[i];
      if (!l.removed && d.nodes[l.a].type == NodeType::kSwitch && d.nodes[l.b].type == NodeType::kSwitch)
        cand.push_back(i);
    }
    unsigned got = removeSome(d, cand, s.removeLinks, s.allowDisconnect, rng,
                              [&](uint32_t i, bool on) { d.links[i].removed = on; });
    if (got < s.removeLinks)
      return makeError("--remove-links: only " + std::to_string(got) + " of " + std::to_string(cand.size()) +
                       " switch-to-switch links can be removed" +
                       (s.allowDisconnect ? "" : " keeping the fabric connected"));
  }
  return {};
}

Result<fabric::TopologyPtr> finish(const FabricSpec& s, const Draft& d, fabric::WidthSpeed ws) {
  fabric::TopologyBuilder b;
  std::vector<fabric::NodeIndex> index(d.nodes.size(), fabric::kNoNode);
  uint64_t nextSwitch = s.guidBase + 0x200000, nextCa = s.guidBase + 0x100000;
  for (size_t i = 0; i < d.nodes.size(); ++i) {
    const Draft::DNode& dn = d.nodes[i];
    fabric::Node n;
    n.type = dn.type;
    n.numPorts = static_cast<uint8_t>(dn.ports);
    n.description = dn.desc;
    if (dn.type == NodeType::kSwitch) {
      n.guid = fabric::Guid{nextSwitch++};
    } else {
      n.guid = fabric::Guid{nextCa};
      nextCa += dn.ports + 1;
    }
    n.systemGuid = n.guid;     // as ibsim reports it
    if (dn.removed) continue;  // GUIDs are taken even by removed nodes so the others do not move
    auto added = b.addNode(std::move(n));
    if (!added) return added.error();
    index[i] = *added;
    fabric::Node& node = b.node(*added);
    if (node.isSwitch()) {
      fabric::PortAttrs& a = node.ports[0].attrs;
      a.state = fabric::PortState::kActive;
      a.physState = 5;
      a.valid = true;
    } else {
      for (unsigned p = 1; p <= node.numPorts; ++p) node.ports[p].guid = fabric::Guid{node.guid.value + p};
    }
  }
  for (const Draft::DLink& l : d.links) {
    if (l.removed) continue;
    fabric::NodeIndex a = index[l.a], bb = index[l.b];
    auto r = b.connect(a, fabric::PortNum{static_cast<uint8_t>(l.pa)}, bb,
                       fabric::PortNum{static_cast<uint8_t>(l.pb)});
    if (!r) return r.error();
    for (auto [n, p] : {std::pair{a, l.pa}, std::pair{bb, l.pb}}) {
      fabric::PortAttrs& at = b.node(n).ports[p].attrs;
      at.state = fabric::PortState::kActive;
      at.physState = 5;
      at.widthActive = ws.width;
      at.speedActive = ws.speed;
      at.speedExtActive = ws.speedExt;
      at.valid = true;
    }
  }
  return std::move(b).build();
}

}  // namespace

Result<void> validateSpec(const FabricSpec& s) {
  auto positive = [](unsigned v, const char* name, unsigned max) -> Result<void> {
    if (v < 1 || v > max) return makeError(std::string(name) + " must be 1.." + std::to_string(max));
    return {};
  };
  if (s.hcaPorts != 1 && s.hcaPorts != 2) return makeError("--hca-ports must be 1 or 2");
  if (auto r = positive(s.parallel, "--parallel", kMaxPorts); !r) return r;
  if (!fabric::parseWidthSpeed(s.link))
    return makeError("--link \"" + s.link + "\" is not a width/speed like 4xQDR");
  if (s.guidBase > UINT64_MAX - 0x200000 - 2 * kMaxNodes * 3) return makeError("--guid-base is too large");
  switch (s.shape) {
    case Shape::kKaryNTree:
      if (s.k < 2 || s.k > kMaxPorts / 2)
        return makeError("--kary-ntree: K must be 2.." + std::to_string(kMaxPorts / 2));
      if (s.n < 1 || s.n > 16) return makeError("--kary-ntree: N must be 1..16");
      if (s.parallel != 1) return makeError("--parallel does not apply to --kary-ntree");
      break;
    case Shape::kFatTree:
      if (s.levels != 2 && s.levels != 3) return makeError("--fat-tree: LEVELS must be 2 or 3");
      if (s.radix < 4 || s.radix > kMaxPorts)
        return makeError("--radix must be 4.." + std::to_string(kMaxPorts));
      if (auto c = fatTreeCounts(s); !c) return c.error();
      break;
    case Shape::kMesh:
      if (auto r = positive(s.switches, "--mesh: SWITCHES", static_cast<unsigned>(kMaxNodes)); !r) return r;
      if (s.switches > 1 && (s.degree < 1 || s.degree > s.switches - 1))
        return makeError("--degree must be 1.." + std::to_string(s.switches - 1) + " for " +
                         std::to_string(s.switches) + " switches");
      if (s.switches > 2 && s.degree < 2) return makeError("--degree 1 can connect only 2 switches");
      if (uint64_t{s.hostsPerSwitch} + uint64_t{s.degree} * s.parallel > kMaxPorts)
        return makeError("--hosts-per-switch + --degree x --parallel exceeds " + std::to_string(kMaxPorts) +
                         " ports");
      break;
    case Shape::kTorus:
      if (s.dims.size() != 2 && s.dims.size() != 3)
        return makeError("--torus needs 2 or 3 dimensions (X,Y or X,Y,Z)");
      for (unsigned x : s.dims)
        if (x < 1) return makeError("--torus: every dimension must be at least 1");
      if (uint64_t{s.hostsPerSwitch} + 2 * s.dims.size() * s.parallel > kMaxPorts)
        return makeError("--hosts-per-switch + 2 x dimensions x --parallel exceeds " +
                         std::to_string(kMaxPorts) + " ports");
      break;
    case Shape::kDragonfly:
      if (s.dragonflyA < 1 || s.dragonflyH < 1) return makeError("--dragonfly: A and H must be at least 1");
      if (s.parallel != 1) return makeError("--parallel does not apply to --dragonfly");
      if (uint64_t{s.hostsPerSwitch} + s.dragonflyA - 1 + s.dragonflyH > kMaxPorts)
        return makeError("--hosts-per-switch + A-1 + H exceeds " + std::to_string(kMaxPorts) + " ports");
      break;
    case Shape::kHypercube:
      if (s.hypercubeD < 1) return makeError("--hypercube: D must be at least 1");
      if (s.parallel != 1) return makeError("--parallel does not apply to --hypercube");
      if (uint64_t{s.hostsPerSwitch} + s.hypercubeD > kMaxPorts)
        return makeError("--hosts-per-switch + D exceeds " + std::to_string(kMaxPorts) + " ports");
      break;
  }
  if (s.shape != Shape::kKaryNTree && s.shape != Shape::kFatTree && s.hostsPerSwitch == 0 && s.hcaPorts == 2)
    return makeError("--hca-ports 2 needs hosts (--hosts-per-switch)");
  if (auto size = sizeOf(s); !size) return size.error();
  return {};
}

Result<fabric::TopologyPtr> generateFabric(const FabricSpec& s) {
  if (auto r = validateSpec(s); !r) return r.error();
  Draft d;
  Rng rng(s.seed);
  switch (s.shape) {
    case Shape::kKaryNTree:
      buildKaryNTree(s, d);
      break;
    case Shape::kFatTree:
      buildFatTree(s, *fatTreeCounts(s), d);
      break;
    case Shape::kMesh:
      buildMesh(s, d, rng);
      break;
    case Shape::kTorus:
      buildTorus(s, d);
      break;
    case Shape::kDragonfly:
      buildDragonfly(s, d);
      break;
    case Shape::kHypercube:
      buildHypercube(s, d);
      break;
  }
  if (auto r = degrade(s, d, rng); !r) return r.error();
  return finish(s, d, *fabric::parseWidthSpeed(s.link));
}

IbsimSize ibsimSize(const fabric::Topology& topo) {
  IbsimSize size;
  size.nodes = topo.size();
  size.switches = topo.switches().size();
  for (const fabric::Node& n : topo.nodes()) size.ports += n.numPorts + (n.isSwitch() ? 1u : 0u);
  return size;
}

std::string ibsimFlags(const fabric::Topology& topo) {
  IbsimSize size = ibsimSize(topo);
  std::string flags;
  auto add = [&](const char* flag, size_t need, size_t def) {
    if (need <= def) return;
    if (!flags.empty()) flags += ' ';
    flags += std::string(flag) + " " + std::to_string(need);
  };
  add("-N", size.nodes, 2048);
  add("-S", size.switches, 256);
  add("-P", size.ports, 13312);
  return flags;
}

}  // namespace ibsm::tools
