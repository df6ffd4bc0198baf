// The fabric as the SMAs answered a sweep: the Topology plus the raw PortInfo and SwitchInfo blocks that the
// programmers start their Sets from (sm/ discovers, program/ programs).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "fabric/rows.h"
#include "fabric/topology.h"
#include "mad/clock.h"

namespace ibsm::daemon {

using RawAttr = std::array<uint8_t, 64>;

struct DiscoveryStats {
  size_t smps = 0;  // requests sent (retries included)
  size_t timeouts = 0;
  size_t failed = 0;  // requests that got no answer at all (after their second pass)
  mad::Duration elapsed{};
  std::vector<std::string> warnings;
};

struct DiscoveryResult {
  fabric::TopologyPtr topology;
  // Linked ports that are up but kept out of the topology (flap damping), as (node GUID, port).
  std::vector<std::pair<fabric::Guid, uint8_t>> heldDown;
  // PortInfo blocks as read, [node][port]: SubnSet(PortInfo) starts from these. Rows of nodes shared with
  // the previous result (a targeted re-discovery copies only the nodes it re-reads); read them through a
  // const reference.
  fabric::Rows<std::vector<RawAttr>> portInfo;
  // SwitchInfo blocks as read, [node] (an empty row, zeros, for non-switches); shared like portInfo.
  fabric::Rows<RawAttr> switchInfo;
  DiscoveryStats stats;
  // A targeted re-discovery that found every re-read port as the SM left it: topology and heldDown are the
  // previous ones and portInfo/switchInfo stay empty (nothing to program).
  bool unchanged = false;
};

}  // namespace ibsm::daemon
