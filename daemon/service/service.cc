#include "daemon/service/service.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "config/config_loader.h"
#include "config/partitions_conf.h"
#include "daemon/service/metrics_feed.h"
#include "daemon/state/state_store.h"

namespace ibsm::daemon {

namespace {

double ms(mad::Duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

std::string fixed1(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

}  // namespace

SmOptions smOptionsFrom(const config::Config& c, fabric::Guid localPort) {
  SmOptions o;
  o.portGuid = localPort;
  o.engines = c.routing.engines;
  o.routing.roots = c.routing.roots;
  o.routing.computeAr = c.ar.enable;
  o.routing.arGroupCap = c.ar.groupCap;
  o.routing.threads = c.routing.threads;
  o.routing.dflySpread = c.routing.dflySpread;
  using Conf = config::RoutingConfig::Rebalance;
  o.rebalance.mode = c.routing.rebalance == Conf::kOff    ? RebalanceMode::kOff
                     : c.routing.rebalance == Conf::kFull ? RebalanceMode::kFull
                                                          : RebalanceMode::kIncremental;
  o.rebalance.minGainPct = c.routing.rebalanceMinGainPct;
  // auto: at most 8 here, and the route planner caps it by what every link offers.
  o.routing.vlLayers =
      static_cast<uint8_t>(c.qos.vls == config::QosConfig::kAuto ? config::QosConfig::kAutoVls : c.qos.vls);
  o.vl.weights = {static_cast<uint8_t>(c.qos.vlArbWeight)};
  o.lmc = c.routing.lmc;
  o.priority = c.sm.priority;
  o.smKey = c.sm.key;
  o.pollInterval = std::chrono::milliseconds(c.sm.pollIntervalMs);
  o.pollRetries = c.sm.pollRetries;
  o.guid2lidPath = c.paths.guid2lid;
  o.lightSweepInterval = std::chrono::seconds(c.sweep.intervalS);
  o.holdDown = std::chrono::milliseconds(c.flap.holdDownMs);
  o.maxHoldDown = std::chrono::milliseconds(c.flap.maxBackoffMs);
  o.partitions = c.allPartitions();
  return o;
}

std::string runtimePartitionsPath(const std::string& stateDir) {
  return (std::filesystem::path(stateDir) / "partitions").string();
}

std::vector<fabric::Partition> loadRuntimePartitions(const std::string& stateDir,
                                                     std::vector<std::string>& warnings) {
  const std::string path = runtimePartitionsPath(stateDir);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return {};
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  auto parts = config::parsePartitionsConf(text.str(), path, config::DefaultRule::kNone);
  if (!parts) {
    std::string aside = path + ".bad-" +
                        std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                           std::chrono::system_clock::now().time_since_epoch())
                                           .count());
    std::filesystem::rename(path, aside, ec);
    warnings.push_back("run-time partitions not loaded (" + parts.error().message +
                       "); the file is kept as " + aside);
    return {};
  }
  for (auto& p : *parts) p.origin = "ibsmctl";
  return std::move(parts).value();
}

Service::Service(EventLoop& loop, mad::MadEngine& engine, SubnetManager& sm, Logger& log, Notifier& notify,
                 EventLog& events, StatePublisher& state, DumpWriter& dumps,
                 std::shared_ptr<const config::Config> config, ConfigLoader loadConfig,
                 const mad::Clock& clock, const WallClock& wallClock, SmMetrics* metrics)
    : loop_(loop),
      engine_(engine),
      sm_(sm),
      log_(log),
      notify_(notify),
      events_(events),
      state_(state),
      dumps_(dumps),
      config_(std::move(config)),
      loadConfig_(std::move(loadConfig)),
      clock_(clock),
      wallClock_(wallClock),
      metrics_(metrics) {}

Service::~Service() {
  if (wakeFd_ >= 0) {
    loop_.removeFd(wakeFd_);
    ::close(wakeFd_);
  }
}

fabric::Result<void> Service::start() {
  wakeFd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wakeFd_ < 0) return fabric::makeError(std::string("eventfd: ") + std::strerror(errno));
  auto added = loop_.addFd(wakeFd_, [this] { runQueued(); });
  if (!added) return added;
  if (auto period = notify_.watchdogPeriod()) {
    auto t = loop_.addTimer(*period, *period, [this] { notify_.watchdog(); });
    if (!t) return t.error();
    log_.info("NOTIFY001",
              "systemd watchdog enabled: WATCHDOG=1 every " + std::to_string(period->count()) + " ms");
  }
  state_.updateStatus([&](StatusInfo& s) {
    s.logLevel = std::string(config::toString(log_.level()));
    s.priority = sm_.priority();
    s.sweepIntervalS = config_->sweep.intervalS;
  });
  // Targeted updates after traps and light sweeps (SubnetManager::tick, every sweep.interval_s) report here,
  // as do heavy sweeps; heavy sweeps run at start, on request and when a targeted update cannot be trusted.
  sm_.setEventHandler([this](const TopologyEvent& e) { onTopologyEvent(e); });
  sm_.setStateHandler(
      [this] { state_.updateStatus([&](StatusInfo& st) { st.state = toString(sm_.state()); }); });
  sweep("start");
  return {};
}

