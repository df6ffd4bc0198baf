#include "tests/support/fake_fabric.h"

#include <gtest/gtest.h>
#include <infiniband/mad.h>

#include <initializer_list>

#include "mad/mad_engine.h"
#include "mad/notice.h"
#include "mad/smp.h"

namespace ibsm::mad {
namespace {

using fabric::NodeIndex;
using fabric::PortNum;
using fabric::PortState;
using namespace std::chrono_literals;

// The fabric of most tests:
//
//   h0 (SM) 1 --- 1 s0 2 --- 1 s1 2 --- 1 h1
//                   3 ======= 3            (a second, parallel link s0:3 - s1:3)
//                   4 --- 1 h2 2 --- 4 s1  (a 2-port HCA on both switches)
//                   5 (unlinked)
struct Fabric {
  NodeIndex h0, s0, s1, h1, h2;
  fabric::TopologyPtr topo;
};

Fabric buildFabric() {
  fabric::TopologyBuilder b;
  auto add = [&](fabric::NodeType type, uint64_t guid, uint8_t ports, const char* desc) {
    fabric::Node n;
    n.type = type;
    n.guid = fabric::Guid{guid};
    n.numPorts = ports;
    n.description = desc;
    NodeIndex i = *b.addNode(std::move(n));
    if (type == fabric::NodeType::kCa)
      for (unsigned p = 1; p <= ports; ++p) b.node(i).ports[p].guid = fabric::Guid{guid + p};
    return i;
  };
  Fabric f;
  f.h0 = add(fabric::NodeType::kCa, 0x100000, 1, "h0");
  f.s0 = add(fabric::NodeType::kSwitch, 0x200000, 5, "s0");
  f.s1 = add(fabric::NodeType::kSwitch, 0x200001, 4, "s1");
  f.h1 = add(fabric::NodeType::kCa, 0x100010, 1, "h1");
  f.h2 = add(fabric::NodeType::kCa, 0x100020, 2, "h2");
  auto link = [&](NodeIndex a, uint8_t pa, NodeIndex c, uint8_t pc) {
    ASSERT_TRUE(b.connect(a, PortNum{pa}, c, PortNum{pc}));
  };
  link(f.h0, 1, f.s0, 1);
  link(f.s0, 2, f.s1, 1);
  link(f.s0, 3, f.s1, 3);
  link(f.s1, 2, f.h1, 1);
  link(f.s0, 4, f.h2, 1);
  link(f.h2, 2, f.s1, 4);
  b.setSmPort(f.h0, PortNum{1});
  f.topo = *std::move(b).build();
  return f;
}

fabric::DrPath path(std::initializer_list<uint8_t> hops) {
  fabric::DrPath p;
  for (uint8_t h : hops) p = *p.extended(h);
  return p;
}

// Sends one SMP straight to the fabric; nullopt when it is lost.
std::optional<MadPacket> ask(FakeFabric& f, MadPacket smp) {
  setTid(smp, 42);
  auto r = f.handle(smp);
  if (r.empty()) return std::nullopt;
  EXPECT_EQ(r.size(), 1u);
  return r.front();
}

uint16_t status(const MadPacket& m) {
  return parseHeader(m)->status;
}

MadPacket portInfoSet(FakeFabric& f, uint8_t port, const fabric::DrPath& route, const PortInfoSet& set) {
  // Start from what the port reports, as the Programmer does.
  auto cur = ask(f, makeDirectedSmp(kGet, kAttrPortInfo, port, route));
  EXPECT_TRUE(cur);
  MadPacket smp = makeDirectedSmp(kSet, kAttrPortInfo, port, route);
  std::copy_n(smpData(*cur), 64, smpData(smp));
  applyPortInfoSet(set, smpData(smp));
  return smp;
}

TEST(FakeFabric, DirectedRouteWalksFromTheSmPort) {
  Fabric fx = buildFabric();
  FakeFabric f(fx.topo);
  auto local = ask(f, makeDirectedSmp(kGet, kAttrNodeInfo, 0, path({})));
  ASSERT_TRUE(local);
  auto ni = decodeNodeInfo(smpData(*local));
  ASSERT_TRUE(ni);
  EXPECT_EQ(ni->nodeGuid, fabric::Guid{0x100000});
  EXPECT_EQ(ni->localPort, 1);
  EXPECT_EQ(ni->portGuid, fabric::Guid{0x100001});
  EXPECT_TRUE(parseHeader(*local)->direction);

  auto s1 = ask(f, makeDirectedSmp(kGet, kAttrNodeInfo, 0, path({1, 3})));
  ASSERT_TRUE(s1);
  ni = decodeNodeInfo(smpData(*s1));
  EXPECT_EQ(ni->nodeGuid, fabric::Guid{0x200001});
  EXPECT_EQ(ni->localPort, 3);  // came in over the parallel link
  EXPECT_EQ(ni->type, fabric::NodeType::kSwitch);

  auto h2 = ask(f, makeDirectedSmp(kGet, kAttrNodeInfo, 0, path({1, 2, 4})));
  ASSERT_TRUE(h2);
  ni = decodeNodeInfo(smpData(*h2));
  EXPECT_EQ(ni->localPort, 2);
  EXPECT_EQ(ni->portGuid, fabric::Guid{0x100022});

  auto desc = ask(f, makeDirectedSmp(kGet, kAttrNodeDescription, 0, path({1, 2})));
  ASSERT_TRUE(desc);
  EXPECT_EQ(decodeNodeDescription(smpData(*desc)), "s1");

  EXPECT_FALSE(ask(f, makeDirectedSmp(kGet, kAttrNodeInfo, 0, path({1, 4, 2}))));  // through the CA h2
  EXPECT_FALSE(ask(f, makeDirectedSmp(kGet, kAttrNodeInfo, 0, path({1, 5}))));     // unlinked port
  EXPECT_FALSE(ask(f, makeDirectedSmp(kGet, kAttrNodeInfo, 0, path({2}))));        // not the SM's port
  EXPECT_EQ(f.lost(), 3u);
  EXPECT_EQ(f.received(kAttrNodeInfo), 6u);

  ASSERT_TRUE(f.linkDown(fx.s0, PortNum{3}));
  EXPECT_FALSE(ask(f, makeDirectedSmp(kGet, kAttrNodeInfo, 0, path({1, 3}))));
  EXPECT_FALSE(f.linkDown(fx.s1, PortNum{3}));  // already down
  ASSERT_TRUE(f.linkUp(fx.s1, PortNum{3}));
  EXPECT_TRUE(ask(f, makeDirectedSmp(kGet, kAttrNodeInfo, 0, path({1, 3}))));
  EXPECT_FALSE(f.linkUp(fx.s0, PortNum{5}));  // no link in the topology
}

TEST(FakeFabric, BootsLikeIbsim) {
  Fabric fx = buildFabric();
  FakeFabric f(fx.topo);
  auto pi = ask(f, makeDirectedSmp(kGet, kAttrPortInfo, 2, path({1})));
  ASSERT_TRUE(pi);
  fabric::PortAttrs a = decodePortInfo(smpData(*pi));
  EXPECT_EQ(a.state, PortState::kInit);
  EXPECT_EQ(a.physState, 5);
  EXPECT_EQ(a.lid.value, 0);
  EXPECT_EQ(decodePortInfoLocalPort(smpData(*pi)), 1);
  EXPECT_EQ(f.portAttrs(fx.s0, PortNum{5}).state, PortState::kDown);
  EXPECT_EQ(f.portAttrs(fx.s0, PortNum{5}).physState, 2);
  auto si = ask(f, makeDirectedSmp(kGet, kAttrSwitchInfo, 0, path({1})));
  ASSERT_TRUE(si);
  fabric::SwitchAttrs s = decodeSwitchInfo(smpData(*si));
  EXPECT_EQ(s.linearFdbTop, 0);
  EXPECT_EQ(s.linearFdbCap, 0xC000);
  EXPECT_FALSE(s.portStateChange);
  // SwitchInfo on a CA is not supported; an attribute no SMA handles comes back with status 110.
  auto bad = ask(f, makeDirectedSmp(kGet, kAttrSwitchInfo, 0, path({})));
  ASSERT_TRUE(bad);
  EXPECT_EQ(status(*bad), 0x0C);
  auto sminfo = ask(f, makeDirectedSmp(kGet, kAttrSmInfo, 0, path({1})));
  ASSERT_TRUE(sminfo);
  EXPECT_EQ(sminfo->status, 110);
}

TEST(FakeFabric, PortStateRulesOfIbsim) {
  Fabric fx = buildFabric();
  FakeFabric f(fx.topo);
  const fabric::DrPath s0 = path({1}), s1 = path({1, 2});
  PortInfoSet active;
  active.state = 4;
  // INIT -> ACTIVE in one step is refused; a LID written alongside is kept anyway (CA port).
  PortInfoSet lidAndActive = active;
  lidAndActive.lid = 7;
  auto r = ask(f, portInfoSet(f, 1, path({}), lidAndActive));
  ASSERT_TRUE(r);
  EXPECT_EQ(status(*r), 0x1C);
  EXPECT_EQ(f.portAttrs(fx.h0, PortNum{1}).lid.value, 7);
  EXPECT_EQ(f.portAttrs(fx.h0, PortNum{1}).state, PortState::kInit);
  EXPECT_EQ(f.localPort().lid, 7);

  PortInfoSet armed;
  armed.state = 3;
  r = ask(f, portInfoSet(f, 2, s0, armed));
  EXPECT_EQ(status(*r), 0);
  EXPECT_EQ(f.portAttrs(fx.s0, PortNum{2}).state, PortState::kArmed);
  r = ask(f, portInfoSet(f, 2, s0, armed));  // the state it already has
  EXPECT_EQ(status(*r), 0x1C);
  r = ask(f, portInfoSet(f, 2, s0, active));  // the other end is still INIT
  EXPECT_EQ(status(*r), 0x1C);
  r = ask(f, portInfoSet(f, 1, s1, armed));
  EXPECT_EQ(status(*r), 0);
  r = ask(f, portInfoSet(f, 2, s0, active));
  EXPECT_EQ(status(*r), 0);
  EXPECT_EQ(f.portAttrs(fx.s0, PortNum{2}).state, PortState::kActive);
  r = ask(f, portInfoSet(f, 1, s1, active));  // peer ACTIVE is fine
  EXPECT_EQ(status(*r), 0);

  r = ask(f, portInfoSet(f, 0, s0, armed));  // switch port 0 has no link state
  EXPECT_EQ(status(*r), 0x1C);
  r = ask(f, portInfoSet(f, 5, s0, armed));  // no link
  EXPECT_EQ(status(*r), 0x1C);

  // h2's port 1 set through its port 2 (route 0,1,2,4 enters at port 2): refused, nothing written.
  PortInfoSet lid;
  lid.lid = 9;
  const fabric::DrPath viaPort2 = path({1, 2, 4});
  r = ask(f, portInfoSet(f, 1, viaPort2, lid));
  ASSERT_TRUE(r);
  EXPECT_EQ(status(*r), 0x1C);
  EXPECT_EQ(f.portAttrs(fx.h2, PortNum{1}).lid.value, 0);
  r = ask(f, portInfoSet(f, 2, viaPort2, lid));
  EXPECT_EQ(status(*r), 0);
  EXPECT_EQ(f.portAttrs(fx.h2, PortNum{2}).lid.value, 9);
}

TEST(FakeFabric, SwitchInfoAndLftBlocks) {
  Fabric fx = buildFabric();
  FakeFabric f(fx.topo);
  auto cur = ask(f, makeDirectedSmp(kGet, kAttrSwitchInfo, 0, path({1})));
  MadPacket set = makeDirectedSmp(kSet, kAttrSwitchInfo, 0, path({1}));
  std::copy_n(smpData(*cur), 64, smpData(set));
  mad_set_field(smpData(set), 0, IB_SW_LINEAR_FDB_TOP_F, 130);
  mad_set_field(smpData(set), 0, IB_SW_LIFE_TIME_F, 18);
  ASSERT_TRUE(f.linkDown(fx.s0, PortNum{3}));
  EXPECT_TRUE(f.switchAttrs(fx.s0).portStateChange);
  EXPECT_TRUE(f.switchAttrs(fx.s1).portStateChange);
  mad_set_field(smpData(set), 0, IB_SW_STATE_CHANGE_F, 1);
  auto r = ask(f, set);
  ASSERT_TRUE(r);
  EXPECT_EQ(status(*r), 0);
  fabric::SwitchAttrs s = f.switchAttrs(fx.s0);
  EXPECT_EQ(s.linearFdbTop, 130);
  EXPECT_EQ(s.lifeTime, 18);
  EXPECT_FALSE(s.portStateChange);  // write 1 to clear
  EXPECT_TRUE(f.switchAttrs(fx.s1).portStateChange);

  uint8_t block[64];
  for (int i = 0; i < 64; ++i) block[i] = static_cast<uint8_t>(i % 6);
  MadPacket lft = makeDirectedSmp(kSet, kAttrLft, 2, path({1}));
  mad_set_array(smpData(lft), 0, IB_LINEAR_FORW_TBL_F, block);
  r = ask(f, lft);
  EXPECT_EQ(status(*r), 0);
  EXPECT_EQ(f.lftPort(fx.s0, 128 + 5), 5);
  EXPECT_EQ(f.lftPort(fx.s0, 5), 0xFF);
  auto back = ask(f, makeDirectedSmp(kGet, kAttrLft, 2, path({1})));
  uint8_t got[64];
  mad_get_array(smpData(*back), 0, IB_LINEAR_FORW_TBL_F, got);
  EXPECT_TRUE(std::equal(block, block + 64, got));
  EXPECT_EQ(f.lft(fx.s0).size(), 131u);
  auto past = ask(f, makeDirectedSmp(kGet, kAttrLft, 0xC000 / 64, path({1})));
  EXPECT_EQ(status(*past), 0x1C);
}

// Brings the test fabric up by hand: LIDs h0 1, s0 2, s1 3, h1 4, h2 5/6, SM LID 1, LFTs over the first
// links, every linked port ACTIVE.
void bringUp(FakeFabric& f, const Fabric& fx) {
  struct Ep {
    NodeIndex n;
    uint8_t port;
    fabric::DrPath route;
    uint16_t lid;
  };
  for (const Ep& e :
       {Ep{fx.h0, 1, path({}), 1}, Ep{fx.s0, 0, path({1}), 2}, Ep{fx.s1, 0, path({1, 2}), 3},
        Ep{fx.h1, 1, path({1, 2, 2}), 4}, Ep{fx.h2, 1, path({1, 4}), 5}, Ep{fx.h2, 2, path({1, 2, 4}), 6}}) {
    PortInfoSet s;
    s.lid = e.lid;
    s.smLid = 1;
    auto r = ask(f, portInfoSet(f, e.port, e.route, s));
    ASSERT_TRUE(r);
    ASSERT_EQ(status(*r), 0);
  }
  auto program = [&](const fabric::DrPath& route, std::vector<uint8_t> ports) {
    auto cur = ask(f, makeDirectedSmp(kGet, kAttrSwitchInfo, 0, route));
    MadPacket si = makeDirectedSmp(kSet, kAttrSwitchInfo, 0, route);
    std::copy_n(smpData(*cur), 64, smpData(si));
    mad_set_field(smpData(si), 0, IB_SW_LINEAR_FDB_TOP_F, 6);
    ASSERT_EQ(status(*ask(f, si)), 0);
    uint8_t block[64];
    std::fill(block, block + 64, 0xFF);
    std::copy(ports.begin(), ports.end(), block);
    MadPacket lft = makeDirectedSmp(kSet, kAttrLft, 0, route);
    mad_set_array(smpData(lft), 0, IB_LINEAR_FORW_TBL_F, block);
    ASSERT_EQ(status(*ask(f, lft)), 0);
  };
  program(path({1}), {0xFF, 1, 0, 2, 2, 4, 2});
  program(path({1, 2}), {0xFF, 1, 1, 0, 2, 4, 4});
  const std::pair<NodeIndex, fabric::DrPath> nodes[] = {{fx.h0, path({})},
                                                        {fx.s0, path({1})},
                                                        {fx.s1, path({1, 2})},
                                                        {fx.h1, path({1, 2, 2})},
                                                        {fx.h2, path({1, 4})}};
  for (uint8_t want : {3, 4})
    for (const auto& [n, route] : nodes)
      for (unsigned p = 1; p <= fx.topo->node(n).numPorts; ++p) {
        if (!fx.topo->node(n).ports[p].connected()) continue;
        fabric::DrPath r = route;
        if (n == fx.h2 && p == 2) r = path({1, 2, 4});
        PortInfoSet s;
        s.state = want;
        auto res = ask(f, portInfoSet(f, static_cast<uint8_t>(p), r, s));
        ASSERT_TRUE(res);
        ASSERT_EQ(status(*res), 0) << fx.topo->node(n).description << " port " << p << " -> " << int(want);
      }
}

TEST(FakeFabric, LidRoutedSmpsFollowTheLfts) {
  Fabric fx = buildFabric();
  FakeFabric f(fx.topo);
  EXPECT_FALSE(ask(f, makeLidRoutedSmp(kGet, kAttrNodeInfo, 0, 4)));  // no LIDs yet
  bringUp(f, fx);
  auto h1 = ask(f, makeLidRoutedSmp(kGet, kAttrNodeInfo, 0, 4));
  ASSERT_TRUE(h1);
  EXPECT_EQ(decodeNodeInfo(smpData(*h1))->nodeGuid, fabric::Guid{0x100010});
  auto s1 = ask(f, makeLidRoutedSmp(kGet, kAttrNodeInfo, 0, 3));
  ASSERT_TRUE(s1);
  EXPECT_EQ(decodeNodeInfo(smpData(*s1))->localPort, 1);
  auto h2b = ask(f, makeLidRoutedSmp(kGet, kAttrNodeInfo, 0, 6));  // via s1 port 4
  ASSERT_TRUE(h2b);
  EXPECT_EQ(decodeNodeInfo(smpData(*h2b))->localPort, 2);
  EXPECT_FALSE(ask(f, makeLidRoutedSmp(kGet, kAttrNodeInfo, 0, 7)));  // past LinearFDBTop
  ASSERT_TRUE(f.linkDown(fx.s0, PortNum{2}));
  EXPECT_FALSE(ask(f, makeLidRoutedSmp(kGet, kAttrNodeInfo, 0, 4)));  // the LFT points at a dead link
  EXPECT_TRUE(ask(f, makeLidRoutedSmp(kGet, kAttrNodeInfo, 0, 5)));
}

TEST(FakeFabric, LinkChangesSendTrap128FromSwitchesWithLids) {
  Fabric fx = buildFabric();
  {
    FakeFabric f(fx.topo);
    ASSERT_TRUE(f.linkDown(fx.s1, PortNum{2}));
    EXPECT_EQ(f.trapsSent(), 0u);  // no LID, no SM LID yet
    EXPECT_TRUE(f.takeTraps().empty());
  }
  FakeFabric f(fx.topo);
  bringUp(f, fx);
  FakeClock clock;
  FakeMadPort port(clock);
  f.attach(port);
  EXPECT_EQ(port.localPort().lid, 1);
  ASSERT_TRUE(f.linkDown(fx.s1, PortNum{2}));  // s1 - h1: one switch end
  auto trap = port.receive(0ms);
  ASSERT_TRUE(trap);
  EXPECT_FALSE(port.receive(0ms));
  auto h = parseHeader(*trap);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->mgmtClass, kClassSmiLid);
  EXPECT_EQ(h->method, kTrap);
  EXPECT_EQ(h->attrId, kAttrNotice);
  EXPECT_EQ(h->tid, 0u);
  uint8_t* d = smpData(*trap);
  EXPECT_EQ(mad_get_field(d, 0, IB_NOTICE_IS_GENERIC_F), 1u);
  EXPECT_EQ(mad_get_field(d, 0, IB_NOTICE_TRAP_NUMBER_F), 128u);
  EXPECT_EQ(mad_get_field(d, 0, IB_NOTICE_PRODUCER_F), 2u);
  EXPECT_EQ(mad_get_field(d, 0, IB_NOTICE_DATA_LID_F), 3u);
  EXPECT_EQ(trap->addr.lid, 3);
  EXPECT_TRUE(f.switchAttrs(fx.s1).portStateChange);
  EXPECT_FALSE(f.switchAttrs(fx.s0).portStateChange);

