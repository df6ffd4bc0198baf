#include "daemon/service/health_service.h"

#include <algorithm>
#include <cstring>

namespace ibsm::daemon {

namespace {

std::string portLabel(const fabric::Topology* topo, const PortId& p) {
  std::string name = fabric::toString(p.first);
  if (topo)
    if (auto n = topo->findNode(p.first); n && !topo->node(*n).description.empty())
      name = topo->node(*n).description;
  name += '/';
  name += std::to_string(p.second);
  return name;
}

}  // namespace

PerfOptions perfOptionsFrom(const config::Config& c) {
  PerfOptions o;
  o.interval = std::chrono::seconds(c.perfmgr.intervalS);
  return o;
}

HealthOptions healthOptionsFrom(const config::Config& c) {
  HealthOptions o;
  o.action =
      c.health.action == config::HealthAction::kIsolate ? HealthAction::kIsolate : HealthAction::kReport;
  for (size_t i = 0; i < config::kHealthCounterCount && i < c.health.thresholds.size(); ++i)
    for (size_t k = 0; k < mad::kPerfCounters; ++k)
      if (config::kHealthCounters[i].name == mad::perfCounterName(static_cast<mad::PerfCounter>(k)))
        o.thresholds[k] = c.health.thresholds[i];
  o.startThreshold = c.health.startThreshold;
  o.maxIsolated = c.health.maxIsolated;
  o.cleanPeriod = std::chrono::seconds(c.health.cleanPeriodS);
  return o;
}

HealthService::HealthService(mad::MadEngine& engine, SubnetManager& sm, Logger& log, EventLog& events,
                             StatePublisher& state, const mad::Clock& clock, const WallClock& wallClock,
                             const config::Config& config)
    : sm_(sm),
      log_(log),
      events_(events),
      state_(state),
      clock_(clock),
      wallClock_(wallClock),
      perf_(engine, clock, perfOptionsFrom(config)),
      policy_(healthOptionsFrom(config)) {}

void HealthService::setOptions(const config::Config& config) {
  perf_.setOptions(perfOptionsFrom(config));
  policy_.setOptions(healthOptionsFrom(config));
}

void HealthService::tick() {
  auto snap = sm_.snapshot();
  auto done = perf_.tick(snap, sm_.state() == SmState::kMaster);
  reportFlaps();
  if (!done) return;
  sweptAt_ = wallClock_.now();
  log_.log(done->failed ? LogLevel::kWarn : LogLevel::kDebug, "PERF001",
           "counter sweep " + std::to_string(done->number) + ": " + std::to_string(done->ports) + " ports, " +
               std::to_string(done->gmps) + " GMPs, " + std::to_string(done->failed) + " not read, " +
               std::to_string(done->cleared) + " cleared, " +
               std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(done->elapsed).count()) +
               " ms");
  if (snap) {
    const size_t before = policy_.isolatedLinks();
    auto decisions = policy_.evaluate(perf_.ports(), done->number, *snap->topology, clock_.now());
    bool changed = before != policy_.isolatedLinks();
    for (const HealthDecision& d : decisions) {
      decide(d);
      changed =
          changed || d.kind == HealthDecision::Kind::kIsolated || d.kind == HealthDecision::Kind::kRestored;
    }
    if (changed) isolate("health policy: " + decisions.back().text);
  }
  publish();
}

void HealthService::decide(const HealthDecision& d) {
  const bool bad = d.kind == HealthDecision::Kind::kWarning || d.kind == HealthDecision::Kind::kIsolated ||
                   d.kind == HealthDecision::Kind::kRefused;
  log_.log(bad ? LogLevel::kWarn : LogLevel::kInfo, d.id(), d.text,
           {{"PORT_GUID", fabric::toString(d.port.first)}, {"PORT", std::to_string(d.port.second)}});
  events_.add("health", d.text,
              {{"id", d.id()},
               {"node_guid", fabric::toString(d.port.first)},
               {"port", std::to_string(d.port.second)},
               {"peer_guid", fabric::toString(d.peer.first)},
               {"peer_port", std::to_string(d.peer.second)}});
}

void HealthService::isolate(const std::string& cause) {
  auto r = sm_.setIsolatedPorts(policy_.isolatedPorts(), cause);
  if (!r) log_.error("HLTH006", "re-routing around the isolated links failed: " + r.error().message);
}

void HealthService::reportFlaps() {
  std::set<PortId> now;
  for (const auto& [port, until] : sm_.heldDownPorts()) {
    now.insert(port);
    if (heldDown_.count(port)) continue;
    auto snap = sm_.snapshot();
    const double s = std::chrono::duration<double>(until - clock_.now()).count();
    // Every down starts a hold-down (flap.hold_down_ms, doubled for each further down soon after): a single
    // down is not yet a flap.
    const std::string text = portLabel(snap ? snap->topology.get() : nullptr, port) +
                             " went down: held down (flap damping) for " +
                             std::to_string(static_cast<int>(s + 0.5)) + " s";
    log_.warn("HLTH005", text,
              {{"PORT_GUID", fabric::toString(port.first)}, {"PORT", std::to_string(port.second)}});
    events_.add("health", text,
                {{"id", "HLTH005"},
                 {"node_guid", fabric::toString(port.first)},
                 {"port", std::to_string(port.second)}});
  }
  if (now != heldDown_) {
    heldDown_ = std::move(now);
    if (state_.health()) publish();  // the list shown with the health states
  }
}

