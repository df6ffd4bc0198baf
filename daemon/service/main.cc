// ibsmd: wiring only. Parses the command line, opens the port, and runs the requested mode:
//   --discover-only  sweep once and report (optionally write the topology)
//   --once           bring the subnet up (sweep, LIDs, routes, program) and exit
//   (default)        the long-running SM: bring the subnet up, then keep it up until SIGTERM/SIGINT
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/config_loader.h"
#include "daemon/control/control_server.h"
#include "daemon/control/dumps.h"
#include "daemon/log/log.h"
#include "daemon/metrics/metrics_endpoint.h"
#include "daemon/metrics/sm_metrics.h"
#include "daemon/sa/mcast_sa.h"
#include "daemon/sa/sa_server.h"
#include "daemon/service/event_loop.h"
#include "daemon/service/metrics_feed.h"
#include "daemon/service/notify.h"
#include "daemon/service/service.h"
#include "daemon/sm/subnet_manager.h"
#include "daemon/state/state_store.h"
#include "fabric/topology_file.h"
#include "mad/mad_engine.h"
#include "mad/umad_port.h"

namespace {

using namespace ibsm;
using namespace std::chrono_literals;

struct Args {
  fabric::Guid localPortGuid;  // of the port opened (SMInfo answers before the first sweep)
  bool discoverOnly = false, once = false, checkConfig = false;
  unsigned onceDeadlineS = 60;  // --once sweeps again until SUBNET UP; past this, only while it gets closer
  std::string topologyOut;
  std::string configPath{config::kDefaultConfigPath};
  bool configGiven = false;
  std::vector<config::Override> overrides;  // command-line flags, applied on top of the config file
  config::Config cfg;
};

constexpr const char* kUsage =
    "usage: ibsmd [options]\n"
    "modes (default: run as the subnet manager until SIGTERM/SIGINT):\n"
    "  --once                    bring the subnet up once and exit (0 at SUBNET UP)\n"
    "  --once-deadline-s N       with --once: sweep again (MADs lost, a port refused) until SUBNET UP;\n"
    "                            after N seconds only while each sweep fails less than the one before\n"
    "                            (default 60; 0: one sweep only)\n"
    "  --discover-only           sweep the fabric once, print a summary and exit\n"
    "  --topology-out FILE       with --discover-only: write the topology (ibnetdiscover format)\n"
    "  --check-config            validate the configuration, print the effective config and exit\n"
    "options (each overrides the config file's key):\n"
    "  --config FILE             configuration (default /etc/ibsm/ibsm.yaml, optional)\n"
    "  --port-guid GUID          port_guid: local port to bind (default: first port with link up)\n"
    "  --routing ENGINES         routing.engines (default ftree,dfly,dor|dfsp,updn,minhop)\n"
    "  --lmc N                   routing.lmc: LID mask control 0..7 (default 0)\n"
    "  --threads N               routing.threads: worker threads for routing and route checks (default:\n"
    "                            the online cores; the routes are the same for any number)\n"
    "  --state-dir DIR           paths.state_dir: persistent state, guid2lid (default /var/lib/ibsm)\n"
    "  --priority N              sm.priority 0..15 (default 0)\n"
    "  --sweep-interval S        sweep.interval_s: seconds between sweeps, 0 = none (default 10)\n"
    "  --socket PATH             control.socket (also $IBSM_SOCKET)\n"
    "  --mad-window N            mad.window: SMPs in flight (default 32)\n"
    "  --mad-timeout-ms MS       mad.timeout_ms: wait per first attempt (default 100; shorter once round\n"
    "                            trips were measured; resends double it, up to 2x)\n"
    "  --mad-retries N           mad.retries: retries after a timeout (default 7)\n"
    "  --partitions-conf FILE    paths.partitions_conf: OpenSM's partitions.conf, read as it is\n"
    "  --metrics ADDR:PORT       metrics.listen: serve Prometheus metrics on http://ADDR:PORT/metrics, e.g.\n"
    "                            127.0.0.1:9464 (daemon mode; default: off)\n"
    "  --set KEY=VALUE           any other config key, e.g. --set ar.group_cap=1024\n"
    "  --help                    this text\n";

[[noreturn]] void die(int code, const std::string& message) {
  std::fprintf(stderr, "ibsmd: %s\n", message.c_str());
  std::exit(code);
}

// The config file with the command-line overrides on top; also what SIGHUP re-reads.
fabric::Result<config::Config> loadConfig(const Args& a) {
  return config::loadConfigFile(
      a.configPath, a.configGiven ? config::IfMissing::kError : config::IfMissing::kUseDefaults, a.overrides);
}

Args parseArgs(int argc, char** argv) {
  static const std::map<std::string, std::string> kFlagKeys = {
      {"--port-guid", "port_guid"},
      {"--routing", "routing.engines"},
      {"--lmc", "routing.lmc"},
      {"--threads", "routing.threads"},
      {"--state-dir", "paths.state_dir"},
      {"--priority", "sm.priority"},
      {"--sweep-interval", "sweep.interval_s"},
      {"--socket", "control.socket"},
      {"--mad-window", "mad.window"},
      {"--mad-timeout-ms", "mad.timeout_ms"},
      {"--mad-retries", "mad.retries"},
      {"--partitions-conf", "paths.partitions_conf"},
      {"--metrics", "metrics.listen"},
  };
  Args a;
  if (const char* env = std::getenv("IBSM_SOCKET"); env && *env)
    a.overrides.push_back({"control.socket", env});
  for (int i = 1; i < argc; ++i) {
    std::string opt = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) die(2, opt + " needs a value");
      return argv[++i];
    };
    if (opt == "--help" || opt == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (opt == "--discover-only")
      a.discoverOnly = true;
    else if (opt == "--once")
      a.once = true;
    else if (opt == "--once-deadline-s") {
      std::string v = value();
      auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), a.onceDeadlineS);
      if (ec != std::errc() || end != v.data() + v.size() || a.onceDeadlineS > 86400)
        die(2, "--once-deadline-s: '" + v + "' is not a number of seconds from 0 to 86400");
    } else if (opt == "--check-config")
      a.checkConfig = true;
    else if (opt == "--topology-out")
      a.topologyOut = value();
    else if (opt == "--config") {
      a.configPath = value();
      a.configGiven = true;
    } else if (opt == "--set") {
      auto o = config::parseOverride(value());
      if (!o) die(2, "--set: " + o.error().message);
      a.overrides.push_back(*o);
    } else if (auto k = kFlagKeys.find(opt); k != kFlagKeys.end()) {
      std::string v = value();
      // Paths on the command line are relative to where ibsmd was started; the config wants absolute ones.
      if ((opt == "--state-dir" || opt == "--socket" || opt == "--partitions-conf") && !v.empty())
        v = std::filesystem::absolute(v).string();
      a.overrides.push_back({k->second, v});
    } else
      die(2, "unknown option '" + opt + "' (see --help)");
  }
  if (!a.topologyOut.empty() && !a.discoverOnly) die(2, "--topology-out needs --discover-only");
  if (a.once && a.discoverOnly) die(2, "--once and --discover-only exclude each other");
  auto cfg = loadConfig(a);
  if (!cfg) die(2, cfg.error().message);
  a.cfg = std::move(*cfg);
  return a;
}

