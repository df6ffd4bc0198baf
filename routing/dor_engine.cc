// Dimension-order routing ("dor") for hypercubes: e-cube routing, which corrects the differing address bits
// of source and destination switch from the lowest dimension up. Every path is minimal, the channel
// dependencies only ever go from a lower dimension to a higher one, so the routes are deadlock-free on one
// VL, and on a full hypercube under uniform all-to-all traffic every link carries the same load.
//
// The coordinates are detected, not configured: switch 0 gets address 0, its D switch neighbours (in port
// order) the D unit vectors, and every other switch the OR of the addresses of its neighbours one hop closer
// to switch 0. The fabric is a hypercube when that gives 2^D distinct addresses and every switch-to-switch
// link joins two addresses that differ in exactly one bit; otherwise the engine declines with the reason.
// Tori and meshes (dimension order with datelines) are not detected yet and are declined as well.
//
// Cost: two BFS-like passes over the switches, then O(LIDs x switches) to fill the tables.
#include <bit>
#include <string>

#include "routing/engine.h"
#include "routing/switch_graph.h"

namespace ibsm::routing {

namespace {

class DorEngine final : public Engine {
 public:
  std::string_view name() const override { return "dor"; }

  fabric::Result<RoutingTables> compute(const Topology& topo, const LidAssignment& lids,
                                        const Options&) const override {
    SwitchGraph g(topo);
    const size_t S = g.size();
    const auto& arcs = g.arcs();
    auto decline = [&](const std::string& why) {
      return fabric::makeError("dor: not a hypercube (" + why + ")");
    };
    if (S < 2 || !std::has_single_bit(S)) return decline(std::to_string(S) + " switches is no power of 2");
    const unsigned D = static_cast<unsigned>(std::countr_zero(S));
    // Distinct switch neighbours of each switch, and the port towards each (the lowest one).
    auto neighbours = [&](SwitchIndex s) {
      std::vector<std::pair<SwitchIndex, uint8_t>> n;
      for (uint32_t a = g.arcBegin(s); a < g.arcEnd(s); ++a) {
        bool seen = false;
        for (const auto& x : n) seen = seen || x.first == arcs[a].to;
        if (!seen) n.emplace_back(arcs[a].to, arcs[a].port);
      }
      return n;
    };
    for (SwitchIndex s = 0; s < S; ++s)
      if (neighbours(s).size() != D)
        return decline("'" + topo.node(g.node(s)).description + "' has " +
                       std::to_string(neighbours(s).size()) + " switch neighbours, not " + std::to_string(D));
    constexpr uint32_t kNone = UINT32_MAX;
    std::vector<uint32_t> addr(S, kNone), dist(S, kNone);
    std::vector<SwitchIndex> queue{0};
    addr[0] = 0;
    dist[0] = 0;
    unsigned bit = 0;
    for (const auto& [to, port] : neighbours(0)) {
      addr[to] = 1u << bit++;
      dist[to] = 1;
      queue.push_back(to);
    }
    for (size_t q = 1; q < queue.size(); ++q) {
      SwitchIndex u = queue[q];
      for (const auto& [v, port] : neighbours(u)) {
        if (dist[v] == kNone) {
          dist[v] = dist[u] + 1;
          addr[v] = 0;
          queue.push_back(v);
        }
        if (dist[v] == dist[u] + 1) addr[v] |= addr[u];
      }
    }
    std::vector<SwitchIndex> at(S, kNoSwitch);
    for (SwitchIndex s = 0; s < S; ++s) {
      if (addr[s] == kNone) return decline("the switches are not connected");
      if (addr[s] >= S || at[addr[s]] != kNoSwitch)
        return decline("'" + topo.node(g.node(s)).description + "' gets no address of its own");
      at[addr[s]] = s;
    }
    // Port of each switch per dimension.
    std::vector<uint8_t> portOf(S * D, kNoPort);
    for (SwitchIndex s = 0; s < S; ++s)
      for (const auto& [v, port] : neighbours(s)) {
        uint32_t diff = addr[s] ^ addr[v];
        if (!std::has_single_bit(diff))
          return decline("the link '" + topo.node(g.node(s)).description + "' port " + std::to_string(port) +
                         " joins switches that differ in more than one dimension");
        portOf[s * D + static_cast<unsigned>(std::countr_zero(diff))] = port;
      }

    RoutingTables t;
    t.engine = "dor";
    t.lft.resize(topo.size());
    const uint32_t maxLid = lids.maxLid().value;
    for (SwitchIndex s = 0; s < S; ++s) t.lft[g.node(s)].assign(maxLid + 1u, kNoPort);
    for (uint32_t l = 1; l <= maxLid; ++l) {
      LidOwner o = lids.owner(Lid{static_cast<uint16_t>(l)});
      if (o.node == fabric::kNoNode || o.node >= topo.size()) continue;
      const fabric::Node& n = topo.node(o.node);
      SwitchIndex target = kNoSwitch;
      uint8_t last = 0;
      if (n.isSwitch()) {
        target = g.index(o.node);
      } else if (o.port.value >= 1 && o.port.value <= n.numPorts) {
        const fabric::Port& p = n.ports[o.port.value];
        if (!p.connected() || !portUsable(topo, o.node, o.port)) continue;
        target = g.index(p.peerNode);
        last = p.peerPort.value;
      }
      if (target == kNoSwitch) continue;
      for (SwitchIndex s = 0; s < S; ++s) {
        uint32_t diff = addr[s] ^ addr[target];
        t.lft[g.node(s)][l] =
            diff == 0 ? last : portOf[s * D + static_cast<unsigned>(std::countr_zero(diff))];
      }
    }
    return t;
  }
};

}  // namespace

std::unique_ptr<Engine> makeDorEngine() {
  return std::make_unique<DorEngine>();
}

}  // namespace ibsm::routing
