#include "daemon/sm/subnet_manager.h"

#include <algorithm>
#include <chrono>
#include <future>
#include <optional>
#include <utility>

#include "daemon/program/lft_reader.h"
#include "mad/notice.h"
#include "mad/smp.h"
#include "routing/adopt.h"

namespace ibsm::daemon {

using fabric::Guid;
using fabric::NodeIndex;

namespace {

// Whether b has the nodes of a (GUIDs and port counts), numbered alike.
bool sameNodes(const fabric::Topology& a, const fabric::Topology& b) {
  if (a.size() != b.size()) return false;
  for (NodeIndex n = 0; n < a.size(); ++n)
    if (!a.nodes().sameRow(n, b.nodes(), n) &&
        (a.node(n).guid != b.node(n).guid || a.node(n).numPorts != b.node(n).numPorts))
      return false;
  return true;
}

// When b has a's nodes but some switches (a switch lost whole) and nothing new: the LIDs of a's endports
// (lids) on b's nodes, every one where it was (a CA port no longer linked has none, as routing::assignLids
// would give it). Otherwise nothing.
std::optional<routing::LidAssignment> lidsWithSwitchesGone(const fabric::Topology& a,
                                                           const routing::LidAssignment& lids,
                                                           const fabric::Topology& b) {
  if (b.size() >= a.size() || b.cas().size() != a.cas().size()) return std::nullopt;
  routing::LidAssignment out(b);
  out.setLmc(lids.lmc());
  for (NodeIndex n = 0; n < b.size(); ++n) {
    const fabric::Node& node = b.node(n);
    auto o = a.findNode(node.guid);
    if (!o || a.node(*o).numPorts != node.numPorts || a.node(*o).type != node.type) return std::nullopt;
    for (unsigned p = 0; p <= node.numPorts; ++p) {
      if (p > 0 && !node.ports[p].connected()) continue;
      const fabric::PortNum port{static_cast<uint8_t>(p)};
      if (auto r = lids.range(*o, port); r.base.value) out.set(n, port, r);
    }
  }
  return out;
}

// Whether every CA port of b, which has the nodes of a (sameNodes), has the same link, peer and state: then
// the partitions resolve alike and every P_Key table (CA ports and the switch ports facing them) stays. A row
// both share is the same; the same nodes have the same numbers, so a peer is compared by its number.
bool sameEndPorts(const fabric::Topology& a, const fabric::Topology& b) {
  for (NodeIndex n = 0; n < a.size(); ++n) {
    if (a.nodes().sameRow(n, b.nodes(), n)) continue;
    const fabric::Node &x = a.node(n), &y = b.node(n);
    if (x.isSwitch()) continue;
    for (size_t p = 1; p < x.ports.size() && p < y.ports.size(); ++p) {
      const fabric::Port &u = x.ports[p], &v = y.ports[p];
      if (u.connected() != v.connected() || u.attrs.state != v.attrs.state) return false;
      if (u.connected() && (u.peerNode != v.peerNode || u.peerPort != v.peerPort)) return false;
    }
  }
  return true;
}

SmStateOptions smStateOptions(const SmOptions& o) {
  return {o.priority, o.smKey, o.pollInterval, o.pollRetries};
}

// Whether a targeted re-discovery found the re-read switches as the SM left them: the same nodes, every port
// of those switches with the same peer, a linked one in the same state, and port 0 with the same LID. (An
// unlinked port's state is not kept up to date when only its peer was re-read, and a switch's external ports
// have no LID of their own: neither matters to routing or programming.)
bool nothingChanged(const DiscoveryResult& before, const DiscoveryResult& after,
                    const std::vector<Guid>& switches) {
  const fabric::Topology& b = *before.topology;
  const fabric::Topology& a = *after.topology;
  if (a.nodes().size() != b.nodes().size() || after.heldDown != before.heldDown) return false;
  auto peer = [](const fabric::Topology& t, const fabric::Port& p) {
    return p.connected() ? std::pair{t.node(p.peerNode).guid, p.peerPort.value}
                         : std::pair{Guid{}, uint8_t{0}};
  };
  for (Guid g : switches) {
    auto nb = b.findNode(g), na = a.findNode(g);
    if (!nb || !na || b.node(*nb).numPorts != a.node(*na).numPorts) return false;
    for (unsigned p = 0; p <= b.node(*nb).numPorts; ++p) {
      const fabric::Port &pb = b.node(*nb).ports[p], &pa = a.node(*na).ports[p];
      if (peer(b, pb) != peer(a, pa) || (pb.connected() && pb.attrs.state != pa.attrs.state)) return false;
      if (p == 0 && pb.attrs.lid != pa.attrs.lid) return false;
    }
  }
  return true;
}
}  // namespace

SubnetManager::SubnetManager(mad::MadEngine& engine, const mad::Clock& clock, const WallClock& wallClock,
                             SmOptions options)
    : engine_(engine),
      clock_(clock),
      wallClock_(wallClock),
      options_(std::move(options)),
      discoverer_(engine, clock),
      programmer_(engine, clock),
      arProgrammer_(engine, clock, options_.ar),
      mcastProgrammer_(engine, clock),
      pkeyProgrammer_(engine, clock),
      vlProgrammer_(engine, clock),
      planner_(clock, options_.backgroundRouting),
      ha_(engine, clock, smStateOptions(options_), options_.portGuid,
          [this](TopologyEvent e) { logEvent(std::move(e)); }),
      updates_(clock, options_.trapBatchDelay),
      flaps_(clock, options_.holdDown, options_.maxHoldDown),
      traps_(engine, clock, options_.trapBatchDelay),
      lids_(options_.guid2lidPath, options_.lmc) {
  if (options_.ipoibBroadcast) {
    // The default partition's group at once (before the first sweep resolves the partitions).
    const std::vector<fabric::Partition> only{fabric::defaultPartition()};
    const auto& parts = options_.partitions.empty() ? only : options_.partitions;
    for (const auto& p : parts)
      if (p.ipoib) mcastGroups_.createBroadcastGroup(p.pkey, *p.ipoib);
  }
  nextLightSweep_ = clock_.now() + options_.lightSweepInterval;
  mkey_ = options_.program.mkey;
  planner_.setOptions(options_.engines, options_.routing, options_.rebalance);
}

void SubnetManager::setOptions(SmOptions options) {
  options_ = std::move(options);
  options_.program.mkey = mkey_;  // sm.m_key is [restart]: the ports hold the key resolved at start
  arProgrammer_.setOptions(options_.ar);
  ha_.setOptions(smStateOptions(options_));
  updates_.setBatchDelay(options_.trapBatchDelay);
  traps_.setDuplicateWindow(options_.trapBatchDelay);
  flaps_.setHoldDowns(options_.holdDown, options_.maxHoldDown);
  lids_.setOptions(options_.guid2lidPath, options_.lmc);
  planner_.setOptions(options_.engines, options_.routing, options_.rebalance);
}

// A master whose sweep failed or left the subnet not up (MADs lost, a port that refused a Set) sweeps again
// on its own, 1 s later, then after 2, 4, ... up to 30 s, whatever the sweep interval: nothing else might
// ever ask it to.
fabric::Result<SweepReport> SubnetManager::sweep(const std::string& cause) {
  constexpr mad::Duration kFirstRetry = std::chrono::seconds(1), kMaxRetry = std::chrono::seconds(30);
  auto r = heavySweep(cause);
  if (r ? r->subnetUp || ha_.state() != SmState::kMaster : ha_.state() == SmState::kStandby) {
    retryAt_.reset();
    retryDelay_ = kFirstRetry;
  } else {
    retryAt_ = clock_.now() + retryDelay_;
    retryDelay_ = std::min<mad::Duration>(retryDelay_ * 2, kMaxRetry);
  }
  return r;
}

fabric::Result<SweepReport> SubnetManager::heavySweep(const std::string& cause) {
  const mad::TimePoint start = clock_.now();
  SweepReport report;
  // A takeover (failover or handover) while the standby's model is current starts from it: the SA and the
  // programming need no discovery first. What changed since it was read and is not acknowledged yet
  // (PortStateChange still set) is found by the light sweep that follows at once.
  const bool warm = standbyModel_ && options_.lightSweepInterval.count() > 0 &&
                    ha_.state() != SmState::kDiscovering &&
                    clock_.now() - standbyModelAt_ <= kStandbyModelLifetimes * options_.lightSweepInterval;
  const mad::TimePoint modelAt = standbyModelAt_;
  auto found = warm ? fabric::Result<DiscoveryResult>(std::move(*standbyModel_)) : discoverer_.discover();
  standbyModel_.reset();
  if (!found) return fabric::makeError("discovery failed: " + found.error().message);
  if (warm) found->stats = DiscoveryStats{};  // nothing was read for this sweep
  report.discovery = found->stats;
  const SmState stateBefore = ha_.state();
  SmStateMachine::Decision decision = ha_.discover(found->topology);
  if (ha_.state() != stateBefore && onState_) onState_();
  if (decision.state != SmState::kMaster && found->stats.failed == 0) {
    standbyModel_ = *found;  // a standby keeps the fabric it found warm for a takeover
    standbyModelAt_ = warm ? modelAt : start;
    prepareTakeover();
  }
  if (decision.state != SmState::kMaster) {
    // Another SM has (or will have) the fabric: leave it alone.
    const RemoteSm* m = decision.master ? ha_.machine().findRemote(*decision.master) : nullptr;
    report.warnings.push_back(std::string("SM010 ") + toString(decision.state) +
                              (m ? ": master is " + fabric::toString(m->guid) + " (LID " +
                                       std::to_string(m->lid) + ", priority " + std::to_string(m->priority) +
                                       ")"
                                 : ""));
    report.total = clock_.now() - start;
    return report;
  }
  auto applied = apply(std::move(*found), std::move(report), false);
  if (!applied) return applied;
  applied->total = clock_.now() - start;
  if (decision.handoverTo) ha_.handOver(*decision.handoverTo);
  TopologyEvent ev;
  ev.cause = cause;
  ev.action = "heavy sweep";
  if (warm) {
    ev.action +=
        " from the standby's model read " +
        std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(start - modelAt).count()) +
        " ms before (no discovery), routes " + applied->routes;
    nextLightSweep_ = clock_.now();  // what changed since the model was read: at the next tick
  }
  if (const auto& rb = applied->readback)
    ev.action += "; LFTs read back: " + std::to_string(rb->blocks) + " blocks (" +
                 std::to_string(rb->failed) + " failed), " + std::to_string(rb->kept) +
                 " held entries kept where a fresh run differs, " + std::to_string(rb->replaced) +
                 " invalid ones replaced" + (rb->note.empty() ? "" : " (" + rb->note + ")");
  ev.lftBlocksSent = applied->program.lftBlocksSent;
  ev.vlSetsSent = applied->vl.sets();
  ev.smps =
      applied->discovery.smps + applied->program.smps() + applied->ar.smps() + applied->mcast.phase.smps;
  ev.convergence = applied->total;
  ev.ok = applied->subnetUp;
  logEvent(std::move(ev));
  return applied;
}

