// Min-hop routing, as OpenSM's minhop: every switch sends each LID out of one of its ports on a shortest path
// (over switch-switch links) to the switch the LID's port is attached to; among the equal-hop ports it takes
// the one that carries the fewest CA routes so far, so destinations spread evenly. The 2^LMC LIDs of one port
// are steered to different neighbour systems/switches where possible, so LMC gives distinct paths.
// Equal-count ties are broken by a seeded hash (see routeSwitch). Routes to switch LIDs are not counted (as
// in OpenSM). With options.computeAr, each (switch, LID)'s AR group is the set of all its equal-hop egress
// ports.
//
// Cost: an all-pairs BFS over switches (S x S hop matrix), then per switch one pass building its equal-hop
// port lists per target switch (O(S x ports)) and one pass over the LIDs (O(LIDs x equal-hop ports)).
// Switches are independent, so they are spread over options.threads workers; the result does not depend on
// the thread count.
#include <algorithm>

#include "routing/ar_groups.h"
#include "routing/engine.h"
#include "routing/mix.h"
#include "routing/parallel.h"
#include "routing/switch_graph.h"

namespace ibsm::routing {

using fabric::Node;

namespace {

// What the per-switch passes share (read-only): the switch graph, hop matrix and, per LID, where it leaves
// the switch fabric.
struct MinHopPlan {
  struct Dest {
    SwitchIndex sw = kNoSwitch;  // switch the LID's port is (attached to); kNoSwitch: not routable
    uint8_t lastPort = kNoPort;  // egress port on that switch: 0 for its own LID, else the CA's link
    bool toCa = false;
    uint32_t endport = 0;  // serial of the owning endport (LIDs of one LMC range share it)
  };
  MinHopPlan(const Topology& topo, const LidAssignment& lids, unsigned threads);
  SwitchGraph graph;
  HopMatrix hops;
  std::vector<Dest> dests;      // by LID
  std::vector<uint32_t> sysOf;  // switch -> dense system id
  bool multiLid = false;        // some endport has more than one LID (LMC > 0)
};

MinHopPlan::MinHopPlan(const Topology& topo, const LidAssignment& lids, unsigned threads)
    : graph(topo), hops(graph, threads) {
  uint32_t maxLid = lids.maxLid().value;
  dests.assign(maxLid + 1u, Dest{});
  uint32_t endport = 0;
  LidOwner prev;
  for (uint32_t l = 1; l <= maxLid; ++l) {
    LidOwner o = lids.owner(Lid{static_cast<uint16_t>(l)});
    if (o.node == fabric::kNoNode || o.node >= topo.size()) continue;
    if (o.node != prev.node || o.port != prev.port)
      ++endport;
    else
      multiLid = true;
    prev = o;
    Dest& d = dests[l];
    d.endport = endport;
    const LidExit leaves = lidExit(topo, graph, o.node, o.port);
    if (leaves.sw == kNoSwitch) continue;
    d.sw = leaves.sw;
    d.lastPort = leaves.port;
    d.toCa = leaves.toCa;
  }

  // Neighbour identities for the "different neighbour" preferences: dense ids of node and system GUIDs.
  sysOf.resize(graph.size());
  std::vector<std::pair<uint64_t, SwitchIndex>> sys;
  for (SwitchIndex s = 0; s < graph.size(); ++s) {
    const Node& n = topo.node(graph.node(s));
    sys.emplace_back(n.systemGuid.value != 0 ? n.systemGuid.value : n.guid.value, s);
  }
  std::sort(sys.begin(), sys.end());
  uint32_t id = 0;
  for (size_t i = 0; i < sys.size(); ++i) {
    if (i > 0 && sys[i].first != sys[i - 1].first) ++id;
    sysOf[sys[i].second] = id;
  }
}

// Per-worker scratch, reused from switch to switch.
struct Scratch {
  std::vector<uint32_t> candBegin;  // target switch -> offset into cands (size S + 1)
  std::vector<uint8_t> cands;       // local arc slots (0..arcs of s - 1), by target, in port order
  std::vector<uint32_t> fill;
  std::vector<uint32_t> portCount;  // local arc slot -> CA routes assigned
  std::vector<uint32_t> nbrCount;   // local neighbour slot -> CA routes assigned
  std::vector<uint32_t> nbrSlot;    // local arc slot -> neighbour slot
  std::vector<uint32_t> usedNode;   // neighbour switch -> endport serial that last used it
  std::vector<uint32_t> usedSys;    // system id -> endport serial that last used it
  std::vector<SwitchIndex> slotNode;
  std::vector<uint32_t> slotSys;
  std::vector<uint32_t> arSet;  // target switch -> interned AR set (kArSetUnset until first needed)
};

constexpr uint32_t kArSetUnset = UINT32_MAX - 1;

// Fills one switch's LFT and, when ar is given, reports every LID's equal-hop ports as its AR set (one
// interned set per target switch: all LIDs behind one switch share it). kLmc: LIDs of one endport steer to
// different neighbours.
//
// Ties (equal counts) are broken by a hash of (seed, switch, LID, port), like OpenSM's scatter_ports, not by
// the lowest port as OpenSM does by default: with the lowest port every switch runs the same round-robin over
// the same destination order, and on 3-level fat trees the rounds of leaves and spines alias, so a spine
// sends all the destinations its leaves hand it out of one up-port (max link load 18x the mean on a
// 11,664-host tree; with the hash 1.25x). On 2-level trees both give the same perfect balance.
template <bool kLmc>
void routeSwitch(const MinHopPlan& plan, SwitchIndex s, LftRow& lft, ArGroupBuilder* ar, uint64_t seed,
                 Scratch& sc) {
  const SwitchGraph& g = plan.graph;
  const size_t S = g.size();
  const uint32_t a0 = g.arcBegin(s), a1 = g.arcEnd(s);
  const uint32_t nArcs = a1 - a0;
  const auto& arcs = g.arcs();
  const uint16_t* mine = plan.hops.row(s);

  // Equal-hop egress arcs per target switch, in port order (CSR: count, prefix, fill). A switch has at most
  // 255 ports, so a local arc slot fits a byte.
  sc.candBegin.assign(S + 1, 0);
  for (uint32_t a = a0; a < a1; ++a) {
    const uint16_t* theirs = plan.hops.row(arcs[a].to);
    for (size_t t = 0; t < S; ++t)
      sc.candBegin[t + 1] += (mine[t] != kUnreachable && theirs[t] + 1u == mine[t]);
  }
  for (size_t t = 0; t < S; ++t) sc.candBegin[t + 1] += sc.candBegin[t];
  sc.cands.resize(sc.candBegin[S]);
  sc.fill.assign(sc.candBegin.begin(), sc.candBegin.end() - 1);
  for (uint32_t a = a0; a < a1; ++a) {
    const uint16_t* theirs = plan.hops.row(arcs[a].to);
    for (size_t t = 0; t < S; ++t)
      if (mine[t] != kUnreachable && theirs[t] + 1u == mine[t])
        sc.cands[sc.fill[t]++] = static_cast<uint8_t>(a - a0);
  }

  // Per local arc slot: its neighbour slot (parallel links to one neighbour share one), neighbour switch and
  // neighbour system, so the selection loop touches only these small arrays.
  sc.nbrSlot.resize(nArcs);
  sc.slotNode.resize(nArcs);
  sc.slotSys.resize(nArcs);
  std::vector<SwitchIndex> nbrs;
  for (uint32_t i = 0; i < nArcs; ++i) {
    SwitchIndex to = arcs[a0 + i].to;
    auto it = std::find(nbrs.begin(), nbrs.end(), to);
    sc.nbrSlot[i] = static_cast<uint32_t>(it - nbrs.begin());
    if (it == nbrs.end()) nbrs.push_back(to);
    sc.slotNode[i] = to;
    sc.slotSys[i] = plan.sysOf[to];
  }
  sc.portCount.assign(nArcs, 0);
  sc.nbrCount.assign(nbrs.size(), 0);
  if (kLmc) {
    sc.usedNode.assign(S, 0);
    sc.usedSys.assign(S, 0);
  }

  const size_t maxLid = plan.dests.size();
  lft.assign(maxLid, kNoPort);
  if (ar) sc.arSet.assign(S, kArSetUnset);
  for (size_t l = 1; l < maxLid; ++l) {
    const MinHopPlan::Dest& d = plan.dests[l];
    if (d.sw == kNoSwitch) continue;
    if (d.sw == s) {
      lft[l] = d.lastPort;  // the LID is this switch's own port 0, or a CA port linked to it
      continue;
    }
    const uint32_t c0 = sc.candBegin[d.sw], c1 = sc.candBegin[d.sw + 1];
    if (c0 == c1) continue;  // unreachable from here
    // Best candidate, by the smallest key: (LMC only) a neighbour system, then a neighbour switch, that no
    // other LID of this endport uses; then the fewest CA routes on the port, then on the neighbour (spreads
    // over neighbour switches when parallel links tie); then the tie-break hash. Counts stay below 2^16 (one
    // per LID), so the fields cannot overlap.
    uint32_t best = sc.cands[c0];
    if (c1 - c0 > 1) {
      const uint64_t lidSalt = mix(seed ^ (uint64_t{s} << 20) ^ l);
      auto key = [&](uint32_t slot) {
        uint64_t k = (uint64_t{sc.portCount[slot]} << 40) | (uint64_t{sc.nbrCount[sc.nbrSlot[slot]]} << 20);
        if (kLmc)
          k |= (uint64_t{sc.usedSys[sc.slotSys[slot]] == d.endport} << 63) |
               (uint64_t{sc.usedNode[sc.slotNode[slot]] == d.endport} << 62);
        k |= ((lidSalt + slot) * 0x9e3779b97f4a7c15ull) >> 44;  // 20 bits, cheap per candidate
        return k;
      };
      uint64_t bestKey = key(best);
      for (uint32_t c = c0 + 1; c < c1; ++c) {
        uint32_t slot = sc.cands[c];
        uint64_t k = key(slot);
        if (k < bestKey) {
          bestKey = k;
          best = slot;
        }
      }
    }
    lft[l] = arcs[a0 + best].port;
    // Routes to switch LIDs (management traffic) do not count, as in OpenSM, so they cannot skew the CA
    // balance.
    if (d.toCa) {
      ++sc.portCount[best];
      ++sc.nbrCount[sc.nbrSlot[best]];
    }
    if (kLmc) {
      sc.usedNode[sc.slotNode[best]] = d.endport;
      sc.usedSys[sc.slotSys[best]] = d.endport;
    }
    if (ar) {
      uint32_t& set = sc.arSet[d.sw];
      if (set == kArSetUnset) {
        PortMask m;
        for (uint32_t c = c0; c < c1; ++c) m.set(arcs[a0 + sc.cands[c]].port);
        set = ar->intern(m);
      }
      ar->assign(Lid{static_cast<uint16_t>(l)}, set);
    }
  }
}

using RouteFn = void (*)(const MinHopPlan&, SwitchIndex, LftRow&, ArGroupBuilder*, uint64_t, Scratch&);

class MinHopEngine final : public Engine {
 public:
  std::string_view name() const override { return "minhop"; }

