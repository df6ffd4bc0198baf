#include "daemon/sm/lid_manager.h"

#include <sys/stat.h>

#include "daemon/state/state_store.h"

namespace ibsm::daemon {

namespace {

// What identifies one version of the file: written atomically (a new inode each time), or edited in place.
std::optional<LidManager::FileStamp> stamp(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return LidManager::FileStamp{st.st_ino, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec};
}

}  // namespace

fabric::Result<routing::LidAssignResult> LidManager::assign(const fabric::Topology& topo, bool keepHeld) {
  // The file is read again only when somebody else wrote it since (an operator's edit), and written only
  // when the map changes: an event that moves no LID costs no file I/O but a stat.
  std::vector<std::string> loadWarnings;
  if (!path_.empty() && (!stamp_ || stamp(path_) != stamp_)) {
    LoadedGuid2Lid persistent = loadGuid2Lid(path_);
    map_ = std::move(persistent.map);
    loadWarnings = std::move(persistent.warnings);
    stamp_ = stamp(path_);
  }
  routing::Guid2Lid held;
  if (keepHeld) {
    held = map_;
    adoptHeld(topo, held);
  }
  auto assigned = routing::assignLids(topo, keepHeld ? held : map_, lmc_);
  if (!assigned) return fabric::makeError("LID assignment failed: " + assigned.error().message);
  assigned->warnings.insert(assigned->warnings.begin(), std::make_move_iterator(loadWarnings.begin()),
                            std::make_move_iterator(loadWarnings.end()));
  if (!path_.empty() && (assigned->guid2lid != map_ || !stamp_)) {
    auto saved = saveGuid2Lid(path_, assigned->guid2lid);
    if (!saved) {
      assigned->warnings.push_back("STATE002 " + saved.error().message);
      stamp_.reset();  // tried again next time
    } else {
      map_ = assigned->guid2lid;
      stamp_ = stamp(path_);
    }
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
