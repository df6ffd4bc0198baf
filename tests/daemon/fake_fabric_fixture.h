// Shared set-up of the daemon tests that run against mad::FakeFabric: a fake clock and port, the fabric
// attached to the port, a MadEngine, and the steps of a sweep (discover, assign LIDs, route, program).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "daemon/program/programmer.h"
#include "daemon/sm/discoverer.h"
#include "mad/mad_engine.h"
#include "routing/engine.h"
#include "routing/lid_assignment.h"
#include "tests/support/fake_fabric.h"
#include "tools/fabric_gen/generator.h"

namespace ibsm::daemon::testing {

using namespace std::chrono_literals;

inline fabric::TopologyPtr generate(const tools::FabricSpec& spec) {
  auto t = tools::generateFabric(spec);
  EXPECT_TRUE(t) << (t ? "" : t.error().message);
  return t ? *t : nullptr;
}

struct FakeFabricFixture {
  mad::FakeClock clock;
  mad::FakeMadPort port{clock};
  std::unique_ptr<mad::FakeFabric> fabric;
  std::unique_ptr<mad::MadEngine> engine;

  void start(fabric::TopologyPtr topo, mad::MadEngineOptions options = {32, 100ms, 3},
             mad::FakeFabricOptions fabricOptions = {}) {
    fabric = std::make_unique<mad::FakeFabric>(std::move(topo), fabricOptions);
    fabric->attach(port);
    engine = std::make_unique<mad::MadEngine>(port, clock, options);
  }

  DiscoveryResult discover() {
    Discoverer d(*engine, clock);
    auto r = d.discover();
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return r ? std::move(*r) : DiscoveryResult{};
  }

  // The FakeFabric's index of node n of a discovered topology.
  fabric::NodeIndex fakeIndex(const fabric::Topology& discovered, fabric::NodeIndex n) const {
    auto i = fabric->topology().findNode(discovered.node(n).guid);
    EXPECT_TRUE(i);
    return i.value_or(fabric::kNoNode);
  }

  // One SM cycle up to programmed LFTs and active links.
  struct Up {
    DiscoveryResult found;       // as the programmer left it
    DiscoveryResult discovered;  // as discovery read it, before programming
    routing::LidAssignment lids;
    routing::RoutingTables tables;
    ProgramReport report;
  };
  // The programming errors are expected to be none unless allowErrors.
  Up bringUp(SwitchTableCache& cache, const std::string& engineName = "minhop", routing::Options options = {},
             const ProgramOptions& programOptions = {}, bool allowErrors = false) {
    Up up;
    up.found = discover();
    auto lids = routing::assignLids(*up.found.topology, {}, 0);
    EXPECT_TRUE(lids);
    up.lids = lids->lids;
    auto engineImpl = routing::makeEngine(engineName);
    auto tables = engineImpl->compute(*up.found.topology, up.lids, options);
    EXPECT_TRUE(tables) << (tables ? "" : tables.error().message);
    up.tables = *tables;
    up.discovered = up.found;
    Programmer programmer(*engine, clock);
    up.report = programmer.program(up.found, up.lids, up.tables, cache, programOptions);
    if (!allowErrors) {
      EXPECT_TRUE(up.report.errors.empty()) << up.report.errors.front();
    }
    return up;
  }
};

}  // namespace ibsm::daemon::testing
