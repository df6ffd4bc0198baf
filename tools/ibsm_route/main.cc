// ibsm-route: routes a fabric offline, the way ibsmd would, and reports how good the routes are.
//
//   ibsm-route --topology fabric.topo --routing ftree,updn,minhop [--lmc 2] [--json] [--lfts-out lfts.dump]
//   ibsm-route --topology dragonfly.topo --routing 'ftree,dfly,dor|dfsp,updn,minhop' --vls 8
//   ibsm-route --topology ibnetdiscover.out --lfts-in dump_lfts.out   # check a live fabric's tables
//   ibsm-route --topology fabric.topo --routing dfly --vls 4 --pattern shift --ranks job.ranks
//
// Reads an ibnetdiscover/ibsim topology file, assigns LIDs with the daemon's policy (empty guid2lid), runs
// the engine chain, checks the tables (reachability, stretch, link load, CDG, AR) and prints the metrics.
// Exit codes: 0 done (also when the check found problems, unless --strict), 1 failure, 2 usage.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "fabric/topology_file.h"
#include "routing/engine.h"
#include "routing/lft_dump.h"
#include "routing/lid_assignment.h"
#include "routing/pattern_checker.h"
#include "routing/rebalance.h"
#include "routing/repair.h"
#include "routing/route_checker.h"
#include "tools/ibsm_route/ar_dump.h"