// LIDs, routes and programming for a fresh discovery result; publishes the new snapshot.
fabric::Result<SweepReport> SubnetManager::apply(DiscoveryResult found, SweepReport report, bool stabilize) {
  const fabric::TopologyPtr discovered = found.topology;  // the programmer replaces found.topology
  const fabric::Topology& topo = *discovered;
  ha_.noteOwnPort(topo);
  for (const auto& w : found.stats.warnings) report.warnings.push_back(w);

  // Taking over from another master: the LIDs the fabric holds win over our file, so no LID changes.
  // An update that finds the same nodes under the same numbers keeps every LID: nothing to assign or save.
  // A switch lost whole keeps every LID as well (its own stays reserved for it in the file): no assignment.
  const bool sameAsLast = stabilize && last_ && snapshot_ && sameNodes(*last_->topology, topo);
  std::optional<routing::LidAssignment> kept;
  if (sameAsLast)
    kept = snapshot_->lids;
  else if (stabilize && last_ && snapshot_)
    kept = lidsWithSwitchesGone(*last_->topology, snapshot_->lids, topo);
  auto assigned =
      kept ? fabric::Result<routing::LidAssignResult>(routing::LidAssignResult{std::move(*kept), {}, {}, 0})
           : lids_.assign(topo, ha_.machine().tookOver());
  if (!assigned) return fabric::makeError(assigned.error().message);
  for (auto& w : assigned->warnings) report.warnings.push_back(std::move(w));
  report.lidsChanged = assigned->changed;

  // Routing sees isolated links as down (the programmer still works on the fabric as found).
  const fabric::TopologyPtr routeTopo = routingView(discovered);
  // A new master term (start, takeover, handover): what the switches hold is read back, and the routes held
  // stay where they are valid, so nothing is written that need not be. The SA answers from the fresh
  // engine's tables meanwhile (a standby has them ready for its model), and the hosts learn the new SM LID
  // before the (long) read.
  const bool newTerm = ha_.machine().masterTerms() != readBackTerm_;
  std::optional<RoutePlanner::Plan> prepared;
  if (newTerm) prepared = planner_.takePrepared(*routeTopo, assigned->lids);
  // Routes from scratch (no earlier snapshot to repair, nothing prepared) are computed on a thread while the
  // endports get their LIDs and the new links are armed, which needs no routes.
  const bool scratch = !prepared && !(stabilize && snapshot_);
  auto route = [this, routeTopo, &lids = assigned->lids, stabilize,
                previous = stabilize ? snapshot_.get() : nullptr] {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = planner_.plan(previous, *routeTopo, lids, stabilize);
    return std::pair(std::move(r),
                     std::chrono::duration_cast<mad::Duration>(std::chrono::steady_clock::now() - t0));
  };
  std::future<decltype(route())> routing;
  RoutePlanner::Plan plan;  // the programmer reads its tables: filled before the switches are programmed
  std::string routeError;
  auto takeRoutes = [&](decltype(route()) r) {
    report.routingTime = r.second;
    if (!r.first) {
      routeError = r.first.error().message;
      return false;
    }
    plan = std::move(*r.first);
    report.engine = plan.tables.engine;
    report.fallbacks = plan.fallbacks;
    report.routes = plan.how;
    report.routesMoved = plan.moved;
    return true;
  };
  if (prepared) {
    takeRoutes({std::move(*prepared), mad::Duration::zero()});
  } else if (scratch) {
    routing = std::async(std::launch::async, route);
  } else if (!takeRoutes(route())) {
    return fabric::makeError(routeError);
  }
  ProgramOptions program = options_.program;
  const uint32_t terms = ha_.machine().masterTerms();
  program.clientReregister = terms != reregisteredAt_;  // first run as master: hosts re-register
  reregisteredAt_ = terms;
  // The partitions are resolved now (the SA's snapshot has them) and their P_Key tables written after the
  // endports' LIDs and SM LID (hosts find the SA sooner after a takeover), before any port goes ACTIVE: a
  // port's partition membership is set up before its link carries data. An update that finds every end port
  // as the last run left it (a link between switches changed) changes no partition table.
  const bool samePartitions = sameAsLast && sameEndPorts(*last_->topology, topo);
  if (!samePartitions) resolvePartitions(topo);
  auto early = [&] {
    if (!newTerm) return;
    readBackTerm_ = ha_.machine().masterTerms();
    publishEarly(routeTopo, assigned->lids, plan.tables);
  };
  if (!routing.valid()) early();
  program.beforeSwitches = [&](std::vector<PhaseStats>& phases) {
    if (routing.valid()) {
      if (!takeRoutes(routing.get())) return false;
      early();
    }
    if (!samePartitions) {
      report.pkeys = pkeyProgrammer_.program(topo, *partitionMap_);
      phases.push_back(report.pkeys.phase);
    }
    if (newTerm) phases.push_back(adoptHeldRoutes(found, *routeTopo, assigned->lids, plan.tables, report));
    return true;
  };
  report.program = programmer_.program(found, assigned->lids, plan.tables, cache_, program);
  for (const auto& w : report.pkeys.warnings) report.warnings.push_back(w);
  if (!routeError.empty()) return fabric::makeError(routeError);
  // Partition enforcement after the port states: the Sets above start from the blocks as read.
  {
    std::vector<std::string> enforceErrors;  // a switch that refuses it still forwards: a warning
    report.program.phases.push_back(
        programmer_.enforcePartitions(found, pkeyProgrammer_.facingPorts(), enforceErrors));
    for (auto& e : enforceErrors) report.warnings.push_back(std::move(e));
  }
  // The VL layer before the ports go ACTIVE is not needed (SL 0 maps to VL 0 by default and only the engine's
  // SLs use the others); it follows the LFTs, and nothing is sent while one VL is used.
  VlProgramOptions vl = options_.vl;
  vl.layers = plan.tables.slLayers;
  report.vl = vlProgrammer_.program(*found.topology, plan.tables, vl);
  if (report.vl.phase.smps) report.program.phases.push_back(report.vl.phase);
  for (const auto& e : report.vl.errors) report.program.errors.push_back(e);
  // A discovery SMP that got no answer at all may hide part of the fabric: the subnet is not up, and the SM
  // sweeps again (as OpenSM does after errors during initialization).
  report.subnetUp = report.program.errors.empty() && report.discovery.failed == 0;
  if (report.discovery.failed)
    report.warnings.push_back("DISC007 " + std::to_string(report.discovery.failed) +
                              " discovery SMP(s) got no answer: the fabric seen may be incomplete");
  if (report.program.mkeyIgnored)
    report.warnings.push_back("MKEY001 " + std::to_string(report.program.mkeyIgnored) +
                              " port(s) acknowledged the M_Key but do not keep it (their SMA has no M_Key "
                              "support): they are not protected");
  // AR after the plain LFTs (which stay correct on their own: an AR fallback does not make the subnet down).
  report.ar = arProgrammer_.program(*found.topology, plan.tables);
  for (const auto& w : report.ar.warnings) report.warnings.push_back(w);
  for (const auto& e : report.ar.errors) report.warnings.push_back(e);
  mcastGroups_.dropMissingPorts(*found.topology);
  programMulticast(*found.topology);
  report.mcast = lastMcast_;
  for (const auto& w : report.mcast.warnings) report.warnings.push_back(w);
  for (const auto& e : report.mcast.errors) report.warnings.push_back(e);
  ++sweeps_;
  auto snap = std::make_shared<SubnetSnapshot>();
  snap->topology = routingView(found.topology);
  snap->lids = std::move(assigned->lids);
  snap->tables = std::move(plan.tables);
  snap->pkeys = pkeyProgrammer_.tables();
  snap->partitions = partitionMap_;
  snap->partitionDefs = partitionDefs_;
  snapshot_ = std::move(snap);
  planner_.published(snapshot_, plan);
  last_ = std::move(found);
  return report;
}