void HealthService::publish() {
  auto h = std::make_shared<HealthSnapshot>();
  const PerfManager::SweepStats& last = perf_.lastSweep();
  const mad::TimePoint now = clock_.now();
  const auto wallNow = wallClock_.now();
  auto wall = [&](mad::TimePoint t) {
    return wallNow - std::chrono::duration_cast<std::chrono::system_clock::duration>(now - t);
  };
  h->sweeps = last.number;
  h->sweptAt = sweptAt_;
  h->gmps = last.gmps;
  h->failed = last.failed;
  h->durationMs = std::chrono::duration<double, std::milli>(last.elapsed).count();
  h->clearing = last.clearing;
  h->action = policy_.options().action == HealthAction::kIsolate ? "isolate" : "report";
  h->maxIsolated = policy_.options().maxIsolated;
  auto snap = sm_.snapshot();
  const fabric::Topology* topo = snap ? snap->topology.get() : nullptr;
  const auto& records = perf_.ports();
  const auto& status = policy_.status();
  for (uint32_t r = 0; r < records.size(); ++r) {
    const PortRecord& rec = records[r];
    const HealthPolicy::PortStatus* st = r < status.size() ? &status[r] : nullptr;
    const bool judged = st && st->state != PortHealthState::kOk;
    if (rec.sweep != last.number && !judged) continue;  // a port no longer read
    PortHealth p;
    p.node = rec.node;
    p.port = rec.port;
    p.isSwitch = rec.isSwitch;
    p.lid = rec.lid;
    p.extended = rec.extended;
    p.errors = rec.errors;
    p.data = rec.data;
    if (rec.lastInterval.count() > 0) {
      const double s = std::chrono::duration<double>(rec.lastInterval).count();
      std::array<double, mad::kPerfCounters> er{};
      std::array<double, mad::kPerfDataCounters> dr{};
      for (size_t i = 0; i < er.size(); ++i) er[i] = static_cast<double>(rec.lastErrors[i]) * 60.0 / s;
      for (size_t i = 0; i < dr.size(); ++i) dr[i] = static_cast<double>(rec.lastData[i]) / s;
      p.errorRates = er;
      p.dataRates = dr;
    }
    if (st) {
      p.state = st->state;
      p.reason = st->reason;
      if (judged) p.since = wall(st->since);
    }
    if (topo)
      if (auto n = topo->findNode(rec.node)) {
        const fabric::Node& node = topo->node(*n);
        p.description = node.description;
        if (rec.port < node.ports.size() && node.ports[rec.port].connected()) {
          const fabric::Node& peer = topo->node(node.ports[rec.port].peerNode);
          p.peerNode = peer.guid;
          p.peerPort = node.ports[rec.port].peerPort.value;
          p.peerDescription = peer.description;
        }
      }
    h->ports.push_back(std::move(p));
  }
  for (const auto& [port, until] : sm_.heldDownPorts()) {
    HeldDownPort d;
    d.node = port.first;
    d.port = port.second;
    if (topo)
      if (auto n = topo->findNode(port.first)) d.description = topo->node(*n).description;
    d.remainingS = std::max(0.0, std::chrono::duration<double>(until - now).count());
    h->heldDown.push_back(std::move(d));
  }
  state_.publishHealth(std::move(h));
}

Json HealthService::release(const Request& r, const PeerCredentials& peer) {
  auto it = r.args.find("port");
  if (it == r.args.end() || !it->is_string())
    return errorResponse(r.id, ErrorCode::kBadRequest, "health-release: port must be NODE/PORTNUM");
  const std::string spec = it->get<std::string>();
  auto snap = sm_.snapshot();
  if (!snap) return errorResponse(r.id, ErrorCode::kUnavailable, "no sweep has completed yet");
  const size_t slash = spec.rfind('/');
  unsigned long portNum = 0;
  if (slash == std::string::npos || slash + 1 >= spec.size() || spec.size() - slash > 4 ||
      spec.find_first_not_of("0123456789", slash + 1) != std::string::npos ||
      (portNum = std::stoul(spec.substr(slash + 1))) > 254)
    return errorResponse(r.id, ErrorCode::kBadRequest,
                         "health-release: '" + spec + "' is not NODE/PORTNUM (e.g. spine-1/3)");
  auto node = resolveNode(*snap->topology, snap->lids, Json(spec.substr(0, slash)));
  if (!node) return errorResponse(r.id, ErrorCode::kNotFound, node.error().message);
  const PortId port{snap->topology->node(*node).guid, static_cast<uint8_t>(portNum)};
  auto released = policy_.release(port, clock_.now());
  if (!released)
    return errorResponse(r.id, ErrorCode::kFailed,
                         portLabel(snap->topology.get(), port) + " is not isolated");
  released->text += " (uid " + std::to_string(peer.uid) + ")";
  decide(*released);
  isolate("health: " + released->text);
  publish();
  return okResponse(r.id, {{"message", released->text}});
}

}  // namespace ibsm::daemon