  fabric::Result<RoutingTables> compute(const Topology& topo, const LidAssignment& lids,
                                        const Options& options) const override {
    MinHopPlan plan(topo, lids, options.threads);
    RoutingTables t;
    t.engine = "minhop";
    t.lft.resize(topo.size());
    t.upKey.assign(topo.size(), 0);  // every hop "down": plain shortest paths
    const size_t S = plan.graph.size();
    std::vector<Scratch> scratch(workerCount(S, options.threads));
    if (options.computeAr) t.ar.resize(topo.size());
    const bool lmc = plan.multiLid;
    RouteFn fn = lmc ? &routeSwitch<true> : &routeSwitch<false>;
    parallelFor(S, options.threads, [&](unsigned worker, size_t i) {
      SwitchIndex s = static_cast<SwitchIndex>(i);
      NodeIndex n = plan.graph.node(s);
      if (!options.computeAr) {
        fn(plan, s, t.lft[n], nullptr, options.seed, scratch[worker]);
        return;
      }
      ArGroupBuilder ar(plan.dests.size(), options.arGroupCap);
      fn(plan, s, t.lft[n], &ar, options.seed, scratch[worker]);
      t.ar[n] = ar.build();
    });
    return t;
  }
};

}  // namespace

std::unique_ptr<Engine> makeMinHopEngine() {
  return std::make_unique<MinHopEngine>();
}

}  // namespace ibsm::routing