fabric::Result<SweepReport> SubnetManager::update(const std::vector<Guid>& switches, const std::string& cause,
                                                  mad::TimePoint eventTime) {
  if (!last_) return sweep(cause);
  const mad::TimePoint start = clock_.now();
  const fabric::Topology& before = *last_->topology;
  std::vector<NodeIndex> changed;
  for (Guid g : switches)
    if (auto n = before.findNode(g)) changed.push_back(*n);
  TopologyEvent ev;
  ev.cause = cause;
  auto found = discoverer_.rediscover(*last_, changed, flaps_.active());
  SweepReport report;
  const bool targeted = found.ok();
  if (!found) {
    // A changed switch did not answer: its region is not known well enough to patch. Sweep everything.
    ev.action = "heavy sweep (targeted re-discovery failed: " + found.error().message + ")";
    auto full = discoverer_.discover();
    if (!full) return fabric::makeError("discovery failed: " + full.error().message);
    found = std::move(full);
  } else {
    ev.action = "targeted re-discovery of " + std::to_string(changed.size()) + " switch(es)";
  }
  report.discovery = found->stats;
  if (!found->unchanged) {
    FlapDamping::LinkChanges links = flaps_.noteLinkChanges(before, *found->topology, switches);
    ev.linksUp = links.up;
    ev.linksDown = links.down;
    // Held-down ports that came up: look at them again when their hold-down ends.
    for (const auto& [guid, port] : found->heldDown)
      if (auto due = flaps_.heldUntil(guid, port))
        updates_.queueAt({guid}, "hold-down of a flapping port ended", *due);
  }
  // An update that finds the fabric as it was (a light sweep's PortStateChange, a trap about a link that is
  // back by now) costs no routing, no programming and no file I/O. Either the re-read ports were as the SM
  // left them (no topology built), or they changed and came back (the same links and LIDs).
  if (targeted && (found->unchanged || nothingChanged(*last_, *found, switches))) {
    ev.action += ": nothing changed";
    ev.smps = found->stats.smps;
    ev.convergence = clock_.now() - eventTime;
    logEvent(std::move(ev));
    report.total = clock_.now() - start;
    return report;  // discovery only: the subnet is as the last sweep left it
  }
  auto old = snapshot_;
  // Only the broken routes move now (a repair, when the change allows one); the balance comes back with the
  // rebalancing run that follows off the event loop (tick() programs it).
  auto applied = apply(std::move(*found), std::move(report), true);
  if (!applied) return applied;
  applied->total = clock_.now() - start;
  ev.action += "; routes: " + applied->routes;
  ev.rereadTime = applied->discovery.elapsed;
  ev.routingTime = applied->routingTime;
  if (applied->routesMoved)
    ev.lftEntriesChanged = *applied->routesMoved;
  else if (old)
    ev.lftEntriesChanged = countRouteChanges(old.get(), *snapshot_);
  ev.lftBlocksSent = applied->program.lftBlocksSent;
  ev.vlSetsSent = applied->vl.sets();
  ev.smps =
      applied->discovery.smps + applied->program.smps() + applied->ar.smps() + applied->mcast.phase.smps;
  ev.convergence = clock_.now() - eventTime;
  ev.ok = applied->subnetUp;
  logEvent(std::move(ev));
  return applied;
}

