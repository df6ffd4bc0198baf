#include "routing/lid_assignment.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "tests/routing/fabric_sketch.h"

namespace ibsm::routing {
namespace {

using fabric::TopologyPtr;
using testing::FabricSketch;

// Every endport has a LID range, ranges are aligned, disjoint, below 0xC000, and owner() agrees.
void expectConsistent(const fabric::Topology& topo, const LidAssignment& lids, uint8_t lmc) {
  std::set<uint16_t> seen;
  for (NodeIndex i = 0; i < topo.size(); ++i) {
    const auto& n = topo.node(i);
    std::vector<unsigned> ports;
    if (n.isSwitch())
      ports.push_back(0);
    else
      for (unsigned p = 1; p <= n.numPorts; ++p)
        if (n.ports[p].connected()) ports.push_back(p);
    for (unsigned p : ports) {
      LidRange r = lids.range(i, PortNum{static_cast<uint8_t>(p)});
      ASSERT_NE(r.base.value, 0) << n.description << " port " << p;
      uint8_t want = n.isSwitch() && !n.sw.enhancedPort0 ? 0 : lmc;
      EXPECT_EQ(r.lmc, want) << n.description;
      EXPECT_EQ(r.base.value % r.count(), 0) << n.description;
      EXPECT_LE(r.base.value + r.count() - 1, fabric::kMaxUnicastLid);
      for (unsigned l = r.base.value; l < r.base.value + r.count(); ++l) {
        EXPECT_TRUE(seen.insert(static_cast<uint16_t>(l)).second) << "duplicate LID " << l;
        LidOwner o = lids.owner(Lid{static_cast<uint16_t>(l)});
        EXPECT_EQ(o.node, i);
        EXPECT_EQ(o.port.value, p);
      }
    }
  }
  EXPECT_EQ(lids.maxLid().value, seen.empty() ? 0 : *seen.rbegin());
}

//   ca0 --- sw0 --- sw1 --- ca1
//            |
//           ca2 (2 ports, both to sw0)
struct Small {
  TopologyPtr topo;
  NodeIndex sw0, sw1, ca0, ca1, ca2;
};
Small makeSmall(bool enhanced = false) {
  FabricSketch f;
  Small s;
  s.sw0 = f.addSwitch("sw0", 8, enhanced);
  s.sw1 = f.addSwitch("sw1", 8);
  s.ca0 = f.addCa("ca0");
  s.ca1 = f.addCa("ca1");
  s.ca2 = f.addCa("ca2", 2);
  f.link(s.sw0, 1, s.sw1, 1);
  f.link(s.ca0, 1, s.sw0, 2);
  f.link(s.ca1, 1, s.sw1, 2);
  f.link(s.ca2, 1, s.sw0, 3);
  f.link(s.ca2, 2, s.sw0, 4);
  s.topo = f.build();
  return s;
}

TEST(LidAssignment, FreshFabricGetsDenseUniqueLids) {
  Small s = makeSmall();
  auto r = assignLids(*s.topo, {}, 0);
  ASSERT_TRUE(r.ok()) << r.error().message;
  expectConsistent(*s.topo, r->lids, 0);
  // 2 switches + 4 CA ports; switches first by GUID.
  EXPECT_EQ(r->lids.maxLid().value, 6);
  EXPECT_EQ(r->lids.base(s.sw0, PortNum{0}).value, 1);
  EXPECT_EQ(r->lids.base(s.sw1, PortNum{0}).value, 2);
  EXPECT_EQ(r->guid2lid.size(), 6u);
  EXPECT_EQ(r->changed, 6u);
  EXPECT_TRUE(r->warnings.empty());
}

TEST(LidAssignment, LmcRangesAreAlignedAndSwitchPort0GetsOneLid) {
  for (uint8_t lmc = 0; lmc <= 7; ++lmc) {
    Small s = makeSmall();
    auto r = assignLids(*s.topo, {}, lmc);
    ASSERT_TRUE(r.ok()) << r.error().message;
    expectConsistent(*s.topo, r->lids, lmc);
    EXPECT_EQ(r->lids.lmc(), lmc);
    EXPECT_EQ(r->lids.range(s.sw0, PortNum{0}).count(), 1);
    EXPECT_EQ(r->lids.range(s.ca2, PortNum{2}).count(), 1u << lmc);
  }
}

TEST(LidAssignment, EnhancedPort0SwitchGetsFullRange) {
  Small s = makeSmall(/*enhanced=*/true);
  auto r = assignLids(*s.topo, {}, 2);
  ASSERT_TRUE(r.ok());
  expectConsistent(*s.topo, r->lids, 2);
  EXPECT_EQ(r->lids.range(s.sw0, PortNum{0}).count(), 4);
  EXPECT_EQ(r->lids.range(s.sw1, PortNum{0}).count(), 1);
}

TEST(LidAssignment, PersistentLidsAreKeptAndRoundTrip) {
  Small s = makeSmall();
  Guid2Lid persistent;
  Guid ca1Port = s.topo->node(s.ca1).ports[1].guid;
  persistent[ca1Port] = LidRange{Lid{40}, 0};
  persistent[s.topo->node(s.sw1).guid] = LidRange{Lid{7}, 0};
  auto r = assignLids(*s.topo, persistent, 0);
  ASSERT_TRUE(r.ok());
  expectConsistent(*s.topo, r->lids, 0);
  EXPECT_EQ(r->lids.base(s.ca1, PortNum{1}).value, 40);
  EXPECT_EQ(r->lids.base(s.sw1, PortNum{0}).value, 7);
  EXPECT_EQ(r->lids.base(s.sw0, PortNum{0}).value, 1);
  // Running again with the written-back map gives the same LIDs.
  auto again = assignLids(*s.topo, r->guid2lid, 0);
  ASSERT_TRUE(again.ok());
  for (NodeIndex i = 0; i < s.topo->size(); ++i)
    for (unsigned p = 0; p <= s.topo->node(i).numPorts; ++p)
      EXPECT_EQ(again->lids.range(i, PortNum{static_cast<uint8_t>(p)}),
                r->lids.range(i, PortNum{static_cast<uint8_t>(p)}));
  EXPECT_EQ(again->guid2lid, r->guid2lid);
}

TEST(LidAssignment, PersistentClashIsReassignedWithWarning) {
  Small s = makeSmall();
  Guid2Lid persistent;
  Guid a = s.topo->node(s.ca0).ports[1].guid;
  Guid b = s.topo->node(s.ca1).ports[1].guid;
  // LMC 1: a holds 8-9; b's range 9 is not aligned, and 8 would clash.
  persistent[a] = LidRange{Lid{8}, 1};
  persistent[b] = LidRange{Lid{8}, 1};
  auto r = assignLids(*s.topo, persistent, 1);
  ASSERT_TRUE(r.ok());
  expectConsistent(*s.topo, r->lids, 1);
  EXPECT_EQ(r->lids.base(s.ca0, PortNum{1}).value, 8);  // lower GUID wins
  EXPECT_NE(r->lids.base(s.ca1, PortNum{1}).value, 8);
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_NE(r->warnings[0].find("clashes"), std::string::npos) << r->warnings[0];
}

TEST(LidAssignment, PersistentLidMisalignedForNewLmcIsReassigned) {
  Small s = makeSmall();
  Guid a = s.topo->node(s.ca0).ports[1].guid;
  auto r = assignLids(*s.topo, {{a, LidRange{Lid{5}, 0}}}, 2);
  ASSERT_TRUE(r.ok());
  expectConsistent(*s.topo, r->lids, 2);
  EXPECT_NE(r->lids.base(s.ca0, PortNum{1}).value, 5);
  EXPECT_EQ(r->warnings.size(), 1u);
}

TEST(LidAssignment, AbsentPortsStayReserved) {
  Small s = makeSmall();
  Guid gone{0xdead0001};
  Guid2Lid persistent{{gone, LidRange{Lid{1}, 0}}, {Guid{0xdead0002}, LidRange{Lid{4}, 2}}};
  auto r = assignLids(*s.topo, persistent, 0);
  ASSERT_TRUE(r.ok());
  expectConsistent(*s.topo, r->lids, 0);
  for (unsigned l : {1u, 4u, 5u, 6u, 7u})
    EXPECT_EQ(r->lids.owner(Lid{static_cast<uint16_t>(l)}).node, fabric::kNoNode);
  EXPECT_EQ(r->lids.base(s.sw0, PortNum{0}).value, 2);
  ASSERT_TRUE(r->guid2lid.count(gone));
  EXPECT_EQ(r->guid2lid.at(gone), (LidRange{Lid{1}, 0}));
  EXPECT_EQ(r->guid2lid.size(), 8u);
}

TEST(LidAssignment, CurrentLidsAreKeptAndClashesResolved) {
  FabricSketch f;
  //   ca0 --- sw0 --- ca1        ca0 and ca1 both claim LID 9
  NodeIndex sw = f.addSwitch("sw0", 4);
  NodeIndex c0 = f.addCa("ca0"), c1 = f.addCa("ca1");
  f.link(c0, 1, sw, 1);
  f.link(c1, 1, sw, 2);
  f.node(sw).ports[0].attrs.lid = Lid{3};
  f.node(c0).ports[1].attrs.lid = Lid{9};
  f.node(c1).ports[1].attrs.lid = Lid{9};
  auto topo = f.build();
  auto r = assignLids(*topo, {}, 0);
  ASSERT_TRUE(r.ok());
  expectConsistent(*topo, r->lids, 0);
  EXPECT_EQ(r->lids.base(sw, PortNum{0}).value, 3);
  EXPECT_EQ(r->lids.base(c0, PortNum{1}).value, 9);
  EXPECT_EQ(r->lids.base(c1, PortNum{1}).value, 1);
  EXPECT_EQ(r->changed, 1u);
  EXPECT_EQ(r->warnings.size(), 1u);
}

TEST(LidAssignment, UnchangedFabricReportsNoChanges) {
  Small s = makeSmall();
  auto r = assignLids(*s.topo, {}, 1);
  ASSERT_TRUE(r.ok());
  // Rebuild the fabric with the assigned LIDs programmed into PortInfo.
  fabric::TopologyBuilder b;
  for (NodeIndex i = 0; i < s.topo->size(); ++i) {
    fabric::Node n = s.topo->node(i);
    for (auto& p : n.ports) {
      p.peerNode = fabric::kNoNode;
      LidRange lr = r->lids.range(i, p.num);
      p.attrs.lid = lr.base;
      p.attrs.lmc = n.isSwitch() ? 0 : 1;
    }
    ASSERT_TRUE(b.addNode(n).ok());
  }
  for (const auto& l : s.topo->links()) ASSERT_TRUE(b.connect(l.a, l.portA, l.b, l.portB).ok());
  auto topo2 = std::move(b).build();
  ASSERT_TRUE(topo2.ok());
  auto r2 = assignLids(**topo2, {}, 1);
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(r2->changed, 0u);
  EXPECT_EQ(r2->guid2lid, r->guid2lid);
  // fromTopology reads the same ranges back.
  LidAssignment back = LidAssignment::fromTopology(**topo2);
  EXPECT_EQ(back.lmc(), 1);
  for (NodeIndex i = 0; i < s.topo->size(); ++i)
    for (unsigned p = 0; p <= s.topo->node(i).numPorts; ++p)
      EXPECT_EQ(back.range(i, PortNum{static_cast<uint8_t>(p)}),
                r->lids.range(i, PortNum{static_cast<uint8_t>(p)}));
}

TEST(LidAssignment, OrderOfNodesDoesNotMatter) {
  // The same fabric built twice with nodes in opposite order gets the same LIDs per port GUID.
  auto build = [](bool reversed) {
    fabric::TopologyBuilder b;
    std::vector<fabric::Node> nodes;
    for (unsigned i = 0; i < 3; ++i) {
      fabric::Node n;
      n.type = fabric::NodeType::kSwitch;
      n.guid = Guid{0x100u + i};
      n.numPorts = 8;
      nodes.push_back(n);
    }
    for (unsigned i = 0; i < 6; ++i) {
      fabric::Node n;
      n.type = fabric::NodeType::kCa;
      n.guid = Guid{0x900u - 0x10u * i};
      n.numPorts = 1;
      n.ports.resize(2);
      n.ports[1].num = PortNum{1};
      n.ports[1].guid = Guid{n.guid.value + 1};
      nodes.push_back(n);
    }
    if (reversed) std::reverse(nodes.begin(), nodes.end());
    for (auto& n : nodes) EXPECT_TRUE(b.addNode(n).ok());
    auto idx = [&](uint64_t g) { return *b.findNode(Guid{g}); };
    EXPECT_TRUE(b.connect(idx(0x100), PortNum{1}, idx(0x101), PortNum{1}).ok());
    EXPECT_TRUE(b.connect(idx(0x101), PortNum{2}, idx(0x102), PortNum{1}).ok());
    for (unsigned i = 0; i < 6; ++i)
      EXPECT_TRUE(b.connect(idx(0x900 - 0x10 * i), PortNum{1}, idx(0x100 + i % 3),
                            PortNum{static_cast<uint8_t>(3 + i)})
                      .ok());
    return *std::move(b).build();
  };
  auto t1 = build(false), t2 = build(true);
  auto r1 = assignLids(*t1, {}, 0), r2 = assignLids(*t2, {}, 0);
  ASSERT_TRUE(r1.ok() && r2.ok());
  EXPECT_EQ(r1->guid2lid, r2->guid2lid);
}

TEST(LidAssignment, ExhaustionFails) {
  // Absent ports reserve every 128-aligned range, so a CA needing 128 LIDs (LMC 7) finds none; the switch's
  // single LID still fits below 128.
  Guid2Lid persistent;
  for (unsigned k = 1; k * 128 + 127 <= fabric::kMaxUnicastLid; ++k)
    persistent[Guid{0xabc00000u + k}] = LidRange{Lid{static_cast<uint16_t>(k * 128)}, 7};
  Small s = makeSmall();
  auto r = assignLids(*s.topo, persistent, 7);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("exhausted"), std::string::npos) << r.error().message;
  // With LMC 0 everything fits into 1..127.
  auto r0 = assignLids(*s.topo, persistent, 0);
  ASSERT_TRUE(r0.ok()) << r0.error().message;
  expectConsistent(*s.topo, r0->lids, 0);
  EXPECT_LT(r0->lids.maxLid().value, 128);
}

TEST(LidAssignment, LmcOutOfRangeFails) {
  Small s = makeSmall();
  EXPECT_FALSE(assignLids(*s.topo, {}, 8).ok());
}

TEST(LidAssignment, SetEvictsOverlappingOwner) {
  Small s = makeSmall();
  LidAssignment a(*s.topo);
  EXPECT_EQ(a.maxLid().value, 0);
  a.set(s.ca0, PortNum{1}, LidRange{Lid{4}, 2});
  EXPECT_EQ(a.maxLid().value, 7);
  a.set(s.ca1, PortNum{1}, LidRange{Lid{6}, 0});
  EXPECT_EQ(a.base(s.ca0, PortNum{1}).value, 0);  // lost its whole range
  EXPECT_EQ(a.owner(Lid{4}).node, fabric::kNoNode);
  EXPECT_EQ(a.owner(Lid{6}).node, s.ca1);
  EXPECT_EQ(a.maxLid().value, 6);
  a.set(s.ca1, PortNum{1}, {});
  EXPECT_EQ(a.maxLid().value, 0);
  EXPECT_EQ(a.base(99, PortNum{1}).value, 0);  // out-of-range queries are harmless
  EXPECT_EQ(a.owner(Lid{0xFFFF}).node, fabric::kNoNode);
}

// ---- guid2lid file ----

TEST(Guid2Lid, ParsesOpenSmFormat) {
  auto m = parseGuid2Lid(
      "# comment\n"
      "0x0002c903000b2241 3 3\n"
      "\n"
      "  0x0002c903000b2242   8 11   # trailing comment\r\n"
      "0002c903000b2243 0x10 0x10\n");
  ASSERT_TRUE(m.ok()) << m.error().message;
  ASSERT_EQ(m->size(), 3u);
  EXPECT_EQ(m->at(Guid{0x0002c903000b2241}), (LidRange{Lid{3}, 0}));
  EXPECT_EQ(m->at(Guid{0x0002c903000b2242}), (LidRange{Lid{8}, 2}));
  EXPECT_EQ(m->at(Guid{0x0002c903000b2243}), (LidRange{Lid{16}, 0}));
  auto again = parseGuid2Lid(formatGuid2Lid(*m));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *m);
  EXPECT_EQ(formatGuid2Lid(*m).substr(0, 24), "0x0002c903000b2241 3 3\n0");
}

