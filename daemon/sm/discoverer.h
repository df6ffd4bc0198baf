// Heavy sweep: walks the whole fabric by directed route, breadth-first, with many SMPs in flight, and builds
// an immutable Topology. Nodes are recognised by GUID, so loops and parallel links are found once each, and
// each link's far end is probed from one of its ends only (unless a probe goes unanswered).
#pragma once

#include <array>
#include <functional>
#include <string>
#include <vector>

#include "daemon/state/discovery_result.h"
#include "fabric/topology.h"
#include "mad/mad_engine.h"

namespace ibsm::daemon {

class Discoverer {
 public:
  Discoverer(mad::MadEngine& engine, const mad::Clock& clock) : engine_(engine), clock_(clock) {}
  // Runs a full sweep from the local port. Fails when the local node does not answer, on inconsistent
  // answers that leave no usable topology, or when a node lies beyond the 63-hop directed-route limit.
  // `interrupt`, asked while the MADs fly, stops the sweep when it says so: nothing more is sent, the MADs
  // out are awaited, and the sweep fails ("interrupted").
  fabric::Result<DiscoveryResult> discover(const std::function<bool()>& interrupt = {});
  // Targeted re-discovery: everything of `previous` is kept except the links of `changed` switches, whose
  // ports are read again (and explored: a new neighbour is swept from there). Nodes no longer reachable are
  // dropped and directed routes recomputed. Fails if a changed switch does not answer — the caller then
  // falls back to a full sweep. `heldDown` ports are treated as down (flap damping). The changed switches'
  // PortInfo is read first: when every port is as the SM left it, the result is `unchanged` and no topology
  // is built (an update that finds nothing costs only those SMPs).
  fabric::Result<DiscoveryResult> rediscover(
      const DiscoveryResult& previous, const std::vector<fabric::NodeIndex>& changed,
      const std::vector<std::pair<fabric::Guid, uint8_t>>& heldDown = {});

 private:
  void fillStats(DiscoveryStats& stats, const mad::MadCounters& before, mad::TimePoint start,
                 size_t lost) const;

  mad::MadEngine& engine_;
  const mad::Clock& clock_;
};

}  // namespace ibsm::daemon
