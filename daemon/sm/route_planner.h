// Routes for the SM cycle. After a sweep, the engine chain from scratch. After a change where a repair can
// follow (no new node or LID; routing/repair.h), first a fast repair that moves only the broken routes, and
// then, off the event loop on the published snapshot, a rebalancing run whose tables the SM programs as a
// delta when they lower the max link load enough (routing.rebalance_min_gain_pct). The rebalance is
// incremental by default (routing/rebalance.h: single entries move off the most loaded links, from the
// routes in place, until the load lower bound is reached; for dfly, whose routes allow no such moves, the
// engine's routes from scratch once a link that came back makes the dragonfly whole again, which the repair
// then leaves to it instead of routing from scratch on the event loop), or the engine chain from scratch
// (full: its balance, at the price of rewriting most tables), or none. Between the two, the repair keeps the
// link loads it needs; after a from-scratch run they are counted in the background. At most one background
// job runs at a time; a newer one replaces one still waiting.
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

enum class RebalanceMode { kOff, kIncremental, kFull };
struct RebalancePolicy {
  RebalanceMode mode = RebalanceMode::kIncremental;
  uint32_t minGainPct = 1;  // a rebalance that lowers the max link load by less is not programmed
};

class RoutePlanner {
 public:
  struct Plan {
    routing::RoutingTables tables;
    std::vector<std::string> fallbacks;  // engines that declined
    std::string how;                     // for the event log: "repair of 12 LIDs", "from scratch (...)"
    std::optional<size_t> moved;         // routes changed, when known without comparing the tables
    std::shared_ptr<const routing::PortLoads> loads;  // of these tables; null: counted in the background
    routing::RepairIndexPtr index;  // of the fabric, for the next repair; made with the loads
    bool repaired = false;
  };

  // background: run the loads and rebalancing jobs on a thread (the daemon); without it nothing runs in the
  // background and a repair counts the loads it needs itself (--once, tests that want no threads).
  RoutePlanner(const mad::Clock& clock, bool background) : clock_(clock), background_(background) {}
  ~RoutePlanner() { wait(); }
  RoutePlanner(const RoutePlanner&) = delete;
  RoutePlanner& operator=(const RoutePlanner&) = delete;

  void setOptions(std::vector<std::string> engines, routing::Options options,
                  RebalancePolicy rebalance = {}) {
    engines_ = std::move(engines);
    options_ = std::move(options);
    rebalance_ = rebalance;
    ++optionsVersion_;  // a prepared plan made with the old ones is not taken
  }
  const RebalancePolicy& rebalancePolicy() const { return rebalance_; }
  // A repair of previous's routes when asked for and possible, else the engine chain from scratch.
  fabric::Result<Plan> plan(const SubnetSnapshot* previous, const fabric::Topology& topo,
                            const routing::LidAssignment& lids, bool repair);
  // The snapshot published for plan: starts its background work (loads; after a repair, the rebalance).
  void published(const std::shared_ptr<const SubnetSnapshot>& snap, Plan& plan);

  struct Rebalance {
    Plan plan;                    // plan.how: "incremental (...)", "ftree from scratch"; moved when known
    mad::Duration computeTime{};  // off the event loop
    uint64_t maxLoad = 0;         // of the rebalanced routes (CA traffic on one switch port)
    uint64_t currentMaxLoad = 0;  // of the routes in place (the repair's)
    uint64_t lowerBound = 0;      // of any routing of the fabric (routing::loadLowerBound)
    size_t restored = 0;          // routes given back or made minimal again (routing::RebalanceResult)
    size_t cleared = 0;           // entries of LIDs that left, which the repair left (the same)
    uint32_t shiftsLost = 0;      // flows of a shift the repair left on a link, too many to keep; 0: kept
    size_t polished = 0;          // entries moved to bring such shifts back (routing::RebalanceResult)
    uint32_t polishedShare = 0;   // then the most flows of a shift on a link
    std::string error;            // no rebalance could be computed (the routes stay): why
  };
  // A finished rebalancing run for `current`, the snapshot still published; stale results are dropped (and
  // the next waiting job started).
  std::optional<Rebalance> takeRebalance(const SubnetSnapshot* current);
  // Blocks until no background job runs or waits (tests; destruction).
  void wait();

  // STANDBY: the routes a takeover would start from (the engine chain from scratch on the standby's model of
  // the fabric, with the LIDs its ports hold), computed off the event loop whenever that fabric changes, so
  // that a takeover publishes the SA's snapshot and sets the SM LID without routing first. Nothing without
  // background routing.
  void prepare(fabric::TopologyPtr topo, routing::LidAssignment lids);
  // The prepared plan if it was made for this fabric (fabric::sameFabric), these LIDs and the current
  // options; waits for it when it is still being computed.
  std::optional<Plan> takePrepared(const fabric::Topology& topo, const routing::LidAssignment& lids);

 private:
  struct Job {
    std::shared_ptr<const SubnetSnapshot> snap;
    bool rebalance = false;
    std::shared_ptr<const routing::PortLoads> loads;  // a rebalance: of snap's tables
    routing::RepairIndexPtr index;                    // of snap's fabric, when known
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
  routing::RepairIndexPtr index_;  // of loadsFor_'s fabric; null: built by the repair
  std::optional<Job> running_, waiting_;
  RebalancePolicy rebalance_;
  std::future<Rebalance> future_;
  mad::TimePoint rebalanceStart_{};
  std::optional<Rebalance> ready_;
  std::weak_ptr<const SubnetSnapshot> readyFor_;
  struct Prepared {
    fabric::TopologyPtr topo;
    routing::LidAssignment lids;
    uint64_t optionsVersion;
    std::future<fabric::Result<Plan>> plan;
    bool matches(const fabric::Topology& t, const routing::LidAssignment& l, uint64_t version) const {
      return optionsVersion == version && lids == l && fabric::sameFabric(*topo, t);
    }
  };
  std::optional<Prepared> prepared_;
  uint64_t optionsVersion_ = 0;
};

}  // namespace ibsm::daemon
