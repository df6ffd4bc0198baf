// Traps and re-route on ibsim with ibsmd running as a daemon: links and a whole switch go down and come back
// from ibsim's console; the tables read back from the switches (dump_lfts) must never route through a dead
// link, must reach every pair, and must be balanced again once everything is back. Flap storms and many
// simultaneous failures end in a correct state.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "routing/engine.h"
#include "routing/lft_dump.h"
#include "routing/pattern_checker.h"
#include "routing/route_checker.h"
#include "tests/ibsim/ibsim_fabric.h"

namespace ibsm::testing {
namespace {

using namespace std::chrono_literals;
constexpr const char* kDiagHost = "H-0000000000100000";

std::string id(const fabric::Node& n) {
  return std::string(n.isSwitch() ? "S-" : "H-") + fabric::toString(n.guid).substr(2);
}

struct Fixture {
  std::unique_ptr<Ibsim> sim;
  fabric::TopologyPtr built;
  pid_t sm = -1;

  explicit Fixture(const std::string& fabricArgs, const std::string& routing = "minhop") {
    std::string net;
    sim = startFabric(fabricArgs, &net);
    built = parseOrFail(net, "generated");
    RunOptions o;
    o.simHost = "H-0000000000100002";
    sm = sim->spawn({binPath("ibsmd"), "--routing", routing, "--state-dir", sim->dir() + "/state", "--socket",
                     sim->dir() + "/ibsm.sock", "--sweep-interval", "1", "--set", "flap.hold_down_ms=300",
                     "--set", "flap.max_backoff_ms=1500"},
                    o);
    EXPECT_TRUE(sim->waitForOutput(sm, "SUBNET UP", 60s, 20ms)) << sim->output(sm);
  }
  size_t count(const std::string& what) const {
    std::string out = sim->output(sm);
    size_t n = 0;
    for (size_t p = out.find(what); p != std::string::npos; p = out.find(what, p + 1)) ++n;
    return n;
  }
  // Waits for another TOPO001 (a topology change ibsmd acted on) after the `before` it had printed.
  void waitForTopologyEvent(size_t before) {
    EXPECT_TRUE(waitUntil([&] { return count("TOPO001") > before; }, 20s, "a topology event", 20ms))
        << sim->output(sm);
  }
  // The fabric as the diags tools see it now, and the route check of the switches' real tables (and, with
  // shifts, their permutation congestion over the hosts in name order).
  routing::CheckReport check(fabric::TopologyPtr* seen = nullptr, routing::PatternReport* shifts = nullptr) {
    RunOptions o;
    o.simHost = kDiagHost;
    RunResult disc = sim->run({"ibnetdiscover"}, o);
    RunResult lfts = sim->run({"dump_lfts"}, o);
    routing::CheckReport rep;
    auto topo = fabric::parseTopology(disc.out, "ibnetdiscover");
    if (!topo) {
      rep.unreachable = 1;
      rep.examples.push_back(topo.error().message);
      return rep;
    }
    std::string text = lftTables(lfts.out);
    auto tables = routing::parseLftDump(text, **topo, "dump_lfts");
    if (!tables.ok()) {
      rep.unreachable = 1;
      rep.examples.push_back(tables.error().message);
      return rep;
    }
    routing::CheckOptions co;
    co.checkAr = co.checkArCdg = false;
    if (seen) *seen = *topo;
    const routing::LidAssignment lids = routing::LidAssignment::fromTopology(**topo);
    if (shifts) *shifts = routing::checkPattern(**topo, lids, *tables, {});
    return routing::checkRoutes(**topo, lids, *tables, co);
  }
  // Polls until the live tables pass the check (the SM converges asynchronously after a console change).
  routing::CheckReport converge(std::chrono::milliseconds limit = 30s) {
    routing::CheckReport rep;
    EXPECT_TRUE(waitUntil(
        [&] {
          rep = check();
          // Every pair reachable, nothing through a dead link (minhop promises no deadlock freedom on a
          // degraded tree, so the CDG is not part of the verdict).
          return rep.unreachable == 0 && rep.deadLink == 0 && rep.pairs > 0 && rep.reachable == rep.pairs;
        },
        limit, "the routes to converge", 50ms))
        << routing::formatReportText(rep) << sim->output(sm);
    return rep;
  }
  // Switch-to-switch links between the leaf level and the one above (a "spine" link of the tree).
  std::vector<fabric::Link> upperLinks() const {
    std::vector<fabric::Link> v;
    for (const auto& l : built->links())
      if (built->node(l.a).isSwitch() && built->node(l.b).isSwitch()) v.push_back(l);
    return v;
  }
  std::string unlink(const fabric::Link& l) const {
    return "Unlink \"" + id(built->node(l.a)) + "\"[" + std::to_string(l.portA.value) + "]";
  }
  std::string link(const fabric::Link& l) const {
    return "Link \"" + id(built->node(l.a)) + "\"[" + std::to_string(l.portA.value) + "] \"" +
           id(built->node(l.b)) + "\"[" + std::to_string(l.portB.value) + "]";
  }
};

TEST(Reroute, SpineLinkDownAndBack) {
  Fixture f("--kary-ntree 4,3");
  routing::CheckReport initial = f.converge();
  auto links = f.upperLinks();
  ASSERT_FALSE(links.empty());
  size_t events = f.count("TOPO001");
  f.sim->console(f.unlink(links[links.size() / 2]));
  f.waitForTopologyEvent(events);
  routing::CheckReport down = f.converge();
  EXPECT_EQ(down.deadLink, 0u);
  EXPECT_EQ(down.unreachable, 0u);
  EXPECT_LT(down.switchLinks, initial.switchLinks);  // the link is gone from the fabric
  EXPECT_NE(f.sim->output(f.sm).find("trap 128"), std::string::npos) << f.sim->output(f.sm);

  events = f.count("TOPO001");
  f.sim->console(f.link(links[links.size() / 2]));
  f.waitForTopologyEvent(events);
  routing::CheckReport back = f.converge();
  EXPECT_EQ(back.switchLinks, initial.switchLinks);
  // Balanced again: the incremental rebalance (the default) moves routes onto the link that came back until
  // no move lowers the max; it ends at or below the engine's from-scratch balance at the start.
  EXPECT_LE(back.maxLoad, initial.maxLoad);
  EXPECT_EQ(back.maxStretch, 0u) << routing::formatReportText(back)
                                 << f.sim->output(f.sm);  // minhop's routes are minimal again

  // ibsim drops AdaptiveRoutingInfo: each switch cost one probe in the first sweep and none since.
  RunOptions plain;
  plain.preload = false;
  RunResult st =
      f.sim->run({binPath("ibsmctl"), "--socket", f.sim->dir() + "/ibsm.sock", "--json", "status"}, plain);
  nlohmann::json ar = nlohmann::json::parse(st.out, nullptr, false)["ar"];
  EXPECT_EQ(ar.value("probes", 0u), f.built->switches().size()) << st.out;
  EXPECT_EQ(ar.value("incapable", 0u), f.built->switches().size()) << st.out;
}

// After a link goes down and the trap's update has re-routed, both switches still have PortStateChange set;
// the next light sweep (every second here) re-reads them and finds nothing new: that update routes and
// programs nothing, and says so.
TEST(Reroute, LightSweepAfterARerouteFindsNothingChanged) {
  Fixture f("--kary-ntree 4,3");
  f.converge();
  auto links = f.upperLinks();
  ASSERT_FALSE(links.empty());
  size_t events = f.count("TOPO001");
  f.sim->console(f.unlink(links.front()));
  f.waitForTopologyEvent(events);
  EXPECT_TRUE(waitUntil([&] { return f.count("nothing changed") > 0; }, 20s, "a light sweep's update", 20ms))
      << f.sim->output(f.sm);
  std::string out = f.sim->output(f.sm);
  size_t at = out.find("nothing changed");
  ASSERT_NE(at, std::string::npos);
  std::string line = out.substr(out.rfind('\n', at) + 1, out.find('\n', at) - out.rfind('\n', at) - 1);
  EXPECT_NE(line.find("light sweep"), std::string::npos) << line;
  EXPECT_NE(line.find("0 routes changed, 0 LFT blocks"), std::string::npos) << line;
  routing::CheckReport down = f.converge();
  EXPECT_EQ(down.deadLink, 0u);
}

TEST(Reroute, WholeSwitchRemoved) {
  Fixture f("--kary-ntree 4,3");
  f.converge();
  // A switch of the top level: no hosts, every link to the level below.
  const fabric::Node* top = nullptr;
  for (auto s : f.built->switches()) {
    const auto& n = f.built->node(s);
    if (n.description.starts_with("spine") || n.description.find("L2") != std::string::npos) top = &n;
  }
  if (!top) top = &f.built->node(f.built->switches().back());
  size_t events = f.count("TOPO001");
  f.sim->console("Unlink \"" + id(*top) + "\"");
  f.waitForTopologyEvent(events);
  routing::CheckReport rep = f.converge();
  EXPECT_EQ(rep.unreachable, 0u);
}

// The lines of ibsmd's output that contain `what`.
std::vector<std::string> linesWith(const std::string& out, const std::string& what) {
  std::vector<std::string> v;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (line.find(what) != std::string::npos) v.push_back(line);
  return v;
}

// The number before `what` in `line` ("1766 routes changed"); 0 when absent.
size_t numberBefore(const std::string& line, const std::string& what) {
  const size_t at = line.find(what);
  if (at == std::string::npos || at == 0) return 0;
  size_t b = at - 1;
  while (b > 0 && std::isdigit(static_cast<unsigned char>(line[b - 1]))) --b;
  return std::stoul(line.substr(b, at - 1 - b));
}

// A fat-tree link or switch fails: the trap's update repairs only the broken routes (fast, few routes moved),
// then the incremental rebalancing run (the default) moves a few more off the event loop. Checked on the
// switches' own tables: every pair reachable, deadlock-free, and the max link load within 10% of the lower
// bound and at most a from-scratch ftree run's on the degraded fabric (a link), within 10% of that run's (a
// switch, whose loss is found without a heavy sweep); the rebalance after the link moves at most three times
// the routes the repair moved.
TEST(Reroute, FatTreeRepairThenRebalance) {
  Fixture f("--fat-tree 3 --radix 8", "ftree");
  routing::CheckReport initial = f.converge();
  // A spine's up-link (spine -> core): the one failure the repair alone cannot keep balanced.
  const fabric::Link* spineCore = nullptr;
  for (const auto& l : f.built->links())
    if (f.built->node(l.a).description.starts_with("spine") &&
        f.built->node(l.b).description.starts_with("core"))
      spineCore = spineCore ? spineCore : &l;
  ASSERT_TRUE(spineCore);
  size_t rebalances = f.count("rebalance: incremental");
  f.sim->console(f.unlink(*spineCore));
  EXPECT_TRUE(
      waitUntil([&] { return f.count("rebalance: incremental") > rebalances; }, 30s, "the rebalance", 20ms))
      << f.sim->output(f.sm);
  auto repairs = linesWith(f.sim->output(f.sm), "routes: repair of");
  ASSERT_FALSE(repairs.empty()) << f.sim->output(f.sm);
  auto rebalanced = linesWith(f.sim->output(f.sm), "rebalance: incremental");
  ASSERT_FALSE(rebalanced.empty());
  const size_t repairMoved = numberBefore(repairs.back(), "routes changed");
  EXPECT_GT(repairMoved, 0u) << repairs.back();
  EXPECT_LE(numberBefore(rebalanced.back(), "routes changed"), 3 * repairMoved) << rebalanced.back();
  fabric::TopologyPtr linkDown;
  routing::PatternReport linkShifts;
  routing::CheckReport link = f.check(&linkDown, &linkShifts);
  // Collective traffic: every shift keeps at most 2 flows on a link (the polish after the rebalance).
  EXPECT_LE(linkShifts.maxCongestion, 2u) << f.sim->output(f.sm);
  EXPECT_EQ(link.unreachable, 0u) << routing::formatReportText(link);
  EXPECT_TRUE(link.cdgAcyclic) << routing::formatReportText(link);
  EXPECT_LE(static_cast<double>(link.maxLoad), 1.1 * static_cast<double>(link.loadBound))
      << routing::formatReportText(link) << f.sim->output(f.sm);
  ASSERT_TRUE(linkDown);
  const routing::LidAssignment linkLids = routing::LidAssignment::fromTopology(*linkDown);
  auto linkScratch = routing::computeChain({"ftree"}, *linkDown, linkLids, routing::Options{});
  ASSERT_TRUE(linkScratch.ok()) << linkScratch.error().message;
  EXPECT_LE(link.maxLoad, routing::checkRoutes(*linkDown, linkLids, linkScratch->tables).maxLoad);
  EXPECT_LT(link.switchLinks, initial.switchLinks);

  // A whole spine, lost in two pieces (half its links, then the rest): each piece is repaired where it is
  // found, the silent spine read around (no heavy sweep, no update with errors).
  const fabric::Node& spine = f.built->node(spineCore->a);
  const size_t mark = f.sim->output(f.sm).size();
  std::vector<fabric::Link> below;
  for (const auto& l : f.built->links())
    if ((l.a == spineCore->a || l.b == spineCore->a) && &l != spineCore) below.push_back(l);
  for (size_t i = 0; i <= below.size() / 2; ++i) {
    rebalances = f.count("rebalance: incremental");
    if (i < below.size() / 2)
      f.sim->console(f.unlink(below[i]));
    else
      f.sim->console("Unlink \"" + id(spine) + "\"");
    EXPECT_TRUE(
        waitUntil([&] { return f.count("rebalance: incremental") > rebalances; }, 30s, "the rebalance", 20ms))
        << f.sim->output(f.sm);
  }
  fabric::TopologyPtr degraded;
  routing::CheckReport sw;
  routing::PatternReport swShifts;
  EXPECT_TRUE(waitUntil(
      [&] {
        sw = f.check(&degraded, &swShifts);
        return sw.unreachable == 0 && sw.pairs > 0;
      },
      30s, "the routes to converge", 50ms))
      << routing::formatReportText(sw);
  ASSERT_TRUE(degraded);
  const std::string since = f.sim->output(f.sm).substr(mark);
  EXPECT_EQ(since.find("heavy sweep"), std::string::npos) << since;
  EXPECT_EQ(since.find("with errors"), std::string::npos) << since;
  EXPECT_TRUE(sw.cdgAcyclic) << routing::formatReportText(sw);
  // Lost in pieces, the switch leaves shifts the polish's moves bring to 3, not to the 2 of a
  // from-scratch ftree (4 without the polish).
  EXPECT_LE(swShifts.maxCongestion, 3u) << since;
  const routing::LidAssignment lids = routing::LidAssignment::fromTopology(*degraded);
  auto scratch = routing::computeChain({"ftree"}, *degraded, lids, routing::Options{});
  ASSERT_TRUE(scratch.ok()) << scratch.error().message;
  routing::CheckReport ref = routing::checkRoutes(*degraded, lids, scratch->tables);
  EXPECT_LE(static_cast<double>(sw.maxLoad), 1.1 * static_cast<double>(ref.maxLoad))
      << routing::formatReportText(sw) << routing::formatReportText(ref);
}

TEST(Reroute, FlapStormAndTenFailuresEndCorrect) {
  Fixture f("--kary-ntree 4,3");
  f.converge();
  auto links = f.upperLinks();
  ASSERT_GE(links.size(), 12u);
  // 100 flaps of one port, as fast as the console takes them, ending up.
  for (int i = 0; i < 100; ++i) {
    f.sim->console(f.unlink(links[0]));
    f.sim->console(f.link(links[0]));
  }
  routing::CheckReport afterStorm = f.converge(45s);
  EXPECT_EQ(afterStorm.deadLink, 0u);
  // Ten links at once.
  for (int i = 1; i <= 10; ++i) f.sim->console(f.unlink(links[i * 3 % links.size()]));
  routing::CheckReport afterTen = f.converge(45s);
  EXPECT_EQ(afterTen.unreachable, 0u);
  EXPECT_TRUE(f.sim->running(f.sm));
}

}  // namespace
}  // namespace ibsm::testing