void Service::publish(const std::shared_ptr<const SubnetSnapshot>& before, SweepSummary& s) {
  std::shared_ptr<const SubnetSnapshot> snap = sm_.snapshot();
  if (snap && snap->topology && snap != before) {
    s.routesChanged = countRouteChanges(before.get(), *snap);
    bool activated = s.subnetUp && sm_.options().program.activate;
    state_.publishSnapshot(snap, activated);
    dumps_.submit(snap, activated);
    // The fabric's info metrics follow the topology (a new one after every sweep or update that changed it).
    if (metrics_ && snap->topology != metricsTopology_) {
      metrics_->publishFabric(fabricInfo(*snap));
      metricsTopology_ = snap->topology;
    }
  }
  bool wasUp = subnetUp_;
  subnetUp_ = s.ok && s.subnetUp;
  state_.updateStatus([&](StatusInfo& st) {
    st.sweeping = false;
    st.sweepCause.clear();
    st.state = toString(sm_.state());
    st.sweeps = sm_.sweeps();
    st.lastSweep = s;
    st.subnetUp = subnetUp_;
    if (subnetUp_ && !wasUp) st.subnetUpSince = wallClock_.now();
    if (!subnetUp_) st.subnetUpSince.reset();
    st.mad = engine_.counters();
  });
  feedMetrics();  // before READY=1: whoever waits for SUBNET UP finds that sweep's metrics
  if (subnetUp_ && !wasUp) log_.info("SM001", "SUBNET UP", {{"SWEEP", std::to_string(s.number)}});
  if (!subnetUp_ && wasUp)
    log_.warn("SM002", "the subnet is no longer up", {{"SWEEP", std::to_string(s.number)}});
  if (subnetUp_ || sm_.state() == SmState::kStandby)
    notify_.ready(statusLine());
  else
    notify_.status(statusLine());
}

void Service::onTopologyEvent(const TopologyEvent& e) {
  // The SM state shows at once, also when it changes inside a sweep (a takeover is a sweep).
  state_.updateStatus([&](StatusInfo& st) { st.state = toString(sm_.state()); });
  if (inSweep_) return;  // sweep() reports its own cycle, with more detail
  SweepSummary s;
  s.number = sm_.sweeps();
  s.start = e.when - std::chrono::duration_cast<std::chrono::system_clock::duration>(e.convergence);
  s.durationMs = std::chrono::duration<double, std::milli>(e.convergence).count();
  s.cause = e.cause;
  s.ok = true;
  s.subnetUp = e.ok;
  s.smps = e.smps;
  s.lftBlocksSent = e.lftBlocksSent;
  if (auto snap = sm_.snapshot()) s.engine = snap->tables.engine;
  publish(state_.snapshot(), s);
  if (metrics_) {
    // A heavy sweep the SM ran by itself (a retry, a takeover) is a sweep; anything else is an event.
    const double seconds = std::chrono::duration<double>(e.convergence).count();
    if (e.action == "heavy sweep")
      metrics_->sweepDone(SmMetrics::SweepKind::kHeavy, seconds, s.routesChanged, e.lftBlocksSent);
    else
      metrics_->topologyEvent(SmMetrics::eventTrigger(e.cause), seconds, e.lftEntriesChanged,
                              e.lftBlocksSent);
  }
  std::string line = e.cause + ": " + e.action + "; links down " + std::to_string(e.linksDown) + ", up " +
                     std::to_string(e.linksUp) + "; " + std::to_string(e.lftEntriesChanged) +
                     " routes changed, " + std::to_string(e.lftBlocksSent) + " LFT blocks, " +
                     std::to_string(e.vlSetsSent) + " VL table Sets, " + std::to_string(e.smps) +
                     " SMPs; converged in " + fixed1(s.durationMs) + " ms" + (e.ok ? "" : " (with errors)");
  if (e.rereadTime.count() || e.routingTime.count())
    line += " (re-read " + fixed1(ms(e.rereadTime)) + " ms, routing " + fixed1(ms(e.routingTime)) + " ms)";
  log_.log(e.ok ? LogLevel::kInfo : LogLevel::kWarn, "TOPO001", line, {{"CAUSE", e.cause}});
  events_.add("topology", line,
              {{"cause", e.cause},
               {"action", e.action},
               {"links_down", std::to_string(e.linksDown)},
               {"links_up", std::to_string(e.linksUp)},
               {"routes_changed", std::to_string(e.lftEntriesChanged)},
               {"lft_blocks_sent", std::to_string(e.lftBlocksSent)},
               {"vl_sets_sent", std::to_string(e.vlSetsSent)},
               {"smps", std::to_string(e.smps)},
               {"duration_ms", fixed1(s.durationMs)},
               {"ok", e.ok ? "true" : "false"}});
}

