// Routes for the SM cycle. After a sweep, the engine chain from scratch. After a change where a repair can
// follow (no new node or LID; routing/repair.h), first a fast repair that moves only the broken routes, and
// then, off the event loop on the published snapshot, a rebalancing run of the engine chain whose tables the
// SM programs as a delta, so the fabric is back to the engine's balance for what is left. Between the two,
// the repair keeps the link loads it needs; after a from-scratch run they are counted in the background.
// At most one background job runs at a time; a newer one replaces one still waiting.
#pragma once

#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/state/subnet_snapshot.h"
#include "mad/clock.h"
#include "routing/engine.h"
#include "routing/repair.h"

namespace ibsm::daemon {

class RoutePlanner {
 public:
  struct Plan {
    routing::RoutingTables tables;
    std::vector<std::string> fallbacks;  // engines that declined
    std::string how;                     // for the event log: "repair of 12 LIDs", "from scratch (...)"
    std::optional<size_t> moved;         // routes changed, when known without comparing the tables
    std::shared_ptr<const routing::PortLoads> loads;  // of these tables; null: counted in the background
    bool repaired = false;
  };

  // background: run the loads and rebalancing jobs on a thread (the daemon); without it nothing runs in the
  // background and a repair counts the loads it needs itself (--once, tests that want no threads).
  RoutePlanner(const mad::Clock& clock, bool background) : clock_(clock), background_(background) {}
  ~RoutePlanner() { wait(); }
  RoutePlanner(const RoutePlanner&) = delete;
  RoutePlanner& operator=(const RoutePlanner&) = delete;

  void setOptions(std::vector<std::string> engines, routing::Options options) {
    engines_ = std::move(engines);
    options_ = std::move(options);
  }
  // A repair of previous's routes when asked for and possible, else the engine chain from scratch.
  fabric::Result<Plan> plan(const SubnetSnapshot* previous, const fabric::Topology& topo,
                            const routing::LidAssignment& lids, bool repair);
  // The snapshot published for plan: starts its background work (loads; after a repair, the rebalance).
  void published(const std::shared_ptr<const SubnetSnapshot>& snap, Plan& plan);

  struct Rebalance {
    Plan plan;
    mad::Duration computeTime{};  // off the event loop
    uint64_t maxLoad = 0;         // of the rebalanced routes (CA traffic on one switch port)
    uint64_t currentMaxLoad = 0;  // of the routes in place (the repair's)
  };
  // A finished rebalancing run for `current`, the snapshot still published; stale results are dropped (and
  // the next waiting job started).
  std::optional<Rebalance> takeRebalance(const SubnetSnapshot* current);
  // Blocks until no background job runs or waits (tests; destruction).
  void wait();

 private:
  struct Job {
    std::shared_ptr<const SubnetSnapshot> snap;
    bool rebalance = false;
  };
  struct Done {
    Plan plan;
    std::string error;  // the rebalancing run found no engine that routes the fabric
  };
  void start(Job job);
  void poll(bool block);
  std::shared_ptr<const routing::PortLoads> loadsOf(const SubnetSnapshot& snap);

  const mad::Clock& clock_;
  const bool background_;
  std::vector<std::string> engines_{"ftree", "dfly", "dor|dfsp", "updn", "minhop"};
  routing::Options options_;
  std::weak_ptr<const SubnetSnapshot> loadsFor_;
  std::shared_ptr<const routing::PortLoads> loads_;
  std::optional<Job> running_, waiting_;
  std::future<Done> future_;
  mad::TimePoint rebalanceStart_{};
  std::optional<Rebalance> ready_;
  std::weak_ptr<const SubnetSnapshot> readyFor_;
};

}  // namespace ibsm::daemon
