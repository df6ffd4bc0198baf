// Compares two topologies by GUID: same nodes (type, port count, description), same CA port GUIDs, and the
// same links port for port. Returns human-readable differences (empty when equal), at most `limit` of them.
#pragma once

#include <string>
#include <vector>

#include "fabric/topology.h"

namespace ibsm::testing {

std::vector<std::string> compareTopologies(const fabric::Topology& expected, const fabric::Topology& actual,
                                           size_t limit = 20);

}  // namespace ibsm::testing
