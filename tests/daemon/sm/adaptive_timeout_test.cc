// Adaptive MAD timeouts in a sweep: over links that lose SMPs silently (no answer, as on real hardware), the
// engine's timeouts follow the round trips it measured, so a lossy sweep ends far sooner than with the
// configured timeout on every attempt, and finds the same fabric.
#include <gtest/gtest.h>

#include <iostream>

#include "tests/daemon/fake_fabric_fixture.h"
#include "tests/routing/generated_fabrics.h"
#include "tools/fabric_gen/compare.h"

namespace ibsm::daemon {
namespace {

using testing::FakeFabricFixture;
using testing::generate;
using namespace std::chrono_literals;

TEST(AdaptiveTimeouts, ALossySweepEndsSoonerThanWithFixedTimeouts) {
  auto topo = generate(routing::testing::fatTree(2, 16));
  ASSERT_TRUE(topo);
  // minTimeout equal to the timeout: every attempt waits the configured 100 ms, as before adaptive timeouts.
  auto sweep = [&](mad::Duration minTimeout) {
    FakeFabricFixture fx;
    mad::MadEngineOptions options{32, 100ms, 8};
    options.minTimeout = minTimeout;
    fx.start(topo, options);
    fx.fabric->setDropRate(0.2, 11);
    DiscoveryResult r = fx.discover();
    EXPECT_TRUE(r.topology && tools::diffTopologies(*topo, *r.topology).empty());
    EXPECT_EQ(r.stats.failed, 0u);
    EXPECT_GT(r.stats.timeouts, r.stats.smps / 10);  // the loss was real
    return r.stats.elapsed;
  };
  const mad::Duration fixed = sweep(100ms), adaptive = sweep(mad::MadEngineOptions{}.minTimeout);
  std::cout << "lossy sweep (simulated time): fixed " << fixed / 1ms << " ms, adaptive " << adaptive / 1ms
            << " ms\n";
  EXPECT_LT(adaptive * 2, fixed);  // 570 vs 1400 ms when written
}

}  // namespace
}  // namespace ibsm::daemon