void Service::post(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(queueMutex_);
    queue_.push_back(std::move(fn));
  }
  uint64_t one = 1;
  (void)!::write(wakeFd_, &one, sizeof one);
}

void Service::runQueued() {
  uint64_t n;
  while (::read(wakeFd_, &n, sizeof n) == sizeof n) {
  }
  std::vector<std::function<void()>> work;
  {
    std::lock_guard<std::mutex> lock(queueMutex_);
    work.swap(queue_);
  }
  for (auto& fn : work) fn();
}

std::string Service::statusLine() const {
  StatusInfo st = state_.status();
  std::string line = st.state + ", " + (st.subnetUp ? "SUBNET UP" : "SUBNET NOT UP");
  if (auto snap = state_.snapshot(); snap && snap->topology)
    line += ": " + std::to_string(snap->topology->switches().size()) + " switches, " +
            std::to_string(snap->topology->cas().size()) + " CAs";
  if (st.lastSweep)
    line += "; sweep " + std::to_string(st.lastSweep->number) + " (" + st.lastSweep->cause + ") " +
            fixed1(st.lastSweep->durationMs) + " ms" + (st.lastSweep->ok ? "" : " failed");
  return line;
}

SweepSummary Service::sweep(const std::string& cause, bool heavy) {
  SweepSummary s;
  s.start = wallClock_.now();
  s.cause = cause;
  s.heavy = heavy;
  mad::TimePoint t0 = clock_.now();
  state_.updateStatus([&](StatusInfo& st) {
    st.sweeping = true;
    st.sweepCause = cause;
  });
  // A heavy sweep forgets what the switches are believed to hold, so every LFT block is written again.
  if (heavy) sm_.forgetSwitchTables();
  std::shared_ptr<const SubnetSnapshot> before = state_.snapshot();
  inSweep_ = true;
  auto report = sm_.sweep(cause);
  inSweep_ = false;
  std::string readback;  // a new master's read-back of the LFTs, for the log line
  s.number = sm_.sweeps();
  if (!report) {
    s.error = report.error().message;
    log_.error("SWEEP002", "sweep (" + cause + ") failed: " + s.error, {{"CAUSE", cause}});
  } else {
    const SweepReport& r = *report;
    s.ok = true;
    s.subnetUp = r.subnetUp;
    s.smps = r.discovery.smps + r.program.smps();
    s.timeouts = r.discovery.timeouts;
    s.lidsChanged = r.lidsChanged;
    s.lftBlocksSent = r.program.lftBlocksSent;
    s.lftBlocksSkipped = r.program.lftBlocksSkipped;
    s.programErrors = r.program.errors.size();
    s.engine = r.engine;
    s.fallbacks = r.fallbacks;
    s.discoveryMs = ms(r.discovery.elapsed);
    s.routingMs = ms(r.routingTime);
    if (r.readback)
      readback = "; LFTs read back: " + std::to_string(r.readback->blocks) + " blocks (" +
                 std::to_string(r.readback->failed) + " failed), " + std::to_string(r.readback->kept) +
                 " held entries kept where a fresh run differs, " + std::to_string(r.readback->replaced) +
                 " invalid ones replaced" + (r.readback->note.empty() ? "" : " (" + r.readback->note + ")");
    for (const auto& w : r.warnings) log_.warn("SWEEP003", w);
    for (const auto& f : r.fallbacks) log_.info("ROUTE002", "routing fallback: " + f);
    size_t shown = 0;
    for (const auto& e : r.program.errors)
      if (shown++ < 20) log_.warn("SWEEP004", "programming: " + e);
    if (r.program.errors.size() > 20)
      log_.warn("SWEEP004", "programming: " + std::to_string(r.program.errors.size()) + " errors in all");
  }
  s.durationMs = ms(clock_.now() - t0);
  publish(before, s);
  if (metrics_)
    metrics_->sweepDone(SmMetrics::SweepKind::kHeavy, s.durationMs / 1000.0, s.routesChanged,
                        s.lftBlocksSent);

  std::string msg = "sweep " + std::to_string(s.number) + " (" + cause + "): ";
  if (!s.ok)
    msg += "failed: " + s.error;
  else
    msg += std::string(s.subnetUp ? "SUBNET UP" : "SUBNET NOT UP") + " in " + fixed1(s.durationMs) + " ms, " +
           std::to_string(s.smps) + " SMPs, " + std::to_string(s.lftBlocksSent) + " LFT blocks written, " +
           std::to_string(s.routesChanged) + " routes changed, " + std::to_string(s.lidsChanged) +
           " LIDs changed" + readback;
  events_.add("sweep", msg,
              {{"number", std::to_string(s.number)},
               {"cause", cause},
               {"heavy", heavy ? "true" : "false"},
               {"ok", s.ok ? "true" : "false"},
               {"subnet_up", s.subnetUp ? "true" : "false"},
               {"duration_ms", fixed1(s.durationMs)},
               {"smps", std::to_string(s.smps)},
               {"lft_blocks_sent", std::to_string(s.lftBlocksSent)},
               {"routes_changed", std::to_string(s.routesChanged)},
               {"lids_changed", std::to_string(s.lidsChanged)},
               {"engine", s.engine}});
  if (s.ok)
    log_.log(s.subnetUp ? LogLevel::kInfo : LogLevel::kWarn, "SWEEP001", msg,
             {{"CAUSE", cause}, {"SWEEP", std::to_string(s.number)}, {"SMPS", std::to_string(s.smps)}});
  return s;
}