fabric::TopologyPtr SubnetManager::routingView(const fabric::TopologyPtr& topo) const {
  if (isolated_.empty()) return topo;
  fabric::Topology::AttrPatch patch;
  for (const auto& [guid, port] : isolated_) {
    auto n = topo->findNode(guid);
    if (!n || port >= topo->node(*n).ports.size() || !topo->node(*n).ports[port].connected()) continue;
    fabric::PortAttrs attrs = topo->node(*n).ports[port].attrs;
    attrs.valid = true;
    attrs.state = fabric::PortState::kDown;
    patch.ports.emplace_back(*n, fabric::PortNum{port}, attrs);
  }
  return patch.empty() ? topo : topo->withAttrs(patch);
}

fabric::Result<SweepReport> SubnetManager::setIsolatedPorts(std::vector<std::pair<Guid, uint8_t>> ports,
                                                            const std::string& cause) {
  std::sort(ports.begin(), ports.end());
  ports.erase(std::unique(ports.begin(), ports.end()), ports.end());
  if (ports == isolated_) return SweepReport{};
  // A link that comes back is used at once: the engine chain from scratch (a repair only moves routes off
  // what was lost). A new isolation is a repair, like a link that went down.
  const bool released = !std::includes(ports.begin(), ports.end(), isolated_.begin(), isolated_.end());
  isolated_ = std::move(ports);
  if (!last_ || !snapshot_ || ha_.state() != SmState::kMaster) return SweepReport{};
  const mad::TimePoint start = clock_.now();
  auto old = snapshot_;
  DiscoveryResult found = *last_;  // the fabric as the SM left it: nothing is read again
  found.stats = DiscoveryStats{};
  auto applied = apply(std::move(found), SweepReport{}, !released);
  if (!applied) return applied;
  applied->total = clock_.now() - start;
  TopologyEvent ev;
  ev.cause = cause;
  ev.action = "isolated links: " + std::to_string(isolated_.size() / 2) + "; routes: " + applied->routes;
  ev.lftEntriesChanged =
      applied->routesMoved ? *applied->routesMoved : countRouteChanges(old.get(), *snapshot_);
  ev.lftBlocksSent = applied->program.lftBlocksSent;
  ev.vlSetsSent = applied->vl.sets();
  ev.smps = applied->program.smps() + applied->ar.smps() + applied->mcast.phase.smps;
  ev.convergence = applied->total;
  ev.ok = applied->subnetUp;
  logEvent(std::move(ev));
  return applied;
}

