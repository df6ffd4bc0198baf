#include "daemon/program/vl_programmer.h"

#include <algorithm>
#include <unordered_set>

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

std::optional<std::vector<uint16_t>> VlProgrammer::changedLids(const fabric::Topology& topo,
                                                               const routing::RoutingTables& tables,
                                                               const VlProgramOptions& options) const {
  // The number of layers decides every table only without the engine's own tables (SL s on VL s mod layers);
  // with them (dfly, dor) it only caps the arbitration, which a delta keeps at least as wide as it was.
  if (!last_ || (last_->layers != options.layers && tables.slToVl.empty()) ||
      last_->weights != options.weights || last_->nodes.size() != topo.size() ||
      tables.lft.size() != last_->lft.size() || !(tables.slToVl == last_->slToVl))
    return std::nullopt;
  for (NodeIndex i = 0; i < topo.size(); ++i)
    if (topo.node(i).guid != last_->nodes[i]) return std::nullopt;
  std::vector<uint8_t> changed;
  auto mark = [&](size_t lid) {
    if (lid >= changed.size()) changed.resize(lid + 1, 0);
    changed[lid] = 1;
  };
  for (NodeIndex s = 0; s < tables.lft.size(); ++s) {
    if (tables.lft.sameRow(s, last_->lft, s)) continue;
    routing::forEachChangedEntry(tables.lft[s], last_->lft[s], mark);
  }
  static const std::vector<uint8_t> kNone;
  for (NodeIndex s = 0; s < std::max(tables.sl.size(), last_->sl.size()); ++s) {
    if (s < tables.sl.size() && s < last_->sl.size() && tables.sl.sameRow(s, last_->sl, s)) continue;
    const auto& now = s < tables.sl.size() ? tables.sl[s] : kNone;
    const auto& was = s < last_->sl.size() ? last_->sl[s] : kNone;
    if (now == was) continue;
    for (size_t lid = 0; lid < std::max(now.size(), was.size()); ++lid)
      if ((lid < now.size() ? now[lid] : 0) != (lid < was.size() ? was[lid] : 0)) mark(lid);
  }
  std::vector<uint16_t> lids;
  for (size_t lid = 1; lid < changed.size(); ++lid)
    if (changed[lid]) lids.push_back(static_cast<uint16_t>(lid));
  return lids;
}

