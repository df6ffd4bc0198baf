// Routing engine interface, registry and fallback chain. Engines are pure: the same topology, LIDs and
// options always give the same tables; no I/O, no clock, no global state.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fabric/result.h"
#include "routing/lid_assignment.h"
#include "routing/routing_tables.h"

namespace ibsm::routing {

struct Options {
  std::vector<Guid> roots;     // up/down and fat-tree root switches (node GUIDs); empty = auto-detect
  bool computeAr = true;       // fill RoutingTables::ar
  uint32_t arGroupCap = 2048;  // per switch
  unsigned threads = 1;
  uint64_t seed = 0;
  // Virtual-lane layers an engine may spread its paths over to stay deadlock-free (RoutingTables::sl): the
  // data VLs every switch-to-switch port offers. 1 unless the caller programs SL-to-VL tables to match.
  uint8_t vlLayers = 1;
  // dfly: spread each group pair's traffic over paths through third groups as well (needs 4 VLs; with
  // fewer, or false, minimal paths only): higher collective (shift) bandwidth, the all-pairs max link load
  // capped a little above the minimal routes'; see routing/dfly_engine.cc. Off here; ibsmd's
  // routing.dfly_spread (config/config.h) sets it.
  bool dflySpread = false;
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string_view name() const = 0;
  // An Error means "this engine cannot route this topology", with the reason; the chain then tries the next.
  virtual fabric::Result<RoutingTables> compute(const Topology& topo, const LidAssignment& lids,
                                                const Options& options) const = 0;
};

// Factories of the built-in engines (one per engine source file).
std::unique_ptr<Engine> makeMinHopEngine();
std::unique_ptr<Engine> makeUpDownEngine();
std::unique_ptr<Engine> makeFatTreeEngine();
std::unique_ptr<Engine> makeDfspEngine();
std::unique_ptr<Engine> makeDorEngine();
std::unique_ptr<Engine> makeDflyEngine();

// "minhop", "updn", "ftree", "dfsp", "dor", "dfly"; nullptr for an unknown name.
std::unique_ptr<Engine> makeEngine(std::string_view name);
std::vector<std::string> engineNames();

struct ChainResult {
  RoutingTables tables;
  std::vector<std::string> fallbacks;  // "ftree: not a fat-tree (...)" for each engine that declined
  size_t switchLidsFilled = 0;         // (switch, switch LID) entries filled on shortest paths, see below
  std::vector<std::string> choices;    // for alternatives ("dor|dfsp"): "dor: max link load 64 on 1 VL"
};
// Fills (switch, switch-LID) entries the engine left without a route with a next hop on a shortest path (as
// min-hop would choose); returns how many. computeChain does this for every engine's result.
size_t fillSwitchLidHoles(const Topology& topo, const LidAssignment& lids, RoutingTables& tables);
// Tries each engine in order; an Error when none could route (or a name is unknown). An element may name
// alternatives, "dor|dfsp": each is computed and the one with the lowest max switch-to-switch link load wins
// (ties: fewer VL layers, then the first named); the element fails only when all of them do.
fabric::Result<ChainResult> computeChain(const std::vector<std::string>& chain, const Topology& topo,
                                         const LidAssignment& lids, const Options& options);
// "ftree,dor|dfsp,updn,minhop" -> elements; an Error naming an unknown engine.
fabric::Result<std::vector<std::string>> parseChain(std::string_view text);

}  // namespace ibsm::routing