  // Taking the s0 - s1 link down: s0's trap reaches the SM, s1's route to LID 1 used that link: lost.
  ASSERT_TRUE(f.linkDown(fx.s0, PortNum{2}));
  trap = port.receive(0ms);
  ASSERT_TRUE(trap);
  EXPECT_EQ(mad_get_field(smpData(*trap), 0, IB_NOTICE_DATA_LID_F), 2u);
  EXPECT_FALSE(port.receive(0ms));
  EXPECT_EQ(f.trapsSent(), 2u);
  EXPECT_EQ(f.trapsLost(), 1u);
}

TEST(FakeFabric, IgnoresMkeyLikeIbsimUnlessEnforced) {
  Fabric fx = buildFabric();
  FakeFabric f(fx.topo);
  PortInfoSet s;
  s.mkey = MkeyInfo{0x1234, 2, 60};
  auto r = ask(f, portInfoSet(f, 1, path({1, 2, 2}), s));  // h1
  ASSERT_TRUE(r);
  EXPECT_EQ(status(*r), 0);
  EXPECT_EQ(decodePortInfoMkeyInfo(smpData(*r)), MkeyInfo{});  // dropped, as ibsim does
  EXPECT_EQ(f.portMkey(fx.h1, PortNum{1}), MkeyInfo{});
  EXPECT_TRUE(ask(f, portInfoSet(f, 1, path({1, 2, 2}), PortInfoSet{})));  // and never checked
  EXPECT_EQ(f.mkeyViolations(), 0u);
}

TEST(FakeFabric, EnforcesMkeyAsIbaSays) {
  Fabric fx = buildFabric();
  FakeFabricOptions o;
  o.enforceMkey = true;
  FakeFabric f(fx.topo, o);
  bringUp(f, fx);  // LIDs and SM LID, so Trap 256 can reach the SM
  FakeClock clock;
  FakeMadPort port(clock);
  f.attach(port);
  const fabric::DrPath toS1 = path({1, 2}), toH1 = path({1, 2, 2});
  constexpr uint64_t kKey = 0xfeedface;
  auto keyed = [](MadPacket m, uint64_t key) {
    setMadMkey(m, key);
    return m;
  };
  // A Set with the M_Key fields, on a port that has none yet: kept.
  PortInfoSet s;
  s.mkey = MkeyInfo{kKey, 0, 60};
  auto r = ask(f, portInfoSet(f, 0, toS1, s));
  ASSERT_TRUE(r);
  EXPECT_EQ(decodePortInfoMkeyInfo(smpData(*r)), (MkeyInfo{kKey, 0, 60}));
  EXPECT_EQ(f.portMkey(fx.s1, PortNum{0}), (MkeyInfo{kKey, 0, 60}));
  EXPECT_EQ(f.portMkey(fx.s1, PortNum{3}), (MkeyInfo{kKey, 0, 60}));  // a switch has one, port 0's

  // Protect bits 0: Gets pass with any key and show it; Sets need it (any attribute).
  MadPacket get = makeDirectedSmp(kGet, kAttrPortInfo, 0, toS1);
  r = ask(f, get);
  ASSERT_TRUE(r);
  EXPECT_EQ(decodePortInfoMkey(smpData(*r)), kKey);
  EXPECT_FALSE(ask(f, makeDirectedSmp(kSet, kAttrSwitchInfo, 0, toS1)));
  EXPECT_FALSE(ask(f, keyed(makeDirectedSmp(kSet, kAttrLft, 0, toS1), 0x1)));
  EXPECT_TRUE(ask(f, keyed(makeDirectedSmp(kSet, kAttrLft, 0, toS1), kKey)));
  EXPECT_EQ(f.mkeyViolations(), 2u);
  MadPacket viol = *ask(f, get);
  EXPECT_EQ(mad_get_field(smpData(viol), 0, IB_PORT_MKEY_VIOL_F), 2u);
  // Each violation sent Trap 256 to the SM: from s1 (LID 3), about the SM's LID, with what was tried.
  for (uint64_t tried : {0ull, 1ull}) {
    auto trap = port.receive(0ms);
    ASSERT_TRUE(trap);
    auto n = decodeNotice(*trap);
    ASSERT_TRUE(n) << n.error().message;
    EXPECT_EQ(n->trapNumber, 256);
    EXPECT_EQ(n->type, 2);  // security
    EXPECT_EQ(n->issuerLid, 3);
    EXPECT_EQ(n->lidAddr, 1);
    const uint8_t* d = smpData(*trap);
    EXPECT_EQ(d[14], kSet);
    uint64_t key = 0;
    for (int i = 0; i < 8; ++i) key = key << 8 | d[22 + i];
    EXPECT_EQ(key, tried);
  }
  EXPECT_FALSE(port.receive(0ms));

  // Protect bits 1: Gets without the key pass but read the M_Key as 0; with it, the key.
  s.mkey = MkeyInfo{kKey, 1, 60};
  ASSERT_TRUE(ask(f, keyed(portInfoSet(f, 1, toH1, s), kKey)));
  EXPECT_EQ(decodePortInfoMkey(smpData(*ask(f, makeDirectedSmp(kGet, kAttrPortInfo, 1, toH1)))), 0u);
  EXPECT_EQ(decodePortInfoMkey(smpData(*ask(f, keyed(makeDirectedSmp(kGet, kAttrPortInfo, 1, toH1), kKey)))),
            kKey);
  // Protect bits 2: no Get without the key either.
  f.setPortMkey(fx.h1, PortNum{1}, MkeyInfo{kKey, 2, 0});
  EXPECT_FALSE(ask(f, makeDirectedSmp(kGet, kAttrNodeInfo, 0, toH1)));
  EXPECT_TRUE(ask(f, keyed(makeDirectedSmp(kGet, kAttrNodeInfo, 0, toH1), kKey)));
  // Other ports are not affected.
  EXPECT_TRUE(ask(f, makeDirectedSmp(kGet, kAttrNodeInfo, 0, path({1, 4}))));
  EXPECT_EQ(f.mkeyViolations(), 3u);
}

TEST(FakeFabric, DropRateIsDeterministic) {
  Fabric fx = buildFabric();
  auto run = [&](uint64_t seed) {
    FakeFabric f(fx.topo);
    f.setDropRate(0.2, seed);
    std::vector<bool> answered;
    for (int i = 0; i < 1000; ++i)
      answered.push_back(ask(f, makeDirectedSmp(kGet, kAttrNodeInfo, 0, path({1}))).has_value());
    EXPECT_EQ(f.droppedByRate(), f.lost());
    return answered;
  };
  auto a = run(5), b = run(5);
  EXPECT_EQ(a, b);
  long lost = std::count(a.begin(), a.end(), false);
  EXPECT_GT(lost, 150);
  EXPECT_LT(lost, 250);
}

TEST(FakeFabric, GarbageNodeInfoDoesNotDecode) {
  Fabric fx = buildFabric();
  FakeFabric f(fx.topo);
  f.setGarbageNodeInfo(fx.s1);
  auto r = ask(f, makeDirectedSmp(kGet, kAttrNodeInfo, 0, path({1, 2})));
  ASSERT_TRUE(r);
  EXPECT_FALSE(decodeNodeInfo(smpData(*r)));
}

TEST(FakeFabric, AdaptiveRoutingAttributes) {
  Fabric fx = buildFabric();
  FakeFabric f(fx.topo);
  // Without AR the switch drops the MAD at once (status 110), as ibsim does; a silent one never answers.
  auto r = ask(f, makeDirectedSmp(kGet, kAttrArInfo, 0, path({1})));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 110);
  f.setArMode(fx.s1, FakeArMode::kSilent);
  EXPECT_FALSE(ask(f, makeDirectedSmp(kGet, kAttrArInfo, 0, path({1, 2}))));