// sm.m_key: off, the configured key, or the subnet's random key kept in the state directory.
std::optional<mad::MkeyInfo> resolveMkey(const config::Config& c, daemon::Logger& log) {
  if (c.sm.mKey == 0 && !c.sm.mKeyRandom) return std::nullopt;
  mad::MkeyInfo m{c.sm.mKey, c.sm.mKeyProtectBits, c.sm.mKeyLeaseS};
  if (c.sm.mKeyRandom) {
    std::string path = (std::filesystem::path(c.paths.stateDir) / daemon::kMkeyFile).string();
    auto loaded = daemon::loadOrCreateMkey(path);
    if (!loaded) die(1, loaded.error().message);
    for (const auto& w : loaded->warnings) log.warn("STATE003", w);
    if (loaded->created) log.info("MKEY002", "generated a new M_Key, kept in " + path);
    m.key = loaded->key;
  }
  return m;
}

// The run-time partitions of the state directory (ibsmctl partition add), checked against the config's.
std::vector<fabric::Partition> runtimePartitions(const Args& args, daemon::Logger& log) {
  std::vector<std::string> warnings;
  auto parts = daemon::loadRuntimePartitions(args.cfg.paths.stateDir, warnings);
  for (const auto& w : warnings) log.warn("STATE003", w);
  std::vector<fabric::Partition> all = args.cfg.allPartitions();
  all.insert(all.end(), parts.begin(), parts.end());
  if (auto bad = fabric::checkPartitions(all, nullptr)) {
    log.warn("STATE003", "run-time partitions of " + daemon::runtimePartitionsPath(args.cfg.paths.stateDir) +
                             " not used: " + *bad);
    return {};
  }
  return parts;
}

