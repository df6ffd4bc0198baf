// The long-running SM as a service: runs SubnetManager heavy sweeps (at start and on control requests) and
// follows its targeted updates (traps, light sweeps: SubnetManager::tick), publishes each result for the
// control socket (StatePublisher, EventLog), hands snapshots to the dump writer, tells systemd (READY=1 at
// the first SUBNET UP, STATUS=, WATCHDOG=1) and applies SIGHUP reloads. Everything here runs on the event
// loop thread except post() and onChangeRequest(), which other threads use to hand work to it.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "config/config.h"
#include "daemon/control/control_server.h"
#include "daemon/control/dumps.h"
#include "daemon/control/event_log.h"
#include "daemon/log/log.h"
#include "daemon/metrics/sm_metrics.h"
#include "daemon/service/event_loop.h"
#include "daemon/service/health_service.h"
#include "daemon/service/notify.h"
#include "daemon/sm/subnet_manager.h"
#include "daemon/state/wall_clock.h"
#include "fabric/result.h"
#include "mad/clock.h"

namespace ibsm::daemon {

// The SubnetManager options a config asks for.
SmOptions smOptionsFrom(const config::Config& config, fabric::Guid localPort = {});

// Partitions added at run time (ibsmctl partition add) live in <state_dir>/partitions, in partitions.conf
// syntax, so that a restart keeps them. A missing file is none; a file that does not parse is kept aside
// (<name>.bad-<time>) with a warning, and the SM goes on without it.
std::string runtimePartitionsPath(const std::string& stateDir);
std::vector<fabric::Partition> loadRuntimePartitions(const std::string& stateDir,
                                                     std::vector<std::string>& warnings);

class Service {
 public:
  using ConfigLoader = std::function<fabric::Result<config::Config>()>;
  // clock times the sweeps; wallClock stamps what status shows (sweep start, SUBNET UP since). metrics, when
  // given (metrics.listen set), gets the sweeps, events, state and MAD/trap totals.
  Service(EventLoop& loop, mad::MadEngine& engine, SubnetManager& sm, Logger& log, Notifier& notify,
          EventLog& events, StatePublisher& state, DumpWriter& dumps,
          std::shared_ptr<const config::Config> config, ConfigLoader loadConfig, const mad::Clock& clock,
          const WallClock& wallClock, SmMetrics* metrics = nullptr);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // Registers the hand-off eventfd, the watchdog and sweep timers, and runs the first sweep.
  fabric::Result<void> start();
  // Any thread: run fn on the loop thread, in order.
  void post(std::function<void()> fn);
  // Control server thread: a state-changing request, executed on the loop thread; reply() when done.
  // Concurrent resweep/reroute requests share one sweep.
  void onChangeRequest(Request request, PeerCredentials peer, ControlServer::Reply reply);

  // Loop thread.
  SweepSummary sweep(const std::string& cause, bool heavy = false);
  void reload();  // SIGHUP
  void idle();    // publishes the MAD counters (and the metrics) between sweeps
  std::shared_ptr<const config::Config> config() const { return config_; }
  // What other rooms add to the metrics (the SA server's totals, the health policy's isolated ports): run on
  // the loop thread after every sweep and every 100 ms at most between them, only when metrics are on.
  using MetricsFeed = std::function<void(SmMetrics&)>;
  void addMetricsFeed(MetricsFeed feed) { metricsFeeds_.push_back(std::move(feed)); }
  // The run-time partitions loaded at start (before start()).
  void setRuntimePartitions(std::vector<fabric::Partition> partitions) { runtime_ = std::move(partitions); }
  // The performance manager and health policy (before start()): `health-release` requests and reloads go
  // there.
  void setHealthService(HealthService* health) { health_ = health; }
  // The config's partitions, then the run-time ones: what the SM programs.
  std::vector<fabric::Partition> allPartitions() const;

 private:
  struct Waiter {
    Json id;
    std::string command;
    ControlServer::Reply reply;
  };
  void runQueued();
  void runWaitingSweep();
  // Publishes the SM's current snapshot (if it changed since `before`) and the summary as the last sweep.
  void publish(const std::shared_ptr<const SubnetSnapshot>& before, SweepSummary& summary);
  void onTopologyEvent(const TopologyEvent& event);
  // The metrics' state, subnet-up, MAD and trap totals and light sweeps, from the rooms' accessors.
  void feedMetrics();
  std::string statusLine() const;
  Json loglevel(const Request& request, const PeerCredentials& peer);
  Json handover(const Request& request, const PeerCredentials& peer);
  // ibsmctl partition add|remove|add-member|remove-member: checked, persisted, applied as a delta.
  Json partition(const Request& request, const PeerCredentials& peer);

  EventLoop& loop_;
  mad::MadEngine& engine_;
  SubnetManager& sm_;
  Logger& log_;
  Notifier& notify_;
  EventLog& events_;
  StatePublisher& state_;
  DumpWriter& dumps_;
  std::shared_ptr<const config::Config> config_;
  ConfigLoader loadConfig_;
  const mad::Clock& clock_;
  const WallClock& wallClock_;
  SmMetrics* metrics_;
  uint64_t lightSweepsSeen_ = 0;
  fabric::TopologyPtr metricsTopology_;  // the topology the metrics' fabric info was built from
  std::vector<MetricsFeed> metricsFeeds_;
  mad::TimePoint nextMetricsFeed_{};

  int wakeFd_ = -1;
  std::mutex queueMutex_;
  std::vector<std::function<void()>> queue_;
  bool inSweep_ = false;
  std::vector<Waiter> sweepWaiters_;  // resweep/reroute requests waiting for the next sweep
  bool waitersHeavy_ = false;
  bool sweepPosted_ = false;
  bool subnetUp_ = false;
  std::vector<fabric::Partition> runtime_;  // run-time partitions (origin "ibsmctl")
  HealthService* health_ = nullptr;
};

}  // namespace ibsm::daemon