  f.setArMode(fx.s0, FakeArMode::kImplemented, FakeArCaps{64});
  r = ask(f, makeDirectedSmp(kGet, kAttrArInfo, 0, path({1})));
  ASSERT_TRUE(r);
  EXPECT_EQ(status(*r), 0);
  auto info = decodeArInfo(smpData(*r));
  ASSERT_TRUE(info);
  EXPECT_EQ(info->groupCap, 64);
  EXPECT_FALSE(info->enabled);

  ArGroupBlock g;
  g.groups[0].set(2).set(3);
  g.groups[1].set(4);
  MadPacket gs = makeDirectedSmp(kSet, kAttrArGroupTable, arGroupTableAttrMod(1), path({1}));
  encodeArGroupBlock(g, smpData(gs));
  r = ask(f, gs);
  EXPECT_EQ(status(*r), 0);
  EXPECT_EQ(f.arGroup(fx.s0, 2), g.groups[0]);
  EXPECT_EQ(f.arGroup(fx.s0, 3), g.groups[1]);
  EXPECT_EQ(decodeArGroupBlock(smpData(*ask(f, makeDirectedSmp(kGet, kAttrArGroupTable, 1, path({1}))))), g);
  EXPECT_EQ(status(*ask(f, makeDirectedSmp(kGet, kAttrArGroupTable, 32, path({1})))), 0x1C);  // past the cap

