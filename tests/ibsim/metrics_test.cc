// ibsmd's Prometheus endpoint on ibsim, read the way operators read it: Debian's own Prometheus server
// scrapes ibsmd (--metrics on 127.0.0.1) and the SM's series come back through its HTTP query API; promtool
// accepts the exposition; the fabric is described with infiniband_exporter's info metrics; an saquery shows
// up by attribute and status; a link taken away shows up as a trap event with its convergence time. A port
// that is taken stops ibsmd at start with a clear error. The prometheus package is a test dependency
// (tools/bootstrap): missing, the test fails rather than skips.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>

#include "tests/ibsim/ibsim_fabric.h"
#include "tests/support/http_get.h"

namespace ibsm::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

const char* const kPrometheus = "/usr/bin/prometheus";
const char* const kPromtool = "/usr/bin/promtool";

// A free TCP port on 127.0.0.1 now (for the Prometheus server, which has no port 0 that it would report).
uint16_t freePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw std::runtime_error("no free port");
  ::close(fd);
  return ntohs(a.sin_port);
}

std::string urlEncode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '_' || c == '.' || c == '-') {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

struct MetricsFixture {
  std::unique_ptr<Ibsim> sim;
  fabric::TopologyPtr built;
  pid_t sm = -1;
  uint16_t port = 0;  // ibsmd's metrics port

  MetricsFixture() {
    std::string net;
    sim = startFabric("--kary-ntree 2,2", &net);
    built = parseOrFail(net, "generated");
    // Port 0: ibsmd takes a free port and logs it (METRICS001), so no other program can take it first.
    sm = sim->spawn({binPath("ibsmd"), "--state-dir", sim->dir() + "/state", "--socket",
                     sim->dir() + "/ibsm.sock", "--sweep-interval", "1", "--metrics", "127.0.0.1:0"});
    EXPECT_TRUE(sim->waitForOutput(sm, "SUBNET UP", 60s, 20ms)) << sim->output(sm);
    std::smatch m;
    std::string out = sim->output(sm);
    static const std::regex kLine(
        "METRICS001 serving Prometheus metrics on http://127\\.0\\.0\\.1:([0-9]+)/metrics");
    if (std::regex_search(out, m, kLine)) port = static_cast<uint16_t>(std::stoi(m[1]));
    EXPECT_NE(port, 0) << out;
  }
  std::string scrape() {
    HttpResponse r = httpGet(port, "/metrics");
    EXPECT_EQ(r.status, 200);
    return r.body;
  }
};

TEST(IbsmdMetrics, PrometheusScrapesTheSmAndPromtoolAcceptsTheExposition) {
  ASSERT_TRUE(std::filesystem::exists(kPrometheus) && std::filesystem::exists(kPromtool))
      << "the prometheus package is missing: run tools/bootstrap";
  MetricsFixture f;
  ASSERT_NE(f.port, 0);

  // The exposition as ibsmd serves it: what promtool checks (names, types, units, help). The first sweep is
  // counted when its report is done, just after SUBNET UP is logged.
  std::string text;
  EXPECT_TRUE(waitUntil(
      [&] {
        text = f.scrape();
        return expositionSample(text, "ibsm_sweeps_total{kind=\"heavy\"}") >= 1;
      },
      10s, "the first sweep in the metrics", 20ms));
  EXPECT_EQ(expositionSample(text, "ibsm_subnet_up"), 1) << text;
  EXPECT_EQ(expositionSample(text, "ibsm_sm_state"), 3) << text;
  EXPECT_EQ(expositionSample(text, "ibsm_sm_role{role=\"master\"}"), 1) << text;
  EXPECT_GE(expositionSample(text, "ibsm_sweeps_total{kind=\"heavy\"}"), 1) << text;
  EXPECT_GE(expositionSample(text, "ibsm_sweep_duration_seconds_count{kind=\"heavy\"}"), 1) << text;
  EXPECT_GT(expositionSample(text, "ibsm_lft_blocks_written_total"), 0) << text;
  EXPECT_GT(expositionSample(text, "ibsm_routes_changed_total"), 0) << text;
  EXPECT_GT(expositionSample(text, "ibsm_mads_sent_total"), 0) << text;
  EXPECT_EQ(expositionSample(text, "ibsm_isolated_ports"), 0) << text;
  // The fabric as infiniband_exporter's info metrics: every switch and CA, every cable from both ends.
  auto lines = [&](const std::string& prefix) {
    size_t n = 0;
    for (size_t at = text.find("\n" + prefix + "{"); at != std::string::npos;
         at = text.find("\n" + prefix + "{", at + 1))
      ++n;
    return n;
  };
  size_t switches = 0, cas = 0, switchEnds = 0, caEnds = 0;
  for (fabric::NodeIndex n = 0; n < f.built->size(); ++n) (f.built->node(n).isSwitch() ? switches : cas)++;
  for (const auto& l : f.built->links())
    for (fabric::NodeIndex end : {l.a, l.b}) (f.built->node(end).isSwitch() ? switchEnds : caEnds)++;
  EXPECT_EQ(lines("infiniband_switch_info"), switches) << text;
  EXPECT_EQ(lines("infiniband_hca_info"), cas) << text;
  EXPECT_EQ(lines("infiniband_switch_uplink_info"), switchEnds) << text;
  EXPECT_EQ(lines("infiniband_hca_uplink_info"), caEnds) << text;
  const std::string file = f.sim->dir() + "/metrics.txt";
  writeFile(file, text);
  RunOptions plain;
  plain.preload = false;
  plain.timeout = 30s;
  RunResult check = f.sim->run({"/bin/sh", "-c", std::string(kPromtool) + " check metrics < " + file}, plain);
  EXPECT_EQ(check.exitCode, 0) << check.out << check.err;
  EXPECT_EQ(check.out + check.err, "") << "promtool has remarks";

  // SA requests by attribute and status: saquery from a host (a GetTable of NodeRecords; umad2sim has no
  // RMPP, so only its first segment arrives and saquery's exit status is not the point here).
  RunOptions host;
  host.simHost = "H-0000000000100002";
  host.timeout = 15s;
  (void)f.sim->run({"saquery", "NR"}, host);
  EXPECT_TRUE(waitUntil(
      [&] {
        return expositionSample(f.scrape(),
                                "ibsm_sa_requests_total{attribute=\"NodeRecord\",status=\"ok\"}") >= 1;
      },
      10s, "the NodeRecord query in ibsm_sa_requests_total", 50ms))
      << f.scrape();

  // Light sweeps (every second) are counted as they run.
  EXPECT_TRUE(
      waitUntil([&] { return expositionSample(f.scrape(), "ibsm_sweeps_total{kind=\"light\"}") >= 1; }, 20s,
                "a light sweep in the metrics", 100ms));

  // A link taken away: the switches' traps, a targeted update, its convergence time.
  std::optional<fabric::Link> spine;
  for (const auto& l : f.built->links())
    if (f.built->node(l.a).isSwitch() && f.built->node(l.b).isSwitch()) spine = l;
  ASSERT_TRUE(spine);
  const fabric::Node& a = f.built->node(spine->a);
  f.sim->console("Unlink \"S-" + fabric::toString(a.guid).substr(2) + "\"[" +
                 std::to_string(spine->portA.value) + "]");
  EXPECT_TRUE(waitUntil(
      [&] {
        std::string t = f.scrape();
        return expositionSample(t, "ibsm_traps_received_total{trap=\"128\"}") >= 1 &&
               expositionSample(t, "ibsm_event_convergence_seconds_count{trigger=\"trap\"}") +
                       expositionSample(t, "ibsm_event_convergence_seconds_count{trigger=\"light_sweep\"}") >=
                   1;
      },
      20s, "the unlink as a trap and an event in the metrics", 100ms))
      << f.scrape() << f.sim->output(f.sm);

  // Debian's Prometheus server, scraping ibsmd every second into a scratch storage directory.
  const uint16_t promPort = freePort();
  const std::string dir = f.sim->dir() + "/prometheus";
  std::filesystem::create_directories(dir + "/data");
  writeFile(dir + "/prometheus.yml",
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            "scrape_configs:\n  - job_name: ibsm\n    static_configs:\n      - targets: ['127.0.0.1:" +
                std::to_string(f.port) + "']\n");
  RunOptions promOpts;
  promOpts.preload = false;
  pid_t prom = f.sim->spawn(
      {kPrometheus, "--config.file=" + dir + "/prometheus.yml", "--storage.tsdb.path=" + dir + "/data",
       "--web.listen-address=127.0.0.1:" + std::to_string(promPort)},
      promOpts);
  // The SM's series back through the query API, once the server has scraped.
  auto query = [&](const std::string& q) -> std::optional<double> {
    HttpResponse r = httpGet(promPort, "/api/v1/query?query=" + urlEncode(q), 5000);
    if (r.status != 200) return std::nullopt;
    json j = json::parse(r.body, nullptr, false);
    if (j.is_discarded() || j.value("status", "") != "success") return std::nullopt;
    const json& result = j["data"]["result"];
    if (!result.is_array() || result.empty()) return std::nullopt;
    return std::stod(result[0]["value"][1].get<std::string>());
  };
  std::optional<double> up;
  EXPECT_TRUE(waitUntil([&] { return (up = query("ibsm_subnet_up")).has_value(); }, 60s,
                        "ibsm_subnet_up through Prometheus's query API", 200ms,
                        [&] { return !f.sim->running(prom); }))
      << f.sim->output(prom);
  EXPECT_EQ(up, 1.0);
  EXPECT_EQ(query("up{job=\"ibsm\"}"), 1.0);
  EXPECT_EQ(query("ibsm_sm_role{role=\"master\"}"), 1.0);
  auto heavy = query("ibsm_sweeps_total{kind=\"heavy\"}");
  EXPECT_TRUE(heavy && *heavy >= 1) << heavy.value_or(-1);
  auto mads = query("ibsm_mads_sent_total");
  EXPECT_TRUE(mads && *mads > 0) << mads.value_or(-1);
  auto traps = query("sum(ibsm_traps_received_total)");
  EXPECT_TRUE(traps && *traps >= 1) << traps.value_or(-1);
  auto buckets = query("count(ibsm_sweep_duration_seconds_bucket{kind=\"heavy\"})");
  EXPECT_TRUE(buckets && *buckets > 10) << buckets.value_or(-1);
  f.sim->stop(prom);
}

TEST(IbsmdMetrics, APortInUseStopsIbsmdWithAClearError) {
  auto sim = startFabric("--kary-ntree 2,2");
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const std::string listen = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  RunOptions o;
  o.timeout = 30s;
  RunResult r = sim->run({binPath("ibsmd"), "--state-dir", sim->dir() + "/state", "--socket",
                          sim->dir() + "/ibsm.sock", "--metrics", listen},
                         o);
  ::close(fd);
  EXPECT_EQ(r.exitCode, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("ibsmd: metrics: cannot listen on " + listen), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("SUBNET UP"), std::string::npos) << "it stops before sweeping";
  // A bad value is refused before anything starts, naming the key.
  RunResult bad = sim->run({binPath("ibsmd"), "--metrics", "localhost:9464", "--check-config"}, o);
  EXPECT_EQ(bad.exitCode, 2);
  EXPECT_NE(bad.err.find("metrics.listen: \"localhost:9464\" is not ADDR:PORT"), std::string::npos)
      << bad.err;
}

}  // namespace
}  // namespace ibsm::testing
