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
// Repairs (routing/dfly_repair.h) route around a failed link inside the same scheme, on up to 4 VLs. The
// table of every pair is set here already, for SLs 0-6, from the kinds of its two ports alone (CA, local,
// global; routing/dfly_vls.h), so a repair only changes LFT entries and path SLs, and the VL programmer
// writes just the pairs that repaired paths start to use. A global port also knows whether its peer's group
// comes after its own in order A (group numbers) and in order B (the numbers rotated by half). A detour
// through a third group z between groups x and y is a peak when z comes after both (it goes up, then down)
// and a valley when it comes before both; SL 1 / 2 are peak / valley in order A, SL 5 / 6 in order B.
//   out local,  in CA:     VL 1 (every SL)
//   out local,  in local:  SL 1, 2, 4, 5, 6 on VL 3, SL 3 on VL 2      (the second of two local hops)
//   out local,  in global: a peak's SL on VL 0 when it came in going up in its order, else VL 2; a valley's
//                          SL the other way round
//   out global, any in:    a peak's SL on VL 0 going up in its order, else VL 2; a valley's the other way
//   everything else on VL 0, in particular SL 0 on every pair but (CA, local): a pair that only minimal
//   paths use keeps its reset table, as before.
// Rank the channel classes (link kind / VL):  L/1 < L/3 < G/0 < L/0 < G/2 < L/2.
// Claim: the paths whose hops' ranks rise strictly are deadlock-free together, whatever their SLs. A
// dependency joins two consecutive hops of one path, so it leads to a higher rank; a cycle would have to
// come back to a lower one. The path shapes that rise (L: local hop, G+/G-: global hop up/down in the
// order of the SL, [] optional):
//   SL 0        [L] G [L]      L/1 G/0 L/0          (minimal, as routed from scratch)
//   SL 0        L [L]          L/1 L/0              (inside a group, two hops where the local link is down)
//   SL 4        L L G [L]      L/1 L/3 G/0 L/0      (a local link down in the source group)
//   SL 3        [L] G L L      L/1 G/0 L/0 L/2      (a local link down in the destination group)
//   SL 1 / 5    [L] [L] G+ [L] G- [L]   L/1 L/3 G/0 L/0 G/2 L/2   (a peak)
//   SL 2 / 6    [L] [L] G- [L] G+ [L]   the same VLs                (a valley)
// Why a detour needs a peak or a valley and an SL of its own: its two global hops, and the local hops after
// each, meet the same kinds of ports (local in, global out; global in, local out), so a port pair alone
// cannot tell the first from the second; the direction of the global link can, given the SL that says which
// direction comes first. A detour through a group between the two ends in both orders has no such SL, nor
// has a path with two local hops both before and after its global hop(s), or after a detour's first global
// hop: a repair does not take them. (Order B exists because in order A the first and the last group have no
// third group outside their interval; in B they are neighbours.) A repair checks every path it changes
// against these ranks (the path's SL is the first of 0, 4, 3, 1, 2, 5, 6 under which it rises) and declines
// when a source is left without one; the route checker's VL-aware CDG confirms it. So at most 4 VLs (0-3),
// and 2 as long as nothing was repaired.
//
// Non-minimal routes (Options::dflySpread, with at least 4 VLs): collective traffic is a sequence of
// permutations, and with minimal routes all the flows of a group pair in one permutation share the pair's
// global link. So, once every LID's minimal entries are in place, a load-aware greedy chooses per destination
// (a CA's base LID) and source switch either the minimal route or a detour over one of the source switch's
// own global links to a third group, from where the route goes on minimally. The ranks are the CA ports in
// natural order of their hosts' names, as a job scheduler numbers them (defaultRanks); each route serves, per
// CA of its source switch, the one shift permutation i -> i + s in which that CA sends to the destination,
// and the greedy counts the flows of each shift on each link (shift classes, shift mod a bucket count, where
// shifts x links would exceed 32 MB). A switch's choice scores, per flow, its bandwidth (1 / the most flows
// of its shift on one link of its path, itself included) less 2x what it takes from the flows already on
// those links (1 / (k + 1) per link with k of them), less 1% of the path's all-pairs load against the cap; a
// detour is taken only when it scores strictly better and adds no link above the cap: the busiest link of the
// minimal routes, or 1.4x the busiest global link's minimal load where that is higher (a global link carries
// (CAs per group)^2 minimal routes, a local one often more). Four passes over every (destination, switch),
// the first starting from the minimal routes with their flows counted, so that early choices see the traffic
// they join.
// Who may detour: a switch with CAs, outside the destination's group, that does not leave minimally by a
// global link itself (the others of its group hand it their traffic) and where no detour to the destination
// arrives (that switch's route must stay minimal, so that no path takes a third global hop); a detour must
// arrive at a switch that does not detour, and its whole path must rise through the ranks above under some SL
// (a peak or a valley, SL 1/2/5/6). No route passes a detouring switch, so each path is G [L] G [L] from the
// detouring switch, or minimal. Deadlock freedom is that of the repairs' paths (ranks above); the path SLs go
// into RoutingTables::sl, and the route checker's VL-aware CDG confirms it. LMC's further LIDs keep their
// minimal routes. On 13 groups x 4 routers x 2 hosts: mean flow bandwidth over all shifts 0.501 instead of
// 0.253 at an all-pairs max link load of 102 instead of 100, on 3 VLs (OpenSM's dfsssp: 0.355 and 110);
// docs/BENCHMARKS.md, "Collective traffic", has the other dragonflies.
//
// AR groups (Options::computeAr). A packet's SL is fixed per (source, destination) pair, but a switch's AR
// group serves every packet to its LID, whatever port it came in by and whatever SL it carries, and each
// hop's VL comes from that switch's (input, output) table. So a member is safe only if every packet that can
// reach the switch for that LID still rises through the ranks above over it and whatever follows. Every
// group holds the LFT port's parallel links (they enter the same switch on the same kind of link: the same
// VLs after). Detours can be offered to few packets: a packet on SL 0 can take no second global hop (no SL 0
// hop is on VL 2, so a global hop after G/0 or L/0 cannot rise), nor can one on any SL that crossed a global
// link already and must still take its last. So, with Options::dflySpread, per destination of the greedy:
//   - the offering switches: every switch that detours, then, in the greedy's order, every other switch that
//     may detour (above) and that no route and no offered detour reaches. Such a switch receives only its own
//     CAs' packets, from CA ports, on one SL: no route passes a switch that detours or may detour (the routes
//     into its group's global link go to the switch that owns it, which leaves by a global link; detours
//     arrive elsewhere) and no member leads into one (below);
//   - each gets a detour SL: the one under which most of its global links lead on rising (a switch that
//     detours keeps its SL on a tie; one that routes minimally takes one only if a link qualifies, which its
//     minimal path allows: [L] G [L] rises under every detour SL, as L/1 G/0 L/0 or L/1 G/2 L/2);
//   - and offers the LFT port's parallel links, its minimal way (one that detours), and every global link
//     whose way (that link, then the routes from its far end, which no offering switch may be on) rises under
//     that SL. The far ends and every switch after them are marked reached: none of them offers detours
//     later.
// Every packet thus rises whichever members it takes (at an offering switch, by the check; elsewhere the
// members are parallel links), and the claim above makes the lot deadlock-free. An offered way is at most
// G [L] G [L] where the shortest has at least a local and a global hop: at most kArStretch (2) hops longer
// (RoutingTables::arStretch, which the route checker bounds, while its VL-aware AR CDG, which closes each
// SL's traffic over every member, confirms the rest). A switch that routes minimally but offers detours
// carries a detour SL, so the SA's PathRecords and the VL tables differ from those without AR. LMC's further
// LIDs and switch LIDs get the parallel links only. A repair takes a repaired LID's groups back to the
// parallel links (the offered ways rested on the routes that moved); a lost link leaves every group.
//
// Cost: O(switches x degree^2) to detect the groups, O(LIDs x switches x global links per group pair) to fill
// the tables; the spreading O(passes x CA LIDs x switches x global links per switch x hops x CAs per switch)
// more (1,020 switches x 1 host: about 2 s), the offered detours O(CA LIDs x switches x global links per
// switch x hops) (0.3-0.7 s there, on a shared machine).
#include <algorithm>
#include <array>
#include <numeric>
#include <string>
#include <utility>