  ArLftBlock l;
  l[3] = ArLftEntry{2, 3, 0, ArLidState::kBounded};
  MadPacket ls = makeDirectedSmp(kSet, kAttrArLft, arLftAttrMod(1), path({1}));
  encodeArLftBlock(l, smpData(ls));
  EXPECT_EQ(status(*ask(f, ls)), 0);
  EXPECT_EQ(f.arLft(fx.s0, 19), l[3]);
  l[4] = ArLftEntry{64, 3, 0, ArLidState::kBounded};  // group past the cap
  encodeArLftBlock(l, smpData(ls));
  EXPECT_EQ(status(*ask(f, ls)), 0x1C);

  f.rejectArBlock(fx.s0, kAttrArGroupTable, 1);
  EXPECT_EQ(status(*ask(f, gs)), 0x1C);
  f.rejectArBlock(fx.s0, kAttrArGroupTable, 1, false);
  EXPECT_EQ(status(*ask(f, gs)), 0);

  ArInfo want = *info;
  want.enabled = true;
  want.groupTop = 3;
  want.ageingTimeUs = 30;
  want.groupCap = 4000;  // read-only: ignored
  MadPacket is = makeDirectedSmp(kSet, kAttrArInfo, 0, path({1}));
  encodeArInfo(want, smpData(is));
  EXPECT_EQ(status(*ask(f, is)), 0);
  EXPECT_TRUE(f.arInfo(fx.s0).enabled);
  EXPECT_EQ(f.arInfo(fx.s0).groupCap, 64);
  EXPECT_EQ(f.arInfo(fx.s0).ageingTimeUs, 30u);