std::vector<std::pair<std::pair<Guid, uint8_t>, mad::TimePoint>> SubnetManager::heldDownPorts() const {
  std::vector<std::pair<std::pair<Guid, uint8_t>, mad::TimePoint>> out;
  for (const auto& p : flaps_.active())
    if (auto until = flaps_.heldUntil(p.first, p.second)) out.emplace_back(p, *until);
  return out;
}

PkeyReport SubnetManager::programPartitions(const fabric::Topology& topo) {
  resolvePartitions(topo);
  return pkeyProgrammer_.program(topo, *partitionMap_);
}

void SubnetManager::resolvePartitions(const fabric::Topology& topo) {
  partitionMap_ =
      std::make_shared<const fabric::PartitionMap>(fabric::PartitionMap::resolve(topo, options_.partitions));
  partitionDefs_ = std::make_shared<const std::vector<fabric::Partition>>(options_.partitions);
  std::vector<McastGroups::BroadcastGroup> groups;
  if (options_.ipoibBroadcast)
    for (const auto& e : partitionMap_->partitions())
      if (e.ipoib) groups.push_back({e.pkey, *e.ipoib});
  mcastGroups_.setBroadcastGroups(groups);
}

PkeyReport SubnetManager::setPartitions(std::vector<fabric::Partition> partitions) {
  options_.partitions = std::move(partitions);
  if (!snapshot_ || ha_.state() != SmState::kMaster) return PkeyReport{};
  PkeyReport r = programPartitions(*snapshot_->topology);
  if (last_) {
    std::vector<std::string> errors;
    r.phase.smps += programmer_.enforcePartitions(*last_, pkeyProgrammer_.facingPorts(), errors).smps;
    for (auto& e : errors) r.warnings.push_back(std::move(e));
  }
  auto snap = std::make_shared<SubnetSnapshot>(*snapshot_);
  snap->pkeys = pkeyProgrammer_.tables();
  snap->partitions = partitionMap_;
  snap->partitionDefs = partitionDefs_;
  snapshot_ = std::move(snap);
  if (mcastGroups_.version() != mcastVersion_) programMulticast(*snapshot_->topology);
  return r;
}

