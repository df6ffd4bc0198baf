// Shared by the fuzz targets that need a subnet: a routed snapshot (min-hop) of a topology text, built once.
// A broken built-in topology traps: it is the target's bug, not the input's.
#pragma once

#include <memory>

#include "daemon/state/subnet_snapshot.h"
#include "fabric/topology_file.h"
#include "routing/engine.h"
#include "routing/lid_assignment.h"

namespace ibsm::fuzzing {

inline std::shared_ptr<const daemon::SubnetSnapshot> makeSnapshot(const char* net, const char* name) {
  auto topo = fabric::parseTopology(net, name);
  if (!topo.ok()) __builtin_trap();
  auto snap = std::make_shared<daemon::SubnetSnapshot>();
  snap->topology = *topo;
  auto lids = routing::assignLids(**topo, {}, 0);
  if (!lids.ok()) __builtin_trap();
  snap->lids = lids->lids;
  auto routed = routing::computeChain({"minhop"}, **topo, snap->lids, routing::Options{});
  if (!routed.ok()) __builtin_trap();
  snap->tables = routed->tables;
  return snap;
}

}  // namespace ibsm::fuzzing