void Service::idle() {
  mad::MadCounters c = engine_.counters();
  const SubnetManager::TrapCounters& t = sm_.trapCounters();
  state_.updateStatus([&](StatusInfo& st) {
    st.mad = c;
    st.traps = {t.received, t.malformed, t.duplicates, t.badMkey};
    const ArProgrammer& ar = sm_.arProgrammer();
    st.ar = {ar.probesSent(), ar.count(ArCapability::kCapable), ar.count(ArCapability::kIncapable)};
    const SmStateMachine& sm = sm_.smStateMachine();
    st.state = toString(sm.state());
    st.otherSms.clear();
    for (const RemoteSm& r : sm.remotes())
      st.otherSms.push_back({r.guid, r.lid, r.priority, toString(r.state), r.answered, r.keyOk});
    st.master = sm.master();
    st.smBadKeys = sm.badKeys();
    st.saBusy = sm_.saBusyReplies();
    st.actCount = sm_.actCount();
  });
  // Every 100 ms at most: idle() runs at every wake-up of the loop (each MAD under an SA flood), and a scrape
  // comes every few seconds.
  if (metrics_ && clock_.now() >= nextMetricsFeed_) {
    nextMetricsFeed_ = clock_.now() + std::chrono::milliseconds(100);
    feedMetrics();
  }
}

void Service::feedMetrics() {
  if (!metrics_) return;
  for (const MetricsFeed& feed : metricsFeeds_) feed(*metrics_);
  metrics_->setState(static_cast<uint8_t>(sm_.state()));
  metrics_->setSubnetUp(subnetUp_);
  metrics_->setMad(madTotals(engine_.counters()));
  metrics_->setTraps(trapTotals(sm_.trapCounters()));
  // At most one light sweep per tick; each is observed once.
  const SubnetManager::LightSweeps& light = sm_.lightSweeps();
  for (; lightSweepsSeen_ < light.count; ++lightSweepsSeen_)
    metrics_->sweepDone(SmMetrics::SweepKind::kLight, std::chrono::duration<double>(light.last).count(), 0,
                        0);
}