namespace {

using ibsm::fabric::Guid;
using ibsm::fabric::Result;
namespace routing = ibsm::routing;

constexpr const char* kUsage =
    "usage: ibsm-route --topology FILE (--routing ENGINE[,ENGINE...] | --lfts-in FILE) [options]\n"
    "\n"
    "Routes a fabric offline with ibsmd's LID policy and engines, then checks the tables.\n"
    "\n"
    "  --topology FILE     ibnetdiscover / ibsim topology file\n"
    "  --routing CHAIN     engines tried in order, e.g. ftree,dfly,dor|dfsp,updn,minhop (ibsmd's default; "
    "known:\n"
    "                      minhop, updn, ftree, dfsp, dor, dfly)\n"
    "  --lfts-in FILE      instead of routing: check tables from dump_lfts/ibroute/opensm-lfts.dump output,\n"
    "                      with the LIDs the topology file records\n"
    "  --lids MODE         'assigned' (ibsmd's policy; the default with --routing) or 'recorded' (the LIDs\n"
    "                      in the topology file; the default with --lfts-in when the file records any)\n"
    "  --lmc N             LMC 0..7 for CA ports (default 0)\n"
    "  --roots GUID,...    root switches (node GUIDs) for updn/ftree\n"
    "  --roots-file FILE   root switch GUIDs, one per line ('#' comments)\n"
    "  --threads N         worker threads for routing and checking (default 1)\n"
    "  --seed N            seed of minhop's equal-cost tie-break hash (default 0)\n"
    "  --vls N             data VLs an engine may spread its paths over to stay deadlock-free (dfsp),\n"
    "                      1..15 (default 1: one VL; ibsmd's qos.vls auto allows what every link offers,\n"
    "                      at most 8: 8 on ibsim)\n"
    "  --dfly-spread       dfly: also route through third groups (non-minimal, needs --vls 4 or more), for\n"
    "                      collective traffic, within a cap on the all-pairs link load (ibsmd:\n"
    "                      routing.dfly_spread)\n"
    "  --all-lids          check every LID of each LMC range, not only base LIDs\n"
    "  --no-ar             do not compute adaptive-routing groups\n"
    "  --no-cdg            skip the channel-dependency (deadlock) checks\n"
    "  --pattern NAME      also score collective traffic: 'shift' (every shift s = 1..N-1 of the ranks, "
    "rank\n"
    "                      i to rank i+s mod N, one permutation at a time), 'ring' (shifts 1 and N-1) or\n"
    "                      'all2all' (every pair at once): max congestion (most flows on a switch-to-switch\n"
    "                      link), mean flow bandwidth (1/congestion of each flow's busiest link), share of\n"
    "                      congestion-free shifts, the worst shift and its busiest link\n"
    "  --ranks FILE        ranks in order, one per line: host name, node description or port GUID (default:\n"
    "                      every CA port, hosts in natural name order as a job scheduler numbers them);\n"
    "                      implies --pattern shift when no --pattern is given\n"
    "  --json              print the result as one JSON object\n"
    "  --lfts-out FILE     write the LFTs in opensm-lfts.dump format ('-' for stdout)\n"
    "  --ar-out FILE       write the AR groups ('-' for stdout)\n"
    "  --fail NODE[:PORT]  after routing, take down this link (NODE: node GUID or description; no PORT: "
    "every\n"
    "                      link of the switch); repeatable. The routes are then repaired incrementally, as\n"
    "                      ibsmd does after a failure, and the check reports the repaired tables\n"
    "  --fail-mode MODE    'repair' (default) or 'scratch': route the degraded fabric from scratch instead\n"
    "  --rebalance         after a repaired --fail, rebalance incrementally as ibsmd does by default\n"
    "                      (routing.rebalance: incremental): single entries move off the most loaded links\n"
    "                      towards the load lower bound; the check then reports the rebalanced tables\n"
    "  --timing            add wall and CPU time per phase (CPU summed over threads) and peak RSS\n"
    "  --strict            exit 1 when the check finds problems\n"
    "  --help              this text\n"
    "\n"
    "Exit codes: 0 done, 1 failure (unreadable input, no engine could route, --strict problems), 2 usage.\n";

struct Args {
  std::string topology, chain, lftsIn, lftsOut, arOut, rootsFile, lidsMode, failMode = "repair", ranksFile;
  std::optional<routing::Pattern> pattern;
  std::vector<std::string> fail;
  std::vector<Guid> roots;
  unsigned lmc = 0, threads = 1, vls = 1;
  uint64_t seed = 0;
  bool dflySpread = false;
  bool json = false, allLids = false, noAr = false, noCdg = false, timing = false, strict = false,
       help = false, rebalance = false;
};

struct UsageError {
  std::string message;
};

Result<unsigned> parseUnsigned(const std::string& opt, const std::string& v, unsigned max) {
  unsigned long n = 0;
  char* end = nullptr;
  errno = 0;
  if (v.empty() || v[0] == '-') return ibsm::fabric::makeError(opt + ": '" + v + "' is not a number");
  n = std::strtoul(v.c_str(), &end, 10);
  if (errno || *end || n > max)
    return ibsm::fabric::makeError(opt + ": '" + v + "' is not a number in 0.." + std::to_string(max));
  return static_cast<unsigned>(n);
}

Result<std::vector<Guid>> parseGuidList(const std::string& text) {
  std::vector<Guid> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    auto g = ibsm::fabric::parseGuid(item);
    if (!g) return ibsm::fabric::makeError("--roots: bad GUID '" + item + "'");
    out.push_back(*g);
  }
  if (out.empty()) return ibsm::fabric::makeError("--roots: empty list");
  return out;
}

