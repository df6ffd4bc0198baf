// Multicast trees: every receiving member gets exactly one copy of what any member sends (so the tree has no
// loop and no gap), nobody else gets one, send-only members and the sender get none; the root is central.
#include "routing/multicast.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "tests/routing/fabric_sketch.h"
#include "tools/fabric_gen/generator.h"

namespace ibsm::routing {
namespace {

using fabric::NodeIndex;
using fabric::PortNum;
using fabric::Topology;

// Floods one packet sent by `from` through the switches' masks; returns copies received per CA port.
std::map<std::pair<NodeIndex, uint8_t>, int> deliver(const Topology& topo, const McastTree& tree,
                                                     const McastMember& from) {
  std::map<NodeIndex, PortMask> mask(tree.switches.begin(), tree.switches.end());
  std::map<std::pair<NodeIndex, uint8_t>, int> got;
  // (switch, ingress port) to process; a hop budget catches loops.
  std::vector<std::pair<NodeIndex, uint8_t>> work;
  const fabric::Node& src = topo.node(from.node);
  if (src.isSwitch())
    work.emplace_back(from.node, 0);
  else
    work.emplace_back(src.ports[from.port.value].peerNode, src.ports[from.port.value].peerPort.value);
  size_t steps = 0;
  while (!work.empty() && ++steps < 100000) {
    auto [sw, in] = work.back();
    work.pop_back();
    auto it = mask.find(sw);
    if (it == mask.end()) continue;
    const fabric::Node& n = topo.node(sw);
    for (unsigned p = 0; p <= n.numPorts; ++p) {
      if (!it->second.test(p) || p == in) continue;
      if (p == 0) {
        ++got[{sw, 0}];
        continue;
      }
      const fabric::Port& port = n.ports[p];
      if (!port.connected()) continue;
      if (topo.node(port.peerNode).isSwitch())
        work.emplace_back(port.peerNode, port.peerPort.value);
      else
        ++got[{port.peerNode, port.peerPort.value}];
    }
  }
  EXPECT_LT(steps, 100000u) << "the tree loops";
  return got;
}

void expectDelivery(const Topology& topo, const std::vector<McastMember>& members) {
  McastTree tree = buildMcastTree(topo, members);
  EXPECT_TRUE(tree.unreachable.empty());
  for (const McastMember& from : members) {
    auto got = deliver(topo, tree, from);
    std::map<std::pair<NodeIndex, uint8_t>, int> want;
    for (const McastMember& m : members)
      if (m.receives && !(m.node == from.node && m.port == from.port)) want[{m.node, m.port.value}] = 1;
    EXPECT_EQ(got, want) << "sent by node " << from.node;
  }
}

TEST(McastTree, NoMembersNoTree) {
  auto topo = tools::generateFabric(tools::FabricSpec{});
  ASSERT_TRUE(topo.ok());
  McastTree t = buildMcastTree(**topo, {});
  EXPECT_EQ(t.root, fabric::kNoNode);
  EXPECT_TRUE(t.switches.empty());
}

//   h0 - s0 - s1 - s2 - h2      a line: the root is the middle switch, every switch is in the tree
//              |
//              h1 (send-only)
TEST(McastTree, LineRootsInTheMiddle) {
  testing::FabricSketch f;
  NodeIndex s0 = f.addSwitch("s0", 8), s1 = f.addSwitch("s1", 8), s2 = f.addSwitch("s2", 8);
  NodeIndex h0 = f.addCa("h0"), h1 = f.addCa("h1"), h2 = f.addCa("h2");
  f.link(s0, s1);
  f.link(s1, s2);
  f.link(h0, 1, s0, f.nextPort(s0));
  f.link(h1, 1, s1, f.nextPort(s1));
  f.link(h2, 1, s2, f.nextPort(s2));
  auto topo = f.build();
  std::vector<McastMember> members{{h0, PortNum{1}, true}, {h1, PortNum{1}, false}, {h2, PortNum{1}, true}};
  McastTree t = buildMcastTree(*topo, members);
  EXPECT_EQ(t.root, s1);
  ASSERT_EQ(t.switches.size(), 3u);
  EXPECT_FALSE(t.switches[1].second.test(3)) << "a send-only member's port gets no copies";
  expectDelivery(*topo, members);
}

TEST(McastTree, SwitchMemberAndUnlinkedHost) {
  testing::FabricSketch f;
  NodeIndex s0 = f.addSwitch("s0", 8), s1 = f.addSwitch("s1", 8);
  NodeIndex h0 = f.addCa("h0"), lonely = f.addCa("lonely");
  f.link(s0, s1);
  f.link(h0, 1, s0, f.nextPort(s0));
  auto topo = f.build();
  McastTree t =
      buildMcastTree(*topo, {{h0, PortNum{1}, true}, {s1, PortNum{0}, true}, {lonely, PortNum{1}, true}});
  ASSERT_EQ(t.unreachable.size(), 1u);
  EXPECT_EQ(t.unreachable[0].node, lonely);
  expectDelivery(*topo, {{h0, PortNum{1}, true}, {s1, PortNum{0}, true}});
}

// Random member sets on a fat tree (many equal-cost paths, where a careless tree would loop) and a torus.
TEST(McastTree, RandomGroupsOnGeneratedFabrics) {
  tools::FabricSpec kary;
  kary.k = 4;
  kary.n = 3;
  tools::FabricSpec torus;
  torus.shape = tools::Shape::kTorus;
  torus.dims = {4, 4};
  torus.hostsPerSwitch = 2;
  std::mt19937 rng(7);
  for (const auto& spec : {kary, torus}) {
    auto topo = tools::generateFabric(spec);
    ASSERT_TRUE(topo.ok()) << topo.error().message;
    const auto& cas = (*topo)->cas();
    for (int round = 0; round < 20; ++round) {
      std::vector<McastMember> members;
      for (NodeIndex c : cas)
        if (rng() % 4 == 0) members.push_back({c, PortNum{1}, rng() % 5 != 0});
      expectDelivery(**topo, members);
    }
  }
}

}  // namespace
}  // namespace ibsm::routing
