// The HTTP endpoint on a real socket: GET /metrics answers with the exposition, a
// port that is taken is an error and not a throw, and scrapes from several threads while the event loop's
// thread updates every kind of metric (ThreadSanitizer runs this: tools/tsan).
#include "daemon/metrics/metrics_endpoint.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/http_get.h"

namespace ibsm::daemon {
namespace {

using ibsm::testing::httpGet;

TEST(MetricsEndpoint, ServesTheExpositionOnAnyFreePort) {
  SmMetrics m;
  m.setSubnetUp(true);
  auto e = MetricsEndpoint::start("127.0.0.1:0", m);
  ASSERT_TRUE(e) << e.error().message;
  const uint16_t port = (*e)->port();
  ASSERT_NE(port, 0);
  EXPECT_EQ((*e)->url(), "http://127.0.0.1:" + std::to_string(port) + "/metrics");
  ibsm::testing::HttpResponse r = httpGet(port, "/metrics");
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("\nibsm_subnet_up 1\n"), std::string::npos) << r.body;
  EXPECT_EQ(httpGet(port, "/other").status, 404);
}

TEST(MetricsEndpoint, APortInUseIsAClearError) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof a;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const std::string listen = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  SmMetrics m;
  auto e = MetricsEndpoint::start(listen, m);
  ::close(fd);
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("cannot listen on " + listen), std::string::npos) << e.error().message;
  EXPECT_FALSE(MetricsEndpoint::start("no-port", m));
}

TEST(MetricsEndpoint, ScrapesWhileTheLoopUpdates) {
  SmMetrics m;
  auto e = MetricsEndpoint::start("127.0.0.1:0", m);
  ASSERT_TRUE(e) << e.error().message;
  const uint16_t port = (*e)->port();
  std::atomic<bool> stop{false};
  std::atomic<int> scrapes{0}, good{0};
  std::vector<std::thread> scrapers;
  for (int i = 0; i < 3; ++i)
    scrapers.emplace_back([&] {
      while (!stop) {
        ibsm::testing::HttpResponse r = httpGet(port, "/metrics");
        ++scrapes;
        if (r.status == 200 && r.body.find("ibsm_sweeps_total{kind=\"heavy\"}") != std::string::npos) ++good;
      }
    });
  // The loop thread's part: every kind of update, port counter and fabric snapshots included.
  for (uint64_t i = 1; i <= 300 || scrapes < 30; ++i) {
    m.setState(static_cast<uint8_t>(i % 4));
    m.setSubnetUp(i % 2);
    m.sweepDone(i % 3 ? SmMetrics::SweepKind::kLight : SmMetrics::SweepKind::kHeavy, 0.001 * i, 1, 1);
    m.topologyEvent("trap", 0.002, 1, 1);
    SmMetrics::MadTotals mad;
    mad.sent = i;
    m.setMad(mad);
    SmMetrics::TrapTotals traps;
    traps.byNumber[static_cast<uint16_t>(128 + i % 3)] = i;
    m.setTraps(traps);
    SmMetrics::SaTotals sa;
    sa.byAttrStatus[{0x35, 0}] = i;
    m.setSa(sa);
    auto snap = std::make_shared<PortCounterSnapshot>();
    PortCounterRow row;
    row.guid = fabric::Guid{i};
    row.set(PortCounter::kSymbolError, i);
    snap->rows.push_back(row);
    m.publishPortCounters(snap);
    auto info = std::make_shared<FabricInfo>();
    info->nodes = {{true, fabric::Guid{i}, "S" + std::to_string(i), 1}, {false, fabric::Guid{i + 1}, "H", 2}};
    info->links = {{0, 1, 1, 1, 2}};
    m.publishFabric(info);
    if (i > 100000) break;  // the scrapers never got through: fail below rather than hang
  }
  stop = true;
  for (auto& t : scrapers) t.join();
  EXPECT_GE(scrapes.load(), 30);
  EXPECT_EQ(good.load(), scrapes.load());
}

}  // namespace
}  // namespace ibsm::daemon
