#include "daemon/state/subnet_snapshot.h"

namespace ibsm::daemon {

size_t countRouteChanges(const SubnetSnapshot* before, const SubnetSnapshot& after) {
  const fabric::Topology& t = *after.topology;
  size_t changed = 0;
  for (fabric::NodeIndex sw : t.switches()) {
    const routing::LftRow empty;
    const routing::LftRow& now = sw < after.tables.lft.size() ? after.tables.lft[sw] : empty;
    const routing::LftRow* old = nullptr;
    if (before && before->topology)
      if (auto n = before->topology->findNode(t.node(sw).guid); n && *n < before->tables.lft.size()) {
        if (sw < after.tables.lft.size() && after.tables.lft.sameRow(sw, before->tables.lft, *n))
          continue;  // the very same row (fabric/rows.h): nothing changed
        old = &before->tables.lft[*n];
      }
    routing::forEachChangedEntry(now, old ? *old : empty, [&](size_t lid) { changed += lid != 0; });
  }
  return changed;
}

}  // namespace ibsm::daemon