void SubnetManager::logEvent(TopologyEvent ev) {
  ev.when = wallClock_.now();
  if (onEvent_) onEvent_(ev);
}

std::vector<Guid> SubnetManager::askPortStateChange(const std::vector<Guid>& switches,
                                                    const mad::RequestOptions& attempts,
                                                    std::vector<Guid>& changed, bool yieldToTraps,
                                                    size_t* asked) {
  std::vector<Guid> silent;
  const fabric::Topology& topo = *last_->topology;
  auto ask = [&](Guid guid) {
    auto n = topo.findNode(guid);
    if (!n) return;  // gone since: the update that dropped it has run
    fabric::DrPath route = topo.route(*n);
    engine_.submit(
        mad::makeDirectedSmp(mad::kGet, mad::kAttrSwitchInfo, 0, route),
        [this, guid, route, &changed, &silent](const mad::MadResult& r) {
          if (!r.ok() || r.header.status != 0) return silent.push_back(guid);
          if (!mad::decodeSwitchInfo(mad::smpData(r.response)).portStateChange) return;
          changed.push_back(guid);
          // PortStateChange is write-1-to-clear: write back what we read, which has it set.
          mad::MadPacket clear = mad::makeDirectedSmp(mad::kSet, mad::kAttrSwitchInfo, 0, route);
          std::copy_n(mad::smpData(r.response), mad::kSmpDataSize, mad::smpData(clear));
          engine_.submit(std::move(clear), nullptr);
        },
        attempts);
  };
  // A window at a time, so that a trap stops the asking within one round trip.
  size_t next = 0;
  for (;;) {
    while (next < switches.size() && engine_.queued() == 0 && engine_.inFlight() < engine_.options().window &&
           !(yieldToTraps && updates_.waiting()))
      ask(switches[next++]);
    if (engine_.idle()) break;
    engine_.poll(engine_.options().timeout);
  }
  if (asked) *asked = next;
  return silent;
}

void SubnetManager::lightSweep() {
  if (!snapshot_ || !last_) return;
  const mad::TimePoint start = clock_.now();
  std::vector<Guid> all, changed;
  for (NodeIndex s : last_->topology->switches()) all.push_back(last_->topology->node(s).guid);
  // One short attempt each first: a switch that does not answer is most often behind a link that just went
  // down, on a directed route through it. The switches that report the change are updated first (which
  // finds the dead link from its live end and routes the SM's directed routes around it); then the silent
  // ones are asked again, with every retry, through their routes as they are now. Only those still silent
  // are looked at closer (gone, or their route is broken). Before, each was re-read through its dead route
  // with every retry and failed the targeted update into a heavy sweep.
  size_t asked = 0;
  std::vector<Guid> silent = askPortStateChange(all, mad::RequestOptions{{}, 1}, changed, true, &asked);
  auto cause = [&] {
    return "light sweep: PortStateChange on " + std::to_string(changed.size()) + " switch(es)";
  };
  // The light sweep has collected its switches already: no batch delay for them.
  auto updateChanged = [&] {
    if (changed.empty()) return;
    (void)update(changed, cause(), clock_.now());
    changed.clear();
  };
  if (asked < all.size()) {
    // A trap came in: its update runs first, with the switches found changed so far, and the light sweep
    // starts again after it.
    if (!changed.empty()) updates_.queue(changed, cause());
    nextLightSweep_ = clock_.now();
  } else {
    updateChanged();
    if (!silent.empty() && last_) {
      // A trap that came in meanwhile is most often what silenced them: its update goes first.
      if (auto batch = updates_.take()) (void)update(batch->switches, batch->cause, batch->since);
      for (Guid g : askPortStateChange(silent, mad::RequestOptions{}, changed)) changed.push_back(g);
      updateChanged();
    }
  }
  ++lightSweeps_.count;
  lightSweeps_.last = clock_.now() - start;
}