daemon::SmOptions smOptions(const Args& args, const std::optional<mad::MkeyInfo>& mkey,
                            const std::vector<fabric::Partition>& runtime) {
  daemon::SmOptions o = daemon::smOptionsFrom(args.cfg, args.localPortGuid);
  o.program.mkey = mkey;
  o.partitions.insert(o.partitions.end(), runtime.begin(), runtime.end());
  return o;
}

mad::MadEngineOptions madOptions(const config::Config& c) {
  return mad::MadEngineOptions{c.mad.window, std::chrono::milliseconds(c.mad.timeoutMs), c.mad.retries};
}

daemon::DumpOptions dumpOptions(const config::Config& c) {
  return {c.paths.dumpDir, c.paths.guid2lid, c.dumps.lfts == config::LftDumps::kOnChange};
}

double ms(mad::Duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

int discoverOnly(const Args& args, mad::MadEngine& engine, const mad::Clock& clock) {
  daemon::Discoverer discoverer(engine, clock);
  auto result = discoverer.discover();
  if (!result) die(1, "discovery failed: " + result.error().message);
  for (const auto& w : result->stats.warnings) std::fprintf(stderr, "ibsmd: warning: %s\n", w.c_str());
  const fabric::Topology& topo = *result->topology;
  if (!args.topologyOut.empty()) {
    auto written = fabric::writeTopologyFile(topo, args.topologyOut);
    if (!written) die(1, written.error().message);
  }
  std::printf("discovered %zu switches, %zu CAs, %zu links; %zu SMPs (%zu timeouts) in %.1f ms\n",
              topo.switches().size(), topo.cas().size(), topo.links().size(), result->stats.smps,
              result->stats.timeouts, ms(result->stats.elapsed));
  return 0;
}

void printReport(const daemon::SweepReport& r) {
  for (const auto& w : r.warnings) std::fprintf(stderr, "ibsmd: warning: %s\n", w.c_str());
  for (const auto& w : r.discovery.warnings) std::fprintf(stderr, "ibsmd: warning: %s\n", w.c_str());
  for (const auto& f : r.fallbacks) std::fprintf(stderr, "ibsmd: routing fallback: %s\n", f.c_str());
  size_t shown = 0;
  for (const auto& e : r.program.errors)
    if (shown++ < 20) std::fprintf(stderr, "ibsmd: error: %s\n", e.c_str());
  if (r.program.errors.size() > 20)
    std::fprintf(stderr, "ibsmd: ... %zu errors in all\n", r.program.errors.size());
  std::printf("sweep: %.1f ms, %zu SMPs (%zu timeouts)\n", ms(r.discovery.elapsed), r.discovery.smps,
              r.discovery.timeouts);
  std::printf("lids: %zu changed; routing: %s in %.1f ms\n", r.lidsChanged, r.engine.c_str(),
              ms(r.routingTime));
  // One line per phase with its SMPs, and what they were.
  const auto& pr = r.program;
  auto what = [&](const std::string& phase) -> std::string {
    char b[160] = "";
    if (phase == "pkey")
      std::snprintf(b, sizeof b, "%zu tables read, %zu at their reset content, %zu blocks set",
                    r.pkeys.portsRead, r.pkeys.portsAtReset, r.pkeys.blocksSet);
    else if (phase == "lids")
      std::snprintf(b, sizeof b, "%zu PortInfo Sets, %zu of them arming their CA port", pr.lidsSet,
                    pr.armedWithLid);
    else if (phase == "switches")
      std::snprintf(b, sizeof b, "SwitchInfo and %zu LFT blocks (%zu unchanged)", pr.lftBlocksSent,
                    pr.lftBlocksSkipped);
    else if (phase == "arm")
      std::snprintf(b, sizeof b, "%zu ports armed", pr.portsArmed - pr.armedWithLid);
    else if (phase == "activate")
      std::snprintf(b, sizeof b, "%zu ports activated", pr.portsActivated);
    else if (phase == "vl")
      std::snprintf(b, sizeof b, "%zu SLtoVLMappingTable, %zu VLArbitrationTable Sets", r.vl.sl2vlSet,
                    r.vl.vlArbSet);
    return b;
  };
  for (const auto& p : pr.phases)
    std::printf("program %-9s %7zu SMPs %5zu errors %8.1f ms  %s\n", p.name.c_str(), p.smps, p.errors,
                ms(p.elapsed), what(p.name).c_str());
  // AR and the MFTs after the ports are active (not in the SMPs to SUBNET UP below).
  for (const auto& p : r.ar.phases)
    if (p.smps)
      std::printf("then    %-9s %7zu SMPs %5zu errors %8.1f ms\n", p.name.c_str(), p.smps, p.errors,
                  ms(p.elapsed));
  std::printf("then    %-9s %7zu SMPs %5zu errors %8.1f ms\n", r.mcast.phase.name.c_str(), r.mcast.phase.smps,
              r.mcast.phase.errors, ms(r.mcast.phase.elapsed));
  std::printf("%s in %.1f ms, %zu SMPs (sweep %zu + program %zu)\n",
              r.subnetUp ? "SUBNET UP" : "SUBNET NOT UP", ms(r.total), r.discovery.smps + pr.smps(),
              r.discovery.smps, pr.smps());
  std::fflush(stdout);
}

// --once: sweeps until the subnet is up or --once-deadline-s has passed (after it, while each sweep leaves
// fewer failed SMPs than the last), each sweep's report on stdout, the
// dumps written before exit (opensm-lfts.dump only with dumps.lfts: on_change: no daemon is left to ask for
// it). A sweep that lost MADs or met a port that refused a Set is followed by another (after 100 ms, doubling
// to 2 s), which re-reads the fabric and sends only what the switches still lack.
int runOnce(const Args& args, mad::MadEngine& engine, const mad::Clock& clock, daemon::Logger& log,
            const std::optional<mad::MkeyInfo>& mkey) {
  daemon::SystemWallClock wallClock;
  const std::vector<fabric::Partition> runtime = runtimePartitions(args, log);
  daemon::SubnetManager sm(engine, clock, wallClock, smOptions(args, mkey, runtime));
  engine.setUnsolicitedHandler(
      [&sm](const mad::MadPacket& m, const mad::MadHeader& h) { sm.onUnsolicited(m, h); });
  const mad::TimePoint deadline = clock.now() + std::chrono::seconds(args.onceDeadlineS);
  mad::Duration pause = std::chrono::milliseconds(100);
  size_t lastFailures = SIZE_MAX;
  auto report = sm.sweep();
  for (;;) {
    if (report)
      printReport(*report);
    else
      std::fprintf(stderr, "ibsmd: %s\n", report.error().message.c_str());
    // Another sweep only where the master's own sweep fell short (not when another SM has the fabric).
    bool again = report ? !report->subnetUp && sm.state() == daemon::SmState::kMaster
                        : sm.state() != daemon::SmState::kStandby;
    // Past the deadline only while every sweep leaves fewer failures than the one before (a large lossy
    // fabric: each sweep re-reads it and sends only what still failed).
    const size_t failures = report ? report->program.errors.size() + report->discovery.failed : SIZE_MAX;
    const bool closer = failures < lastFailures;
    lastFailures = failures;
    if (!again || args.onceDeadlineS == 0 || (clock.now() + pause >= deadline && !closer)) break;
    std::fprintf(
        stderr, "ibsmd: the subnet is not up; sweeping again in %lld ms\n",
        static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(pause).count()));
    for (mad::TimePoint until = clock.now() + pause; clock.now() < until;) engine.poll(until - clock.now());
    pause = std::min<mad::Duration>(pause * 2, std::chrono::seconds(2));
    report = sm.sweep("retry: the last sweep left the subnet not up");
  }
  if (!report) return 1;
  daemon::DumpOptions last = dumpOptions(args.cfg);
  last.background = false;  // nothing else is left to do
  daemon::DumpWriter dumps(last, log);
  dumps.submit(sm.snapshot(), report->subnetUp);
  dumps.flush();
  return report->subnetUp ? 0 : 1;
}

