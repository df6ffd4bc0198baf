// ibsmd: wiring only. Parses the command line, opens the port, and runs the requested mode:
//   --discover-only  sweep once and report (optionally write the topology)
//   --once           bring the subnet up (sweep, LIDs, routes, program) and exit
//   (default)        the long-running SM: bring the subnet up, then keep it up until SIGTERM/SIGINT
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "daemon/event_loop.h"
#include "daemon/subnet_manager.h"
#include "fabric/topology_file.h"
#include "mad/mad_engine.h"
#include "mad/umad_port.h"

namespace {

using namespace ibsm;
using namespace std::chrono_literals;

struct Args {
  bool discoverOnly = false, once = false;
  std::string topologyOut;
  std::optional<fabric::Guid> portGuid;
  std::string stateDir = "/var/lib/ibsm";
  std::string routing = "ftree,updn,minhop";
  unsigned lmc = 0, priority = 0;
  unsigned sweepIntervalS = 10;
  mad::MadEngineOptions mad;
};

constexpr const char* kUsage =
    "usage: ibsmd [options]\n"
    "modes (default: run as the subnet manager until SIGTERM/SIGINT):\n"
    "  --once                    bring the subnet up once and exit (0 at SUBNET UP)\n"
    "  --discover-only           sweep the fabric once, print a summary and exit\n"
    "  --topology-out FILE       with --discover-only: write the topology (ibnetdiscover format)\n"
    "options:\n"
    "  --port-guid GUID          local port to bind (default: first port with link up)\n"
    "  --routing ENGINES         engine chain, e.g. ftree,updn,minhop (default)\n"
    "  --lmc N                   LID mask control 0..7 (default 0)\n"
    "  --state-dir DIR           persistent state, guid2lid (default /var/lib/ibsm)\n"
    "  --priority N              SM priority 0..15 (default 0)\n"
    "  --sweep-interval S        seconds between sweeps, 0 = none (default 10)\n"
    "  --mad-window N            SMPs in flight (default 32)\n"
    "  --mad-timeout-ms MS       per-attempt timeout (default 100)\n"
    "  --mad-retries N           retries after a timeout (default 3)\n"
    "  --help                    this text\n";

[[noreturn]] void die(int code, const std::string& message) {
  std::fprintf(stderr, "ibsmd: %s\n", message.c_str());
  std::exit(code);
}

Args parseArgs(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string opt = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) die(2, opt + " needs a value");
      return argv[++i];
    };
    auto number = [&](unsigned long lo, unsigned long hi) -> unsigned {
      std::string v = value();
      char* end = nullptr;
      unsigned long n = std::strtoul(v.c_str(), &end, 10);
      if (v.empty() || *end || v[0] == '-' || n < lo || n > hi)
        die(2, opt + ": '" + v + "' is not a number in " + std::to_string(lo) + ".." + std::to_string(hi));
      return static_cast<unsigned>(n);
    };
    if (opt == "--help" || opt == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (opt == "--discover-only") a.discoverOnly = true;
    else if (opt == "--once") a.once = true;
    else if (opt == "--topology-out") a.topologyOut = value();
    else if (opt == "--port-guid") {
      std::string v = value();
      a.portGuid = fabric::parseGuid(v);
      if (!a.portGuid) die(2, "--port-guid: '" + v + "' is not a GUID");
    } else if (opt == "--routing") a.routing = value();
    else if (opt == "--lmc") a.lmc = number(0, 7);
    else if (opt == "--state-dir") a.stateDir = value();
    else if (opt == "--priority") a.priority = number(0, 15);
    else if (opt == "--sweep-interval") a.sweepIntervalS = number(0, 86400);
    else if (opt == "--mad-window") a.mad.window = number(1, 1024);
    else if (opt == "--mad-timeout-ms") a.mad.timeout = std::chrono::milliseconds(number(1, 60000));
    else if (opt == "--mad-retries") a.mad.retries = number(0, 20);
    else die(2, "unknown option '" + opt + "' (see --help)");
  }
  if (!a.topologyOut.empty() && !a.discoverOnly) die(2, "--topology-out needs --discover-only");
  if (a.once && a.discoverOnly) die(2, "--once and --discover-only exclude each other");
  if (!routing::parseChain(a.routing)) die(2, "--routing: " + routing::parseChain(a.routing).error().message);
  return a;
}