TEST(Guid2Lid, GarbageLinesNameTheLine) {
  struct Case {
    const char* text;
    const char* want;
  } cases[] = {
      {"0x1 1 1\nnonsense\n", "guid2lid:2: expected"},
      {"0x1 1\n", "guid2lid:1: expected"},
      {"0x1 1 1 1\n", "guid2lid:1: expected"},
      {"0xzz 1 1\n", "guid2lid:1: bad GUID"},
      {"0x0 1 1\n", "guid2lid:1: bad GUID"},
      {"0x11111111111111111 1 1\n", "bad GUID"},
      {"0x1 0 0\n", "bad LID '0'"},
      {"0x1 49152 49152\n", "bad LID '49152'"},
      {"0x1 0xc000 0xc000\n", "bad LID"},
      {"0x1 1 x\n", "bad LID 'x'"},
      {"0x1 -1 1\n", "bad LID"},
      {"0x1 99999999999 1\n", "bad LID"},
      {"0x1 5 4\n", "below"},
      {"0x1 4 6\n", "not 2^LMC"},
      {"0x1 5 6\n", "not aligned"},
      {"0x1 256 511\n", "not 2^LMC"},
      {"0x1 1 1\n\n0x1 2 2\n", "guid2lid:3: duplicate GUID 0x0000000000000001 (first at line 1)"},
  };
  for (const auto& c : cases) {
    auto r = parseGuid2Lid(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.error().message.find(c.want), std::string::npos) << c.text << " -> " << r.error().message;
  }
  auto named = parseGuid2Lid("junk\n", "/var/lib/ibsm/guid2lid");
  ASSERT_FALSE(named.ok());
  EXPECT_EQ(named.error().message.rfind("/var/lib/ibsm/guid2lid:1: ", 0), 0u) << named.error().message;
}

TEST(Guid2Lid, RandomInputNeverCrashes) {
  std::mt19937 rng(7);
  std::string alphabet = "0x123456789abcdefABCDEF \t\n#\r-+";
  alphabet.push_back('\0');
  alphabet.push_back('\xff');
  size_t ok = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string s;
    size_t len = rng() % 80;
    for (size_t j = 0; j < len; ++j) s += alphabet[rng() % alphabet.size()];
    auto r = parseGuid2Lid(s);
    if (r.ok()) {
      ++ok;
      // Whatever parsed must format and parse back to the same map.
      auto back = parseGuid2Lid(formatGuid2Lid(*r));
      ASSERT_TRUE(back.ok());
      EXPECT_EQ(*back, *r);
    } else {
      EXPECT_EQ(r.error().message.rfind("guid2lid:", 0), 0u) << r.error().message;
    }
  }
  EXPECT_GT(ok, 0u);  // blank and comment-only inputs parse
}

}  // namespace
}  // namespace ibsm::routing
