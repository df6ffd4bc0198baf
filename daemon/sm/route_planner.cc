#include "daemon/sm/route_planner.h"

#include <algorithm>
#include <utility>

#include "routing/parallel.h"
#include "routing/rebalance.h"
#include "routing/sl_to_vl.h"

namespace ibsm::daemon {
namespace {
uint64_t maxLoad(const routing::PortLoads& loads) {
  uint64_t m = 0;
  for (const auto& ports : loads)
    for (uint64_t v : ports) m = std::max(m, v);
  return m;
}
}  // namespace

namespace {
// VL layers an engine may use: what the config allows (qos.vls), at most what every link offers.
routing::Options withFabricVls(routing::Options o, const fabric::Topology& topo) {
  o.vlLayers = std::min(o.vlLayers, routing::offeredDataVls(topo));
  return o;
}
}  // namespace

fabric::Result<RoutePlanner::Plan> RoutePlanner::plan(const SubnetSnapshot* previous,
                                                      const fabric::Topology& topo,
                                                      const routing::LidAssignment& lids, bool repair) {
  Plan out;
  std::string why;
  if (repair && previous) {
    auto loads = loadsOf(*previous);
    // An incremental rebalance follows and clears the entries of LIDs that left (routing::repairRoutes); for
    // dfly it also takes the links that came back, which the repair leaves to it.
    auto r = routing::repairRoutes(*previous->topology, previous->lids, previous->tables, *loads, topo, lids,
                                   options_.arGroupCap, rebalance_.mode != RebalanceMode::kIncremental,
                                   loadsFor_.lock().get() == previous ? index_ : nullptr);
    if (r) {
      out.tables = std::move(r->tables);
      out.loads = std::make_shared<const routing::PortLoads>(std::move(r->loads));
      out.index = std::move(r->index);
      out.moved = r->moved;
      out.how = "repair of " + std::to_string(r->destinations) + " LID(s)";
      if (!r->note.empty()) out.how += " (" + r->note + ")";
      out.repaired = true;
      return out;
    }
    why = r.error().message;
  }
  auto routed = routing::computeChain(engines_, topo, lids, withFabricVls(options_, topo));
  if (!routed) return fabric::makeError("routing failed: " + routed.error().message);
  out.tables = std::move(routed->tables);
  out.fallbacks = std::move(routed->fallbacks);
  // Why the repair could not be used and, when the engine changed, why the earlier ones declined (ROUTE002
  // is logged for sweeps only): "from scratch by dfsp (...; dfly: not a dragonfly (...))".
  out.how = "from scratch by " + out.tables.engine;
  if (previous && previous->tables.engine != out.tables.engine)
    for (const auto& f : out.fallbacks) why += (why.empty() ? "" : "; ") + f;
  if (!why.empty()) out.how += " (" + why + ")";
  return out;
}

void RoutePlanner::published(const std::shared_ptr<const SubnetSnapshot>& snap, Plan& plan) {
  if (plan.loads) {
    loadsFor_ = snap;
    loads_ = plan.loads;
    index_ = plan.index;
  }
  if (!background_) return;
  if (plan.repaired && rebalance_.mode != RebalanceMode::kOff)
    start({snap, true, plan.loads, plan.index});
  else if (!plan.loads)
    start({snap, false, nullptr, nullptr});
}

void RoutePlanner::start(Job job) {
  if (running_) {
    waiting_ = std::move(job);  // replaces an older waiting job: only the newest snapshot matters
    return;
  }
  running_ = job;
  rebalanceStart_ = clock_.now();
  // Background work leaves one core to the event loop (and, with it, to the MADs of the next event).
  routing::Options options = options_;
  options.threads = std::max(1u, options.threads - 1);
  future_ = std::async(std::launch::async, [engines = engines_, options, job, mode = rebalance_.mode]() {
    routing::lowerThreadPriority();  // an event preempts it
    const SubnetSnapshot& s = *job.snap;
    Rebalance r;
    if (!job.rebalance) {
      r.plan.loads = std::make_shared<const routing::PortLoads>(
          routing::computePortLoads(*s.topology, s.lids, s.tables, options.threads));
      r.plan.index = std::make_shared<const routing::RepairIndex>(*s.topology, s.lids);
      return r;
    }
    r.plan.index = job.index;  // the rebalance changes routes only
    auto loads = job.loads ? job.loads
                           : std::make_shared<const routing::PortLoads>(
                                 routing::computePortLoads(*s.topology, s.lids, s.tables, options.threads));
    r.currentMaxLoad = maxLoad(*loads);
    if (mode == RebalanceMode::kIncremental) {
      routing::RebalanceOptions ro;
      ro.arGroupCap = options.arGroupCap;
      auto b = routing::rebalanceRoutes(*s.topology, s.lids, s.tables, *loads, ro);
      if (!b) {
        r.error = b.error().message;
        return r;
      }
      r.plan.tables = std::move(b->tables);
      r.plan.loads = std::make_shared<const routing::PortLoads>(std::move(b->loads));
      r.plan.moved = b->moved;
      r.restored = b->restored;
      r.cleared = b->cleared;
      if (b->shiftShare > ro.maxShiftShare) r.shiftsLost = b->shiftShare;
      r.polished = b->polished;
      r.polishedShare = b->polishedShare;
      r.plan.how = b->note.empty() ? "incremental" : "incremental (" + b->note + ")";
      r.maxLoad = b->maxLoadAfter;
      r.lowerBound = b->target;
      return r;
    }
    auto routed = routing::computeChain(engines, *s.topology, s.lids, withFabricVls(options, *s.topology));
    if (!routed) {
      r.error = routed.error().message;
      return r;
    }
    r.plan.tables = std::move(routed->tables);
    r.plan.fallbacks = std::move(routed->fallbacks);
    r.plan.how = r.plan.tables.engine + " from scratch";
    r.plan.loads = std::make_shared<const routing::PortLoads>(
        routing::computePortLoads(*s.topology, s.lids, r.plan.tables, options.threads));
    r.maxLoad = maxLoad(*r.plan.loads);
    r.lowerBound = routing::loadLowerBound(*s.topology, s.lids);
    return r;
  });
}

// Takes the running job's result when it is done (block: wait for it); starts the waiting job.
void RoutePlanner::poll(bool block) {
  if (!running_) return;
  if (!block && future_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return;
  Rebalance done = future_.get();
  Job job = std::move(*running_);
  running_.reset();
  if (!job.rebalance) {
    loadsFor_ = job.snap;
    loads_ = std::move(done.plan.loads);
    index_ = std::move(done.plan.index);
  } else {
    done.computeTime = clock_.now() - rebalanceStart_;
    ready_ = std::move(done);
    readyFor_ = job.snap;
  }
  if (waiting_) start(*std::exchange(waiting_, std::nullopt));
}

std::optional<RoutePlanner::Rebalance> RoutePlanner::takeRebalance(const SubnetSnapshot* current) {
  poll(false);
  if (!ready_) return std::nullopt;
  if (readyFor_.lock().get() != current) {
    ready_.reset();  // computed for a snapshot that a newer change replaced
    return std::nullopt;
  }
  return std::exchange(ready_, std::nullopt);
}

void RoutePlanner::prepare(fabric::TopologyPtr topo, routing::LidAssignment lids) {
  if (!background_) return;
  if (prepared_) {
    if (prepared_->matches(*topo, lids, optionsVersion_)) return;
    // One still being computed is left to finish (dropping it would wait for it on the event loop); the next
    // refresh of the model asks again.
    if (prepared_->plan.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return;
  }
  routing::Options options = withFabricVls(options_, *topo);
  options.threads = std::max(1u, options.threads - 1);
  auto plan =
      std::async(std::launch::async, [engines = engines_, options, topo, lids]() -> fabric::Result<Plan> {
        routing::lowerThreadPriority();  // an event preempts it
        auto routed = routing::computeChain(engines, *topo, lids, options);
        if (!routed) return fabric::makeError("routing failed: " + routed.error().message);
        Plan out;
        out.tables = std::move(routed->tables);
        out.fallbacks = std::move(routed->fallbacks);
        out.how = "prepared while standby: from scratch by " + out.tables.engine;
        return out;
      });
  prepared_ = Prepared{std::move(topo), std::move(lids), optionsVersion_, std::move(plan)};
}

std::optional<RoutePlanner::Plan> RoutePlanner::takePrepared(const fabric::Topology& topo,
                                                             const routing::LidAssignment& lids) {
  if (!prepared_) return std::nullopt;
  if (!prepared_->matches(topo, lids, optionsVersion_)) {
    if (prepared_->plan.wait_for(std::chrono::seconds(0)) == std::future_status::ready) prepared_.reset();
    return std::nullopt;
  }
  auto plan = prepared_->plan.get();
  prepared_.reset();
  if (!plan) return std::nullopt;
  return std::move(*plan);
}

void RoutePlanner::wait() {
  while (running_) poll(true);
  if (prepared_) prepared_->plan.wait();
}

std::shared_ptr<const routing::PortLoads> RoutePlanner::loadsOf(const SubnetSnapshot& snap) {
  if (loads_ && loadsFor_.lock().get() == &snap) return loads_;
  if (running_ && !running_->rebalance && running_->snap.get() == &snap) {
    poll(true);
    if (loads_ && loadsFor_.lock().get() == &snap) return loads_;
  }
  return std::make_shared<const routing::PortLoads>(
      routing::computePortLoads(*snap.topology, snap.lids, snap.tables, options_.threads));
}

}  // namespace ibsm::daemon
