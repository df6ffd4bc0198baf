// Compares two topologies the way a fabric is compared with its discovery: nodes matched by node GUID (order
// does not matter), then type, description, port count, port GUIDs, links port for port, link width/speed and
// LIDs. Used by the generator's tests and by `ibsm-fabric --compare` to check ibsim/ibnetdiscover against a
// file.
#pragma once

#include <string>

#include "fabric/topology.h"

namespace ibsm::tools {

// Empty when the topologies agree; otherwise one line per difference (at most maxDiffs, then a count).
std::string diffTopologies(const fabric::Topology& expected, const fabric::Topology& actual,
                           size_t maxDiffs = 20);

}  // namespace ibsm::tools
