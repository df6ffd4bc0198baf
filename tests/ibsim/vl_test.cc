// The VL layer on ibsim (issue 15): ibsmd as a daemon with qos.vls auto (the 8 VLs ibsim's ports offer). On a
// dragonfly of 9 groups x 4 routers, 2 hosts each, dfsp routes on VL layers; then the daemon's own route
// check must find the CDG acyclic on every VL, the switches must map every SL in use to its own VL (smpquery
// sl2vl; the pairs that carry a path on an SL above 0 hold the programmed SL s -> VL s mod layers, the others
// their reset table), and the PathRecords saquery gets must carry SLs inside those layers, not all 0. With
// the default chain "ftree,dfly,dor|dfsp,updn,minhop" dfly routes the same dragonfly on 2 VLs (on 3 with its
// non-minimal routes, routing.dfly_spread) and dor a torus; dfly repairs a failed link
// inside its scheme on up to 4 VLs, dor by a sidestep on 4 (issue 28).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "routing/engine.h"
#include "routing/lft_dump.h"
#include "routing/lid_assignment.h"
#include "routing/repair.h"
#include "routing/route_checker.h"
#include "tests/ibsim/ibsim_fabric.h"

namespace ibsm::testing {
namespace {

using namespace std::chrono_literals;

constexpr const char* kHost = "H-0000000000100002";  // where the diagnostics attach (host-0)

// ibsmd as a daemon with its defaults (no periodic sweeps) and `extra`, its control socket at `sock`.
pid_t startDaemon(Ibsim& sim, const std::string& sock, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {
      binPath("ibsmd"), "--state-dir", sim.dir() + "/state", "--socket", sock, "--sweep-interval", "0"};
  args.insert(args.end(), extra.begin(), extra.end());
  return sim.spawn(args);
}

RunOptions diagnostics() {
  RunOptions diag;
  diag.simHost = kHost;
  diag.timeout = 20s;
  return diag;
}

// The fabric as ibnetdiscover sees it now; nullptr, with a test failure, when it cannot be read.
fabric::TopologyPtr discovered(Ibsim& sim) {
  RunResult disc = sim.run({"ibnetdiscover"}, diagnostics());
  EXPECT_EQ(disc.exitCode, 0) << disc.err;
  return disc.exitCode == 0 ? parseOrFail(disc.out, "ibnetdiscover") : nullptr;
}

// The daemon's routes computed again offline by `engine` (deterministic) with up to 8 VLs, without AR; dfly
// with its non-minimal routes when `dflySpread` (routing.dfly_spread, off by default).
fabric::Result<routing::RoutingTables> offline(const std::string& engine, const fabric::Topology& topo,
                                               const routing::LidAssignment& lids, bool dflySpread = false) {
  routing::Options o;
  o.vlLayers = 8;
  o.computeAr = false;
  o.dflySpread = dflySpread;
  return routing::makeEngine(engine)->compute(topo, lids, o);
}

// The SL of the PathRecord saquery gets from slid to dlid (attached at host-0); nullopt, with a test failure,
// when it gets none.
std::optional<unsigned> pathRecordSl(Ibsim& sim, uint16_t slid, uint16_t dlid) {
  RunResult pr =
      sim.run({"saquery", "--src-to-dst", std::to_string(slid) + ":" + std::to_string(dlid)}, diagnostics());
  std::smatch m;
  if (pr.exitCode != 0 || !std::regex_search(pr.out, m, std::regex("\\ssl\\.+(0x[0-9a-fA-F]+|[0-9]+)"))) {
    ADD_FAILURE() << "saquery " << slid << ":" << dlid << ": " << pr.out << pr.err;
    return std::nullopt;
  }
  return static_cast<unsigned>(std::stoul(m[1], nullptr, 0));  // saquery prints it in hex
}

// smpquery sl2vl LID OUT prints the table of every input port towards OUT, one row each: the tables of every
// switch towards each of its switch ports (the outputs whose VLs the CDG is about); `rows` counts them.
void readSlToVl(Ibsim& sim, const fabric::Topology& topo, const routing::LidAssignment& lids,
                routing::SlToVlMap& read, size_t& rows) {
  const std::regex row("ports: in +([0-9]+), out +([0-9]+): *((\\| *[0-9]+)+)\\|"), cell("[0-9]+");
  for (fabric::NodeIndex s : topo.switches()) {
    const fabric::Node& n = topo.node(s);
    const std::string lid = std::to_string(lids.base(s, fabric::PortNum{0}).value);
    for (unsigned out = 1; out <= n.numPorts; ++out) {
      if (!n.ports[out].connected() || !topo.node(n.ports[out].peerNode).isSwitch()) continue;
      RunResult q = sim.run({"smpquery", "sl2vl", lid, std::to_string(out)}, diagnostics());
      ASSERT_EQ(q.exitCode, 0) << q.err;
      for (std::sregex_iterator r(q.out.begin(), q.out.end(), row), end; r != end; ++r) {
        const std::string cells = (*r)[3];
        routing::SlToVlMap::Table t{};
        size_t sl = 0;
        for (std::sregex_iterator c(cells.begin(), cells.end(), cell); c != end && sl < 16; ++c)
          t[sl++] = static_cast<uint8_t>(std::stoul(c->str()));
        ASSERT_EQ(sl, 16u) << q.out;
        EXPECT_EQ(std::stoul((*r)[2]), out) << q.out;
        read.set(s, n.numPorts, static_cast<unsigned>(std::stoul((*r)[1])), out, t);
        ++rows;
      }
    }
  }
}

// Every (input, output) pair of every switch mapping every SL to VL 0: the same paths on one VL.
routing::SlToVlMap allOnVl0(const fabric::Topology& topo) {
  routing::SlToVlMap m;
  for (fabric::NodeIndex s : topo.switches())
    for (unsigned in = 0; in <= topo.node(s).numPorts; ++in)
      for (unsigned out = 0; out <= topo.node(s).numPorts; ++out)
        m.set(s, topo.node(s).numPorts, in, out, routing::SlToVlMap::Table{});
  return m;
}

// The LFTs the switches hold now (dump_lfts), as tables on `topo`; an Error when they cannot be read.
fabric::Result<routing::RoutingTables> switchLfts(Ibsim& sim, const fabric::Topology& topo) {
  RunResult lfts = sim.run({"dump_lfts"}, diagnostics());
  std::string text = lftTables(lfts.out);
  return routing::parseLftDump(text, topo, "dump_lfts");
}

// (switch, LID) entries up to `maxLid` in which two tables differ.
size_t lftDifferences(const fabric::Topology& topo, const routing::RoutingTables& a,
                      const routing::RoutingTables& b, uint16_t maxLid) {
  size_t n = 0;
  for (fabric::NodeIndex s : topo.switches())
    for (uint16_t lid = 1; lid <= maxLid; ++lid)
      n += a.port(s, fabric::Lid{lid}) != b.port(s, fabric::Lid{lid});
  return n;
}

// How often `what` occurs in `text`.
size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// The last line of `text` that contains `what`.
std::string lastLineWith(const std::string& text, const std::string& what) {
  const size_t at = text.rfind(what);
  if (at == std::string::npos) return {};
  const size_t begin = text.rfind('\n', at), end = text.find('\n', at);
  return text.substr(begin == std::string::npos ? 0 : begin + 1,
                     end == std::string::npos ? end : end - begin - 1);
}

// Waits until the switches hold `want`'s LFTs (the SM converges asynchronously); a test failure when they do
// not within 30 s.
void holdsRoutes(Ibsim& sim, pid_t sm, const fabric::Topology& topo, const routing::RoutingTables& want,
                 uint16_t maxLid) {
  size_t diff = SIZE_MAX;
  EXPECT_TRUE(waitUntil(
      [&] {
        auto lfts = switchLfts(sim, topo);
        diff = lfts.ok() ? lftDifferences(topo, *lfts, want, maxLid) : SIZE_MAX;
        return diff == 0;
      },
      30s, "the switches to hold the routes", 100ms))
      << diff << " entries differ\n"
      << sim.output(sm);
}

// A switch as the ibsim console names it: "S-<GUID>".
std::string switchId(const fabric::Topology& topo, fabric::NodeIndex n) {
  return "\"S-" + fabric::toString(topo.node(n).guid).substr(2) + "\"";
}

// A daemon with its defaults on a fresh ibsim of `spec`, up, and the tables `engine` computes offline for the
// fabric as discovered, with their loads (the caller checks the switches hold them).
struct RoutedSim {
  std::unique_ptr<Ibsim> sim;
  fabric::TopologyPtr built, whole;  // as generated; as discovered
  routing::LidAssignment lids;
  routing::RoutingTables base;
  routing::PortLoads loads;
  pid_t sm = -1;
};
void startRouted(const std::string& spec, const std::string& engine, RoutedSim& r,
                 std::vector<std::string> extra = {}) {
  std::string net;
  r.sim = startFabric(spec, &net);
  r.built = parseOrFail(net, "generated");
  ASSERT_TRUE(r.built);
  const bool dflySpread = std::find(extra.begin(), extra.end(), "routing.dfly_spread=true") != extra.end();
  r.sm = startDaemon(*r.sim, r.sim->dir() + "/ibsm.sock", std::move(extra));
  ASSERT_TRUE(r.sim->waitForOutput(r.sm, "SUBNET UP", 60s)) << r.sim->output(r.sm);
  r.whole = discovered(*r.sim);
  ASSERT_TRUE(r.whole);
  r.lids = routing::LidAssignment::fromTopology(*r.whole);
  auto base = offline(engine, *r.whole, r.lids, dflySpread);
  ASSERT_TRUE(base.ok()) << base.error().message;
  r.base = std::move(*base);
  r.loads = routing::computePortLoads(*r.whole, r.lids, r.base);
}

// What an engine-specific repair in the daemon must show, from the fabric as the switches have it now: the
// same repair offline (from `base` on `whole`), the switches holding it, and the route check with the
// SL-to-VL tables read back (returned in `check`: acyclic) and with every pair on VL 0 (cyclic).
struct HeldRepair {
  fabric::TopologyPtr after;
  routing::RoutingTables tables;
  routing::CheckReport check;
};
void repairIsHeld(Ibsim& sim, pid_t sm, const fabric::Topology& whole, const routing::LidAssignment& lids,
                  const routing::RoutingTables& base, const routing::PortLoads& baseLoads, HeldRepair& out) {
  out.after = discovered(sim);
  ASSERT_TRUE(out.after);
  auto repaired = routing::repairRoutes(whole, lids, base, baseLoads, *out.after, lids);
  ASSERT_TRUE(repaired.ok()) << repaired.error().message;
  out.tables = std::move(repaired->tables);
  holdsRoutes(sim, sm, *out.after, out.tables, lids.maxLid().value);
  routing::SlToVlMap read;
  size_t rows = 0;
  readSlToVl(sim, *out.after, lids, read, rows);
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  routing::CheckOptions co;
  co.slToVl = &read;
  out.check = routing::checkRoutes(*out.after, lids, out.tables, co);
  EXPECT_TRUE(out.check.ok()) << routing::formatReportText(out.check);
  const routing::SlToVlMap allVl0 = allOnVl0(*out.after);
  co.slToVl = &allVl0;
  EXPECT_FALSE(routing::checkRoutes(*out.after, lids, out.tables, co).cdgAcyclic);
}

// The SA's PathRecord SL against the tables' for up to 3 host pairs whose SL is `marked` and 3 others
// (sources every 7th host); how many marked pairs were compared.
size_t pathRecordsCarrySls(Ibsim& sim, const fabric::Topology& topo, const routing::LidAssignment& lids,
                           const routing::RoutingTables& tables, const std::function<bool(uint8_t)>& marked) {
  size_t yes = 0, no = 0;
  for (fabric::NodeIndex from : topo.cas())
    for (fabric::NodeIndex to : topo.cas()) {
      const auto& port = topo.node(from).ports[1];
      if (from == to || !port.connected()) continue;
      const uint16_t dlid = lids.base(to, fabric::PortNum{1}).value;
      const uint8_t sl = tables.pathSl(port.peerNode, fabric::Lid{dlid});
      size_t& n = marked(sl) ? yes : no;
      if (n >= 3 || (!marked(sl) && from % 7 != 0)) continue;
      ++n;
      EXPECT_EQ(pathRecordSl(sim, lids.base(from, fabric::PortNum{1}).value, dlid), sl);
    }
  return yes;
}

TEST(IbsimVl, DragonflyIsRoutedOnVlLayersAndTheSwitchesHoldTheTables) {
  std::unique_ptr<Ibsim> sim = startFabric("--dragonfly 4,2 --hosts-per-switch 2");
  const std::string sock = sim->dir() + "/ibsm.sock";
  pid_t sm = startDaemon(*sim, sock, {"--routing", "dfsp"});
  ASSERT_TRUE(sim->waitForOutput(sm, "SUBNET UP", 60s)) << sim->output(sm);
  const RunOptions diag = diagnostics();

  // The daemon's check of its own tables: VL-aware CDG (link x VL channels), acyclic.
  RunResult check = sim->run({binPath("ibsmctl"), "--socket", sock, "check"}, diag);
  EXPECT_EQ(check.exitCode, 0) << check.out << check.err;
  EXPECT_NE(check.out.find("engine: dfsp"), std::string::npos) << check.out;
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(check.out, m, std::regex("dependencies on ([0-9]+) VLs, acyclic on every VL")))
      << check.out;
  const unsigned layers = static_cast<unsigned>(std::stoul(m[1]));
  EXPECT_GE(layers, 2u);
  EXPECT_LE(layers, 8u);