void Service::reload() {
  notify_.reloading("reloading the configuration");
  auto next = loadConfig_();
  if (next && !runtime_.empty()) {
    std::vector<fabric::Partition> all = next->allPartitions();
    all.insert(all.end(), runtime_.begin(), runtime_.end());
    if (auto bad = fabric::checkPartitions(all, nullptr))
      next = fabric::Error{"with the run-time partitions of " +
                           runtimePartitionsPath(config_->paths.stateDir) + ": " + *bad};
  }
  std::shared_ptr<const config::Config> current = config_;
  auto diff = config::applyReload(current, std::move(next));
  if (!diff) {
    log_.error("CFG002",
               "configuration reload refused, the running configuration stays: " + diff.error().message);
    events_.add("config", "reload refused: " + diff.error().message, {{"ok", "false"}});
    notify_.reloaded(statusLine());
    return;
  }
  std::shared_ptr<const config::Config> previous = config_;
  config_ = current;
  if (diff->empty()) {
    log_.info("CFG003", "configuration reloaded: nothing changed");
    events_.add("config", "reloaded: nothing changed", {{"ok", "true"}});
    notify_.reloaded(statusLine());
    return;
  }
  std::string changes;
  for (const auto& c : diff->changed) {
    log_.info("CFG001", "configuration changed: " + c);
    changes += (changes.empty() ? "" : "; ") + c;
  }
  if (diff->logLevel) log_.setLevel(config_->log.level);
  if (diff->sm || diff->reroute || diff->reassignLids || diff->sweepTimer || diff->flap || diff->rebalance) {
    SmOptions o = smOptionsFrom(*config_);
    o.partitions = allPartitions();  // run-time partitions survive reloads
    sm_.setOptions(std::move(o));
  }
  if (diff->partitions) {
    PkeyReport r = sm_.setPartitions(allPartitions());
    log_.info("PART001", "partitions changed by the reload: " + std::to_string(r.blocksSet) +
                             " P_Key block(s) written to " + std::to_string(r.portsChanged) + " port(s)");
    for (const auto& w : r.warnings) log_.warn("SWEEP004", w);
  }
  if (diff->health && health_) health_->setOptions(*config_);
  dumps_.setDir(config_->paths.dumpDir);
  bool lftsOnChange = config_->dumps.lfts == config::LftDumps::kOnChange;
  dumps_.setLftsOnChange(lftsOnChange);
  if (diff->mad) log_.warn("CFG004", "mad.* changes take effect when ibsmd restarts");
  state_.updateStatus([&](StatusInfo& st) {
    st.logLevel = std::string(config::toString(log_.level()));
    st.priority = sm_.priority();
    st.sweepIntervalS = config_->sweep.intervalS;
  });
  events_.add("config", "reloaded: " + changes, {{"ok", "true"}});
  if (diff->reroute || diff->reassignLids) {
    sweep("reload");
  } else if (lftsOnChange && previous->dumps.lfts != config::LftDumps::kOnChange) {
    // Now on_change: the LFT dump follows the current tables at once, not only after the next change (the
    // other dumps are unchanged and not rewritten).
    ControlView v = state_.view(nullptr);
    dumps_.submit(v.snapshot, v.portsActivated);
  }
  notify_.reloaded(statusLine());
}

Json Service::loglevel(const Request& r, const PeerCredentials& peer) {
  auto it = r.args.find("level");
  LogLevel level;
  if (it == r.args.end() || !it->is_string() || !parseLogLevel(it->get<std::string>(), level))
    return errorResponse(r.id, ErrorCode::kBadRequest, "loglevel: level must be error, warn, info or debug");
  std::string previous(config::toString(log_.level()));
  log_.setLevel(level);
  std::string now(config::toString(level));
  state_.updateStatus([&](StatusInfo& st) { st.logLevel = now; });
  log_.info("CTL011",
            "log level " + previous + " -> " + now + " (requested by uid " + std::to_string(peer.uid) + ")");
  events_.add("control", "log level " + previous + " -> " + now,
              {{"uid", std::to_string(peer.uid)}, {"pid", std::to_string(peer.pid)}});
  return okResponse(r.id, {{"level", now}, {"previous", previous}});
}