VlReport VlProgrammer::program(const fabric::Topology& topo, const routing::RoutingTables& tables,
                               const VlProgramOptions& options) {
  VlReport report;
  if (options.layers <= 1 && held_.empty()) {
    last_.reset();
    return report;
  }
  // A delta: only the paths to the LIDs whose routes changed can need a pair not written yet (the VL tables
  // are the same, and the last run wrote every pair its routes needed).
  const std::optional<std::vector<uint16_t>> delta = changedLids(topo, tables, options);
  const routing::VlPairs used = routing::layeredVlPairs(topo, tables, delta ? &*delta : nullptr);
  PhaseRunner phase(engine_, clock_, "vl", PhaseOptions{.secondPass = true});
  const mad::SlToVlTable layered = layeredSlToVl(options.layers);
  // The table of one (input, output) pair: SL s on VL s mod layers, or what the engine maps per pair.
  auto tableOf = [&](NodeIndex n, uint8_t in, uint8_t out) {
    if (tables.slToVl.empty()) return layered;
    mad::SlToVlTable t{};
    for (unsigned sl = 0; sl < 16; ++sl) t[sl] = tables.hopVl(n, in, out, static_cast<uint8_t>(sl));
    return t;
  };
  auto describe = [&](NodeIndex n, unsigned in, unsigned out) {
    const fabric::Node& node = topo.node(n);
    return fabric::toString(node.guid) + " (" + node.description + ") " +
           (in == kAllPorts && out == kAllPorts ? std::string("all ports")
            : in == kAllPorts                   ? "all input ports->" + std::to_string(out)
                                                : "ports " + std::to_string(in) + "->" + std::to_string(out));
  };
  bool failed = false;
  std::vector<uint8_t> sent;  // [in * width + out] of the node at hand: its table was wanted this round
  auto sendSl2Vl = [&](NodeIndex n, Held& h, const fabric::DrPath& route, uint8_t in, uint8_t out,
                       uint32_t mod, const mad::SlToVlTable& table) {
    const unsigned all = h.width - 1;
    const size_t slot = size_t{in == kAllPorts ? all : in} * h.width + (out == kAllPorts ? all : out);
    sent[slot] = 1;
    const uint64_t packed = routing::SlToVlMap::pack(table);
    if (h.hasSl2vl[slot] && h.sl2vl[slot] == packed) {
      ++report.sl2vlSkipped;
      return;
    }
    mad::MadPacket smp = mad::makeDirectedSmp(mad::kSet, mad::kAttrSlToVl, mod, route);
    mad::encodeSlToVl(table, mad::smpData(smp));
    phase.submit(std::move(smp), [&, held = &h, slot, n, in, out, packed](const SmpAnswer& a) {
      held->hasSl2vl[slot] = a.ok;  // a failed Set leaves the table unknown: written again next time
      if (!a.ok) {
        failed = true;
        report.errors.push_back("VL001 SLtoVLMappingTable Set on " + describe(n, in, out) + a.failure());
        return;
      }
      ++report.sl2vlSet;
      held->sl2vl[slot] = packed;
    });
  };
  // The VLs an output's arbitration lists: every layer, or with the engine's own tables the VLs its used
  // pairs send on (a dfly repair that puts a few paths on VLs 2 and 3 rewrites the arbitration of the outputs
  // those paths take, not of every output the host pairs' VL 1 uses: about 11,000 on a 1,020-switch
  // dragonfly). A delta sees only some of the pairs, so it keeps at least the VLs the held table lists.
  auto sendArb = [&](NodeIndex n, Held& h, const fabric::DrPath& route, uint8_t port, uint8_t modPort,
                     const std::vector<uint8_t>& inputs) {
    uint8_t layers = std::max<uint8_t>(options.layers, 1);
    if (!tables.slToVl.empty()) {
      uint8_t top = 0;
      for (uint8_t in : inputs)
        if (in != port && used.used(n, in, port))
          for (uint8_t vl : tableOf(n, in, port)) top = std::max(top, vl);
      layers = std::min<uint8_t>(layers, static_cast<uint8_t>(top + 1));
      if (delta) layers = std::max(layers, h.arbLayers[port]);
    }
    VlProgramOptions o = options;
    o.layers = layers;
    const mad::VlArbBlock block = layeredVlArb(o);
    if (h.arbLayers[port] && h.arb[port] == block) {
      ++report.vlArbSkipped;
      return;
    }
    mad::MadPacket smp = mad::makeDirectedSmp(mad::kSet, mad::kAttrVlArb,
                                              mad::vlArbAttrMod(mad::kVlArbLowFirst, modPort), route);
    mad::encodeVlArbBlock(block, mad::smpData(smp));
    phase.submit(std::move(smp), [&, held = &h, n, port, block, layers](const SmpAnswer& a) {
      held->arbLayers[port] = a.ok ? layers : 0;
      if (!a.ok) {
        failed = true;
        report.errors.push_back("VL001 VLArbitrationTable Set on " + describe(n, port, port) + a.failure());
        return;
      }
      ++report.vlArbSet;
      held->arb[port] = block;
    });
  };
  auto heldOf = [&](NodeIndex i) -> Held& {
    const fabric::Node& n = topo.node(i);
    Held& h = held_[n.guid];
    if (h.width != n.numPorts + 2u) {
      h.width = n.numPorts + 2u;
      h.sl2vl.assign(size_t{h.width} * h.width, 0);
      h.hasSl2vl.assign(size_t{h.width} * h.width, 0);
      h.arb.assign(h.width, mad::VlArbBlock{});
      h.arbLayers.assign(h.width, 0);
    }
    sent.assign(size_t{h.width} * h.width, 0);
    return h;
  };
  std::vector<uint8_t> linked;
  for (NodeIndex i = 0; i < topo.size(); ++i) {
    const fabric::Node& n = topo.node(i);
    const auto found = held_.find(n.guid);
    // A node with no pair used now: nothing to write, but in a full run a pair of it written before may
    // need its SL 0 back (below).
    if (!used.any(i) && (delta || found == held_.end())) continue;
    Held& h = heldOf(i);
    if (n.isSwitch()) {
      // Output ports: the linked external ports; input ports: those and port 0 (the switch's own traffic).
      linked.clear();
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
          sendSl2Vl(i, h, topo.route(i), kAllPorts, out, mad::kSlToVlAllInputs | out, tableOf(i, 0, out));
        else if (!n.sw.optimizedSlToVl || !tables.slToVl.empty())
          for (uint8_t in : linked)
            if (in != out && used.used(i, in, out))
              sendSl2Vl(i, h, topo.route(i), in, out, mad::slToVlAttrMod(in, out), tableOf(i, in, out));
        sendArb(i, h, topo.route(i), out, out, linked);
      }
      // A switch that takes the all-ports modifier bits gets its whole SL-to-VL layer in one Set: every pair
      // holds the same table then, which maps SL 0 to VL 0 as the reset table does for pairs with SL 0
      // traffic only.
      if (n.sw.optimizedSlToVl && anyOut && tables.slToVl.empty())
        sendSl2Vl(i, h, topo.route(i), kAllPorts, kAllPorts, mad::kSlToVlAllInputs | mad::kSlToVlAllOutputs,
                  layered);
      // A pair written before that no path needs now holds an older table: where that sends SL 0 elsewhere
      // than these routes assume (VL 0, or the engine's own table), say dfly's VL 1 on a host's first local
      // hop after dfly gave way to another engine, it is written again. (A delta has the same VL tables as
      // the full run before it, which did this.)
      if (!delta)
        for (unsigned in = 0; in <= n.numPorts; ++in)
          for (unsigned out = 0; out <= n.numPorts; ++out) {
            const size_t slot = size_t{in} * h.width + out;
            if (sent[slot] || !h.hasSl2vl[slot]) continue;
            const mad::SlToVlTable want = tableOf(i, static_cast<uint8_t>(in), static_cast<uint8_t>(out));
            if ((h.sl2vl[slot] & 0xF) != want[0])
              sendSl2Vl(i, h, topo.route(i), static_cast<uint8_t>(in), static_cast<uint8_t>(out),
                        mad::slToVlAttrMod(in, out), want);
          }
      continue;
    }
    // A CA port is reached by its own directed route (the SMA answers for the port the SMP came in through).
    for (unsigned p = 1; p < n.ports.size(); ++p) {
      const fabric::DrPath& route = topo.portRoute(i, fabric::PortNum{static_cast<uint8_t>(p)});
      bool local = i == topo.smNode() && p == topo.smPort().value;
      if (!n.ports[p].connected() || (!route.count && !local) || !used.used(i, 0, p)) continue;
      sendSl2Vl(i, h, route, 0, static_cast<uint8_t>(p), 0, tableOf(i, 0, static_cast<uint8_t>(p)));
      sendArb(i, h, route, static_cast<uint8_t>(p), 0, {0});
    }
  }
  report.phase = phase.finish();
  // Nodes that left the topology are forgotten (a delta has the same nodes).
  if (!delta) {
    std::unordered_set<fabric::Guid> present;
    for (NodeIndex i = 0; i < topo.size(); ++i) present.insert(topo.node(i).guid);
    std::erase_if(held_, [&](const auto& kv) { return !present.count(kv.first); });
  }
  if (failed) {
    last_.reset();  // the next run looks at every path again
    return report;
  }
  Last last{{}, tables.lft, tables.sl, tables.slToVl, options.layers, options.weights};
  last.nodes.reserve(topo.size());
  for (NodeIndex i = 0; i < topo.size(); ++i) last.nodes.push_back(topo.node(i).guid);
  last_ = std::move(last);
  return report;
}

}  // namespace ibsm::daemon
