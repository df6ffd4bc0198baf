#include "daemon/sm/lid_manager.h"

#include "daemon/state/state_store.h"

namespace ibsm::daemon {

fabric::Result<routing::LidAssignResult> LidManager::assign(const fabric::Topology& topo, bool keepHeld) {
  LoadedGuid2Lid persistent;
  if (!path_.empty()) persistent = loadGuid2Lid(path_);
  if (keepHeld) adoptHeld(topo, persistent.map);
  auto assigned = routing::assignLids(topo, persistent.map, lmc_);
  if (!assigned) return fabric::makeError("LID assignment failed: " + assigned.error().message);
  assigned->warnings.insert(assigned->warnings.begin(), std::make_move_iterator(persistent.warnings.begin()),
                            std::make_move_iterator(persistent.warnings.end()));
  if (!path_.empty()) {
    auto saved = saveGuid2Lid(path_, assigned->guid2lid);
    if (!saved) assigned->warnings.push_back("STATE002 " + saved.error().message);
  }
  return assigned;
}

// The LID range every end port (a switch's port 0, a CA's ports) holds now replaces its entry in the map.
void LidManager::adoptHeld(const fabric::Topology& topo, routing::Guid2Lid& map) {
  routing::LidAssignment held = routing::LidAssignment::fromTopology(topo);
  for (fabric::NodeIndex n = 0; n < topo.size(); ++n) {
    const fabric::Node& node = topo.node(n);
    for (unsigned p = node.isSwitch() ? 0 : 1; p < (node.isSwitch() ? 1u : node.ports.size()); ++p) {
      routing::LidRange r = held.range(n, fabric::PortNum{static_cast<uint8_t>(p)});
      if (r.base.value != 0 && node.ports[p].guid.value != 0) map[node.ports[p].guid] = r;
    }
  }
}

}  // namespace ibsm::daemon
