#include "daemon/sm/discoverer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mad/smp.h"
#include "tests/daemon/fake_fabric_fixture.h"
#include "tools/fabric_gen/compare.h"

namespace ibsm::daemon {
namespace {

using fabric::NodeIndex;
using fabric::PortNum;
using testing::FakeFabricFixture;
using testing::generate;
using namespace std::chrono_literals;

// A loop of three switches, a parallel link and a 2-port HCA:
//
//        h0 (SM)        h1
//         |1            |1
//        1|            4|
//   +---- s0 ===2,3=== s1          s0:2-s1:2 and s0:3-s1:3 (parallel)
//   |4    |5            |5
//   |     +-1 h2 2------+          h2 on both switches
//   |1
//   s2 ---2---------- 6 s1         (closes the loop s0-s2-s1)
//   |3
//   h3
fabric::TopologyPtr handBuilt() {
  fabric::TopologyBuilder b;
  uint64_t nextCa = 0x100000, nextSw = 0x200000;
  auto add = [&](fabric::NodeType type, uint8_t ports, const char* desc) {
    fabric::Node n;
    n.type = type;
    n.numPorts = ports;
    n.description = desc;
    n.guid = fabric::Guid{type == fabric::NodeType::kSwitch ? nextSw++ : nextCa};
    n.systemGuid = n.guid;
    if (type == fabric::NodeType::kCa) nextCa += ports + 1;
    NodeIndex i = *b.addNode(std::move(n));
    fabric::Node& node = b.node(i);
    if (type == fabric::NodeType::kCa)
      for (unsigned p = 1; p <= ports; ++p) node.ports[p].guid = fabric::Guid{node.guid.value + p};
    else
      node.ports[0].guid = node.guid;
    return i;
  };
  NodeIndex s0 = add(fabric::NodeType::kSwitch, 8, "s0"), s1 = add(fabric::NodeType::kSwitch, 8, "s1"),
            s2 = add(fabric::NodeType::kSwitch, 8, "s2");
  NodeIndex h0 = add(fabric::NodeType::kCa, 1, "h0"), h1 = add(fabric::NodeType::kCa, 1, "h1"),
            h2 = add(fabric::NodeType::kCa, 2, "h2"), h3 = add(fabric::NodeType::kCa, 1, "h3");
  auto link = [&](NodeIndex a, uint8_t pa, NodeIndex c, uint8_t pc) {
    EXPECT_TRUE(b.connect(a, PortNum{pa}, c, PortNum{pc}));
    for (auto [n, p] : {std::pair{a, pa}, std::pair{c, pc}}) {
      fabric::PortAttrs& at = b.node(n).ports[p].attrs;
      at.widthActive = 2;
      at.speedActive = 4;
      at.valid = true;
    }
  };
  link(h0, 1, s0, 1);
  link(s0, 2, s1, 2);
  link(s0, 3, s1, 3);
  link(h1, 1, s1, 4);
  link(s0, 5, h2, 1);
  link(h2, 2, s1, 5);
  link(s0, 4, s2, 1);
  link(s2, 2, s1, 6);
  link(s2, 3, h3, 1);
  b.setSmPort(h0, PortNum{1});
  return *std::move(b).build();
}

TEST(Discoverer, FindsLoopsParallelLinksAndTwoPortHcas) {
  FakeFabricFixture fx;
  auto topo = handBuilt();
  fx.start(topo);
  DiscoveryResult r = fx.discover();
  ASSERT_TRUE(r.topology);
  EXPECT_EQ(tools::diffTopologies(*topo, *r.topology), "");
  EXPECT_EQ(r.topology->links().size(), 9u);
  EXPECT_TRUE(r.stats.warnings.empty()) << r.stats.warnings.front();
  EXPECT_EQ(r.stats.timeouts, 0u);
  // The SM sits where the fabric says; h2's second port carries its own route (entering through port 2).
  EXPECT_EQ(r.topology->node(r.topology->smNode()).description, "h0");
  auto h2 = r.topology->findByDescription("h2");
  ASSERT_TRUE(h2);
  EXPECT_GT(r.topology->portRoute(*h2, fabric::PortNum{2}).count, 0);
  EXPECT_EQ(r.portInfo.size(), r.topology->size());
}

TEST(Discoverer, FindsGeneratedFabrics) {
  std::vector<tools::FabricSpec> specs;
  tools::FabricSpec kary;
  kary.shape = tools::Shape::kKaryNTree;
  kary.k = 4;
  kary.n = 3;
  kary.hcaPorts = 2;
  kary.removeSwitches = 2;
  kary.removeLinks = 4;
  kary.seed = 3;
  specs.push_back(kary);
  tools::FabricSpec ft;
  ft.shape = tools::Shape::kFatTree;
  ft.levels = 2;
  ft.radix = 12;
  ft.parallel = 2;
  specs.push_back(ft);
  tools::FabricSpec mesh;
  mesh.shape = tools::Shape::kMesh;
  mesh.switches = 12;
  mesh.degree = 4;
  mesh.hostsPerSwitch = 2;
  mesh.seed = 5;
  specs.push_back(mesh);
  tools::FabricSpec torus;
  torus.shape = tools::Shape::kTorus;
  torus.dims = {3, 3, 3};
  specs.push_back(torus);
  for (const auto& spec : specs) {
    auto topo = generate(spec);
    ASSERT_TRUE(topo);
    FakeFabricFixture fx;
    fx.start(topo);
    DiscoveryResult r = fx.discover();
    ASSERT_TRUE(r.topology);
    EXPECT_EQ(tools::diffTopologies(*topo, *r.topology), "") << "shape " << int(spec.shape);
    EXPECT_TRUE(r.stats.warnings.empty());
    EXPECT_EQ(r.stats.failed, 0u);
  }
}

// The nodes in the order a breadth-first walk from the SM's port meets them (a switch's ports in order; a DR
// SMP never passes through a CA), each with the route it is first met by: the numbering and the directed
// routes a sweep gives them (what the sweep did before each link was probed from one end only).
std::vector<std::pair<fabric::Guid, fabric::DrPath>> breadthFirst(const fabric::Topology& t, NodeIndex sm,
                                                                  PortNum smPort) {
  std::vector<NodeIndex> order{sm};
  std::vector<std::optional<fabric::DrPath>> route(t.size());
  route[sm] = fabric::DrPath{};
  for (size_t head = 0; head < order.size(); ++head) {
    const fabric::Node& n = t.node(order[head]);
    if (!n.isSwitch() && head > 0) continue;
    for (unsigned p = 1; p <= n.numPorts; ++p) {
      const fabric::Port& port = n.ports[p];
      if (!port.connected() || route[port.peerNode] || (!n.isSwitch() && p != smPort.value)) continue;
      route[port.peerNode] = route[order[head]]->extended(static_cast<uint8_t>(p));
      order.push_back(port.peerNode);
    }
  }
  std::vector<std::pair<fabric::Guid, fabric::DrPath>> walk;
  for (NodeIndex n : order) walk.emplace_back(t.node(n).guid, *route[n]);
  return walk;
}

std::vector<std::pair<fabric::Guid, fabric::DrPath>> numbering(const fabric::Topology& t) {
  std::vector<std::pair<fabric::Guid, fabric::DrPath>> nodes;
  for (NodeIndex n = 0; n < t.size(); ++n) nodes.emplace_back(t.node(n).guid, t.route(n));
  return nodes;
}

// Each link's far end is probed once: one NodeInfo for the local node and one per link, on fabrics with
// loops within a level of the walk (torus, dragonfly, mesh), parallel links and 2-port HCAs, whether the SM
// sits on a host or on a switch. The nodes are still numbered and routed breadth-first, as when both ends of
// a switch link were probed.
TEST(Discoverer, ProbesTheFarEndOfEachLinkOnce) {
  std::vector<fabric::TopologyPtr> fabrics{handBuilt()};
  tools::FabricSpec ft;
  ft.shape = tools::Shape::kFatTree;
  ft.levels = 3;
  ft.radix = 8;
  tools::FabricSpec torus;
  torus.shape = tools::Shape::kTorus;
  torus.dims = {3, 4, 3};
  tools::FabricSpec dfly;
  dfly.shape = tools::Shape::kDragonfly;
  dfly.dragonflyA = 4;
  dfly.dragonflyH = 2;
  tools::FabricSpec mesh;
  mesh.shape = tools::Shape::kMesh;
  mesh.switches = 20;
  mesh.degree = 5;
  mesh.parallel = 2;
  mesh.hcaPorts = 2;
  mesh.seed = 7;
  for (const auto& spec : {ft, torus, dfly, mesh}) fabrics.push_back(generate(spec));
  for (const auto& topo : fabrics) {
    ASSERT_TRUE(topo);
    const NodeIndex ca = topo->cas().front(), sw = topo->switches().front();
    for (auto [node, port] : {std::pair{ca, PortNum{1}}, std::pair{sw, PortNum{0}}}) {
      SCOPED_TRACE(topo->node(node).description);
      FakeFabricFixture fx;
      mad::FakeFabricOptions options;
      options.smPort = std::pair{node, port};
      fx.start(topo, {32, 100ms, 3}, options);
      DiscoveryResult r = fx.discover();
      ASSERT_TRUE(r.topology);
      EXPECT_EQ(tools::diffTopologies(*topo, *r.topology), "");
      EXPECT_EQ(fx.fabric->received(mad::kAttrNodeInfo), topo->links().size() + 1);
      EXPECT_EQ(numbering(*r.topology), breadthFirst(*topo, node, port));
      EXPECT_TRUE(r.stats.warnings.empty());
    }
  }
}

// A link is probed from one end only while that end's probe is answered: when its NodeInfo is lost for good
// (no answer through the engine's retries and the second pass), the link's other end probes it, whichever
// end the walk meets first. Default retries.
TEST(Discoverer, ALinkWhoseProbeIsLostIsProbedFromItsOtherEnd) {
  auto topo = handBuilt();
  std::vector<std::pair<NodeIndex, PortNum>> ends;
  for (const fabric::Link& l : topo->links())
    if (topo->node(l.a).isSwitch() && topo->node(l.b).isSwitch()) {
      ends.emplace_back(l.a, l.portA);
      ends.emplace_back(l.b, l.portB);
    }
  ASSERT_EQ(ends.size(), 8u);  // s0-s1 twice, s0-s2, s2-s1
  size_t lost = 0;
  for (auto [node, port] : ends) {
    SCOPED_TRACE(topo->node(node).description + " port " + std::to_string(port.value));
    FakeFabricFixture fx;
    fx.start(topo);
    fx.fabric->loseEntering(node, port, mad::kAttrNodeInfo);
    DiscoveryResult r = fx.discover();
    ASSERT_TRUE(r.topology);
    EXPECT_EQ(tools::diffTopologies(*topo, *r.topology), "");
    for (const std::string& w : r.stats.warnings)
      EXPECT_NE(w.find("DISC001 no NodeInfo"), std::string::npos) << w;
    lost += r.stats.failed;
  }
  EXPECT_EQ(lost, 4u);  // one end of each link was the one to probe it
}

// A targeted re-discovery explores the changed switches' ports in the same way: a link between two of them
// is probed from one end. (At boot every port is INIT, so none keeps its link unprobed as an ACTIVE one
// would.)
TEST(Discoverer, ARediscoveryProbesALinkBetweenChangedSwitchesOnce) {
  FakeFabricFixture fx;
  auto topo = handBuilt();
  fx.start(topo);
  DiscoveryResult first = fx.discover();
  ASSERT_TRUE(first.topology);
  const NodeIndex s0 = *first.topology->findByDescription("s0"),
                  s2 = *first.topology->findByDescription("s2");
  const uint64_t before = fx.fabric->received(mad::kAttrNodeInfo);
  Discoverer d(*fx.engine, fx.clock);
  auto r = d.rediscover(first, {s0, s2});
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_FALSE(r->unchanged);
  EXPECT_EQ(tools::diffTopologies(*topo, *r->topology), "");
  // s0's five linked ports and s2's two others: s2's port 1 is s0's port 4 seen from its other end.
  EXPECT_EQ(fx.fabric->received(mad::kAttrNodeInfo) - before, 7u);
  EXPECT_TRUE(r->stats.warnings.empty());
}

// A link that goes down starts a hold-down on its ports (flap damping). The next re-read of its switch (the
// light sweep's, for the PortStateChange the link left) finds every port as the update left it: unchanged,
// with no exploration and no topology built, although the set of held ports is not the one the update saw.
// A hold that kept a live port down and has ended is a change.
TEST(Discoverer, ARereadFindsAPortHeldDownSinceItsLinkWentDownUnchanged) {
  FakeFabricFixture fx;
  fx.start(handBuilt());
  SwitchTableCache cache;
  auto up = fx.bringUp(cache);
  const fabric::Topology& topo = *up.found.topology;
  NodeIndex sw = fabric::kNoNode;
  uint8_t port = 0;
  for (NodeIndex s : topo.switches())
    for (unsigned p = 1; p <= topo.node(s).numPorts && sw == fabric::kNoNode; ++p)
      if (topo.node(s).ports[p].connected() && topo.node(topo.node(s).ports[p].peerNode).isSwitch()) {
        sw = s;
        port = static_cast<uint8_t>(p);
      }
  ASSERT_NE(sw, fabric::kNoNode);
  const fabric::Port& link = topo.node(sw).ports[port];
  const std::vector<std::pair<fabric::Guid, uint8_t>> held{
      {topo.node(sw).guid, port}, {topo.node(link.peerNode).guid, link.peerPort.value}};
  ASSERT_TRUE(fx.fabric->linkDown(fx.fakeIndex(topo, sw), PortNum{port}));
  Discoverer d(*fx.engine, fx.clock);
  auto down = d.rediscover(up.found, {sw});
  ASSERT_TRUE(down) << down.error().message;
  ASSERT_FALSE(down->unchanged);
  EXPECT_TRUE(down->heldDown.empty());  // none of the held ports is up

  const NodeIndex again = *down->topology->findNode(topo.node(sw).guid);
  const uint64_t sent = fx.engine->counters().sent;
  auto reread = d.rediscover(*down, {again}, held);
  ASSERT_TRUE(reread) << reread.error().message;
  EXPECT_TRUE(reread->unchanged);
  EXPECT_EQ(reread->topology.get(), down->topology.get());
  EXPECT_EQ(fx.engine->counters().sent - sent, topo.node(sw).numPorts + 1u);  // its PortInfo, nothing else

  DiscoveryResult keptDown = std::move(*down);
  keptDown.heldDown = {held.front()};  // as if that port had been found up and kept down
  auto released = d.rediscover(keptDown, {again}, {});
  ASSERT_TRUE(released) << released.error().message;
  EXPECT_FALSE(released->unchanged);
}

// A standby's re-read asks, while its MADs fly, whether to stop (the master it polls meanwhile died): it then
// sends nothing more, waits for what is out (nothing is left behind in the engine) and fails.
TEST(Discoverer, AnInterruptedSweepStopsSendingAndFails) {
  tools::FabricSpec spec;
  spec.shape = tools::Shape::kFatTree;
  spec.levels = 3;
  spec.radix = 8;
  FakeFabricFixture fx;
  fx.start(generate(spec));
  const uint64_t full = fx.discover().stats.smps;
  ASSERT_GT(full, 500u);
  Discoverer d(*fx.engine, fx.clock);
  unsigned asked = 0;
  const uint64_t before = fx.engine->counters().sent;
  auto r = d.discover([&] { return ++asked >= 2; });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "interrupted");
  EXPECT_TRUE(fx.engine->idle());
  EXPECT_GE(asked, 2u);
  EXPECT_LT(fx.engine->counters().sent - before, full);
  unsigned never = 0;
  auto whole = d.discover([&] { return ++never == 0; });
  ASSERT_TRUE(whole);
  EXPECT_EQ(whole->stats.smps, full);
  EXPECT_GT(never, 0u);
}

TEST(Discoverer, CompletesThroughRetriesAtTwentyPercentLoss) {
  tools::FabricSpec spec;
  spec.shape = tools::Shape::kFatTree;
  spec.levels = 2;
  spec.radix = 16;
  spec.hcaPorts = 2;
  auto topo = generate(spec);
  ASSERT_TRUE(topo);
  FakeFabricFixture fx;
  // 0.2^9: a request is lost for good about once in 2 million, so the whole sweep (a few thousand SMPs)
  // completes; with the default 3 retries some would be lost.
  fx.start(topo, mad::MadEngineOptions{32, 100ms, 8});
  fx.fabric->setDropRate(0.2, 11);
  DiscoveryResult r = fx.discover();
  ASSERT_TRUE(r.topology);
  EXPECT_EQ(tools::diffTopologies(*topo, *r.topology), "");
  EXPECT_EQ(r.stats.failed, 0u);
  EXPECT_GT(r.stats.timeouts, r.stats.smps / 10);  // the loss was real
  EXPECT_EQ(r.stats.timeouts, fx.fabric->droppedByRate());
  EXPECT_TRUE(r.stats.warnings.empty());
}

fabric::TopologyPtr radix8Tree() {
  tools::FabricSpec spec;
  spec.shape = tools::Shape::kFatTree;
  spec.levels = 2;
  spec.radix = 8;
  return generate(spec);
}

// With one attempt per request (no engine retries) some Gets of a lossy sweep are lost at first; the second
// pass after the others sends them once more, so the sweep still finds the whole fabric.
TEST(Discoverer, GetsWithNoAnswerGetASecondPass) {
  auto topo = radix8Tree();
  ASSERT_TRUE(topo);
  FakeFabricFixture fx;
  fx.start(topo, mad::MadEngineOptions{32, 100ms, 0});
  fx.fabric->setDropRate(0.03, 1);  // a seed with no Get lost at both of its attempts
  DiscoveryResult r = fx.discover();
  ASSERT_TRUE(r.topology);
  EXPECT_GT(fx.engine->counters().failed, 0u);  // requests that ran out of the engine's attempts
  EXPECT_EQ(tools::diffTopologies(*topo, *r.topology), "");
  EXPECT_EQ(r.stats.failed, 0u);
  EXPECT_TRUE(r.stats.warnings.empty()) << r.stats.warnings.front();
}

// Rounds go on while they get answers (no engine retries: one attempt per round). A NodeInfo Get towards a
// new port is first a single probe, then up to 4 rounds. Three Gets that stay unanswered for 1, 2 and 3
// attempts are answered in rounds 1, 2 and 3 (round 3 only because round 2 got an answer); a fourth, never
// answered, goes to round 4 (round 3 got one) and is then given up.
TEST(Discoverer, GetsWithNoAnswerGoAgainWhileRoundsGetAnswers) {
  auto topo = radix8Tree();
  ASSERT_TRUE(topo);
  for (bool deadGet : {false, true}) {
    SCOPED_TRACE(deadGet);
    FakeFabricFixture fx;
    fx.start(topo, mad::MadEngineOptions{32, 100ms, 0});
    std::map<std::array<uint8_t, mad::kMadSize>, int> silence, attempts;  // by request with the TID zeroed
    int nodeInfos = 0;
    fx.port.setResponder([&](const mad::MadPacket& sent) {
      auto h = mad::parseHeader(sent);
      mad::MadPacket key = sent;
      mad::setTid(key, 0);
      // NodeInfo Gets 3, 4, 5 (and 6: never answered) of the sweep, far from the SM.
      if (h && h->attrId == mad::kAttrNodeInfo && !silence.count(key.bytes) && ++nodeInfos >= 3 &&
          nodeInfos <= (deadGet ? 6 : 5))
        silence[key.bytes] = nodeInfos == 6 ? 1000 : nodeInfos - 2;
      auto it = silence.find(key.bytes);
      if (it != silence.end() && ++attempts[key.bytes] <= it->second) return std::vector<mad::MadPacket>{};
      return fx.fabric->handle(sent);
    });
    DiscoveryResult r = fx.discover();
    ASSERT_TRUE(r.topology);
    ASSERT_EQ(attempts.size(), deadGet ? 4u : 3u);
    std::vector<int> tries;
    for (const auto& [key, n] : attempts) tries.push_back(n);
    std::sort(tries.begin(), tries.end());
    const std::vector<int> want = deadGet ? std::vector<int>{2, 3, 4, 5} : std::vector<int>{2, 3, 4};
    EXPECT_EQ(tries, want);
    EXPECT_EQ(r.stats.failed, deadGet ? 1u : 0u);
    if (!deadGet) {
      EXPECT_EQ(tools::diffTopologies(*topo, *r.topology), "");
    }
  }
}

TEST(Discoverer, SkipsANodeThatAnswersGarbage) {
  FakeFabricFixture fx;
  auto topo = handBuilt();
  fx.start(topo);
  NodeIndex h3 = *topo->findByDescription("h3");
  fx.fabric->setGarbageNodeInfo(h3);
  DiscoveryResult r = fx.discover();
  ASSERT_TRUE(r.topology);
  EXPECT_EQ(r.topology->size(), topo->size() - 1);
  EXPECT_FALSE(r.topology->findNode(topo->node(h3).guid));
  ASSERT_EQ(r.stats.warnings.size(), 1u);
  EXPECT_NE(r.stats.warnings[0].find("DISC002"), std::string::npos) << r.stats.warnings[0];
  // s2's port 3 is up but leads nowhere known.
  auto s2 = r.topology->findByDescription("s2");
  ASSERT_TRUE(s2);
  EXPECT_FALSE(r.topology->node(*s2).ports[3].connected());
}

TEST(Discoverer, LocalPortThatDoesNotAnswerFails) {
  FakeFabricFixture fx;
  auto topo = handBuilt();
  fx.start(topo, mad::MadEngineOptions{32, 100ms, 1});
  fx.fabric->setDropRate(1.0);
  Discoverer d(*fx.engine, fx.clock);
  auto r = d.discover();
  EXPECT_FALSE(r);
}

}  // namespace
}  // namespace ibsm::daemon