double ms(mad::Duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

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
  if (r.program.errors.size() > 20) std::fprintf(stderr, "ibsmd: ... %zu errors in all\n", r.program.errors.size());
  std::printf("sweep: %.1f ms, %zu SMPs (%zu timeouts)\n", ms(r.discovery.elapsed), r.discovery.smps,
              r.discovery.timeouts);
  std::printf("lids: %zu changed; routing: %s in %.1f ms\n", r.lidsChanged, r.engine.c_str(), ms(r.routingTime));
  for (const auto& p : r.program.phases)
    std::printf("program %-9s %7zu SMPs %5zu errors %8.1f ms\n", p.name.c_str(), p.smps, p.errors, ms(p.elapsed));
  std::printf("lft blocks: %zu sent, %zu unchanged; ports armed %zu, activated %zu\n", r.program.lftBlocksSent,
              r.program.lftBlocksSkipped, r.program.portsArmed, r.program.portsActivated);
  std::printf("%s in %.1f ms, %zu SMPs\n", r.subnetUp ? "SUBNET UP" : "SUBNET NOT UP", ms(r.total),
              r.discovery.smps + r.program.smps());
  std::fflush(stdout);
}

daemon::SmOptions smOptions(const Args& a) {
  daemon::SmOptions o;
  o.engines = *routing::parseChain(a.routing);
  o.lmc = static_cast<uint8_t>(a.lmc);
  o.priority = static_cast<uint8_t>(a.priority);
  o.guid2lidPath = a.stateDir + "/guid2lid";
  return o;
}

int runSm(const Args& args, mad::MadEngine& engine, const mad::Clock& clock, daemon::EventLoop& loop) {
  daemon::SubnetManager sm(engine, clock, smOptions(args));
  engine.setUnsolicitedHandler([&sm](const mad::MadPacket& m, const mad::MadHeader& h) { sm.onUnsolicited(m, h); });
  auto cycle = [&]() -> bool {
    auto report = sm.sweep();
    if (!report) {
      std::fprintf(stderr, "ibsmd: %s\n", report.error().message.c_str());
      return false;
    }
    printReport(*report);
    return report->subnetUp;
  };
  bool up = cycle();
  if (args.once) return up ? 0 : 1;

  if (args.sweepIntervalS > 0) {
    auto period = std::chrono::milliseconds(args.sweepIntervalS * 1000ull);
    auto timer = loop.addTimer(period, period, [&] { cycle(); });
    if (!timer) die(1, timer.error().message);
  }
  // Unsolicited MADs (SMInfo queries, traps) are handled whenever the engine is polled.
  loop.run(100ms, [&] { engine.poll(0ms); });
  std::fprintf(stderr, "ibsmd: stopping\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args = parseArgs(argc, argv);
  daemon::EventLoop loop;
  if (!args.discoverOnly && !args.once) {
    // Before any thread starts, so that signals reach the loop's signalfd and not the umad thread.
    auto signals = loop.handleSignals([&](int signo) {
      if (signo == SIGTERM || signo == SIGINT) loop.stop();
    });
    if (!signals) die(1, signals.error().message);
  }
  auto port = mad::UmadPort::open(mad::UmadPortOptions{args.portGuid, /*becomeSm=*/!args.discoverOnly, true});
  if (!port) die(1, port.error().message);
  mad::SteadyClock clock;
  mad::MadEngine engine(**port, clock, args.mad);
  if (args.discoverOnly) return discoverOnly(args, engine, clock);
  return runSm(args, engine, clock, loop);
}