#include "routing/ar_groups.h"
#include "routing/dfly_vls.h"
#include "routing/engine.h"
#include "routing/pattern_checker.h"
#include "routing/switch_graph.h"

namespace ibsm::routing {

namespace {

// The most hops an offered detour (G [L] G [L] from the switch that offers it) takes beyond the shortest way
// (at least a local and a global hop there, as the switch does not leave by a global link minimally).
constexpr uint8_t kArStretch = 2;

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

fabric::Result<Dragonfly> detect(const Topology& topo, const SwitchGraph& g) {
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
  // Groups numbered in the order of their lowest switch GUID: the numbers order the groups for the repairs'
  // detours (and their SLs), which must not depend on the order in which a discovery listed the switches.
  d.group.assign(S, 0);
  std::vector<uint32_t> number(S, UINT32_MAX), size;
  std::vector<fabric::Guid> lowest(S, fabric::Guid{UINT64_MAX});
  std::vector<uint32_t> roots;
  for (SwitchIndex s = 0; s < S; ++s) {
    const uint32_t r = findRoot(parent, s);
    if (lowest[r] == fabric::Guid{UINT64_MAX}) roots.push_back(r);
    lowest[r] = std::min(lowest[r], topo.node(g.node(s)).guid);
  }
  std::sort(roots.begin(), roots.end(), [&](uint32_t x, uint32_t y) { return lowest[x] < lowest[y]; });
  for (uint32_t r : roots) number[r] = static_cast<uint32_t>(size.size()), size.push_back(0);
  for (SwitchIndex s = 0; s < S; ++s) {
    d.group[s] = number[findRoot(parent, s)];
    ++size[d.group[s]];
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

// The non-minimal part of dfly's routes (Options::dflySpread), chosen once every LID's minimal entries are in
// place: per destination (a CA's base LID) and source switch, the minimal route or a detour through a third
// group over one of the source switch's own global links, whichever serves the shift permutations of the
// ranks best within a cap on the all-pairs link load (see the header comment).
class Spreader {
 public:
  struct Dest {
    uint32_t lid;
    SwitchIndex target;
    uint32_t rank;
  };

  // order: the switches in the order the greedy visits them (by GUID, so that the tables do not depend on
  // the order in which a discovery listed the switches).
  Spreader(const SwitchGraph& g, const Dragonfly& df, const std::vector<dfly::PortKind>& kind,
           const std::vector<uint32_t>& kindBase, uint8_t vls, const std::vector<SwitchIndex>& order)
      : g_(g), df_(df), kind_(kind), kindBase_(kindBase), vls_(vls), order_(order) {}

  // dests: the CAs' base LIDs with their ranks (0..ranks-1); sources[s]: the ranks of switch s's CA ports;
  // t: the tables with every LID's minimal entries. Writes the detours' entries and SLs into t.
  void run(const std::vector<Dest>& dests, const std::vector<std::vector<uint32_t>>& sources, uint32_t ranks,
           RoutingTables& t) {
    const size_t S = g_.size(), D = dests.size(), A = g_.arcs().size();
    if (D == 0 || ranks < 2) return;
    dests_ = &dests;
    sources_ = &sources;
    ranks_ = ranks;
    minimal_.resize(D * S);
    for (size_t d = 0; d < D; ++d)
      for (SwitchIndex s = 0; s < S; ++s)
        minimal_[d * S + s] = std::as_const(t.lft)[g_.node(s)][dests[d].lid];
    entry_ = minimal_;
    sl_.assign(D * S, 0);
    // Shift counters: flows of each shift (or of each class of shifts, shift mod buckets, where the fabric is
    // too large for one counter per shift and arc) on each arc.
    buckets_ = static_cast<uint32_t>(std::clamp<size_t>(kCounterBudget / std::max<size_t>(A, 1), 1, ranks));
    cong_.assign(size_t{buckets_} * A, 0);
    load_.assign(A, 0);
    for (size_t d = 0; d < D; ++d)
      for (SwitchIndex s = 0; s < S; ++s) {
        if (sources[s].empty() || s == dests[d].target) continue;
        if (walkFrom(d, s))
          account(d, s, +1);  // clears path_
        else
          path_.clear();
      }
    // The cap: the busiest link of the minimal routes, or (where the global links carry less, as local links
    // usually carry more) a share above the busiest global link's minimal load that detours may fill.
    uint64_t most = 0, mostGlobal = 0;
    for (uint32_t a = 0; a < A; ++a) {
      most = std::max(most, load_[a]);
      if (dfly::isGlobal(kindOf(g_.arcs()[a].from, g_.arcs()[a].port)))
        mostGlobal = std::max(mostGlobal, load_[a]);
    }
    cap_ = std::max<uint64_t>(most, mostGlobal * kCapNum / kCapDen);
    arrivals_.assign(S, 0);
    for (unsigned pass = 0; pass < kPasses; ++pass)
      for (size_t d = 0; d < D; ++d) choose(d);
    // Write back.
    for (size_t d = 0; d < D; ++d)
      for (SwitchIndex s = 0; s < S; ++s) {
        if (entry_[d * S + s] == minimal_[d * S + s]) continue;
        t.lft[g_.node(s)][dests[d].lid] = entry_[d * S + s];
        ++detours_;
        setSl(t, s, dests[d].lid, sl_[d * S + s]);
        path_.clear();
        walkFrom(d, s);
        uint8_t top = 0;
        dfly::risingSl(
            path_.size(), [this](size_t i) { return hopKind(i); }, vls_, &top);
        maxVl_ = std::max(maxVl_, top);
      }
    if (detours_) t.slLayers = std::max<uint8_t>(t.slLayers, static_cast<uint8_t>(maxVl_ + 1));
  }

  // The AR groups of the switches that may offer detours (Options::computeAr; see "AR groups" in the
  // header), once run() chose the routes: per destination the switches that detour, then, in the greedy's
  // order, the others that may detour and that no route or offered detour reaches, each with the SL under
  // which the most of its detours rise (written into t). Tells group(s, LID, ports) of each.
  template <typename Group>
  void offer(RoutingTables& t, Group&& group) {
    const size_t S = g_.size();
    const auto& arcs = g_.arcs();
    for (size_t d = 0; dests_ && d < dests_->size(); ++d) {
      const uint32_t lid = (*dests_)[d].lid, y = df_.group[(*dests_)[d].target];
      const uint8_t* e = entry_.data() + d * S;
      const uint8_t* m = minimal_.data() + d * S;
      role_.assign(S, kFree);
      for (SwitchIndex s = 0; s < S; ++s)
        if (e[s] != m[s]) role_[s] = kOffers;
      for (SwitchIndex s = 0; s < S; ++s)
        if (e[s] != m[s]) reach(d, g_.arcOfPort(s, e[s]));
      for (const bool detoured : {true, false})
        for (SwitchIndex s : order_) {
          const uint32_t ma = g_.arcOfPort(s, m[s]);
          if ((e[s] != m[s]) != detoured || (!detoured && role_[s] != kFree) || (*sources_)[s].empty() ||
              df_.group[s] == y || ma == kNoArc || dfly::isGlobal(kindOf(s, m[s])))
            continue;
          // The LFT port's parallel links, the minimal way of a switch that detours and every global link,
          // each with the SLs under which its way rises; the SL under which the most global links do (the one
          // it has first), and the ways that rise under it.
          const uint32_t ea = g_.arcOfPort(s, e[s]);
          std::array<uint8_t, dfly::kSls> top{};
          ways_.clear();
          for (uint32_t a = g_.arcBegin(s); a < g_.arcEnd(s); ++a)
            if (arcs[a].to == arcs[ea].to || arcs[a].to == arcs[ma].to ||
                dfly::isGlobal(kindOf(s, arcs[a].port)))
              ways_.emplace_back(a, risesUnder(d, a, top));
          const uint8_t lftSls = risesUnder(d, ea, top);
          int sl = detoured ? sl_[d * S + s] : -1;
          size_t most = 0;
          for (uint8_t k : dfly::kSlOrder) {
            if (!dfly::isDetour(k) || !(lftSls >> k & 1)) continue;
            size_t n = 0;
            for (const auto& [a, sls] : ways_)
              n += (sls >> k & 1) && arcs[a].to != arcs[ea].to && dfly::isGlobal(kindOf(s, arcs[a].port));
            if (sl < 0 || n > most) sl = k, most = n;
          }
          if (sl < 0 || (most == 0 && !detoured)) continue;
          PortMask ports;
          role_[s] = kOffers;
          for (const auto& [a, sls] : ways_)
            if (sls >> sl & 1) {
              ports.set(arcs[a].port);
              reach(d, a);
            }
          maxVl_ = std::max(maxVl_, top[sl]);
          setSl(t, s, lid, static_cast<uint8_t>(sl));
          group(s, lid, ports);
        }
    }
    t.slLayers = std::max<uint8_t>(t.slLayers, static_cast<uint8_t>(maxVl_ + 1));
  }

 private:
  static constexpr size_t kCounterBudget = size_t{1} << 25;  // bytes of shift counters
  static constexpr unsigned kPasses = 4;
  static constexpr uint64_t kCapNum = 7, kCapDen = 5;

  dfly::PortKind kindOf(SwitchIndex s, unsigned port) const {
    return kindBase_[s] + port < kindBase_[s + 1] ? kind_[kindBase_[s] + port] : dfly::kNone;
  }
  // The kinds of the ports hop i of path_ leaves and enters by (for dfly::risingSl).
  std::pair<dfly::PortKind, dfly::PortKind> hopKind(size_t i) const {
    const auto& arc = g_.arcs()[path_[i]];
    return {kindOf(arc.from, arc.port), kindOf(arc.to, arc.peerPort)};
  }
  // Appends the route of dest d from u over the current entries to path_; false when it does not arrive.
  bool walkFrom(size_t d, SwitchIndex u) {
    const size_t S = g_.size();
    const SwitchIndex target = (*dests_)[d].target;
    while (u != target) {
      const uint32_t a = path_.size() > 8 ? kNoArc : g_.arcOfPort(u, entry_[d * S + u]);
      if (a == kNoArc) return false;
      path_.push_back(a);
      u = g_.arcs()[a].to;
    }
    return true;
  }
  void setSl(RoutingTables& t, SwitchIndex s, uint32_t lid, uint8_t sl) const {
    auto& row = t.sl[g_.node(s)];
    if (row.size() <= lid) row.resize(std::as_const(t.lft)[g_.node(s)].size(), 0);
    row[lid] = sl;
  }
  // The SLs (bit i: SL i) under which the way of dest d over arc a and the routes from its head, which no
  // switch that offers detours may be on, rises from a CA of a's tail (see offer); the highest VL of the way
  // under each into top.
  uint8_t risesUnder(size_t d, uint32_t a, std::array<uint8_t, dfly::kSls>& top) {
    path_.assign(1, a);
    bool ok = walkFrom(d, g_.arcs()[a].to);
    for (uint32_t h : path_) ok = ok && role_[g_.arcs()[h].to] != kOffers;
    uint8_t sls = 0;
    for (uint8_t sl = 0; ok && sl < dfly::kSls; ++sl) {
      uint8_t vl = 0;
      if (!dfly::rises(
              path_.size(), [this](size_t i) { return hopKind(i); }, sl, vls_, &vl))
        continue;
      sls = static_cast<uint8_t>(sls | 1u << sl);
      top[sl] = std::max(top[sl], vl);
    }
    path_.clear();
    return sls;
  }
  // Marks the switches on the way of dest d over arc a as reached (they may offer no detour).
  void reach(size_t d, uint32_t a) {
    path_.assign(1, a);
    walkFrom(d, g_.arcs()[a].to);
    for (uint32_t h : path_)
      if (role_[g_.arcs()[h].to] == kFree) role_[g_.arcs()[h].to] = kReached;
    path_.clear();
  }
  uint32_t shiftBucket(size_t d, uint32_t source) const {
    return ((*dests_)[d].rank + ranks_ - source) % ranks_ % buckets_;
  }
  // Adds (sign +1) or removes (-1) the flows of switch s's CAs to dest d along path_.
  void account(size_t d, SwitchIndex s, int sign) {
    const size_t A = g_.arcs().size();
    const auto& src = (*sources_)[s];
    for (uint32_t a : path_) {
      if (sign > 0)
        load_[a] += src.size();
      else
        load_[a] -= src.size();
    }
    for (uint32_t r : src) {
      if (r == (*dests_)[d].rank) continue;
      uint8_t* c = cong_.data() + size_t{shiftBucket(d, r)} * A;
      for (uint32_t a : path_)
        if (sign > 0 ? c[a] < 255 : c[a] > 0) c[a] = static_cast<uint8_t>(c[a] + sign);
    }
    path_.clear();
  }
  // How well the flows of switch s's CAs to dest d would fare on path_ (higher is better): each flow's
  // bandwidth (1 / the most flows of its shift on one link of its path, itself included) less what it takes
  // from the flows already there, and a little for the links' all-pairs load.
  double score(size_t d, SwitchIndex s) const {
    const size_t A = g_.arcs().size();
    double v = 0;
    for (uint32_t r : (*sources_)[s]) {
      if (r == (*dests_)[d].rank) continue;
      const uint8_t* c = cong_.data() + size_t{shiftBucket(d, r)} * A;
      unsigned most = 0;
      double harm = 0;
      for (uint32_t a : path_) {
        most = std::max<unsigned>(most, c[a]);
        if (c[a]) harm += 1.0 / (c[a] + 1.0);
      }
      v += 1.0 / (most + 1.0) - kHarm * harm;
    }
    double l = 0;
    for (uint32_t a : path_) l += static_cast<double>(load_[a]);
    return v - kLoad * l / static_cast<double>(cap_);
  }
  static constexpr double kHarm = 2, kLoad = 0.01;

  // Chooses the route of every source switch to dest d again, one switch at a time.
  void choose(size_t d) {
    const size_t S = g_.size();
    const auto& arcs = g_.arcs();
    const SwitchIndex target = (*dests_)[d].target;
    const uint32_t y = df_.group[target];
    uint8_t* e = entry_.data() + d * S;
    const uint8_t* m = minimal_.data() + d * S;
    std::fill(arrivals_.begin(), arrivals_.end(), 0);
    auto detourEnd = [&](SwitchIndex s) -> SwitchIndex {  // where s's detour arrives, or kNoSwitch
      if (e[s] == m[s]) return kNoSwitch;
      return arcs[g_.arcOfPort(s, e[s])].to;
    };
    for (SwitchIndex s = 0; s < S; ++s)
      if (const SwitchIndex r = detourEnd(s); r != kNoSwitch) ++arrivals_[r];
    for (SwitchIndex s : order_) {
      // Only a switch with CAs, outside the destination's group, that does not leave by a global link
      // minimally itself and that no detour arrives at (whose route must stay minimal) may detour.
      if ((*sources_)[s].empty() || df_.group[s] == y || arrivals_[s]) continue;
      const uint32_t ma = g_.arcOfPort(s, m[s]);
      if (ma == kNoArc || dfly::isGlobal(kindOf(s, m[s]))) continue;
      const SwitchIndex old = detourEnd(s);
      if (!walkFrom(d, s)) {
        path_.clear();
        continue;
      }
      account(d, s, -1);
      if (old != kNoSwitch) --arrivals_[old];
      const uint64_t w = (*sources_)[s].size();
      // The minimal route first: a detour must do strictly better.
      e[s] = m[s];
      walkFrom(d, s);
      double best = score(d, s);
      uint8_t bestPort = m[s], bestSl = 0;
      path_.clear();
      for (uint32_t a = g_.arcBegin(s); a < g_.arcEnd(s); ++a) {
        const SwitchIndex r = arcs[a].to;
        if (!dfly::isGlobal(kindOf(s, arcs[a].port)) || df_.group[r] == y || detourEnd(r) != kNoSwitch)
          continue;
        path_.assign(1, a);
        bool ok = walkFrom(d, r);
        for (size_t i = 0; ok && i < path_.size(); ++i) ok = load_[path_[i]] + w <= cap_;
        const int sl = ok ? dfly::risingSl(
                                path_.size(), [this](size_t i) { return hopKind(i); }, vls_)
                          : -1;
        if (sl > 0) {
          const double v = score(d, s);
          if (v > best) best = v, bestPort = arcs[a].port, bestSl = static_cast<uint8_t>(sl);
        }
        path_.clear();
      }
      e[s] = bestPort;
      sl_[d * S + s] = bestSl;
      if (const SwitchIndex r = detourEnd(s); r != kNoSwitch) ++arrivals_[r];
      walkFrom(d, s);
      account(d, s, +1);
    }
  }

  const SwitchGraph& g_;
  const Dragonfly& df_;
  const std::vector<dfly::PortKind>& kind_;
  const std::vector<uint32_t>& kindBase_;
  const uint8_t vls_;
  const std::vector<SwitchIndex>& order_;
  const std::vector<Dest>* dests_ = nullptr;
  const std::vector<std::vector<uint32_t>>* sources_ = nullptr;
  uint32_t ranks_ = 0, buckets_ = 1;
  std::vector<uint8_t> minimal_, entry_, sl_, cong_;
  std::vector<uint64_t> load_;
  std::vector<uint32_t> arrivals_, path_;
  enum Role : uint8_t { kFree, kReached, kOffers };
  std::vector<Role> role_;                          // offer(): per switch, for the destination at hand
  std::vector<std::pair<uint32_t, uint8_t>> ways_;  // offer(): (arc, risesUnder) of the switch at hand
  uint64_t cap_ = 0;
  uint8_t maxVl_ = 0;
  size_t detours_ = 0;
};

class DflyEngine final : public Engine {
 public:
  std::string_view name() const override { return "dfly"; }

  fabric::Result<RoutingTables> compute(const Topology& topo, const LidAssignment& lids,
                                        const Options& options) const override {
    SwitchGraph g(topo);
    auto detected = detect(topo, g);
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
    t.dflyVls = std::min<uint8_t>(options.vlLayers, 15);
    t.dflyGroup.assign(topo.size(), 0);
    const uint32_t maxLid = lids.maxLid().value;
    // Port kinds of every switch: kind[kindBase[s] + port].
    std::vector<dfly::PortKind> kind;
    std::vector<uint32_t> kindBase(S + 1, 0);
    const uint32_t groups = static_cast<uint32_t>(df.globals.size());
    for (SwitchIndex s = 0; s < S; ++s) {
      const fabric::NodeIndex n = g.node(s);
      t.dflyGroup[n] = df.group[s];
      t.lft[n].assign(maxLid + 1u, kNoPort);
      const fabric::Node& node = topo.node(n);
      // Every pair's table, for the SLs of repairs too (see above): VL 1 from a CA port to a local port is
      // all that the paths routed here use besides VL 0.
      kindBase[s] = static_cast<uint32_t>(kind.size());
      kind.resize(kind.size() + node.numPorts + 1u, dfly::kNone);
      dfly::PortKind* k = kind.data() + kindBase[s];
      for (unsigned q = 1; q <= node.numPorts; ++q) {
        const fabric::Port& p = node.ports[q];
        if (p.connected() && !topo.node(p.peerNode).isSwitch() &&
            portUsable(topo, n, fabric::PortNum{static_cast<uint8_t>(q)}))
          k[q] = dfly::kCa;
      }
      for (uint32_t a = g.arcBegin(s); a < g.arcEnd(s); ++a) {
        const uint32_t x = df.group[s], y = df.group[arcs[a].to];
        k[arcs[a].port] = x == y ? dfly::kLocal : dfly::globalPort(x, y, groups);
      }
      for (unsigned in = 1; in <= node.numPorts; ++in)
        for (uint32_t a = g.arcBegin(s); a < g.arcEnd(s); ++a) {
          const uint8_t out = arcs[a].port;
          if (in == out || k[in] == dfly::kNone) continue;
          if (const uint64_t table = dfly::packedTable(k[in], k[out]))
            t.slToVl.setPacked(n, node.numPorts, in, out, table);
        }
    }
    kindBase[S] = static_cast<uint32_t>(kind.size());
    std::vector<ArGroupBuilder> ar;
    if (options.computeAr) ar.assign(S, ArGroupBuilder(maxLid + 1u, options.arGroupCap));
    // The port from s to its neighbour u: the parallel links take the destinations in turn; next[s] = u.
    std::vector<uint32_t> dealt(arcs.size(), 0);
    std::vector<SwitchIndex> next(S, kNoSwitch);
    auto range = [&](SwitchIndex s, SwitchIndex u) {
      const auto& tw = df.toward[s];
      auto lo = std::lower_bound(tw.begin(), tw.end(), u,
                                 [&](uint32_t a, SwitchIndex v) { return arcs[a].to < v; });
      auto hi = lo;
      while (hi != tw.end() && arcs[*hi].to == u) ++hi;
      return std::pair{lo, hi};
    };
    auto portTo = [&](SwitchIndex s, SwitchIndex u) -> uint8_t {
      auto [lo, hi] = range(s, u);
      next[s] = u;
      return arcs[lo[dealt[*lo]++ % (hi - lo)]].port;
    };
    const bool nonMinimal = options.dflySpread && options.vlLayers >= 4;
    t.dflySpread = nonMinimal;
    if (nonMinimal && !ar.empty()) t.arStretch = kArStretch;
    // The CAs' base LIDs with their ranks for the spreader: hosts in natural name order, as a job scheduler
    // numbers them (defaultRanks, as the pattern checker and the rebalance take them).
    std::vector<Spreader::Dest> dests;
    std::vector<uint32_t> rankOf;
    uint32_t ranks = 0;
    if (nonMinimal) {
      rankOf.assign(maxLid + 1u, UINT32_MAX);
      for (const Rank& r : defaultRanks(topo, lids)) rankOf[lids.base(r.node, r.port).value] = ranks++;
    }
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
        next[s] = kNoSwitch;
        if (s != target && x == y) {
          port = portTo(s, target);
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
          port = via.from == s ? portTo(s, via.to) : portTo(s, via.from);
        }
        t.lft[g.node(s)][l] = port;
      }
      if (nonMinimal && leaves.toCa && rankOf[l] != UINT32_MAX)
        dests.push_back(Spreader::Dest{l, target, rankOf[l]});
      if (!ar.empty())
        for (SwitchIndex s = 0; s < S; ++s) {
          if (next[s] == kNoSwitch) continue;
          auto [lo, hi] = range(s, next[s]);
          if (hi - lo < 2) continue;
          PortMask m;
          for (auto it = lo; it != hi; ++it) m.set(arcs[*it].port);
          ar[s].set(lid, m, t.lft[g.node(s)][l]);
        }
    }
    if (nonMinimal) {
      std::vector<std::vector<uint32_t>> sources(S);
      for (const auto& d : dests) sources[d.target].push_back(d.rank);
      t.sl.resize(topo.size());
      std::vector<SwitchIndex> order(S);
      std::iota(order.begin(), order.end(), SwitchIndex{0});
      std::sort(order.begin(), order.end(), [&](SwitchIndex a, SwitchIndex b) {
        return topo.node(g.node(a)).guid < topo.node(g.node(b)).guid;
      });
      Spreader spreader(g, df, kind, kindBase, t.dflyVls, order);
      spreader.run(dests, sources, ranks, t);
      if (!ar.empty())
        spreader.offer(t, [&](SwitchIndex s, uint32_t l, const PortMask& ports) {
          const fabric::Lid lid{static_cast<uint16_t>(l)};
          ar[s].set(lid, ports, std::as_const(t.lft)[g.node(s)][lid.value]);
        });
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