// The rebalancing run after a repair: its tables replace the repaired ones, programmed as a delta, when they
// lower the max link load by at least routing.rebalance_min_gain_pct, or give routes back (a switch without
// one, a link that came back and makes routes minimal again) or clear the entries of LIDs that left without
// raising it; otherwise the repaired routes stay and nothing is written.
void SubnetManager::programRebalance(RoutePlanner::Rebalance rebalance) {
  const mad::TimePoint start = clock_.now();
  auto old = snapshot_;
  TopologyEvent ev;
  ev.cause = "rebalance after the last repair";
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(rebalance.computeTime).count();
  if (!rebalance.error.empty()) {
    ev.action = "rebalance: none (" + rebalance.error + "): the repaired routes stay";
    ev.convergence = clock_.now() - start;
    logEvent(std::move(ev));
    return;
  }
  // Gain in hundredths of a percent of the max link load in place.
  const uint64_t current = rebalance.currentMaxLoad, after = rebalance.maxLoad;
  const uint64_t gain = after < current && current ? (current - after) * 10000 / current : 0;
  auto pct = [](uint64_t hundredths) {
    return std::to_string(hundredths / 100) + "." + std::to_string(hundredths / 10 % 10) +
           std::to_string(hundredths % 10) + "%";
  };
  ev.action = "rebalance: " + rebalance.plan.how + ", computed off the event loop in " + std::to_string(ms) +
              " ms, max link load " + std::to_string(current) + " -> " + std::to_string(after) + " (gain " +
              pct(gain) + ", lower bound " + std::to_string(rebalance.lowerBound) + ")";
  if (rebalance.restored)
    ev.action += ", " + std::to_string(rebalance.restored) + " routes given back or made minimal again";
  if (rebalance.cleared)
    ev.action += ", " + std::to_string(rebalance.cleared) + " entries of LIDs that left the fabric cleared";
  if (rebalance.shiftsLost)
    ev.action += ", shifts not kept (the repair left up to " + std::to_string(rebalance.shiftsLost) +
                 " flows of one on a link): the load alone";
  if (rebalance.polished)
    ev.action += ", " + std::to_string(rebalance.polished) + " entries moved for the shifts (now at most " +
                 std::to_string(rebalance.polishedShare) + " flows of one on a link)";
  const uint32_t minGain = planner_.rebalancePolicy().minGainPct;
  // Routes given back (a switch's route, a dragonfly's own routes once it is whole), entries cleared and
  // shifts brought back are written whatever the load does.
  const bool owed = rebalance.restored || rebalance.cleared || rebalance.polished;
  if (!owed && (after >= current || gain < uint64_t{minGain} * 100)) {
    ev.action += ", below the " + std::to_string(minGain) + "% threshold: nothing written";
    ev.convergence = clock_.now() - start;
    logEvent(std::move(ev));
    return;
  }
  // Everything but the tables as it was (not copying the old tables).
  auto snap = std::make_shared<SubnetSnapshot>(SubnetSnapshot{old->topology, old->lids,
                                                              std::move(rebalance.plan.tables), old->pkeys,
                                                              old->partitions, old->partitionDefs});
  ProgramReport program = programmer_.program(*last_, snap->lids, snap->tables, cache_, options_.program);
  VlProgramOptions vlOptions = options_.vl;
  vlOptions.layers = snap->tables.slLayers;
  VlReport vl = vlProgrammer_.program(*last_->topology, snap->tables, vlOptions);
  for (const auto& e : vl.errors) program.errors.push_back(e);
  program.phases.push_back(vl.phase);
  ArReport ar = arProgrammer_.program(*last_->topology, snap->tables);
  ev.lftEntriesChanged = countRouteChanges(old.get(), *snap);
  ev.lftBlocksSent = program.lftBlocksSent;
  ev.vlSetsSent = vl.sets();
  ev.smps = program.smps() + ar.smps();
  ev.ok = program.errors.empty();
  snapshot_ = std::move(snap);
  planner_.published(snapshot_, rebalance.plan);
  ev.convergence = clock_.now() - start;
  logEvent(std::move(ev));
}

// The SA answers while the blocks are read back (at 11,664 hosts that takes seconds): a PathRecord needs the
// topology, the LIDs and a way along the tables, which the fresh engine's give. So a first snapshot.
void SubnetManager::publishEarly(fabric::TopologyPtr routeTopo, const routing::LidAssignment& lids,
                                 const routing::RoutingTables& tables) {
  auto early = std::make_shared<SubnetSnapshot>();
  early->topology = std::move(routeTopo);
  early->lids = lids;
  early->tables = tables;
  early->pkeys = pkeyProgrammer_.tables();
  early->partitions = partitionMap_;
  early->partitionDefs = partitionDefs_;
  snapshot_ = std::move(early);
}

