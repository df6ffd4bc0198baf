// The VL layer of the fabric (IBA 7.6): SLtoVLMappingTable on every switch (input port, output port) pair and
// every CA port, and the low-priority VLArbitrationTable of every output port, for routing engines that keep
// their paths deadlock-free by putting them on different VLs (RoutingTables::sl, slLayers > 1). SL s travels
// on VL s mod layers on every hop, so a path's layer is its VL from end to end, unless the engine maps SLs
// per port pair (RoutingTables::slToVl: dor's datelines per output port, dfly's VL 1 on a host's first local
// hop); the arbitration table gives every used VL one entry with the configured weight.
//
// Nothing is sent while only one VL is used (slLayers 1) and nothing was written before: every port's reset
// default already maps SL 0 to VL 0, and on the 11,664-host Clos one read of every table would cost about 2.2
// million SMPs. Otherwise only where the routes need it (routing::layeredVlPairs): the switch (input, output)
// pairs that carry a path on an SL above 0 or that the engine maps SL 0 off VL 0, the CA ports that send such
// paths, and the arbitration tables of those outputs; pairs with SL 0 traffic on VL 0 only keep their reset
// table, and a pair written before whose table sends SL 0 elsewhere than the current routes assume is written
// again. The tables are written as a delta against what this SM last wrote and was acknowledged (write and
// trust, as with the LFTs); a pair it has not written yet is written once. After a run whose Sets were all
// acknowledged, a run with the same nodes, VL tables and options (a repair, a rebalance) walks only the paths
// to the LIDs whose routes or SLs changed: on the 1,020-switch dragonfly with dfly's spread routes, a link
// repair's VL programming took 370-560 ms walking every path and keying every pair in ordered maps, and
// takes a few ms so (converged in 49 ms).
// A switch whose SwitchInfo has OptimizedSLtoVLMappingProgramming gets one Set for all its pairs instead
// (attribute modifier bits "all input ports" and "all output ports"), or one per output port where every
// input has the engine's same table; ibsim 0.10 does not set it.
// On a 1,020-switch dragonfly: dfsp on 6 VLs 184,000 VL Sets (390,000 before only the pairs that need them
// were written), dfly on 2 VLs 22,440.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "daemon/program/phase_runner.h"
#include "fabric/topology.h"
#include "mad/mad_engine.h"
#include "mad/vl_tables.h"
#include "routing/routing_tables.h"

namespace ibsm::daemon {

struct VlProgramOptions {
  uint8_t layers = 1;  // VLs the routes use (RoutingTables::slLayers)
  // Low-priority arbitration weight of VL i (index i); VLs past the end get the last one (or 64 when empty).
  std::vector<uint8_t> weights;
};

struct VlReport {
  PhaseStats phase{"vl"};
  size_t sl2vlSet = 0, sl2vlSkipped = 0;  // SLtoVLMappingTable Sets sent / not needed (already held)
  size_t vlArbSet = 0, vlArbSkipped = 0;
  size_t sets() const { return sl2vlSet + vlArbSet; }
  std::vector<std::string> errors;  // VL001: a Set failed
};

// The SL -> VL table for `layers` VLs: SL s on VL s mod layers.
mad::SlToVlTable layeredSlToVl(uint8_t layers);
// Block 1 (low priority, entries 0-31) of the arbitration table: one entry per used VL.
mad::VlArbBlock layeredVlArb(const VlProgramOptions& options);

class VlProgrammer {
 public:
  VlProgrammer(mad::MadEngine& engine, const mad::Clock& clock) : engine_(engine), clock_(clock) {}
  VlReport program(const fabric::Topology& topo, const routing::RoutingTables& tables,
                   const VlProgramOptions& options);
  // Forget what was written (a heavy sweep: write everything again).
  void forget() {
    held_.clear();
    last_.reset();
  }

 private:
  // What this SM wrote to one node and was acknowledged: per (input, output) pair its SLtoVLMappingTable,
  // per output port its arbitration table. Index numPorts + 1 stands for "all ports" (the modifier bits).
  struct Held {
    unsigned width = 0;           // numPorts + 2
    std::vector<uint64_t> sl2vl;  // [in * width + out]: the table, packed (routing::SlToVlMap::pack)
    std::vector<uint8_t> hasSl2vl;
    std::vector<mad::VlArbBlock> arb;  // [port]
    std::vector<uint8_t> arbLayers;    // [port]: VLs the held table lists; 0: none held
  };
  // What the last run programmed from, when every Set it sent was acknowledged: the next run with the same
  // nodes, VL tables and options walks only the paths to the LIDs whose routes or SLs changed since (a
  // repair: a few hundred LIDs instead of every path of the fabric).
  struct Last {
    std::vector<fabric::Guid> nodes;
    // Share the rows of the tables programmed.
    routing::Rows<routing::LftRow> lft;
    routing::Rows<std::vector<uint8_t>> sl;
    routing::SlToVlMap slToVl{0};
    uint8_t layers = 0;
    std::vector<uint8_t> weights;
  };
  // The LIDs whose routes or path SLs differ from last_'s; nullopt when a delta cannot be taken.
  std::optional<std::vector<uint16_t>> changedLids(const fabric::Topology& topo,
                                                   const routing::RoutingTables& tables,
                                                   const VlProgramOptions& options) const;

  mad::MadEngine& engine_;
  const mad::Clock& clock_;
  std::unordered_map<fabric::Guid, Held> held_;
  std::optional<Last> last_;
};

}  // namespace ibsm::daemon