Result<Args> parseArgs(int argc, char** argv) {
  Args a;
  auto err = [](const std::string& m) { return ibsm::fabric::makeError(m); };
  for (int i = 1; i < argc; ++i) {
    std::string opt = argv[i], value;
    bool hasValue = false;
    if (auto eq = opt.find('='); opt.starts_with("--") && eq != std::string::npos) {
      value = opt.substr(eq + 1);
      opt = opt.substr(0, eq);
      hasValue = true;
    }
    auto need = [&]() -> Result<std::string> {
      if (hasValue) return value;
      if (i + 1 >= argc) return err(opt + " needs a value");
      return std::string(argv[++i]);
    };
    auto flag = [&](bool& f) -> Result<void> {
      if (hasValue) return err(opt + " takes no value");
      f = true;
      return {};
    };
    Result<void> ok;
    if (opt == "--help" || opt == "-h") {
      ok = flag(a.help);
    } else if (opt == "--json") {
      ok = flag(a.json);
    } else if (opt == "--all-lids") {
      ok = flag(a.allLids);
    } else if (opt == "--no-ar") {
      ok = flag(a.noAr);
    } else if (opt == "--no-cdg") {
      ok = flag(a.noCdg);
    } else if (opt == "--rebalance") {
      ok = flag(a.rebalance);
    } else if (opt == "--dfly-spread") {
      ok = flag(a.dflySpread);
    } else if (opt == "--timing") {
      ok = flag(a.timing);
    } else if (opt == "--strict") {
      ok = flag(a.strict);
    } else if (opt == "--topology" || opt == "--routing" || opt == "--lfts-in" || opt == "--lfts-out" ||
               opt == "--ar-out" || opt == "--roots-file" || opt == "--roots" || opt == "--lmc" ||
               opt == "--threads" || opt == "--seed" || opt == "--lids" || opt == "--vls" ||
               opt == "--fail" || opt == "--fail-mode" || opt == "--pattern" || opt == "--ranks") {
      auto v = need();
      if (!v) return v.error();
      if (v->empty()) return err(opt + " needs a non-empty value");
      if (opt == "--topology")
        a.topology = *v;
      else if (opt == "--routing")
        a.chain = *v;
      else if (opt == "--lfts-in")
        a.lftsIn = *v;
      else if (opt == "--lfts-out")
        a.lftsOut = *v;
      else if (opt == "--ar-out")
        a.arOut = *v;
      else if (opt == "--roots-file")
        a.rootsFile = *v;
      else if (opt == "--fail")
        a.fail.push_back(*v);
      else if (opt == "--ranks")
        a.ranksFile = *v;
      else if (opt == "--pattern") {
        a.pattern = routing::parsePattern(*v);
        if (!a.pattern) return err("--pattern: 'shift', 'ring' or 'all2all', not '" + *v + "'");
      } else if (opt == "--fail-mode") {
        if (*v != "repair" && *v != "scratch")
          return err("--fail-mode: 'repair' or 'scratch', not '" + *v + "'");
        a.failMode = *v;
      } else if (opt == "--lids") {
        if (*v != "assigned" && *v != "recorded")
          return err("--lids: 'assigned' or 'recorded', not '" + *v + "'");
        a.lidsMode = *v;
      } else if (opt == "--roots") {
        auto g = parseGuidList(*v);
        if (!g) return g.error();
        a.roots = *g;
      } else if (opt == "--lmc") {
        auto n = parseUnsigned(opt, *v, 7);
        if (!n) return n.error();
        a.lmc = *n;
      } else if (opt == "--seed") {
        auto n = parseUnsigned(opt, *v, UINT32_MAX);
        if (!n) return n.error();
        a.seed = *n;
      } else if (opt == "--vls") {
        auto n = parseUnsigned(opt, *v, 15);
        if (!n) return n.error();
        if (*n == 0) return err("--vls: must be at least 1");
        a.vls = *n;
      } else {
        auto n = parseUnsigned(opt, *v, 256);
        if (!n) return n.error();
        if (*n == 0) return err("--threads: must be at least 1");
        a.threads = *n;
      }
    } else {
      return err("unknown option '" + opt + "' (see --help)");
    }
    if (!ok) return ok.error();
  }
  if (a.help) return a;
  if (!a.ranksFile.empty() && !a.pattern) a.pattern = routing::Pattern::kShift;
  if (a.topology.empty()) return err("--topology is required (see --help)");
  if (a.chain.empty() == a.lftsIn.empty()) return err("give exactly one of --routing and --lfts-in");
  if (!a.roots.empty() && !a.rootsFile.empty()) return err("give either --roots or --roots-file, not both");
  if (!a.lftsIn.empty() && (!a.roots.empty() || !a.rootsFile.empty() || a.noAr || a.seed || a.vls != 1))
    return err("--roots, --roots-file, --seed, --vls and --no-ar apply to --routing only");
  if (a.lidsMode == "recorded" && a.lmc != 0) return err("--lmc applies to assigned LIDs only");
  if (!a.fail.empty() && a.chain.empty()) return err("--fail applies to --routing only");
  if (a.rebalance && (a.fail.empty() || a.failMode != "repair"))
    return err("--rebalance applies to --fail with --fail-mode repair only");
  return a;
}

