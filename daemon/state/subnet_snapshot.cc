#include "daemon/state/subnet_snapshot.h"

#include <algorithm>

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
    size_t len = std::max(now.size(), old ? old->size() : 0);
    for (size_t l = 1; l < len; ++l) {
      const size_t block = l / routing::LftRow::kBlock;
      const size_t end = (block + 1) * routing::LftRow::kBlock;
      if (old && now.sameBlock(block, *old) && end <= now.size() && end <= old->size()) {
        l = end - 1;  // the very same block: no entry changed
        continue;
      }
      uint8_t a = l < now.size() ? now[l] : routing::kNoPort;
      uint8_t b = old && l < old->size() ? (*old)[l] : routing::kNoPort;
      if (a != b) ++changed;
    }
  }
  return changed;
}

}  // namespace ibsm::daemon