Json Service::handover(const Request& r, const PeerCredentials& peer) {
  std::optional<fabric::Guid> to;
  if (auto it = r.args.find("to"); it != r.args.end() && !it->is_null()) {
    if (it->is_string()) to = fabric::parseGuid(it->get<std::string>());
    if (!to) return errorResponse(r.id, ErrorCode::kBadRequest, "handover: to must be a port GUID");
  }
  auto target = sm_.planHandover(to);
  const std::string who = "uid " + std::to_string(peer.uid) + " pid " + std::to_string(peer.pid);
  if (!target) {
    log_.warn("CTL013", "handover requested by " + who + " refused: " + target.error().message);
    return errorResponse(r.id, ErrorCode::kFailed, "handover: " + target.error().message);
  }
  const std::string guid = fabric::toString(*target);
  log_.info("CTL013",
            "handover to " + guid + " requested by " + who + "; sm.priority now 0 until configured anew");
  events_.add("control", "handover to " + guid,
              {{"uid", std::to_string(peer.uid)}, {"pid", std::to_string(peer.pid)}});
  state_.updateStatus([&](StatusInfo& st) { st.priority = sm_.priority(); });
  return okResponse(r.id, {{"to", guid}, {"priority", sm_.priority()}});
}

std::vector<fabric::Partition> Service::allPartitions() const {
  std::vector<fabric::Partition> all = config_->allPartitions();
  all.insert(all.end(), runtime_.begin(), runtime_.end());
  return all;
}

namespace {

// A partition's name as ibsmctl and partitions.conf may carry it.
bool validPartitionName(const std::string& n) {
  return !n.empty() && n.size() <= 64 && std::all_of(n.begin(), n.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
  });
}

std::string hex4(uint16_t v) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%04x", v);
  return buf;
}

}  // namespace