  fabric::TopologyPtr topo = discovered(*sim);
  ASSERT_TRUE(topo);
  routing::LidAssignment lids = routing::LidAssignment::fromTopology(*topo);

  // Every switch, from a host port (in 1) to each router port: every SL in use travels on its own VL; where
  // the pair was programmed, all 16 SLs map to SL mod layers. Some pairs must have been programmed.
  std::string layered = "|";
  for (unsigned sl = 0; sl < 16; ++sl) {
    layered += sl % layers < 10 ? " " : "";
    layered += std::to_string(sl % layers) + "|";
  }
  std::string inUse = "|";
  for (unsigned sl = 0; sl < layers; ++sl) {
    inUse += " ";
    inUse += std::to_string(sl) + "|";
  }
  size_t programmed = 0, queried = 0;
  for (fabric::NodeIndex s : topo->switches()) {
    const uint16_t lid = lids.base(s, fabric::PortNum{0}).value;
    for (unsigned out = 3; out <= topo->node(s).numPorts; ++out) {
      if (!topo->node(s).ports[out].connected()) continue;
      RunResult q = sim->run({"smpquery", "sl2vl", std::to_string(lid), "1", std::to_string(out)}, diag);
      ASSERT_EQ(q.exitCode, 0) << q.err;
      ++queried;
      const size_t row = q.out.find("ports: in  1, out");
      ASSERT_NE(row, std::string::npos) << q.out;
      EXPECT_EQ(q.out.find(inUse, row), q.out.find('|', row))
          << topo->node(s).description << " 1->" << out << ":\n"
          << q.out;
      programmed += q.out.find(layered, row) != std::string::npos;
    }
  }
  EXPECT_GT(programmed, 0u);

