// Text dump of adaptive-routing groups, one block per switch, in the style of opensm-lfts.dump:
//   AR groups of switch Lid 1 guid 0x0002c90200400ed0 ('sw1'): 2 groups
//   group 0 ports 1,2,3
//   group 1 ports 4,5
//   0x0009-0x000c group 0
//   0x0011 group 1
// Consecutive LIDs that share a group are folded into one range line; switches without groups are left out.
#pragma once

#include <string>

#include "fabric/topology.h"
#include "routing/lid_assignment.h"
#include "routing/routing_tables.h"

namespace ibsm::tools {

std::string formatArDump(const fabric::Topology& topo, const routing::LidAssignment& lids,
                         const routing::RoutingTables& tables);

}  // namespace ibsm::tools
