#include "fabric/topology.h"

#include <gtest/gtest.h>

#include "tools/fabric_gen/generator.h"

namespace ibsm::fabric {
namespace {

TopologyPtr fatTree() {
  tools::FabricSpec spec;
  spec.shape = tools::Shape::kFatTree;
  spec.levels = 3;
  spec.radix = 8;
  auto t = tools::generateFabric(spec);
  EXPECT_TRUE(t.ok()) << t.error().message;
  return t.ok() ? *t : std::make_shared<Topology>();
}

// Unlinks a switch link and a CA link, relinks the CA elsewhere and writes a port's attributes: what a
// re-discovery does to the builder it starts from the last topology.
void change(TopologyBuilder& b, const Topology& t) {
  const Link& sw = t.links()[t.links().size() / 2];
  b.disconnect(sw.a, sw.portA);
  const NodeIndex ca = t.cas()[3];
  const Port& was = t.node(ca).ports[1];
  b.disconnect(ca, PortNum{1});
  // No switch port is free in a full tree: the CA takes the one of another CA, on another leaf.
  const NodeIndex other = t.cas().back();
  const Port& theirs = t.node(other).ports[1];
  ASSERT_NE(theirs.peerNode, was.peerNode);
  b.disconnect(other, PortNum{1});
  ASSERT_TRUE(b.connect(ca, PortNum{1}, theirs.peerNode, theirs.peerPort).ok());
  b.node(t.switches()[1]).ports[2].attrs.state = PortState::kDown;
}

// A builder started from a topology held by a shared_ptr builds on it (its indexes shared, the links of the
// written nodes read again); the result is the one of a builder started from a copy that is not, which
// builds everything afresh.
TEST(TopologyBuilder, BuildingOnTheBaseGivesTheFullBuild) {
  TopologyPtr base = fatTree();
  const Topology copy = *base;  // not held by a shared_ptr
  TopologyBuilder onBase(*base), afresh(copy);
  change(onBase, *base);
  change(afresh, copy);
  auto a = std::move(onBase).build();
  auto b = std::move(afresh).build();
  ASSERT_TRUE(a.ok() && b.ok());
  const Topology &x = **a, &y = **b;
  ASSERT_EQ(x.links().size(), base->links().size() - 2);  // a switch link and a CA's gone, a CA moved
  ASSERT_EQ(x.links().size(), y.links().size());
  for (size_t i = 0; i < x.links().size(); ++i) {
    EXPECT_EQ(x.links()[i].a, y.links()[i].a) << i;
    EXPECT_EQ(x.links()[i].portA, y.links()[i].portA) << i;
    EXPECT_EQ(x.links()[i].b, y.links()[i].b) << i;
    EXPECT_EQ(x.links()[i].portB, y.links()[i].portB) << i;
  }
  EXPECT_EQ(x.switches(), y.switches());
  EXPECT_EQ(x.cas(), y.cas());
  for (NodeIndex n = 0; n < x.size(); ++n)
    for (const Port& p : x.node(n).ports) {
      if (p.guid.value) {
        EXPECT_EQ(x.findPort(p.guid), y.findPort(p.guid));
      }
    }
  EXPECT_EQ(x.node(base->switches()[1]).ports[2].attrs.state, PortState::kDown);
}

// switchFlags() reads the base's switch list for the rows shared with it and the node for the others (a
// written or added one), with or without a base held by a shared_ptr.
TEST(TopologyBuilder, SwitchFlagsFollowTheNodes) {
  TopologyPtr base = fatTree();
  const Topology copy = *base;
  for (const Topology* from : {base.get(), &copy}) {
    TopologyBuilder b(*from);
    change(b, *from);
    Node sw;
    sw.guid = Guid{0xabcdef};
    sw.type = NodeType::kSwitch;
    sw.numPorts = 4;
    ASSERT_TRUE(b.addNode(sw).ok());
    b.node(from->cas()[5]).description = "written";  // the builder's own row from here on
    const std::vector<uint8_t> flags = b.switchFlags();
    ASSERT_EQ(flags.size(), b.size());
    for (NodeIndex n = 0; n < b.size(); ++n) EXPECT_EQ(flags[n], b.node(n).isSwitch()) << n;
    EXPECT_EQ(flags.back(), 1);
    EXPECT_EQ(flags[from->cas()[5]], 0);
  }
}

// A node whose port GUIDs differ from the base's (or a node added) makes the indexes new.
TEST(TopologyBuilder, ANodeWithNewPortGuidsIsIndexedAfresh) {
  TopologyPtr base = fatTree();
  TopologyBuilder b(*base);
  const NodeIndex ca = base->cas().front();
  const Guid old = b.node(ca).ports[1].guid;
  b.node(ca).ports[1].guid = Guid{0xABCDEF};
  auto t = std::move(b).build();
  ASSERT_TRUE(t.ok());
  EXPECT_EQ((*t)->findPort(Guid{0xABCDEF}), (std::pair{ca, PortNum{1}}));
  EXPECT_FALSE((*t)->findPort(old));
  EXPECT_TRUE(base->findPort(old));
}

}  // namespace
}  // namespace ibsm::fabric