Result<std::string> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ibsm::fabric::makeError(path + ": cannot open: " + std::strerror(errno));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return ibsm::fabric::makeError(path + ": read error");
  return text;
}

Result<void> writeOut(const std::string& path, const std::string& text) {
  if (path == "-") {
    if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0)
      return ibsm::fabric::makeError("write to stdout failed");
    return {};
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return ibsm::fabric::makeError(path + ": cannot create: " + std::strerror(errno));
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) return ibsm::fabric::makeError(path + ": write failed");
  return {};
}

// Root GUIDs, one per line; '#' starts a comment.
Result<std::vector<Guid>> readRootsFile(const std::string& path) {
  auto text = readFile(path);
  if (!text) return text.error();
  std::vector<Guid> roots;
  std::stringstream ss(*text);
  std::string line;
  for (size_t n = 1; std::getline(ss, line); ++n) {
    if (auto h = line.find('#'); h != std::string::npos) line.resize(h);
    size_t b = line.find_first_not_of(" \t\r"), e = line.find_last_not_of(" \t\r");
    if (b == std::string::npos) continue;
    std::string item = line.substr(b, e - b + 1);
    auto g = ibsm::fabric::parseGuid(item);
    if (!g)
      return ibsm::fabric::makeError(path + ":" + std::to_string(n) + ": bad GUID '" + item.substr(0, 40) +
                                     "'");
    roots.push_back(*g);
  }
  if (roots.empty()) return ibsm::fabric::makeError(path + ": no root GUIDs");
  return roots;
}

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// CPU time of the whole process (all threads), user + system, in ms.
double cpuMs() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

long peakRssKb() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

// The topology with the links named by --fail taken down (both ends Down).
Result<ibsm::fabric::TopologyPtr> failLinks(const ibsm::fabric::Topology& t,
                                            const std::vector<std::string>& specs) {
  ibsm::fabric::Topology::AttrPatch patch;
  auto down = [&](ibsm::fabric::NodeIndex n, unsigned p) {
    const ibsm::fabric::Port& port = t.node(n).ports[p];
    if (!port.connected()) return false;
    for (auto [node, num] : {std::pair{n, p}, std::pair{port.peerNode, unsigned{port.peerPort.value}}}) {
      ibsm::fabric::PortAttrs attrs = t.node(node).ports[num].attrs;
      attrs.valid = true;
      attrs.state = ibsm::fabric::PortState::kDown;
      patch.ports.emplace_back(node, ibsm::fabric::PortNum{static_cast<uint8_t>(num)}, attrs);
    }
    return true;
  };
  for (const std::string& spec : specs) {
    const size_t colon = spec.rfind(':');
    std::string name = colon == std::string::npos ? spec : spec.substr(0, colon);
    std::optional<ibsm::fabric::NodeIndex> node;
    if (auto g = ibsm::fabric::parseGuid(name)) node = t.findNode(*g);
    if (!node) node = t.findByDescription(name);
    if (!node) return ibsm::fabric::makeError("--fail: no node '" + name + "'");
    const unsigned ports = t.node(*node).numPorts;
    if (colon == std::string::npos) {
      for (unsigned p = 1; p <= ports && p < t.node(*node).ports.size(); ++p) down(*node, p);
      continue;
    }
    auto p = parseUnsigned("--fail", spec.substr(colon + 1), ports);
    if (!p) return p.error();
    if (*p == 0 || !down(*node, *p))
      return ibsm::fabric::makeError("--fail: '" + spec + "' is not a linked port");
  }
  return t.withAttrs(patch);
}

