#include "daemon/program/vl_programmer.h"

#include <algorithm>
#include <set>

#include "mad/smp.h"
#include "routing/sl_to_vl.h"

namespace ibsm::daemon {

using fabric::NodeIndex;

namespace {
// The (input, output) key of a switch's table written with the all-ports modifier bits.
constexpr uint8_t kAllPorts = 0xFF;  // no port has this number (IBA: at most 254)
}  // namespace

mad::SlToVlTable layeredSlToVl(uint8_t layers) {
  mad::SlToVlTable t{};
  const unsigned n = layers ? layers : 1;
  for (unsigned sl = 0; sl < 16; ++sl) t[sl] = static_cast<uint8_t>(sl % n);
  return t;
}

mad::VlArbBlock layeredVlArb(const VlProgramOptions& o) {
  mad::VlArbBlock b{};
  for (unsigned vl = 0; vl < o.layers && vl < mad::kVlArbBlockEntries; ++vl) {
    uint8_t w = o.weights.empty() ? 64 : o.weights[std::min<size_t>(vl, o.weights.size() - 1)];
    b[vl] = mad::VlArbEntry{static_cast<uint8_t>(vl), w};
  }
  return b;
}

VlReport VlProgrammer::program(const fabric::Topology& topo, const routing::RoutingTables& tables,
                               const VlProgramOptions& options) {
  VlReport report;
  if (options.layers <= 1 && sl2vl_.empty()) return report;
  const routing::VlPairs used = routing::layeredVlPairs(topo, tables);
  PhaseRunner phase(engine_, clock_, "vl", PhaseOptions{.secondPass = true});
  const mad::SlToVlTable layered = layeredSlToVl(options.layers);
  // The table of one (input, output) pair: SL s on VL s mod layers, or what the engine maps per pair.
  auto tableOf = [&](NodeIndex n, uint8_t in, uint8_t out) {
    if (tables.slToVl.empty()) return layered;
    mad::SlToVlTable t{};
    for (unsigned sl = 0; sl < 16; ++sl) t[sl] = tables.hopVl(n, in, out, static_cast<uint8_t>(sl));
    return t;
  };
  const mad::VlArbBlock arb = layeredVlArb(options);
  decltype(sl2vl_) heldTables;
  decltype(vlArb_) heldArb;
  std::set<std::tuple<fabric::Guid, uint8_t, uint8_t>> sent;  // the SLtoVLMappingTable keys of this round
  auto describe = [&](NodeIndex n, unsigned in, unsigned out) {
    const fabric::Node& node = topo.node(n);
    return fabric::toString(node.guid) + " (" + node.description + ") " +
           (in == kAllPorts && out == kAllPorts ? std::string("all ports")
            : in == kAllPorts                   ? "all input ports->" + std::to_string(out)
                                                : "ports " + std::to_string(in) + "->" + std::to_string(out));
  };
  auto sendSl2Vl = [&](NodeIndex n, const fabric::DrPath& route, uint8_t in, uint8_t out, uint32_t mod,
                       const mad::SlToVlTable& table) {
    auto key = std::make_tuple(topo.node(n).guid, in, out);
    sent.insert(key);
    if (auto it = sl2vl_.find(key); it != sl2vl_.end() && it->second == table) {
      heldTables.emplace(key, table);
      ++report.sl2vlSkipped;
      return;
    }
    mad::MadPacket smp = mad::makeDirectedSmp(mad::kSet, mad::kAttrSlToVl, mod, route);
    mad::encodeSlToVl(table, mad::smpData(smp));
    phase.submit(std::move(smp), [&, key, n, in, out, table](const SmpAnswer& a) {
      if (!a.ok) {
        report.errors.push_back("VL001 SLtoVLMappingTable Set on " + describe(n, in, out) + a.failure());
        return;
      }
      ++report.sl2vlSet;
      heldTables.emplace(key, table);
    });
  };
  // With the engine's own tables, an output's arbitration lists the VLs its used pairs send on, not every
  // layer: a dfly repair that puts a few paths on VLs 2 and 3 rewrites the arbitration of the outputs those
  // paths take, not of every output the host pairs' VL 1 uses (about 11,000 on a 1,020-switch dragonfly).
  auto arbOf = [&](NodeIndex n, uint8_t out, const std::vector<uint8_t>& inputs) {
    if (tables.slToVl.empty()) return arb;
    uint8_t top = 0;
    for (uint8_t in : inputs)
      if (in != out && used.used(n, in, out))
        for (uint8_t vl : tableOf(n, in, out)) top = std::max(top, vl);
    VlProgramOptions o = options;
    o.layers = std::min<uint8_t>(std::max<uint8_t>(options.layers, 1), static_cast<uint8_t>(top + 1));
    return layeredVlArb(o);
  };
  auto sendArb = [&](NodeIndex n, const fabric::DrPath& route, uint8_t port, uint8_t modPort,
                     const mad::VlArbBlock& block) {
    auto key = std::make_pair(topo.node(n).guid, port);
    if (auto it = vlArb_.find(key); it != vlArb_.end() && it->second == block) {
      heldArb.emplace(key, block);
      ++report.vlArbSkipped;
      return;
    }
    mad::MadPacket smp = mad::makeDirectedSmp(mad::kSet, mad::kAttrVlArb,
                                              mad::vlArbAttrMod(mad::kVlArbLowFirst, modPort), route);
    mad::encodeVlArbBlock(block, mad::smpData(smp));
    phase.submit(std::move(smp), [&, key, n, port, block](const SmpAnswer& a) {
      if (!a.ok) {
        report.errors.push_back("VL001 VLArbitrationTable Set on " + describe(n, port, port) + a.failure());
        return;
      }
      ++report.vlArbSet;
      heldArb.emplace(key, block);
    });
  };
  for (NodeIndex i = 0; i < topo.size(); ++i) {
    const fabric::Node& n = topo.node(i);
    if (n.isSwitch()) {
      // Output ports: the linked external ports; input ports: those and port 0 (the switch's own traffic).
      std::vector<uint8_t> linked;
      for (unsigned p = 1; p < n.ports.size(); ++p)
        if (n.ports[p].connected()) linked.push_back(static_cast<uint8_t>(p));
      bool anyOut = false;
      for (uint8_t out : linked) {
        if (!used.outUsed(i, out)) continue;
        anyOut = true;
        // The engine's tables of this output: one Set for all inputs where the switch takes the modifier bit
        // and every input has the same table (dor's datelines), else one per used pair.
        bool oneTable = n.sw.optimizedSlToVl && !tables.slToVl.empty();
        for (uint8_t in : linked)
          oneTable = oneTable && tables.slToVl.packed(i, in, out) == tables.slToVl.packed(i, 0, out);
        if (oneTable)
          sendSl2Vl(i, topo.route(i), kAllPorts, out, mad::kSlToVlAllInputs | out, tableOf(i, 0, out));
        else if (!n.sw.optimizedSlToVl || !tables.slToVl.empty())
          for (uint8_t in : linked)
            if (in != out && used.used(i, in, out))
              sendSl2Vl(i, topo.route(i), in, out, mad::slToVlAttrMod(in, out), tableOf(i, in, out));
        sendArb(i, topo.route(i), out, out, arbOf(i, out, linked));
      }
      // A switch that takes the all-ports modifier bits gets its whole SL-to-VL layer in one Set: every pair
      // holds the same table then, which maps SL 0 to VL 0 as the reset table does for pairs with SL 0
      // traffic only.
      if (n.sw.optimizedSlToVl && anyOut && tables.slToVl.empty())
        sendSl2Vl(i, topo.route(i), kAllPorts, kAllPorts, mad::kSlToVlAllInputs | mad::kSlToVlAllOutputs,
                  layered);
      continue;
    }
    // A CA port is reached by its own directed route (the SMA answers for the port the SMP came in through).
    for (unsigned p = 1; p < n.ports.size(); ++p) {
      const fabric::DrPath& route = topo.portRoute(i, fabric::PortNum{static_cast<uint8_t>(p)});
      bool local = i == topo.smNode() && p == topo.smPort().value;
      if (!n.ports[p].connected() || (!route.count && !local) || !used.used(i, 0, p)) continue;
      sendSl2Vl(i, route, 0, static_cast<uint8_t>(p), 0, tableOf(i, 0, static_cast<uint8_t>(p)));
      sendArb(i, route, static_cast<uint8_t>(p), 0, arbOf(i, static_cast<uint8_t>(p), {0}));
    }
  }
  // A switch pair written before that no path needs now holds an older table: where that sends SL 0 elsewhere
  // than these routes assume (VL 0, or the engine's own table), say dfly's VL 1 on a host's first local hop
  // after dfly gave way to another engine, it is written again.
  for (const auto& [key, held] : sl2vl_) {
    const auto& [guid, in, out] = key;
    const std::optional<NodeIndex> n = topo.findNode(guid);
    if (sent.count(key) || in == kAllPorts || out == kAllPorts || !n || !topo.node(*n).isSwitch()) continue;
    const mad::SlToVlTable want = tableOf(*n, in, out);
    if (held[0] != want[0]) sendSl2Vl(*n, topo.route(*n), in, out, mad::slToVlAttrMod(in, out), want);
  }
  report.phase = phase.finish();
  // Tables written before and not needed now still hold what was written: kept while their node is there.
  std::set<fabric::Guid> present;
  for (NodeIndex i = 0; i < topo.size(); ++i) present.insert(topo.node(i).guid);
  for (const auto& [key, t] : sl2vl_)
    if (present.count(std::get<0>(key))) heldTables.emplace(key, t);
  for (const auto& [key, b] : vlArb_)
    if (present.count(key.first)) heldArb.emplace(key, b);
  // Ports that left the topology are forgotten; failed Sets are unknown and written again next time.
  sl2vl_ = std::move(heldTables);
  vlArb_ = std::move(heldArb);
  return report;
}

}  // namespace ibsm::daemon
