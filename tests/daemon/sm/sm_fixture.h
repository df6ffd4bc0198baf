// The one set-up of the SM tests: a 2-level fat tree on the fake fabric (FakeFabricFixture: fake clock, port,
// MadEngine) and, for the tests of SubnetManager itself, a SubnetManager that receives what the fabric sends
// and records its events. The tests of its parts (trap handler, flap damping, LID manager, HA) use the fabric
// and engine only and build their class on *engine and clock.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "daemon/sm/subnet_manager.h"
#include "mad/notice.h"
#include "tests/daemon/fake_fabric_fixture.h"

namespace ibsm::daemon::testing {

using namespace std::chrono_literals;

struct SmSetup {
  unsigned radix = 8;  // of the 2-level fat tree
  mad::MadEngineOptions engine{32, 100ms, 3};
  mad::FakeFabricOptions fabric;
  std::optional<mad::MkeyInfo> mkey;  // the SM protects the ports with it (and the engine's SMPs carry it)
};

struct SmFixture : FakeFabricFixture {
  FakeWallClock wallClock;  // stamps the events
  std::unique_ptr<SubnetManager> sm;
  std::vector<TopologyEvent> events;

  // The fabric and the engine only.
  void startFabric(const SmSetup& setup = {}) {
    tools::FabricSpec spec;
    spec.shape = tools::Shape::kFatTree;
    spec.levels = 2;
    spec.radix = setup.radix;
    start(generate(spec), setup.engine, setup.fabric);
    if (setup.mkey) engine->setSmpMkey(setup.mkey->key);
  }
  // The fabric, the engine and a SubnetManager (minhop, no light sweeps) installed as the engine's
  // unsolicited handler; no sweep yet.
  void create(const SmSetup& setup = {}) {
    startFabric(setup);
    SmOptions o;
    o.engines = {"minhop"};
    o.program.mkey = setup.mkey;
    o.lightSweepInterval = mad::Duration::zero();
    sm = std::make_unique<SubnetManager>(*engine, clock, wallClock, o);
    engine->setUnsolicitedHandler(
        [this](const mad::MadPacket& m, const mad::MadHeader& h) { sm->onUnsolicited(m, h); });
    sm->setEventHandler([this](const TopologyEvent& e) { events.push_back(e); });
  }
  // create() and the first sweep; beforeSweep runs once the fake fabric exists (e.g. to install a lossy
  // responder). The events of the sweep are cleared.
  void up(bool expectUp = true, const std::function<void()>& beforeSweep = {}) {
    create();
    if (beforeSweep) beforeSweep();
    auto r = sm->sweep();
    ASSERT_TRUE(r) << r.error().message;
    ASSERT_EQ(r->subnetUp, expectUp);
    events.clear();
  }
  uint16_t switchLid() const {
    const auto& snap = *sm->snapshot();
    fabric::NodeIndex s = snap.topology->switches().front();
    return snap.lids.base(s, fabric::PortNum{0}).value;
  }
  void deliver(mad::MadPacket m) {
    port.inject(std::move(m));
    sm->tick();
  }
  // A generic Trap 128 (link state change) from the switch with this LID, about itself.
  static mad::Notice trap128(uint16_t lid) {
    mad::Notice n;
    n.generic = true;
    n.type = 1;
    n.producerType = 2;
    n.trapNumber = 128;
    n.issuerLid = n.lidAddr = lid;
    return n;
  }
};

}  // namespace ibsm::daemon::testing