  // A plain LFT Set turns AR off (no_fallback = 0).
  EXPECT_EQ(status(*ask(f, makeDirectedSmp(kSet, kAttrLft, 0, path({1})))), 0);
  EXPECT_FALSE(f.arInfo(fx.s0).enabled);
  EXPECT_EQ(f.receivedSets(kAttrArGroupTable), 3u);
  EXPECT_EQ(f.received(kAttrArInfo), 4u);
  ASSERT_FALSE(f.log().empty());
  EXPECT_EQ(f.log().back().attrId, kAttrLft);
}

TEST(FakeFabric, EngineOverrideGivesASilentSwitchOneShortAttempt) {
  Fabric fx = buildFabric();
  FakeFabric f(fx.topo);
  f.setArMode(fx.s0, FakeArMode::kSilent);
  FakeClock clock;
  FakeMadPort port(clock);
  f.attach(port);
  MadEngine engine(port, clock, MadEngineOptions{8, 100ms, 3});
  MadResult result;
  engine.submit(
      makeDirectedSmp(kGet, kAttrArInfo, 0, path({1})), [&](const MadResult& r) { result = r; },
      RequestOptions{5ms, 0});
  bool normalOk = false;
  engine.submit(makeDirectedSmp(kGet, kAttrNodeInfo, 0, path({1})),
                [&](const MadResult& r) { normalOk = r.ok(); });
  auto t0 = clock.now();
  engine.runUntilIdle();
  EXPECT_EQ(result.status, MadStatus::kTimeout);
  EXPECT_EQ(result.attempts, 1u);
  EXPECT_TRUE(normalOk);
  EXPECT_EQ(clock.now() - t0, 5ms);
  EXPECT_EQ(engine.counters().timeouts, 1u);
  EXPECT_EQ(engine.counters().retries, 0u);
}

}  // namespace
}  // namespace ibsm::mad
