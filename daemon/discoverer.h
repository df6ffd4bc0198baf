// Heavy sweep: walks the whole fabric by directed route, breadth-first, with many SMPs in flight, and builds
// an immutable Topology. Nodes are recognised by GUID, so loops and parallel links are found once each.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "fabric/topology.h"
#include "mad/mad_engine.h"

namespace ibsm::daemon {

using RawAttr = std::array<uint8_t, 64>;

struct DiscoveryStats {
  size_t smps = 0;       // requests sent (retries included)
  size_t timeouts = 0;
  size_t failed = 0;     // requests that got no answer at all
  mad::Duration elapsed{};
  std::vector<std::string> warnings;
};

struct DiscoveryResult {
  fabric::TopologyPtr topology;
  // PortInfo blocks as read, [node][port]: SubnSet(PortInfo) starts from these.
  std::vector<std::vector<RawAttr>> portInfo;
  // SwitchInfo blocks as read, [node] (zeros for non-switches).
  std::vector<RawAttr> switchInfo;
  DiscoveryStats stats;
};

class Discoverer {
 public:
  Discoverer(mad::MadEngine& engine, const mad::Clock& clock) : engine_(engine), clock_(clock) {}
  // Runs a full sweep from the local port. Fails when the local node does not answer, on inconsistent
  // answers that leave no usable topology, or when a node lies beyond the 63-hop directed-route limit.
  fabric::Result<DiscoveryResult> discover();

 private:
  mad::MadEngine& engine_;
  const mad::Clock& clock_;
};

}  // namespace ibsm::daemon