Json Service::partition(const Request& r, const PeerCredentials& peer) {
  auto bad = [&](const std::string& m) {
    return errorResponse(r.id, ErrorCode::kBadRequest, "partition: " + m);
  };
  auto failed = [&](const std::string& m) {
    return errorResponse(r.id, ErrorCode::kFailed, "partition: " + m);
  };
  auto str = [&](const char* k) -> std::string {
    auto it = r.args.find(k);
    return it != r.args.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  const std::string action = str("action"), name = str("name");
  if (action != "add" && action != "remove" && action != "add-member" && action != "remove-member")
    return bad("action must be add, remove, add-member or remove-member");
  if (!validPartitionName(name)) return bad("NAME must be 1..64 letters, digits, '_', '-' or '.'");
  auto snap = sm_.snapshot();
  if (!snap || !snap->topology)
    return errorResponse(r.id, ErrorCode::kUnavailable, "partition: no sweep has completed yet");
  const fabric::Topology& topo = *snap->topology;

  // Partitions from the config are changed there, not here.
  for (const auto& p : config_->allPartitions())
    if (p.name == name) {
      std::string file = p.origin.substr(0, p.origin.find(':'));
      return failed("partition '" + name + "' is defined in " + file + " (" + p.origin +
                    "); change it there and reload ibsmd");
    }
  auto it = std::find_if(runtime_.begin(), runtime_.end(), [&](const auto& p) { return p.name == name; });

  // Ports: a port GUID or NODE/PORTNUM, each optionally =full or =limited (default full).
  std::vector<fabric::PartitionMember> ports;
  auto arg = r.args.find("ports");
  if (arg != r.args.end() && !arg->is_null()) {
    if (!arg->is_array()) return bad("ports must be a list");
    for (const auto& j : *arg) {
      if (!j.is_string()) return bad("each port must be a string");
      std::string spec = j.get<std::string>();
      fabric::Membership ms = fabric::Membership::kFull;
      if (size_t eq = spec.rfind('='); eq != std::string::npos) {
        auto m = fabric::parseMembership(spec.substr(eq + 1));
        if (!m) return bad("'" + spec + "': the membership must be full or limited");
        ms = *m;
        spec = spec.substr(0, eq);
      }
      fabric::Guid guid;
      if (size_t slash = spec.rfind('/'); slash != std::string::npos) {
        auto node = resolveNode(topo, snap->lids, Json(spec.substr(0, slash)));
        if (!node) return failed(node.error().message);
        const std::string num = spec.substr(slash + 1);
        unsigned pn = 0;
        bool ok = !num.empty() && num.size() <= 3 && num.find_first_not_of("0123456789") == std::string::npos;
        if (ok) pn = static_cast<unsigned>(std::stoul(num));
        const fabric::Node& n = topo.node(*node);
        if (!ok || pn >= n.ports.size() || (!n.isSwitch() && pn == 0))
          return failed("'" + spec + "': " + n.description + " has no port " + num);
        guid = n.isSwitch() ? n.ports[0].guid : n.ports[pn].guid;
      } else {
        auto g = fabric::parseGuid(spec);
        if (!g || !topo.findPort(*g))
          return failed("no port '" + spec + "' in the fabric (give a port GUID or NODE/PORTNUM)");
        guid = *g;
      }
      ports.push_back({fabric::PartitionMember::Kind::kPortGuid, guid, {}, ms});
    }
  }

  std::vector<fabric::Partition> next = runtime_;
  std::string what;
  if (action == "add") {
    if (it != runtime_.end())
      return failed("partition '" + name + "' exists already (P_Key " + hex4(it->pkey) + ")");
    auto pk = r.args.find("pkey");
    uint64_t key = 0;
    if (pk != r.args.end() && pk->is_number_unsigned()) key = pk->get<uint64_t>();
    if (pk != r.args.end() && pk->is_string()) {
      std::string t = pk->get<std::string>();
      char* end = nullptr;
      key = std::strtoull(t.c_str(), &end, 0);
      if (t.empty() || !end || *end) key = 0;
    }
    if (key == 0 || key > 0x7FFF) return bad("PKEY must be 0x0001..0x7fff");
    if (key == fabric::kDefaultPartitionKey)
      return failed("the default partition (0x7fff) is set in the config file, not at run time");
    if (ports.empty()) return bad("add needs at least one PORT");
    next.push_back({name, static_cast<uint16_t>(key), std::nullopt, ports, "ibsmctl"});
    what = "added with " + std::to_string(ports.size()) + " port(s)";
  } else {
    if (it == runtime_.end())
      return errorResponse(r.id, ErrorCode::kNotFound, "partition: no partition '" + name + "'");
    auto& p = next[static_cast<size_t>(it - runtime_.begin())];
    if (action == "remove") {
      next.erase(next.begin() + (it - runtime_.begin()));
      what = "removed";
    } else if (ports.empty()) {
      return bad(action + " needs at least one PORT");
    } else if (action == "add-member") {
      for (const auto& m : ports) {
        auto have =
            std::find_if(p.members.begin(), p.members.end(), [&](const auto& x) { return x.guid == m.guid; });
        if (have != p.members.end())
          have->membership = m.membership;
        else
          p.members.push_back(m);
      }
      what = std::to_string(ports.size()) + " member(s) added";
    } else {
      for (const auto& m : ports) {
        auto have =
            std::find_if(p.members.begin(), p.members.end(), [&](const auto& x) { return x.guid == m.guid; });
        if (have == p.members.end())
          return failed("port " + fabric::toString(m.guid) + " is not a member of '" + name + "'");
        p.members.erase(have);
      }
      what = std::to_string(ports.size()) + " member(s) removed";
    }
  }
  // Safety: P_Keys unique, every port known, no table over its PartitionCap. Nothing changes otherwise.
  std::vector<fabric::Partition> all = config_->allPartitions();
  all.insert(all.end(), next.begin(), next.end());
  if (auto problem = fabric::checkPartitions(all, &topo)) return failed(*problem + "; nothing changed");
  // The SM's own port stays a full member of the default partition (PartitionMap::resolve keeps it so);
  // checked here as the invariant it is.
  if (topo.smNode() != fabric::kNoNode) {
    fabric::PartitionMap m = fabric::PartitionMap::resolve(topo, all);
    fabric::PortNum smPort = topo.node(topo.smNode()).isSwitch() ? fabric::PortNum{0} : topo.smPort();
    auto k = m.keyOf(topo.smNode(), smPort, fabric::kDefaultPartitionKey);
    if (!k || !(*k & fabric::kFullMemberBit))
      return failed("the change would take the SM's own port out of the default partition; nothing changed");
  }
  // Persist first: a change that cannot be kept is not made.
  const std::string path = runtimePartitionsPath(config_->paths.stateDir);
  auto saved = writeFileAtomically(
      path,
      "# Run-time partitions of ibsmd (ibsmctl partition), partitions.conf syntax. Written by ibsmd.\n" +
          config::formatPartitionsConf(next),
      0644);
  if (!saved) return failed("cannot save " + path + ": " + saved.error().message + "; nothing changed");
  runtime_ = std::move(next);
  const mad::TimePoint start = clock_.now();
  auto before = sm_.snapshot();
  PkeyReport rep = sm_.setPartitions(allPartitions());
  const double took = ms(clock_.now() - start);
  if (auto snapNow = sm_.snapshot(); snapNow && snapNow != before)
    state_.publishSnapshot(snapNow, state_.view(nullptr).portsActivated);
  for (const auto& w : rep.warnings) log_.warn("SWEEP004", w);
  std::string line = "partition '" + name + "' " + what + ": " + std::to_string(rep.blocksSet) +
                     " P_Key block(s) written to " + std::to_string(rep.portsChanged) + " port(s), " +
                     std::to_string(rep.phase.smps) + " SMPs, " + fixed1(took) + " ms";
  log_.info("PART002", line + " (requested by uid " + std::to_string(peer.uid) + ")");
  events_.add("partition", line,
              {{"uid", std::to_string(peer.uid)},
               {"pid", std::to_string(peer.pid)},
               {"blocks", std::to_string(rep.blocksSet)},
               {"smps", std::to_string(rep.phase.smps)}});
  return okResponse(r.id, {{"message", line},
                           {"blocks", rep.blocksSet},
                           {"ports", rep.portsChanged},
                           {"smps", rep.phase.smps},
                           {"errors", rep.phase.errors},
                           {"warnings", rep.warnings},
                           {"ms", took}});
}

void Service::onChangeRequest(Request request, PeerCredentials peer, ControlServer::Reply reply) {
  post([this, request = std::move(request), peer, reply = std::move(reply)]() mutable {
    if (request.command == "loglevel") {
      reply(loglevel(request, peer));
      return;
    }
    if (request.command == "partition") {
      reply(partition(request, peer));
      return;
    }
    if (request.command == "handover") {
      reply(handover(request, peer));
      return;
    }
    if (request.command == "health-release") {
      reply(health_ ? health_->release(request, peer)
                    : errorResponse(request.id, ErrorCode::kUnavailable, "no performance manager"));
      return;
    }
    if (request.command == "dump") {
      // The snapshot the control socket serves; the writer thread formats and writes it, then replies.
      log_.info("CTL012",
                "dump requested by uid " + std::to_string(peer.uid) + " pid " + std::to_string(peer.pid));
      events_.add("control", "dump requested",
                  {{"uid", std::to_string(peer.uid)}, {"pid", std::to_string(peer.pid)}});
      handleDumpRequest(request, state_.snapshot(), dumps_, std::move(reply));
      return;
    }
    if (request.command != "resweep" && request.command != "reroute") {
      reply(errorResponse(request.id, ErrorCode::kInternal, "'" + request.command + "' is not a change"));
      return;
    }
    bool heavy = false;
    if (auto it = request.args.find("heavy"); it != request.args.end() && !it->is_null()) {
      if (!it->is_boolean()) {
        reply(errorResponse(request.id, ErrorCode::kBadRequest, "resweep: heavy must be true or false"));
        return;
      }
      heavy = it->get<bool>();
    }
    log_.info("CTL010", request.command + (heavy ? " --heavy" : "") + " requested by uid " +
                            std::to_string(peer.uid) + " pid " + std::to_string(peer.pid));
    waitersHeavy_ = waitersHeavy_ || heavy;
    sweepWaiters_.push_back(Waiter{request.id, request.command, std::move(reply)});
    // Requests that arrive while this one waits (they are posted behind it) share the same sweep.
    if (!sweepPosted_) {
      sweepPosted_ = true;
      post([this] { runWaitingSweep(); });
    }
  });
}

void Service::runWaitingSweep() {
  sweepPosted_ = false;
  std::vector<Waiter> waiters;
  waiters.swap(sweepWaiters_);
  bool heavy = waitersHeavy_;
  waitersHeavy_ = false;
  if (waiters.empty()) return;
  bool onlyReroute = true;
  for (const auto& w : waiters) onlyReroute = onlyReroute && w.command == "reroute";
  std::string cause = onlyReroute ? "reroute" : heavy ? "resweep --heavy" : "resweep";
  SweepSummary s = sweep(cause, heavy);
  for (auto& w : waiters) {
    if (!s.ok)
      w.reply(errorResponse(w.id, ErrorCode::kFailed, "sweep failed: " + s.error));
    else
      w.reply(okResponse(w.id, {{"sweep", toJson(s)}, {"shared_with", waiters.size() - 1}}));
  }
}

}  // namespace ibsm::daemon
