// The health policy: after each counter sweep, every port's error counters (increases per minute over the
// last interval) against health.thresholds. A port over a threshold is a warning (HLTH001), and so is one
// whose watched counters are not zero at the first read (found at start, interval unknown); with
// health.action isolate its link is isolated (HLTH002): routed around as if it were down, not disabled (a
// port found at start only when a count is past health.start_threshold, at the first sweep at which its
// link's loss cuts no node off). An
// isolation is refused (HLTH003) when the link's loss would cut a node off the SM, or when max_isolated
// links are out already. A warning or isolation ends after clean_period of samples under every threshold, or
// when an operator releases the port (HLTH004). Pure: counters, topology and time in, decisions out.
#pragma once

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "daemon/perf/perf_manager.h"
#include "daemon/state/health_snapshot.h"
#include "fabric/topology.h"

namespace ibsm::daemon {

enum class HealthAction : uint8_t { kReport, kIsolate };

struct HealthOptions {
  HealthAction action = HealthAction::kReport;
  std::array<double, mad::kPerfCounters> thresholds{};  // increases per minute; 0: not checked
  uint64_t startThreshold = 1000;  // a watched count found at the first read past it isolates; 0: never
  unsigned maxIsolated = 8;
  mad::Duration cleanPeriod = std::chrono::seconds(600);
};

using PortId = std::pair<fabric::Guid, uint8_t>;

struct HealthDecision {
  enum class Kind : uint8_t { kWarning, kIsolated, kRefused, kRestored };
  Kind kind;
  PortId port;
  PortId peer;  // zero GUID: no peer
  std::string text;
  const char* id() const;  // HLTH001..004
};

class HealthPolicy {
 public:
  explicit HealthPolicy(HealthOptions options) : options_(options) {}
  void setOptions(HealthOptions options) { options_ = options; }
  const HealthOptions& options() const { return options_; }

  struct PortStatus {
    PortHealthState state = PortHealthState::kOk;
    std::string reason;
    mad::TimePoint lastBad{}, since{};
    bool refusedReported = false;  // HLTH003 once per warning
    bool isolateFound = false;     // counts found at start asked for isolation: tried every sweep
  };
  // Every port read in counter sweep `sweep` is judged. topo: the topology routing uses (isolated links
  // down), for the peers and the connectivity check.
  std::vector<HealthDecision> evaluate(const std::vector<PortRecord>& ports, uint64_t sweep,
                                       const fabric::Topology& topo, mad::TimePoint now);
  // ibsmctl health release: the isolated link with this port at either end is back; an Error if none is.
  fabric::Result<HealthDecision> release(const PortId& port, mad::TimePoint now);
  // Both ends of every isolated link: what routing must treat as down.
  std::vector<PortId> isolatedPorts() const;
  size_t isolatedLinks() const { return links_.size(); }
  // By PortRecord index; shorter than the records while some were never judged.
  const std::vector<PortStatus>& status() const { return status_; }

 private:
  struct Link {
    PortId bad, peer;
    uint32_t record;   // of the bad end
    std::string name;  // "spine-1/4 <-> leaf-3/6"
  };
  // Why taking a's link out would cut a node off (empty: it would not).
  std::string wouldDisconnect(const fabric::Topology& topo, fabric::NodeIndex node, uint8_t port) const;
  HealthDecision restore(size_t link, const std::string& why, mad::TimePoint now);

  HealthOptions options_;
  std::vector<PortStatus> status_;
  std::vector<Link> links_;
};

}  // namespace ibsm::daemon