// The long-running SM: the Service drives sweeps on the event loop; the control socket serves ibsmctl from
// its own thread; the dump writer writes from its own.
int runDaemon(const Args& args, mad::MadEngine& engine, const mad::Clock& clock, daemon::EventLoop& loop,
              daemon::Logger& log, std::function<void()>& onReload, const std::optional<mad::MkeyInfo>& mkey,
              daemon::SmMetrics* metrics) {
  daemon::SystemWallClock wallClock;
  const std::vector<fabric::Partition> runtime = runtimePartitions(args, log);
  daemon::SmOptions options = smOptions(args, mkey, runtime);
  options.backgroundRouting = true;  // link loads and rebalancing runs on a thread of their own
  daemon::SubnetManager sm(engine, clock, wallClock, std::move(options));
  engine.setUnsolicitedHandler(
      [&sm](const mad::MadPacket& m, const mad::MadHeader& h) { sm.onUnsolicited(m, h); });
  daemon::SaServer sa(
      clock, [&sm] { return sm.snapshot(); },
      [&sm] {
        mad::SmInfo i;
        i.priority = sm.options().priority;
        i.smKey = sm.options().smKey;
        i.state = static_cast<uint8_t>(sm.state());
        i.actCount = sm.actCount();
        return i;
      },
      daemon::SaOptions{.saKey = args.cfg.sm.saKey});
  sa.setHandler(mad::kSaAttrMcMemberRecord, daemon::makeMcMemberHandler(sm.mcastGroups()));
  sa.setHandler(mad::kSaAttrMftRecord, daemon::makeMftRecordHandler(sm.mcastGroups()));
  daemon::SaAgent saAgent(engine, sa);
  sm.setSaHandlers([&saAgent](const mad::MadPacket& m) { saAgent.onMad(m); },
                   [&saAgent](const mad::Notice& n) { saAgent.onNotice(n); });
  daemon::Notifier notify;
  daemon::EventLog events(wallClock);
  daemon::StatePublisher state;
  state.updateStatus([&](daemon::StatusInfo& s) {
    s.started = wallClock.now();
    s.pid = static_cast<int>(getpid());
    s.configPath =
        args.configGiven || std::filesystem::exists(args.configPath) ? args.configPath : "(defaults)";
  });
  daemon::DumpWriter dumps(dumpOptions(args.cfg), log);
  daemon::Service service(
      loop, engine, sm, log, notify, events, state, dumps, std::make_shared<const config::Config>(args.cfg),
      [&args] { return loadConfig(args); }, clock, wallClock, metrics);
  service.setRuntimePartitions(runtime);
  service.addMetricsFeed([&sa](daemon::SmMetrics& m) { m.setSa(daemon::saTotals(sa.counters())); });
  // Counter sweeps and the health policy: ticked with the SM below; isolations go to sm.
  daemon::HealthService health(engine, sm, log, events, state, clock, wallClock, args.cfg);
  service.setHealthService(&health);
  // Port counters and isolated ports from each new health snapshot (one per counter sweep).
  service.addMetricsFeed(
      [&state, seen = std::shared_ptr<const daemon::HealthSnapshot>()](daemon::SmMetrics& m) mutable {
        auto h = state.health();
        if (!h || h == seen) return;
        seen = h;
        m.publishPortCounters(daemon::portCounters(*h));
        m.setIsolatedPorts(daemon::isolatedPorts(*h));
      });
  auto server = daemon::ControlServer::start(
      {args.cfg.control.socket, args.cfg.control.group, args.cfg.routing.threads}, state, events, log, clock,
      [&service](daemon::Request r, daemon::PeerCredentials p, daemon::ControlServer::Reply reply) {
        service.onChangeRequest(std::move(r), std::move(p), std::move(reply));
      });
  if (!server) die(1, server.error().message);
  onReload = [&service] { service.reload(); };
  log.info("SM000", "ibsmd " IBSM_VERSION " starting, config " + state.status().configPath);
  auto started = service.start();
  if (!started) die(1, started.error().message);
  // Received MADs (SA queries, SMInfo, traps) wake the loop as they arrive, so the idle pass below (which
  // runs after every wake-up; sm.tick() drains the queue) handles them at once instead of within 10 ms.
  if (engine.eventFd() >= 0) {
    auto added = loop.addFd(engine.eventFd(), [] {});
    if (!added) die(1, added.error().message);
  }
  // Unsolicited MADs (SMInfo queries, traps) are handled whenever the engine is polled.
  // Topology events (targeted updates after traps and light sweeps) reach the Service, which logs and
  // publishes them.
  // sm.tick() handles received MADs (SMInfo, traps), runs batched targeted updates and light sweeps.
  loop.run(
      10ms,
      [&] {
        sm.tick();
        saAgent.poll();
        health.tick();
        service.idle();
      },
      [&] {
        // A batch of traps runs when its delay is over, not at the next 10 ms wake-up.
        auto due = sm.untilUpdateDue();
        return due ? std::chrono::ceil<std::chrono::milliseconds>(*due) : 10ms;
      });
  onReload = nullptr;
  notify.stopping();
  log.info("SM003", "stopping");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Under a file-size limit (ulimit -f, systemd LimitFSIZE=) a write past it would kill the daemon with
  // SIGXFSZ; ignored, the write fails with EFBIG and the state/dump writers log it and keep the old file.
  std::signal(SIGXFSZ, SIG_IGN);
  Args args = parseArgs(argc, argv);
  if (args.checkConfig) {
    std::fputs(config::toYaml(args.cfg).c_str(), stdout);
    std::fprintf(stderr, "ibsmd: configuration is valid\n");
    return 0;
  }
  daemon::Logger log(daemon::Logger::detectSink(), args.cfg.log.level);
  daemon::EventLoop loop;
  std::function<void()> onReload;
  if (!args.discoverOnly && !args.once) {
    // Before any thread starts, so that signals reach the loop's signalfd and not the umad thread.
    auto signals = loop.handleSignals([&](int signo) {
      if (signo == SIGTERM || signo == SIGINT) loop.stop();
      if (signo == SIGHUP && onReload) onReload();
    });
    if (!signals) die(1, signals.error().message);
  }
  // The metrics endpoint (daemon mode only) starts before the port is opened, so that an address it cannot
  // bind stops ibsmd at once with a clear error; its threads start after the signal mask is set.
  std::unique_ptr<daemon::SmMetrics> metrics;
  std::unique_ptr<daemon::MetricsEndpoint> endpoint;
  if (!args.discoverOnly && !args.once && !args.cfg.metrics.listen.empty()) {
    metrics = std::make_unique<daemon::SmMetrics>();
    auto started = daemon::MetricsEndpoint::start(args.cfg.metrics.listen, *metrics);
    if (!started) die(1, started.error().message);
    endpoint = std::move(*started);
    log.info("METRICS001", "serving Prometheus metrics on " + endpoint->url());
  }
  auto port =
      mad::UmadPort::open(mad::UmadPortOptions{args.cfg.portGuid, /*becomeSm=*/!args.discoverOnly, true});
  if (!port) die(1, port.error().message);
  args.localPortGuid = (*port)->localPort().portGuid;
  mad::SteadyClock clock;
  mad::MadEngine engine(**port, clock, madOptions(args.cfg));
  // Every SMP carries the M_Key, discovery's too: ports with protect bits 2 or 3 answer no Get without it.
  const std::optional<mad::MkeyInfo> mkey = resolveMkey(args.cfg, log);
  if (mkey) engine.setSmpMkey(mkey->key);
  if (args.discoverOnly) return discoverOnly(args, engine, clock);
  if (args.once) return runOnce(args, engine, clock, log, mkey);
  return runDaemon(args, engine, clock, loop, log, onReload, mkey, metrics.get());
}