int fail(int code, const std::string& message) {
  std::fprintf(stderr, "ibsm-route: %s\n", message.c_str());
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  auto args = parseArgs(argc, argv);
  if (!args) return fail(2, args.error().message);
  const Args& a = *args;
  if (a.help) {
    std::fputs(kUsage, stdout);
    return 0;
  }

  using Clock = std::chrono::steady_clock;
  struct Phase {
    std::string name;
    double ms, cpuMs;
  };
  std::vector<Phase> phases;
  double c0 = cpuMs();
  auto t0 = Clock::now();
  auto lap = [&](const char* name) {
    auto now = Clock::now();
    double c = cpuMs();
    phases.push_back({name, std::chrono::duration<double, std::milli>(now - t0).count(), c - c0});
    c0 = c;
    t0 = now;
  };

  std::vector<std::string> chain;
  if (!a.chain.empty()) {
    auto c = routing::parseChain(a.chain);
    if (!c) return fail(2, c.error().message);
    chain = *c;
  }
  routing::Options options;
  options.roots = a.roots;
  options.threads = a.threads;
  options.computeAr = !a.noAr;
  options.seed = a.seed;
  options.vlLayers = static_cast<uint8_t>(a.vls);
  options.dflySpread = a.dflySpread;
  if (!a.rootsFile.empty()) {
    auto r = readRootsFile(a.rootsFile);
    if (!r) return fail(1, r.error().message);
    options.roots = *r;
  }

  auto topo = ibsm::fabric::readTopologyFile(a.topology);
  if (!topo) return fail(1, topo.error().message);
  const ibsm::fabric::Topology& t = **topo;
  lap("read");

  routing::LidAssignment lids;
  routing::RoutingTables tables;
  std::vector<std::string> fallbacks, warnings, choices;
  std::string lidsNote;
  bool assign = a.lidsMode == "assigned" || (a.lidsMode.empty() && a.lftsIn.empty());
  if (!assign) {
    lids = routing::LidAssignment::fromTopology(t);
    lidsNote = " (as recorded in the topology file)";
    if (lids.maxLid().value == 0) {
      if (a.lidsMode == "recorded") return fail(1, a.topology + ": records no LIDs (try --lids assigned)");
      assign = true;
    }
  }
  if (assign) {
    auto assigned = routing::assignLids(t, {}, static_cast<uint8_t>(a.lmc));
    if (!assigned) return fail(1, assigned.error().message);
    lids = std::move(assigned->lids);
    warnings = std::move(assigned->warnings);
    lidsNote = a.lftsIn.empty() ? "" : " (assigned: the topology file records none)";
  }
  lap("lids");
  if (a.lftsIn.empty()) {
    auto routed = routing::computeChain(chain, t, lids, options);
    if (!routed) return fail(1, routed.error().message);
    tables = std::move(routed->tables);
    fallbacks = std::move(routed->fallbacks);
    choices = std::move(routed->choices);
    lap("route");
  } else {
    auto text = readFile(a.lftsIn);
    if (!text) return fail(1, text.error().message);
    auto parsed = routing::parseLftDump(*text, t, a.lftsIn);
    if (!parsed) return fail(1, parsed.error().message);
    tables = std::move(*parsed);
    lap("lfts-in");
  }
  if (lids.maxLid().value == 0) return fail(1, a.topology + ": no endport has a LID, nothing to check");
  ibsm::fabric::TopologyPtr failed = *topo;
  std::string failNote;
  if (!a.fail.empty()) {
    auto degraded = failLinks(t, a.fail);
    if (!degraded) return fail(1, degraded.error().message);
    failed = *degraded;
    if (a.failMode == "repair") {
      routing::PortLoads loads = routing::computePortLoads(t, lids, tables, a.threads);
      lap("loads");
      auto r = routing::repairRoutes(t, lids, tables, loads, *failed, lids, options.arGroupCap);
      if (r) {
        failNote = "after --fail: repaired " + std::to_string(r->destinations) + " destination LID(s), " +
                   std::to_string(r->moved) + " entries moved";
        tables = std::move(r->tables);
        lap("repair");
        if (a.rebalance) {
          auto b = routing::rebalanceRoutes(*failed, lids, tables, r->loads);
          if (!b) return fail(1, "--rebalance: " + b.error().message);
          failNote += "; rebalanced: " + std::to_string(b->moved) + " entries moved, max link load " +
                      std::to_string(b->maxLoadBefore) + " -> " + std::to_string(b->maxLoadAfter) +
                      " (target " + std::to_string(b->target) + ")";
          tables = std::move(b->tables);
          lap("rebalance");
        }
      } else {
        failNote = "after --fail: repair declined (" + r.error().message + "), routed from scratch";
      }
    }
    if (failNote.empty() || failNote.find("declined") != std::string::npos) {
      auto routed = routing::computeChain(chain, *failed, lids, options);
      if (!routed) return fail(1, routed.error().message);
      if (failNote.empty()) failNote = "after --fail: routed from scratch";
      tables = std::move(routed->tables);
      lap("reroute");
    }
  }
  const ibsm::fabric::Topology& checked = *failed;

  routing::CheckOptions co;
  co.allLids = a.allLids;
  co.threads = a.threads;
  co.checkCdg = co.checkArCdg = !a.noCdg;
  routing::CheckReport report = routing::checkRoutes(checked, lids, tables, co);
  lap("check");
  std::optional<routing::PatternReport> pattern;
  if (a.pattern) {
    std::vector<routing::Rank> ranks;
    if (!a.ranksFile.empty()) {
      auto text = readFile(a.ranksFile);
      if (!text) return fail(1, text.error().message);
      auto parsed = routing::parseRanks(checked, lids, *text, a.ranksFile);
      if (!parsed) return fail(1, parsed.error().message);
      ranks = std::move(*parsed);
    }
    routing::PatternOptions po;
    po.pattern = *a.pattern;
    po.threads = a.threads;
    pattern = routing::checkPattern(checked, lids, tables, std::move(ranks), po);
    lap("pattern");
  }

  if (!a.lftsOut.empty())
    if (auto w = writeOut(a.lftsOut, routing::formatLftDump(t, lids, tables)); !w)
      return fail(1, w.error().message);
  if (!a.arOut.empty())
    if (auto w = writeOut(a.arOut, ibsm::tools::formatArDump(t, lids, tables)); !w)
      return fail(1, w.error().message);
  if (!a.lftsOut.empty() || !a.arOut.empty()) lap("write");

  double total = 0;
  double totalCpu = 0;
  for (const auto& ph : phases) {
    total += ph.ms;
    totalCpu += ph.cpuMs;
  }
  // With a dump on stdout the metrics go to stderr, so the dump stays parseable.
  FILE* out = (a.lftsOut == "-" || a.arOut == "-") ? stderr : stdout;
  if (a.json) {
    std::string j =
        "{\"topology\":" + jsonString(a.topology) + ",\"switches\":" + std::to_string(t.switches().size()) +
        ",\"cas\":" + std::to_string(t.cas().size()) + ",\"links\":" + std::to_string(t.links().size()) +
        ",\"lmc\":" + std::to_string(lids.lmc()) + ",\"maxLid\":" + std::to_string(lids.maxLid().value) +
        ",\"engine\":" + jsonString(tables.engine) + ",\"fallbacks\":[";
    for (size_t i = 0; i < fallbacks.size(); ++i) {
      if (i) j += ',';
      j += jsonString(fallbacks[i]);
    }
    j += "],\"vlLayers\":" + std::to_string(tables.slLayers) + ",\"candidates\":[";
    for (size_t i = 0; i < choices.size(); ++i) {
      if (i) j += ',';
      j += jsonString(choices[i]);
    }
    j += "],\"lidWarnings\":[";
    for (size_t i = 0; i < warnings.size(); ++i) {
      if (i) j += ',';
      j += jsonString(warnings[i]);
    }
    j += "]";
    if (!failNote.empty()) j += ",\"fail\":" + jsonString(failNote);
    j += ",\"check\":" + routing::formatReportJson(report);
    if (pattern) j += ",\"pattern\":" + routing::formatPatternJson(*pattern);
    if (a.timing) {
      j += ",\"timing\":{";
      for (const auto& ph : phases)
        j += jsonString(ph.name + "Ms") + ":" + std::to_string(ph.ms) + "," + jsonString(ph.name + "CpuMs") +
             ":" + std::to_string(ph.cpuMs) + ",";
      j += "\"totalMs\":" + std::to_string(total) + ",\"totalCpuMs\":" + std::to_string(totalCpu) +
           ",\"peakRssKb\":" + std::to_string(peakRssKb()) + "}";
    }
    j += "}\n";
    std::fputs(j.c_str(), out);
  } else {
    std::fprintf(out, "topology: %s: %zu switches, %zu CAs, %zu links\n", a.topology.c_str(),
                 t.switches().size(), t.cas().size(), t.links().size());
    std::fprintf(out, "LIDs: max %u, LMC %u%s\n", lids.maxLid().value, lids.lmc(), lidsNote.c_str());
    for (const auto& w : warnings) std::fprintf(out, "LID warning: %s\n", w.c_str());
    for (const auto& f : fallbacks) std::fprintf(out, "fallback: %s\n", f.c_str());
    for (const auto& c : choices) std::fprintf(out, "candidate: %s\n", c.c_str());
    if (tables.slLayers > 1) {
      // (ingress switch, destination LID) pairs per SL.
      std::vector<size_t> perSl(16, 0);
      for (const auto& row : tables.sl)
        for (uint8_t sl : row) ++perSl[sl & 0xF];
      std::string counts;
      for (unsigned sl = 0; sl < 16; ++sl)
        if (sl < tables.slLayers || perSl[sl])
          counts +=
              (sl ? ", " : "") + std::string("SL ") + std::to_string(sl) + ": " + std::to_string(perSl[sl]);
      std::fprintf(out, "VL layers: %u (%s; %s)\n", unsigned{tables.slLayers},
                   tables.slToVl.empty() ? "SL i on VL i" : "the VL of each SL per port pair",
                   tables.sl.empty() ? "every path on SL 0" : ("switch-LID pairs " + counts).c_str());
    }
    if (!failNote.empty()) std::fprintf(out, "%s\n", failNote.c_str());
    std::fputs(routing::formatReportText(report).c_str(), out);
    if (pattern) std::fputs(routing::formatPatternText(*pattern).c_str(), out);
    if (a.timing) {
      std::string line = "timing:";
      char buf[64];
      for (const auto& ph : phases) {
        std::snprintf(buf, sizeof buf, " %s %.0f ms (cpu %.0f),", ph.name.c_str(), ph.ms, ph.cpuMs);
        line += buf;
      }
      std::snprintf(buf, sizeof buf, " total %.0f ms (cpu %.0f); peak RSS %.1f MiB", total, totalCpu,
                    peakRssKb() / 1024.0);
      line += buf;
      std::fprintf(out, "%s\n", line.c_str());
    }
  }
  std::fflush(out);
  if (a.strict && !report.ok()) return 1;
  return 0;
}
