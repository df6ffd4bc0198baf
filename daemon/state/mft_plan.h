// The MulticastForwardingTable blocks (32 MLIDs x 16 ports, IBA 14.2.5.12) that the groups' spanning trees
// (routing/multicast.h) give every switch: what the MFT programmer writes and what the SA shows as
// MulticastForwardingTableRecords. Pure.
#pragma once

#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "fabric/topology.h"
#include "mad/smp.h"
#include "routing/multicast.h"

namespace ibsm::daemon {

struct MftPlan {
  // Per switch: attribute modifier (mad::mftAttrMod: position, block) -> block; only blocks with an entry.
  std::unordered_map<fabric::NodeIndex, std::map<uint32_t, mad::MftBlock>> blocks;
  uint32_t topBlock = 0;  // highest block any group uses
  size_t unreachableMembers = 0;
  std::vector<std::string> warnings;  // MCAST001: a group's MLID past a switch's MulticastFDBCap
};

MftPlan planMfts(const fabric::Topology& topo, const std::vector<routing::McastGroupRoute>& groups);

}  // namespace ibsm::daemon
