// Wires the perf room to the SM on the event loop: ticks the PerformanceManager (counter sweeps), hands each
// finished sweep to the HealthPolicy, gives its isolations to the SM (SubnetManager::setIsolatedPorts, which
// re-routes), logs every decision to the journal and the event log (HLTH001..005, the flap damping's
// hold-downs included) and publishes the HealthSnapshot that `ibsmctl health` (and an exporter) reads.
#pragma once

#include <memory>
#include <set>
#include <utility>

#include "config/config.h"
#include "daemon/control/control_server.h"
#include "daemon/control/event_log.h"
#include "daemon/log/log.h"
#include "daemon/perf/health_policy.h"
#include "daemon/perf/perf_manager.h"
#include "daemon/sm/subnet_manager.h"
#include "daemon/state/wall_clock.h"

namespace ibsm::daemon {

PerfOptions perfOptionsFrom(const config::Config& config);
HealthOptions healthOptionsFrom(const config::Config& config);

class HealthService {
 public:
  HealthService(mad::MadEngine& engine, SubnetManager& sm, Logger& log, EventLog& events,
                StatePublisher& state, const mad::Clock& clock, const WallClock& wallClock,
                const config::Config& config);
  void setOptions(const config::Config& config);  // a reload
  // Event loop, whenever it wakes.
  void tick();
  // ibsmctl health release PORT (loop thread): the response.
  Json release(const Request& request, const PeerCredentials& peer);
  const PerfManager& perf() const { return perf_; }
  const HealthPolicy& policy() const { return policy_; }

 private:
  void decide(const HealthDecision& d);
  void isolate(const std::string& cause);
  void reportFlaps();
  void publish();

  SubnetManager& sm_;
  Logger& log_;
  EventLog& events_;
  StatePublisher& state_;
  const mad::Clock& clock_;
  const WallClock& wallClock_;
  PerfManager perf_;
  HealthPolicy policy_;
  std::set<PortId> heldDown_;                      // last seen, to report new hold-downs once
  std::chrono::system_clock::time_point sweptAt_;  // end of the last counter sweep
};

}  // namespace ibsm::daemon