PhaseStats SubnetManager::adoptHeldRoutes(const DiscoveryResult& found, const fabric::Topology& routeTopo,
                                          const routing::LidAssignment& lids, routing::RoutingTables& tables,
                                          SweepReport& report) {
  // What this SM believed the switches hold is stale once another master (or an older run) held them.
  cache_.clear();
  LftReadback rb = readLfts(engine_, clock_, *found.topology, cache_);
  routing::AdoptResult a = routing::adoptHeldTables(routeTopo, lids, std::move(tables), rb.held);
  tables = std::move(a.tables);
  report.readback = SweepReport::Readback{rb.blocks, rb.failed, a.kept, a.replaced, a.why};
  if (a.destinationsRejected)
    report.warnings.push_back("ROUTE010 the held routes to " + std::to_string(a.destinationsRejected) +
                              " LID(s) do not reach them from every switch: the fresh engine's replace them");
  return rb.phase;
}

// A standby sees no traps (they go to the master) and the master clears PortStateChange, so light reads
// (SwitchInfo) cannot tell what changed: the standby re-reads the fabric (a read-only discovery, no Set) once
// per sweep interval instead, off the master's way. A model that fails to read completely is not kept; the
// previous one ages out after kStandbyModelLifetimes intervals and a takeover then discovers first.
void SubnetManager::refreshStandbyModel() {
  const mad::TimePoint start = clock_.now();
  nextLightSweep_ = start + options_.lightSweepInterval;
  // The master is still polled while the fabric is read (seconds at 11,664 hosts); a master lost meanwhile
  // stops the read, and the takeover starts from the previous model.
  auto found = discoverer_.discover([this] { return ha_.standbyReadInterrupted(); });
  if (!found || found->stats.failed) return;
  standbyModel_ = std::move(*found);
  standbyModelAt_ = start;
  prepareTakeover();
}

// The takeover's routes, computed in the background for the model and the LIDs its ports hold (which a
// takeover keeps); used when the takeover's fabric and LIDs are these.
void SubnetManager::prepareTakeover() {
  const fabric::TopologyPtr& topo = standbyModel_->topology;
  planner_.prepare(routingView(topo), routing::LidAssignment::fromTopology(*topo));
}

void SubnetManager::programMulticast(const fabric::Topology& topo) {
  mcastVersion_ = mcastGroups_.version();
  lastMcast_ = mcastProgrammer_.program(topo, mcastGroups_.routes(topo));
}

void SubnetManager::tick() {
  engine_.poll(mad::Duration::zero());
  if (retryAt_ && clock_.now() >= *retryAt_ && ha_.state() != SmState::kStandby) {
    (void)sweep("retry: the last sweep left the subnet not up");
    return;
  }
  const bool lightSweepDue = options_.lightSweepInterval.count() > 0 && clock_.now() >= nextLightSweep_;
  HaCoordinator::Turn ha = ha_.tick(lightSweepDue);
  if (ha.sweep) {
    (void)sweep(*ha.sweep);
    return;
  }
  if (!ha.master) {
    if (lightSweepDue && ha_.state() == SmState::kStandby) refreshStandbyModel();
    return;
  }
  if (snapshot_ && last_)
    if (auto rebalance = planner_.takeRebalance(snapshot_.get())) programRebalance(std::move(*rebalance));
  // Joins and leaves since the last run: only the MFTs change (the trees of the other groups stay as
  // written).
  if (snapshot_ && mcastGroups_.version() != mcastVersion_) programMulticast(*snapshot_->topology);
  if (auto batch = updates_.takeDue())
    (void)update(batch->switches, batch->cause, std::min(batch->since, clock_.now()));
  // Not while a trap's update waits out its batch delay: the light sweep would read through the directed
  // routes that the update is about to move off a dead link.
  const mad::TimePoint now = clock_.now();
  if (options_.lightSweepInterval.count() > 0 && now >= nextLightSweep_ && !updates_.waiting()) {
    nextLightSweep_ = now + options_.lightSweepInterval;
    lightSweep();
  }
}

void SubnetManager::onUnsolicited(const mad::MadPacket& mad, const mad::MadHeader& h) {
  if (h.mgmtClass == mad::kClassSubnAdm) {
    // Only the master is the SA.
    if (ha_.state() == SmState::kMaster) return saHandler_ ? saHandler_(mad) : void();
    return ha_.refuseSa(mad, h);
  }
  bool smi = h.mgmtClass == mad::kClassSmiLid || h.mgmtClass == mad::kClassSmiDirected;
  if (smi && h.attrId == mad::kAttrNotice && h.method == mad::kTrap) {
    TrapHandler::Outcome t = traps_.onTrap(mad, snapshot_.get());
    if (t.smPort) ha_.smAppeared(*t.smPort);
    updates_.queue(t.switches, t.cause);
    return;
  }
  if (smi && h.attrId == mad::kAttrSmInfo) ha_.onSmInfo(mad, h);
}

}  // namespace ibsm::daemon
