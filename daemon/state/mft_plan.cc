#include "daemon/state/mft_plan.h"

#include <algorithm>

namespace ibsm::daemon {

MftPlan planMfts(const fabric::Topology& topo, const std::vector<routing::McastGroupRoute>& groups) {
  MftPlan plan;
  for (const routing::McastGroupRoute& g : groups) {
    if (g.mlid < routing::kMinMlid || g.mlid > routing::kMaxMlid) continue;
    const uint32_t index = g.mlid - routing::kMinMlid;
    const uint32_t block = index / mad::kMftBlockMlids;
    plan.topBlock = std::max(plan.topBlock, block);
    routing::McastTree tree = routing::buildMcastTree(topo, g.members);
    plan.unreachableMembers += tree.unreachable.size();
    for (const auto& [n, mask] : tree.switches) {
      const fabric::Node& node = topo.node(n);
      if (index >= node.sw.multicastFdbCap) {
        plan.warnings.push_back("MCAST001 MLID " + std::to_string(g.mlid) +
                                " is past the MulticastFDBCap of " + fabric::toString(node.guid) + " (" +
                                node.description + ")");
        continue;
      }
      for (uint32_t pos = 0; pos * mad::kMftPositionPorts <= node.numPorts; ++pos) {
        uint16_t bits = 0;
        for (unsigned i = 0; i < mad::kMftPositionPorts; ++i)
          if (pos * mad::kMftPositionPorts + i < mask.size() && mask.test(pos * mad::kMftPositionPorts + i))
            bits = static_cast<uint16_t>(bits | 1u << i);
        if (bits) plan.blocks[n][mad::mftAttrMod(block, pos)][index % mad::kMftBlockMlids] = bits;
      }
    }
  }
  return plan;
}

}  // namespace ibsm::daemon
