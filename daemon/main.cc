// ibsmd: wiring only. Parses the command line, opens the port, and runs the requested mode.
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

#include "daemon/discoverer.h"
#include "fabric/topology_file.h"
#include "mad/mad_engine.h"
#include "mad/umad_port.h"

namespace {

using namespace ibsm;

struct Args {
  bool discoverOnly = false;
  std::string topologyOut;
  std::optional<fabric::Guid> portGuid;
  mad::MadEngineOptions mad;
};

void usage(FILE* out) {
  std::fputs(
      "usage: ibsmd [options]\n"
      "  --discover-only           sweep the fabric once, print a summary and exit\n"
      "  --topology-out FILE       with --discover-only: write the topology (ibnetdiscover format)\n"
      "  --port-guid GUID          local port to bind (default: first port with link up)\n"
      "  --mad-window N            SMPs in flight (default 32)\n"
      "  --mad-timeout-ms MS       per-attempt timeout (default 100)\n"
      "  --mad-retries N           retries after a timeout (default 3)\n"
      "  --help                    this text\n",
      out);
}

std::optional<long> number(const char* s, long lo, long hi) {
  char* end = nullptr;
  long v = std::strtol(s, &end, 10);
  if (!*s || *end || v < lo || v > hi) return std::nullopt;
  return v;
}

int parseArgs(int argc, char** argv, Args& a) {
  for (int i = 1; i < argc; ++i) {
    std::string opt = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "ibsmd: %s needs a value\n", opt.c_str());
        return nullptr;
      }
      return argv[++i];
    };
    auto numberArg = [&](long lo, long hi) -> std::optional<long> {
      const char* v = value();
      if (!v) return std::nullopt;
      auto n = number(v, lo, hi);
      if (!n) std::fprintf(stderr, "ibsmd: %s: '%s' is not a number in %ld..%ld\n", opt.c_str(), v, lo, hi);
      return n;
    };
    if (opt == "--help" || opt == "-h") {
      usage(stdout);
      std::exit(0);
    } else if (opt == "--discover-only") {
      a.discoverOnly = true;
    } else if (opt == "--topology-out") {
      const char* v = value();
      if (!v) return 2;
      a.topologyOut = v;
    } else if (opt == "--port-guid") {
      const char* v = value();
      if (!v) return 2;
      a.portGuid = fabric::parseGuid(v);
      if (!a.portGuid) {
        std::fprintf(stderr, "ibsmd: --port-guid: '%s' is not a GUID\n", v);
        return 2;
      }
    } else if (opt == "--mad-window") {
      auto n = numberArg(1, 1024);
      if (!n) return 2;
      a.mad.window = static_cast<unsigned>(*n);
    } else if (opt == "--mad-timeout-ms") {
      auto n = numberArg(1, 60000);
      if (!n) return 2;
      a.mad.timeout = std::chrono::milliseconds(*n);
    } else if (opt == "--mad-retries") {
      auto n = numberArg(0, 20);
      if (!n) return 2;
      a.mad.retries = static_cast<unsigned>(*n);
    } else {
      std::fprintf(stderr, "ibsmd: unknown option '%s' (see --help)\n", opt.c_str());
      return 2;
    }
  }
  if (!a.topologyOut.empty() && !a.discoverOnly) {
    std::fprintf(stderr, "ibsmd: --topology-out needs --discover-only\n");
    return 2;
  }
  return 0;
}

int discoverOnly(const Args& args) {
  auto port = mad::UmadPort::open(mad::UmadPortOptions{args.portGuid, /*becomeSm=*/false, /*registerSa=*/true});
  if (!port) {
    std::fprintf(stderr, "ibsmd: %s\n", port.error().message.c_str());
    return 1;
  }
  mad::SteadyClock clock;
  mad::MadEngine engine(**port, clock, args.mad);
  daemon::Discoverer discoverer(engine, clock);
  auto result = discoverer.discover();
  if (!result) {
    std::fprintf(stderr, "ibsmd: discovery failed: %s\n", result.error().message.c_str());
    return 1;
  }
  for (const auto& w : result->stats.warnings) std::fprintf(stderr, "ibsmd: warning: %s\n", w.c_str());
  const fabric::Topology& topo = *result->topology;
  if (!args.topologyOut.empty()) {
    auto written = fabric::writeTopologyFile(topo, args.topologyOut);
    if (!written) {
      std::fprintf(stderr, "ibsmd: %s\n", written.error().message.c_str());
      return 1;
    }
  }
  double ms = std::chrono::duration<double, std::milli>(result->stats.elapsed).count();
  std::printf("discovered %zu switches, %zu CAs, %zu links; %zu SMPs (%zu timeouts) in %.1f ms\n",
              topo.switches().size(), topo.cas().size(), topo.links().size(), result->stats.smps,
              result->stats.timeouts, ms);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (int rc = parseArgs(argc, argv, args)) return rc;
  if (args.discoverOnly) return discoverOnly(args);
  std::fprintf(stderr, "ibsmd: only --discover-only is implemented so far\n");
  return 2;
}