  // PathRecords from one host of one router of every group to every 4th host: SLs within the layers, and not
  // all on SL 0 (the SL belongs to the (ingress switch, destination) pair, so the sources are on different
  // switches). saquery attaches at the source host, as an application asking for its path would.
  std::vector<fabric::NodeIndex> sources, dests;
  for (size_t i = 0; i < topo->cas().size(); ++i) {
    fabric::NodeIndex c = topo->cas()[i];
    const auto& port = topo->node(c).ports[1];
    // "dfly-G-R": router G mod 4 of group G, so the sources sit at every router position.
    const std::string& sw = topo->node(port.peerNode).description;
    unsigned g = 0, r = 0;
    if (std::sscanf(sw.c_str(), "dfly-%u-%u", &g, &r) == 2 && r == g % 4 && port.peerPort.value == 1)
      sources.push_back(c);
    if (i % 4 == 1) dests.push_back(c);
  }
  ASSERT_EQ(sources.size(), 9u);
  std::set<unsigned> sls;
  for (fabric::NodeIndex from : sources)
    for (fabric::NodeIndex to : dests) {
      if (from == to) continue;
      const uint16_t slid = lids.base(from, fabric::PortNum{1}).value,
                     dlid = lids.base(to, fabric::PortNum{1}).value;
      const std::optional<unsigned> sl = pathRecordSl(*sim, slid, dlid);
      ASSERT_TRUE(sl);
      sls.insert(*sl);
    }
  EXPECT_LT(*sls.rbegin(), layers);
  // ibsmctl path names the pair's SL and each hop's VL.
  RunResult path = sim->run({binPath("ibsmctl"), "--socket", sock, "path",
                             std::to_string(lids.base(sources[1], fabric::PortNum{1}).value),
                             std::to_string(lids.base(dests.back(), fabric::PortNum{1}).value)},
                            diag);
  EXPECT_EQ(path.exitCode, 0) << path.out << path.err;
  EXPECT_NE(path.out.find("engine dfsp, SL "), std::string::npos) << path.out;
  EXPECT_NE(path.out.find(" VL "), std::string::npos) << path.out;
  EXPECT_GT(sls.size(), 1u) << "only SL " << *sls.begin();
  sim->stop(sm);
}

// The same dragonfly with the default chain: dfly routes it minimally (on 2 VLs;
// the chain tries it before dor|dfsp) with every path on SL 0 and the VL in the switches' tables: a local hop
// out of a switch that the packet entered from a host goes on VL 1, every other hop on VL 0. The route
// checker, given the tables read back from every switch (smpquery sl2vl), must find the CDG acyclic on the 2
// VLs, and cyclic when every pair maps to VL 0; the PathRecords carry SL 0, the SL the checker used.
TEST(IbsimVl, DragonflyByDefaultIsRoutedByDflyOnTwoVls) {
  std::unique_ptr<Ibsim> sim = startFabric("--dragonfly 4,2 --hosts-per-switch 2");
  const std::string sock = sim->dir() + "/ibsm.sock";
  pid_t sm = startDaemon(*sim, sock);
  ASSERT_TRUE(sim->waitForOutput(sm, "SUBNET UP", 60s)) << sim->output(sm);
  const RunOptions diag = diagnostics();
  RunResult check = sim->run({binPath("ibsmctl"), "--socket", sock, "check"}, diag);
  EXPECT_EQ(check.exitCode, 0) << check.out << check.err;
  EXPECT_NE(check.out.find("engine: dfly"), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("dependencies on 2 VLs, acyclic on every VL"), std::string::npos) << check.out;

  fabric::TopologyPtr topo = discovered(*sim);
  ASSERT_TRUE(topo);
  routing::LidAssignment lids = routing::LidAssignment::fromTopology(*topo);
  auto tables = offline("dfly", *topo, lids);  // the daemon's routes again
  ASSERT_TRUE(tables.ok()) << tables.error().message;
  EXPECT_TRUE(tables->sl.empty());

  routing::SlToVlMap read;
  size_t rows = 0;
  readSlToVl(*sim, *topo, lids, read, rows);
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_EQ(rows, 36u * 5 * 8);  // 36 switches, 5 switch ports (3 local, 2 global), 8 input ports (0-7)
  // What the switches hold is what the engine asked for, for SL 0 on every pair a host's path takes: VL 1
  // from a host port (1, 2) to a switch of the group, VL 0 everywhere else.
  size_t onVl1 = 0;
  for (fabric::NodeIndex s : topo->switches())
    for (unsigned in = 1; in <= topo->node(s).numPorts; ++in)
      for (unsigned out = 1; out <= topo->node(s).numPorts; ++out) {
        const fabric::Port& p = topo->node(s).ports[out];
        if (in == out || !p.connected() || !topo->node(p.peerNode).isSwitch()) continue;
        EXPECT_EQ(read.vl(s, in, out, 0), tables->hopVl(s, in, out, 0))
            << topo->node(s).description << " " << in << "->" << out;
        onVl1 += read.vl(s, in, out, 0) == 1;
      }
  EXPECT_EQ(onVl1, 36u * 2 * 3);
  routing::CheckOptions co;
  co.slToVl = &read;
  routing::CheckReport c = routing::checkRoutes(*topo, lids, *tables, co);
  EXPECT_TRUE(c.ok()) << routing::formatReportText(c);
  EXPECT_EQ(c.cdgVls, 2u) << routing::formatReportText(c);
  EXPECT_LE(c.maxStretch, 1u);  // local, global, local where a way through a third group is shorter
  const routing::SlToVlMap allVl0 = allOnVl0(*topo);
  co.slToVl = &allVl0;
  EXPECT_FALSE(routing::checkRoutes(*topo, lids, *tables, co).cdgAcyclic);

  // PathRecords from the hosts of dfly-0-0 to every 5th host: SL 0.
  for (fabric::NodeIndex from : topo->cas())
    for (size_t i = 0; i < topo->cas().size(); i += 5) {
      const fabric::NodeIndex to = topo->cas()[i];
      const auto& port = topo->node(from).ports[1];
      if (from == to || topo->node(port.peerNode).description != "dfly-0-0") continue;
      EXPECT_EQ(pathRecordSl(*sim, lids.base(from, fabric::PortNum{1}).value,
                             lids.base(to, fabric::PortNum{1}).value),
                0u);
    }
  sim->stop(sm);
}

// The same dragonfly with routing.dfly_spread: dfly with its non-minimal routes, on 3 VLs. The switches hold
// the routes the engine computes offline; the route checker, given the SL-to-VL tables read back from every
// switch, finds the CDG acyclic on the 3 VLs, and cyclic when every pair maps to VL 0; the PathRecords carry
// the paths' SLs (a detour's 1, 2, 5 or 6, a minimal path's 0).
TEST(IbsimVl, DragonflyWithSpreadIsRoutedByDflyWithDetoursOnThreeVls) {
  std::unique_ptr<Ibsim> sim = startFabric("--dragonfly 4,2 --hosts-per-switch 2");
  const std::string sock = sim->dir() + "/ibsm.sock";
  pid_t sm = startDaemon(*sim, sock, {"--set", "routing.dfly_spread=true"});
  ASSERT_TRUE(sim->waitForOutput(sm, "SUBNET UP", 60s)) << sim->output(sm);
  RunResult check = sim->run({binPath("ibsmctl"), "--socket", sock, "check"}, diagnostics());
  EXPECT_EQ(check.exitCode, 0) << check.out << check.err;
  EXPECT_NE(check.out.find("engine: dfly"), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("dependencies on 3 VLs, acyclic on every VL"), std::string::npos) << check.out;

  fabric::TopologyPtr topo = discovered(*sim);
  ASSERT_TRUE(topo);
  routing::LidAssignment lids = routing::LidAssignment::fromTopology(*topo);
  auto tables = offline("dfly", *topo, lids, true);  // the daemon's routes again
  ASSERT_TRUE(tables.ok()) << tables.error().message;
  EXPECT_TRUE(tables->dflySpread);
  EXPECT_EQ(tables->slLayers, 3u);
  holdsRoutes(*sim, sm, *topo, *tables, lids.maxLid().value);

  routing::SlToVlMap read;
  size_t rows = 0;
  readSlToVl(*sim, *topo, lids, read, rows);
  ASSERT_FALSE(HasFatalFailure());
  routing::CheckOptions co;
  co.slToVl = &read;
  routing::CheckReport c = routing::checkRoutes(*topo, lids, *tables, co);
  EXPECT_TRUE(c.ok()) << routing::formatReportText(c);
  EXPECT_EQ(c.cdgVls, 3u) << routing::formatReportText(c);
  EXPECT_LE(c.maxLoad, 94u);  // OpenSM dfsssp's on this fabric (docs/BENCHMARKS.md)
  const routing::SlToVlMap allVl0 = allOnVl0(*topo);
  co.slToVl = &allVl0;
  EXPECT_FALSE(routing::checkRoutes(*topo, lids, *tables, co).cdgAcyclic);
  EXPECT_EQ(pathRecordsCarrySls(*sim, *topo, lids, *tables, [](uint8_t sl) { return sl > 0; }), 3u);
  sim->stop(sm);
}

// A whole switch of that dragonfly goes down (its hosts with it): no dfly repair follows a switch that left,
// and what is left is no dragonfly dfly routes from scratch (the event's TOPO001 line says both), so dfsp
// routes on VL layers. The daemon's check is acyclic on every VL, and the pairs dfly had set to VL 1 (a
// host's first local hop) that dfsp leaves on SL 0 are written back: every host port sends SL 0 on VL 0.
TEST(IbsimVl, DragonflySwitchDownFallsBackToDfspAndRestoresTheTables) {
  std::string net;
  std::unique_ptr<Ibsim> sim = startFabric("--dragonfly 4,2 --hosts-per-switch 2", &net);
  fabric::TopologyPtr built = parseOrFail(net, "generated");
  ASSERT_TRUE(built);
  const std::string sock = sim->dir() + "/ibsm.sock";
  pid_t sm = startDaemon(*sim, sock);
  ASSERT_TRUE(sim->waitForOutput(sm, "SUBNET UP", 60s)) << sim->output(sm);
  const RunOptions diag = diagnostics();
  // A switch away from where the diagnostics and the SM attach (host-0, host-1 on dfly-0-0): dfly-4-1.
  const auto gone = built->findByDescription("dfly-4-1");
  ASSERT_TRUE(gone);
  sim->console("Unlink \"S-" + fabric::toString(built->node(*gone).guid).substr(2) + "\"");
  ASSERT_TRUE(sim->waitForOutput(sm, "routes: from scratch by dfsp", 30s)) << sim->output(sm);
  const std::string line = lastLineWith(sim->output(sm), "routes: from scratch by dfsp");
  EXPECT_NE(line.find("(dfly: switches came or went;"), std::string::npos) << line;
  EXPECT_NE(line.find("dfly: not a dragonfly ("), std::string::npos) << line;
  RunResult check;
  EXPECT_TRUE(waitUntil(
      [&] {
        check = sim->run({binPath("ibsmctl"), "--socket", sock, "check"}, diag);
        return check.out.find("engine: dfsp") != std::string::npos;
      },
      30s, "dfsp to route", 100ms))
      << check.out << sim->output(sm);
  EXPECT_EQ(check.exitCode, 0) << check.out << check.err;
  EXPECT_NE(check.out.find("acyclic on every VL"), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("unreachable: 0"), std::string::npos) << check.out;

  fabric::TopologyPtr topo = discovered(*sim);
  ASSERT_TRUE(topo);
  routing::LidAssignment lids = routing::LidAssignment::fromTopology(*topo);
  routing::SlToVlMap read;
  size_t rows = 0;
  readSlToVl(*sim, *topo, lids, read, rows);
  ASSERT_FALSE(HasFatalFailure());
  size_t hostPairs = 0;
  for (fabric::NodeIndex s : topo->switches())
    for (unsigned in : {1u, 2u})  // the host ports
      for (unsigned out = 3; out <= topo->node(s).numPorts; ++out) {
        const fabric::Port& p = topo->node(s).ports[out];
        if (!p.connected() || !topo->node(p.peerNode).isSwitch()) continue;
        EXPECT_EQ(read.vl(s, in, out, 0), 0u) << topo->node(s).description << " " << in << "->" << out;
        ++hostPairs;
      }
  EXPECT_EQ(hostPairs, 35u * 2 * 5 - 2 * 5);  // the switch's 5 neighbours lost one switch port each
  sim->stop(sm);
}

// A global link of that dragonfly (routed minimally, the default) goes down, the only one between
// its two groups, and later a local link: the trap's update repairs the routes inside dfly (the TOPO001 line
// names it: detours through a third group, then two local hops), as the same repair offline computes them
// (the LFTs read back with dump_lfts), with only a few VL table Sets. With the SL-to-VL tables read back from
// the switches (smpquery sl2vl) the VL-aware CDG is acyclic on 3 and 4 VLs (cyclic when every pair maps to VL
// 0), and the PathRecords carry the repair's SLs. Each link comes back: the repair keeps the routes and the
// rebalance after it writes the engine's tables for the whole dragonfly again, with the max load it started
// with.
TEST(IbsimVl, DragonflyLinksDownAreRepairedInsideDflyAndComeBack) {
  RoutedSim rs;
  startRouted("--dragonfly 4,2 --hosts-per-switch 2", "dfly", rs);
  ASSERT_FALSE(HasFatalFailure());
  const uint16_t maxLid = rs.lids.maxLid().value;
  const uint64_t initialMax = routing::checkRoutes(*rs.whole, rs.lids, rs.base).maxLoad;
  // The daemon's tables are the offline ones.
  auto held = [&](const fabric::Topology& topo, const routing::RoutingTables& want) {
    holdsRoutes(*rs.sim, rs.sm, topo, want, maxLid);
  };
  held(*rs.whole, rs.base);
  auto id = [&](fabric::NodeIndex n) { return switchId(*rs.built, n); };

  for (bool local : {false, true}) {
    SCOPED_TRACE(local ? "local link" : "global link");
    // The first link between switches of different groups ("dfly-G-R") and one inside a group away from
    // dfly-0-0 (where the SM and the diagnostics attach).
    const fabric::Link* link = nullptr;
    for (const fabric::Link& l : rs.built->links()) {
      const std::string &a = rs.built->node(l.a).description, &b = rs.built->node(l.b).description;
      if (!rs.built->node(l.a).isSwitch() || !rs.built->node(l.b).isSwitch() || a.starts_with("dfly-0-"))
        continue;
      if ((a.substr(0, 6) == b.substr(0, 6)) == local) {
        link = &l;
        break;
      }
    }
    ASSERT_NE(link, nullptr);
    // A repair's line (the rebalance's after it says "incremental (dfly: ...)").
    const std::string repair = "LID(s) (dfly: ";
    const size_t repairs = occurrences(rs.sim->output(rs.sm), repair);
    rs.sim->console("Unlink " + id(link->a) + "[" + std::to_string(link->portA.value) + "]");
    ASSERT_TRUE(waitUntil([&] { return occurrences(rs.sim->output(rs.sm), repair) > repairs; }, 30s,
                          "the dfly repair", 50ms))
        << rs.sim->output(rs.sm);
    const std::string line = lastLineWith(rs.sim->output(rs.sm), repair);
    EXPECT_NE(line.find("TOPO001"), std::string::npos) << line;
    std::smatch m;
    ASSERT_TRUE(
        std::regex_search(line, m,
                          std::regex("routes: repair of [0-9]+ LID\\(s\\) \\(dfly: ([0-9]+) route\\(s\\) "
                                     "through a third group .*, ([0-9]+) with two local hops")))
        << line;
    const size_t detours = std::stoul(m[1]), twoLocal = std::stoul(m[2]);
    EXPECT_EQ(detours > 0, !local) << line;
    EXPECT_EQ(twoLocal > 0, local) << line;
    std::smatch sets;
    ASSERT_TRUE(std::regex_search(line, sets, std::regex("([0-9]+) VL table Sets"))) << line;
    // The pairs the repaired paths start to use, the host ports that send their SLs and those outputs'
    // arbitration: about 180 here, where dfsp from scratch writes about 800.
    EXPECT_GT(std::stoul(sets[1]), 0u) << line;
    EXPECT_LT(std::stoul(sets[1]), 250u) << line;

    // The same repair offline, the switches holding it, and the PathRecords carrying its SLs.
    HeldRepair r;
    repairIsHeld(*rs.sim, rs.sm, *rs.whole, rs.lids, rs.base, rs.loads, r);
    ASSERT_FALSE(HasFatalFailure());
    EXPECT_EQ(r.check.unreachable, 0u);
    EXPECT_EQ(r.check.cdgVls, local ? 4u : 3u) << routing::formatReportText(r.check);
    EXPECT_EQ(pathRecordsCarrySls(*rs.sim, *r.after, rs.lids, r.tables, [](uint8_t sl) { return sl > 0; }),
              3u);

    // The link comes back: the repair keeps the routes and the rebalance after it, off the event loop, writes
    // the engine's tables for the whole dragonfly again.
    const std::string kept = "the rebalance takes the new link(s) off the event loop",
                      whole = "rebalance: incremental (dfly: the dragonfly is whole again";
    const size_t kept0 = occurrences(rs.sim->output(rs.sm), kept),
                 whole0 = occurrences(rs.sim->output(rs.sm), whole);
    rs.sim->console("Link " + id(link->a) + "[" + std::to_string(link->portA.value) + "] " + id(link->b) +
                    "[" + std::to_string(link->portB.value) + "]");
    ASSERT_TRUE(waitUntil([&] { return occurrences(rs.sim->output(rs.sm), whole) > whole0; }, 30s,
                          "the link to come back", 50ms))
        << rs.sim->output(rs.sm);
    EXPECT_GT(occurrences(rs.sim->output(rs.sm), kept), kept0) << rs.sim->output(rs.sm);
    const std::string restored = lastLineWith(rs.sim->output(rs.sm), whole);
    EXPECT_NE(restored.find("routes given back"), std::string::npos) << restored;
    EXPECT_EQ(restored.find("nothing written"), std::string::npos) << restored;
    fabric::TopologyPtr back = discovered(*rs.sim);
    ASSERT_TRUE(back);
    held(*back, rs.base);
    EXPECT_EQ(routing::checkRoutes(*back, rs.lids, rs.base).maxLoad, initialMax);
  }
  rs.sim->stop(rs.sm);
}

// A 5 x 5 torus, one host per switch, with the default chain: dor routes it in dimension order with datelines
// (2 VLs, an SL bit per ring: the wrap links it crosses). The route checker, given the SL-to-VL tables read
// back from the switches (smpquery sl2vl: every input port towards every switch port), must find the CDG
// acyclic on every VL, and the PathRecords must carry the SLs the engine chose, some above 0.
TEST(IbsimVl, TorusIsRoutedByDorWithDatelines) {
  std::unique_ptr<Ibsim> sim = startFabric("--torus 5,5 --hosts-per-switch 1");
  const std::string sock = sim->dir() + "/ibsm.sock";
  pid_t sm = startDaemon(*sim, sock);
  ASSERT_TRUE(sim->waitForOutput(sm, "SUBNET UP", 60s)) << sim->output(sm);
  const RunOptions diag = diagnostics();
  RunResult check = sim->run({binPath("ibsmctl"), "--socket", sock, "check"}, diag);
  EXPECT_EQ(check.exitCode, 0) << check.out << check.err;
  EXPECT_NE(check.out.find("engine: dor"), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("dependencies on 2 VLs, acyclic on every VL"), std::string::npos) << check.out;

  fabric::TopologyPtr topo = discovered(*sim);
  ASSERT_TRUE(topo);
  routing::LidAssignment lids = routing::LidAssignment::fromTopology(*topo);
  auto tables = offline("dor", *topo, lids);  // the daemon's routes again
  ASSERT_TRUE(tables.ok()) << tables.error().message;

  // The switch ports are 2-5 (port 1 is the host's).
  routing::SlToVlMap read;
  size_t rows = 0;
  readSlToVl(*sim, *topo, lids, read, rows);
  EXPECT_EQ(rows, 25u * 4 * 6);  // 25 switches, 4 switch ports, 6 input ports (0-5)
  const routing::SlToVlMap allVl0 = allOnVl0(*topo);
  routing::CheckOptions co;
  co.slToVl = &read;
  routing::CheckReport c = routing::checkRoutes(*topo, lids, *tables, co);
  EXPECT_TRUE(c.ok()) << routing::formatReportText(c);
  EXPECT_EQ(c.cdgVls, 2u) << routing::formatReportText(c);
  co.slToVl = &allVl0;  // the same paths on one VL: the rings close
  EXPECT_FALSE(routing::checkRoutes(*topo, lids, *tables, co).cdgAcyclic);

  // PathRecords from the host of torus-0-0 to every host: the engine's SL of each pair, all four of them.
  std::set<unsigned> sls;
  for (fabric::NodeIndex from : topo->cas())
    for (fabric::NodeIndex to : topo->cas()) {
      const auto& port = topo->node(from).ports[1];
      if (from == to || topo->node(port.peerNode).description != "torus-0-0") continue;
      const uint16_t slid = lids.base(from, fabric::PortNum{1}).value,
                     dlid = lids.base(to, fabric::PortNum{1}).value;
      const std::optional<unsigned> sl = pathRecordSl(*sim, slid, dlid);
      ASSERT_TRUE(sl);
      EXPECT_EQ(*sl, tables->pathSl(port.peerNode, fabric::Lid{dlid})) << slid << " -> " << dlid;
      sls.insert(*sl);
    }
  EXPECT_EQ(sls, (std::set<unsigned>{0, 1, 2, 3}));
  sim->stop(sm);
}

// A link of that 5 x 5 torus goes down, one in dimension 0 and, once it is back, one in dimension 1 (the
// last: its sidestep is in a lower dimension, two entries per LID): the trap's update repairs the routes
// inside dor (the TOPO001 line names the sidestep) as the same repair offline computes them (the LFTs read
// back with dump_lfts), with VL table Sets only for the pairs the detoured paths take. With the SL-to-VL
// tables read back from the switches the VL-aware CDG is acyclic on 3 or 4 VLs (cyclic when every pair maps
// to VL 0), and the PathRecords carry the repair's SLs, the detour flag (SL bit 2) included. The link comes
// back: dor's tables from scratch again.
TEST(IbsimVl, TorusLinksDownAreRepairedInsideDorAndComeBack) {
  RoutedSim rs;
  startRouted("--torus 5,5 --hosts-per-switch 1", "dor", rs);
  ASSERT_FALSE(HasFatalFailure());
  const uint16_t maxLid = rs.lids.maxLid().value;
  holdsRoutes(*rs.sim, rs.sm, *rs.whole, rs.base, maxLid);
  // torus-2-2's port 2 (to torus-3-2) and port 4 (to torus-2-3), away from torus-0-0 where the SM and the
  // diagnostics attach.
  const auto at = rs.built->findByDescription("torus-2-2");
  ASSERT_TRUE(at);
  for (unsigned port : {2u, 4u}) {
    SCOPED_TRACE("port " + std::to_string(port));
    const std::string link = switchId(*rs.built, *at) + "[" + std::to_string(port) + "]";
    const size_t repairs = occurrences(rs.sim->output(rs.sm), "by a sidestep");
    rs.sim->console("Unlink " + link);
    ASSERT_TRUE(waitUntil([&] { return occurrences(rs.sim->output(rs.sm), "by a sidestep") > repairs; }, 30s,
                          "the dor repair", 50ms))
        << rs.sim->output(rs.sm);
    const std::string line = lastLineWith(rs.sim->output(rs.sm), "by a sidestep");
    EXPECT_NE(line.find("TOPO001"), std::string::npos) << line;
    std::smatch m;
    ASSERT_TRUE(
        std::regex_search(line, m,
                          std::regex("routes: repair of [0-9]+ LID\\(s\\) \\(dor: ([0-9]+) route\\(s\\) "
                                     "around 1 link\\(s\\) by a sidestep, on SL bit 2 and VLs 2-3, ")))
        << line;
    EXPECT_GT(std::stoul(m[1]), 0u) << line;
    std::smatch sets;
    ASSERT_TRUE(std::regex_search(line, sets, std::regex("([0-9]+) VL table Sets"))) << line;
    // The pairs the detoured paths take and those outputs' arbitration.
    EXPECT_GT(std::stoul(sets[1]), 0u) << line;
    EXPECT_LT(std::stoul(sets[1]), 200u) << line;

    // The same repair offline, the switches holding it (VL 3: detours that take a wrap link), and the
    // PathRecords carrying its SLs, the detour flag included.
    HeldRepair r;
    repairIsHeld(*rs.sim, rs.sm, *rs.whole, rs.lids, rs.base, rs.loads, r);
    ASSERT_FALSE(HasFatalFailure());
    EXPECT_GE(r.check.cdgVls, 3u) << routing::formatReportText(r.check);
    EXPECT_LE(r.check.cdgVls, 4u) << routing::formatReportText(r.check);
    EXPECT_EQ(
        pathRecordsCarrySls(*rs.sim, *r.after, rs.lids, r.tables, [](uint8_t sl) { return (sl & 4u) != 0; }),
        3u);

    // The link comes back: dor's tables from scratch again.
    const size_t whole0 = occurrences(rs.sim->output(rs.sm), "whole again");
    const fabric::Port& far = rs.built->node(*at).ports[port];
    rs.sim->console("Link " + link + " " + switchId(*rs.built, far.peerNode) + "[" +
                    std::to_string(far.peerPort.value) + "]");
    ASSERT_TRUE(waitUntil([&] { return occurrences(rs.sim->output(rs.sm), "whole again") > whole0; }, 30s,
                          "the link to come back", 50ms))
        << rs.sim->output(rs.sm);
    fabric::TopologyPtr back = discovered(*rs.sim);
    ASSERT_TRUE(back);
    holdsRoutes(*rs.sim, rs.sm, *back, rs.base, maxLid);
  }
  rs.sim->stop(rs.sm);
}

// A 4-cube, one host per switch, with the default chain: dor routes it in dimension order (e-cube) on one VL,
// so no VL table is written (the switches hold the tables ibsim booted them with). Every pair is reached on a
// minimal path, the route checker finds the CDG acyclic with the tables read back from the switches (their
// reset tables), and the PathRecords carry SL 0.
TEST(IbsimVl, HypercubeIsRoutedByDorOnOneVl) {
  std::unique_ptr<Ibsim> sim = startFabric("--hypercube 4 --hosts-per-switch 1");
  const std::string sock = sim->dir() + "/ibsm.sock";
  pid_t sm = startDaemon(*sim, sock);
  ASSERT_TRUE(sim->waitForOutput(sm, "SUBNET UP", 60s)) << sim->output(sm);
  const RunOptions diag = diagnostics();
  RunResult check = sim->run({binPath("ibsmctl"), "--socket", sock, "check"}, diag);
  EXPECT_EQ(check.exitCode, 0) << check.out << check.err;
  EXPECT_NE(check.out.find("engine: dor"), std::string::npos) << check.out;

  fabric::TopologyPtr topo = discovered(*sim);
  ASSERT_TRUE(topo);
  routing::LidAssignment lids = routing::LidAssignment::fromTopology(*topo);
  auto tables = offline("dor", *topo, lids);  // the daemon's routes again
  ASSERT_TRUE(tables.ok()) << tables.error().message;
  EXPECT_EQ(tables->slLayers, 1u);

  routing::SlToVlMap read;
  size_t rows = 0;
  readSlToVl(*sim, *topo, lids, read, rows);
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_EQ(rows, 16u * 4 * 6);  // 16 switches, 4 switch ports, 6 input ports (0-5)
  size_t asBooted = 0;           // nothing written: ibsim boots every pair with SL i on VL i
  for (fabric::NodeIndex s : topo->switches())
    for (unsigned in = 0; in <= 5; ++in)
      for (unsigned out = 2; out <= 5; ++out) {
        bool identity = true;
        for (uint8_t sl = 0; sl < 8; ++sl) identity = identity && read.vl(s, in, out, sl) == sl;
        asBooted += identity;
      }
  EXPECT_EQ(asBooted, rows);
  routing::CheckOptions co;
  co.slToVl = &read;
  routing::CheckReport c = routing::checkRoutes(*topo, lids, *tables, co);
  EXPECT_TRUE(c.ok()) << routing::formatReportText(c);
  EXPECT_EQ(c.unreachable, 0u);
  EXPECT_EQ(c.maxStretch, 0u) << routing::formatReportText(c);

  const fabric::NodeIndex from = topo->cas().front();
  for (fabric::NodeIndex to : topo->cas()) {
    if (to == from) continue;
    EXPECT_EQ(pathRecordSl(*sim, lids.base(from, fabric::PortNum{1}).value,
                           lids.base(to, fabric::PortNum{1}).value),
              0u);
  }
  sim->stop(sm);
}

// With one VL (qos.vls 1) dfsp cannot make the dragonfly deadlock-free: it says so, the chain falls back to
// updn (the daemon logs the same line as ROUTE002), and no SL-to-VL table is written.
TEST(IbsimVl, TooFewVlsFallBack) {
  std::unique_ptr<Ibsim> sim = startFabric("--dragonfly 2,2 --hosts-per-switch 1");
  RunOptions o;
  o.timeout = 60s;
  RunResult r = sim->run({binPath("ibsmd"), "--once", "--routing", "dfsp,updn", "--set", "qos.vls=1",
                          "--state-dir", sim->dir() + "/state"},
                         o);
  EXPECT_EQ(r.exitCode, 0) << r.out << r.err;
  const std::string log = r.out + r.err;
  EXPECT_NE(log.find("routing fallback: dfsp: the balanced shortest paths need more than 1 VL layer"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("routing: updn"), std::string::npos) << log;
  const RunOptions diag = diagnostics();
  RunResult q = sim->run({"smpquery", "-D", "sl2vl", "0,1", "1", "3"}, diag);  // host-1's switch, as booted
  EXPECT_NE(q.out.find("| 0| 1| 2| 3|"), std::string::npos) << q.out << q.err;
}

// The default on a fat tree: ftree routes on one VL and nothing VL-related is programmed (no vl phase, the
// switches keep their boot tables), even though the ports offer 8 VLs.
TEST(IbsimVl, FatTreeByDefaultUsesOneVlAndProgramsNoVlTables) {
  std::unique_ptr<Ibsim> sim = startFabric("--kary-ntree 2,3");
  RunOptions o;
  o.timeout = 60s;
  RunResult r = sim->run({binPath("ibsmd"), "--once", "--state-dir", sim->dir() + "/state"}, o);
  EXPECT_EQ(r.exitCode, 0) << r.out << r.err;
  const std::string log = r.out + r.err;
  EXPECT_NE(log.find("routing: ftree"), std::string::npos) << log;
  EXPECT_EQ(log.find("program vl"), std::string::npos) << log;
  const RunOptions diag = diagnostics();
  RunResult q = sim->run({"smpquery", "-D", "sl2vl", "0,1", "1", "2"}, diag);  // host-1's switch
  EXPECT_NE(q.out.find("| 0| 1| 2| 3| 4| 5| 6| 7| 8|"), std::string::npos) << q.out << q.err;
}

}  // namespace
}  // namespace ibsm::testing
