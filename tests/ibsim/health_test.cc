// The health policy end to end on ibsim (issue 18's "Done when"): ibsim's console raises the symbol errors of
// one spine port (PerformanceSet); within a counter interval ibsmd isolates that link (the switches' own
// tables, read back with dump_lfts, route nothing through it, every pair still reachable) and `ibsmctl
// health` shows it; after the clean period the link is routed again. perfquery is the oracle that ibsim's
// counters are what ibsmd read and cleared. The Prometheus endpoint shows the isolation and the counter.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <regex>

#include "routing/lft_dump.h"
#include "routing/route_checker.h"
#include "tests/ibsim/ibsim_fabric.h"
#include "tests/support/http_get.h"

namespace ibsm::testing {
namespace {

using namespace std::chrono_literals;
constexpr const char* kDiagHost = "H-0000000000100000";

struct HealthFixture {
  std::unique_ptr<Ibsim> sim;
  fabric::TopologyPtr built;
  pid_t sm = -1;
  uint16_t metricsPort = 0;

  // The fabric, and ibsmd on it unless the test starts it later (startSm).
  explicit HealthFixture(bool start = true) {
    std::string net;
    sim = startFabric("--fat-tree 2 --radix 8", &net);
    built = parseOrFail(net, "generated");
    if (start) startSm();
  }
  void startSm(const std::string& action = "isolate") {
    RunOptions o;
    o.simHost = "H-0000000000100002";  // host-1 on leaf-0
    sm = sim->spawn(
        {binPath("ibsmd"), "--state-dir", sim->dir() + "/state", "--socket", sim->dir() + "/ibsm.sock",
         "--set", "perfmgr.interval_s=1", "--set", "health.action=" + action, "--set",
         "health.clean_period_s=4", "--set", "log.level=debug", "--metrics", "127.0.0.1:0"},
        o);
    EXPECT_TRUE(sim->waitForOutput(sm, "SUBNET UP", 60s, 20ms)) << sim->output(sm);
    std::smatch m;
    std::string out = sim->output(sm);
    static const std::regex kLine(
        "METRICS001 serving Prometheus metrics on http://127\\.0\\.0\\.1:([0-9]+)/");
    if (std::regex_search(out, m, kLine)) metricsPort = static_cast<uint16_t>(std::stoi(m[1]));
    EXPECT_NE(metricsPort, 0) << out;
  }
  // The spine's port to the leaf (0: none), and the spine's ibsim node id.
  struct SpinePort {
    fabric::Guid spine, leaf;
    uint8_t port = 0, leafPort = 0;
    std::string id;
  };
  SpinePort spinePort(const std::string& spineName, const std::string& leafName) const {
    const fabric::Topology& t = *built;
    auto spine = t.findByDescription(spineName);
    auto leaf = t.findByDescription(leafName);
    SpinePort s;
    if (!spine || !leaf) return s;
    s.spine = t.node(*spine).guid;
    s.leaf = t.node(*leaf).guid;
    s.id = "S-" + fabric::toString(s.spine).substr(2);
    for (unsigned p = 1; p < t.node(*spine).ports.size(); ++p)
      if (t.node(*spine).ports[p].peerNode == *leaf) {
        s.port = static_cast<uint8_t>(p);
        s.leafPort = t.node(*spine).ports[p].peerPort.value;
      }
    return s;
  }
  void setCounter(const SpinePort& s, const std::string& counter) {
    sim->console("PerformanceSet \"" + s.id + "\"[" + std::to_string(s.port) + "] PortCounters." + counter);
  }
  double metric(const std::string& series) {
    return expositionSample(httpGet(metricsPort, "/metrics").body, series);
  }
  size_t count(const std::string& what) const {
    std::string out = sim->output(sm);
    size_t n = 0;
    for (size_t p = out.find(what); p != std::string::npos; p = out.find(what, p + 1)) ++n;
    return n;
  }
  nlohmann::json ctl(const std::vector<std::string>& args) {
    RunOptions plain;
    plain.preload = false;
    std::vector<std::string> argv{binPath("ibsmctl"), "--socket", sim->dir() + "/ibsm.sock", "--json"};
    argv.insert(argv.end(), args.begin(), args.end());
    RunResult r = sim->run(argv, plain);
    return nlohmann::json::parse(r.out, nullptr, false);
  }
  // The fabric as ibnetdiscover sees it and the switches' tables as dump_lfts reads them.
  struct Live {
    fabric::TopologyPtr topo;
    routing::RoutingTables tables;
    bool ok = false;
  };
  Live live() {
    RunOptions o;
    o.simHost = kDiagHost;
    Live l;
    RunResult disc = sim->run({"ibnetdiscover"}, o);
    RunResult lfts = sim->run({"dump_lfts"}, o);
    auto topo = fabric::parseTopology(disc.out, "ibnetdiscover");
    if (!topo) return l;
    std::string text = lftTables(lfts.out);
    auto tables = routing::parseLftDump(text, **topo, "dump_lfts");
    if (!tables) return l;
    l.topo = *topo;
    l.tables = std::move(*tables);
    l.ok = true;
    return l;
  }
  // LFT entries of the switch (by GUID) that leave through `port`.
  static size_t routesThrough(const Live& l, fabric::Guid sw, uint8_t port) {
    auto n = l.topo->findNode(sw);
    if (!n) return 0;
    size_t c = 0;
    for (uint16_t lid = 1; lid < l.tables.lft[*n].size(); ++lid)
      c += l.tables.port(*n, fabric::Lid{lid}) == port;
    return c;
  }
  static bool allReachable(const Live& l) {
    routing::CheckOptions co;
    co.checkAr = co.checkArCdg = false;
    routing::CheckReport rep =
        routing::checkRoutes(*l.topo, routing::LidAssignment::fromTopology(*l.topo), l.tables, co);
    return rep.pairs > 0 && rep.unreachable == 0 && rep.reachable == rep.pairs;
  }
};

TEST(Health, NoisySpineLinkIsIsolatedThenRestored) {
  HealthFixture f;
  // leaf-3 <-> spine-1, seen from the spine (not a link of the SM's own leaf, so both ends stay readable).
  const HealthFixture::SpinePort link = f.spinePort("spine-1", "leaf-3");
  ASSERT_NE(link.port, 0);
  const fabric::Guid spineGuid = link.spine, leafGuid = link.leaf;
  const uint8_t spinePort = link.port, leafPort = link.leafPort;

  HealthFixture::Live before;
  ASSERT_TRUE(waitUntil(
      [&] {
        before = f.live();
        return before.ok && HealthFixture::allReachable(before);
      },
      30s, "the routes to converge"))
      << f.sim->output(f.sm);
  ASSERT_GT(HealthFixture::routesThrough(before, spineGuid, spinePort), 0u);
  // Two counter sweeps: every port has a baseline, so what follows is an increase.
  ASSERT_TRUE(waitUntil([&] { return f.ctl({"health"}).value("sweeps", 0) >= 2; }, 20s, "two counter sweeps"))
      << f.sim->output(f.sm);
  nlohmann::json h = f.ctl({"health"});
  EXPECT_EQ(h["counts"].value("isolated", 1), 0);
  EXPECT_EQ(h["counts"].value("ok", 0), 32 + 64 * 2 - 32);  // every linked port: 32 CA, 2 x 32 switch-switch

  f.setCounter(link, "SymbolErrorCounter=1000");
  const auto setAt = std::chrono::steady_clock::now();
  ASSERT_TRUE(f.sim->waitForOutput(f.sm, "HLTH002", 10s, 20ms));
  // Within a counter interval (1 s here) and the sweep that reads it.
  EXPECT_LT(std::chrono::steady_clock::now() - setAt, 3s);
  EXPECT_NE(f.sim->output(f.sm).find("HLTH001 spine-1/" + std::to_string(spinePort) + " over threshold"),
            std::string::npos)
      << f.sim->output(f.sm);

  HealthFixture::Live isolated;
  ASSERT_TRUE(waitUntil(
      [&] {
        isolated = f.live();
        return isolated.ok && HealthFixture::routesThrough(isolated, spineGuid, spinePort) == 0 &&
               HealthFixture::routesThrough(isolated, leafGuid, leafPort) == 0;
      },
      10s, "no route through the isolated link"))
      << f.sim->output(f.sm);
  EXPECT_TRUE(HealthFixture::allReachable(isolated));
  h = f.ctl({"health"});
  EXPECT_EQ(h["counts"].value("isolated", 0), 1) << h.dump();
  ASSERT_FALSE(h["ports"].empty()) << h.dump();
  const nlohmann::json& p = h["ports"][0];
  EXPECT_EQ(p.value("state", ""), "isolated");
  EXPECT_EQ(p.value("description", ""), "spine-1");
  EXPECT_EQ(p.value("port", 0), spinePort);
  EXPECT_EQ(p.value("peer_description", ""), "leaf-3");
  EXPECT_GE(p["errors"].value("symbol_error", 0), 1000);
  EXPECT_NE(p.value("reason", "").find("symbol_error"), std::string::npos);
  // The Prometheus endpoint: the port isolated, its errors in infiniband_exporter's series.
  EXPECT_TRUE(waitUntil([&] { return f.metric("ibsm_isolated_ports") == 1; }, 5s, "ibsm_isolated_ports 1"));
  EXPECT_GE(f.metric("infiniband_switch_port_symbol_error_total{guid=\"" + fabric::toString(spineGuid) +
                     "\",port=\"" + std::to_string(spinePort) + "\"}"),
            1000);
  // ibsmd cleared what it read (the master): perfquery, the oracle, reads 0 on the port now.
  RunOptions o;
  o.simHost = kDiagHost;
  const uint16_t spineLid = static_cast<uint16_t>(h["ports"][0].value("lid", 0));
  RunResult pq = f.sim->run({"perfquery", std::to_string(spineLid), std::to_string(spinePort)}, o);
  EXPECT_NE(pq.out.find("SymbolErrorCounter:..............0"), std::string::npos) << pq.out << pq.err;

  // Clean for the (4 s) clean period: routed again.
  ASSERT_TRUE(f.sim->waitForOutput(f.sm, "HLTH004", 20s, 50ms));
  HealthFixture::Live back;
  ASSERT_TRUE(waitUntil(
      [&] {
        back = f.live();
        return back.ok && HealthFixture::routesThrough(back, spineGuid, spinePort) > 0 &&
               HealthFixture::allReachable(back);
      },
      20s, "routes through the link again"))
      << f.sim->output(f.sm);
  EXPECT_EQ(f.ctl({"health"})["counts"].value("isolated", 1), 0);
  EXPECT_TRUE(waitUntil([&] { return f.metric("ibsm_isolated_ports") == 0; }, 5s, "ibsm_isolated_ports 0"));
}

// `ibsmctl health release` ends an isolation at once; a port that is not isolated is an error.
TEST(Health, ReleaseRoutesTheLinkAgain) {
  HealthFixture f;
  ASSERT_TRUE(waitUntil([&] { return f.ctl({"health"}).value("sweeps", 0) >= 2; }, 30s, "two counter sweeps"))
      << f.sim->output(f.sm);
  const fabric::Topology& t = *f.built;
  auto spine = t.findByDescription("spine-2");
  ASSERT_TRUE(spine);
  const std::string spineId = "S-" + fabric::toString(t.node(*spine).guid).substr(2);
  f.sim->console("PerformanceSet \"" + spineId + "\"[5] PortCounters.LinkDownedCounter=200");
  ASSERT_TRUE(f.sim->waitForOutput(f.sm, "HLTH002", 10s, 20ms));
  RunOptions plain;
  plain.preload = false;
  const std::string sock = f.sim->dir() + "/ibsm.sock";
  RunResult bad = f.sim->run({binPath("ibsmctl"), "--socket", sock, "health", "release", "spine-2/4"}, plain);
  EXPECT_EQ(bad.exitCode, 1) << bad.out << bad.err;
  EXPECT_NE(bad.err.find("is not isolated"), std::string::npos) << bad.err;
  RunResult ok = f.sim->run({binPath("ibsmctl"), "--socket", sock, "health", "release", "spine-2/5"}, plain);
  EXPECT_EQ(ok.exitCode, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find("released by an operator"), std::string::npos) << ok.out;
  EXPECT_EQ(f.ctl({"health"})["counts"].value("isolated", 1), 0);
  RunResult text = f.sim->run({binPath("ibsmctl"), "--socket", sock, "health"}, plain);
  EXPECT_NE(text.out.find("Counter sweep"), std::string::npos) << text.out;
}

// Counts already high when ibsmd starts (a bad cable before the SM came up): the first counter sweep reports
// them ("found at start, interval unknown", HLTH001 naming the port) and, with isolate, the link is isolated
// (60,000 is past health.start_threshold, 1,000 by default) with no later increase. ibsmd clears what it
// read, so the rates that follow start from there.
TEST(Health, CountsFoundAtStartAreReportedAndPastTheThresholdIsolated) {
  for (const std::string action : {"report", "isolate"}) {
    SCOPED_TRACE(action);
    HealthFixture f(false);
    const HealthFixture::SpinePort link = f.spinePort("spine-1", "leaf-3");
    ASSERT_NE(link.port, 0);
    f.setCounter(link, "SymbolErrorCounter=60000");
    f.startSm(action);
    const std::string warning = "HLTH001 spine-1/" + std::to_string(link.port) +
                                " counters found at start, interval unknown: symbol_error 60000";
    ASSERT_TRUE(f.sim->waitForOutput(f.sm, warning, 20s)) << f.sim->output(f.sm);
    EXPECT_EQ(f.count("counters found at start"), 1u) << f.sim->output(f.sm);  // no other port
    if (action == "isolate") {
      ASSERT_TRUE(f.sim->waitForOutput(f.sm, "HLTH002", 10s)) << f.sim->output(f.sm);
      HealthFixture::Live isolated;
      EXPECT_TRUE(waitUntil(
          [&] {
            isolated = f.live();
            return isolated.ok && HealthFixture::routesThrough(isolated, link.spine, link.port) == 0;
          },
          10s, "no route through the isolated link"))
          << f.sim->output(f.sm);
    } else {
      ASSERT_TRUE(waitUntil([&] { return f.ctl({"health"}).value("sweeps", 0) >= 3; }, 20s, "three sweeps"));
      EXPECT_EQ(f.count("HLTH002"), 0u) << f.sim->output(f.sm);
    }
    nlohmann::json h = f.ctl({"health"});
    ASSERT_FALSE(h["ports"].empty()) << h.dump();
    const nlohmann::json& p = h["ports"][0];
    EXPECT_EQ(p.value("state", ""), action == "isolate" ? "isolated" : "warning") << h.dump();
    EXPECT_EQ(p.value("port", 0), link.port);
    EXPECT_EQ(p.value("reason", ""), "found at start, interval unknown: symbol_error 60000") << h.dump();
    RunOptions plain;
    plain.preload = false;
    RunResult text =
        f.sim->run({binPath("ibsmctl"), "--socket", f.sim->dir() + "/ibsm.sock", "health"}, plain);
    EXPECT_NE(text.out.find("found at start, interval unknown"), std::string::npos) << text.out;
    RunOptions o;
    o.simHost = kDiagHost;
    RunResult pq = f.sim->run({"perfquery", std::to_string(p.value("lid", 0)), std::to_string(link.port)}, o);
    EXPECT_NE(pq.out.find("SymbolErrorCounter:..............0"), std::string::npos) << pq.out << pq.err;
  }
}

}  // namespace
}  // namespace ibsm::testing
