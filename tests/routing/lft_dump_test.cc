#include "routing/lft_dump.h"

#include <gtest/gtest.h>

#include <random>

#include "routing/engine.h"
#include "routing/route_checker.h"
#include "tests/routing/fabric_sketch.h"

namespace ibsm::routing {
namespace {

using testing::FabricSketch;

//   h0 --(2) sw0 (1)---(1) sw1 (2)-- h1
struct Pair {
  fabric::TopologyPtr topo;
  NodeIndex s0, s1, h0, h1;
  LidAssignment lids;
};
Pair makePair() {
  FabricSketch f;
  Pair p;
  p.s0 = f.addSwitch("sw0", 4);
  p.s1 = f.addSwitch("sw1", 4);
  p.h0 = f.addCa("h0 HCA-1");
  p.h1 = f.addCa("h1 HCA-1");
  f.link(p.s0, 1, p.s1, 1);
  f.link(p.h0, 1, p.s0, 2);
  f.link(p.h1, 1, p.s1, 2);
  p.topo = f.build();
  p.lids = testing::assignOrDie(*p.topo);
  return p;
}

TEST(LftDump, WritesOpenSmFormat) {
  Pair p = makePair();
  auto t = makeMinHopEngine()->compute(*p.topo, p.lids, {});
  ASSERT_TRUE(t.ok());
  std::string text = formatLftDump(*p.topo, p.lids, *t);
  EXPECT_EQ(text.substr(0, text.find("sw1")),
            "Unicast lids [0-4] of switch Lid 1 guid 0x0000000000005000 ('sw0'):\n"
            "0x0001 000 # Switch portguid 0x0000000000005000: 'sw0'\n"
            "0x0002 001 # Switch portguid 0x0000000000005001: '");
  EXPECT_NE(text.find("0x0003 002 # Channel Adapter portguid 0x00000000000ca001: 'h0 HCA-1'\n"),
            std::string::npos);
  EXPECT_NE(text.find("4 lids dumped\nUnicast lids [0-4] of switch Lid 2"), std::string::npos) << text;
}

TEST(LftDump, RoundTripOnGeneratedTables) {
  auto topo = testing::makeGrid(4, 4, 2, /*wrap=*/true);
  LidAssignment lids = testing::assignOrDie(*topo, 1);
  auto t = makeMinHopEngine()->compute(*topo, lids, {});
  ASSERT_TRUE(t.ok());
  auto back = parseLftDump(formatLftDump(*topo, lids, *t), *topo, "x.dump");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->lft, t->lft);
  // And the checker says the same about both.
  CheckReport a = checkRoutes(*topo, lids, *t), b = checkRoutes(*topo, lids, *back);
  EXPECT_EQ(a.reachable, b.reachable);
  EXPECT_EQ(a.maxLoad, b.maxLoad);
  EXPECT_EQ(b.unreachable, 0u);
}

TEST(LftDump, ReadsIbrouteOutput) {
  Pair p = makePair();
  std::string text =
      "Unicast lids [0x0-0x4] of switch Lid 1 guid 0x0000000000005000 (sw0):\n"
      "  Lid  Out   Destination\n"
      "       Port     Info \n"
      "0x0001 000 : (Switch portguid 0x0000000000005000: 'sw0')\n"
      "0x0002 001 : (Switch portguid 0x0000000000005001: 'sw1')\n"
      "0x0003 002 : (Channel Adapter portguid 0x00000000000ca001: 'h0 HCA-1')\n"
      "0x0004 001 : (Channel Adapter portguid 0x00000000000ca011: 'h1 HCA-1')\n"
      "4 valid lids dumped \n"
      "\n"
      "Multicast mlids [0xc000-0xc3ff] of switch Lid 1 guid 0x0000000000005000 (sw0):\n"
      "0xc000      xx\n"
      "1 valid mlids dumped \n"
      "Unicast lids [0x0-0x4] of switch DR path slid 0; dlid 0; 0,1 guid 0x0000000000005001 (sw1):\n"
      "0x0001 001\r\n"
      "0x0002 000 : (path #1 out of 1)\n"
      "0x0003 001 : (Channel Adapter portguid 0x00000000000ca001: 'h0 HCA-1')\n"
      "0x0004 002 : (illegal port)\n"
      "0x0005 255 : (illegal port)\n";
  auto t = parseLftDump(text, *p.topo);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->lft[p.s0], (std::vector<uint8_t>{kNoPort, 0, 1, 2, 1}));
  EXPECT_EQ(t->lft[p.s1], (std::vector<uint8_t>{kNoPort, 1, 0, 1, 2, kNoPort}));
  EXPECT_TRUE(t->lft[p.h0].empty());
  CheckReport r = checkRoutes(*p.topo, p.lids, *t);
  EXPECT_EQ(r.unreachable, 0u);
}

TEST(LftDump, ErrorsNameTheLine) {
  Pair p = makePair();
  const std::string hdr = "Unicast lids [0-4] of switch Lid 1 guid 0x0000000000005000 ('sw0'):\n";
  struct Case {
    std::string text, want;
  } cases[] = {
      {"0x0001 000\n", "x:1: LFT entry before any"},
      {hdr + "0x0001\n", "x:2: bad entry"},
      {hdr + "0xzz 001\n", "x:2: bad LID"},
      {hdr + "0xc000 001\n", "past the unicast range"},
      {hdr + "0x0001 abc\n", "bad port"},
      {hdr + "0x0001 300\n", "port 300 is out of range"},
      {hdr + "0x0001 001x\n", "bad port"},
      {hdr + "0x0001 001\n0x0001 002\n", "x:3: LID 1 listed twice"},
      {hdr + hdr, "x:2: switch 0x0000000000005000 is listed twice"},
      {"Unicast lids [0-4] of switch Lid 1 guid 0x00000000000ca000 ('h0'):\n", "is not a switch"},
      {"Unicast lids [0-4] of switch Lid 1 guid 0x0000000000000bad ('?'):\n", "is not in the topology"},
      {"Unicast lids [0-4] of switch Lid 1 (no guid):\n", "without 'guid 0x"},
      {"Unicast lids [0-4] of switch Lid 1 guid 0xzz:\n", "bad switch GUID"},
      {hdr + "hello world\n", "x:2: unrecognized line 'hello world'"},
  };
  for (const auto& c : cases) {
    auto r = parseLftDump(c.text, *p.topo, "x");
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.error().message.find(c.want), std::string::npos) << c.text << " -> " << r.error().message;
  }
}

TEST(LftDump, RandomInputNeverCrashes) {
  Pair p = makePair();
  auto t = makeMinHopEngine()->compute(*p.topo, p.lids, {});
  ASSERT_TRUE(t.ok());
  const std::string good = formatLftDump(*p.topo, p.lids, *t);
  std::mt19937 rng(3);
  size_t parsed = 0;
  for (int i = 0; i < 2000; ++i) {
    std::string s = good;
    // Mutate a few bytes, truncate, or splice.
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !s.empty(); ++e) {
      size_t at = rng() % s.size();
      switch (rng() % 3) {
        case 0:
          s[at] = static_cast<char>(rng() % 256);
          break;
        case 1:
          s.erase(at, rng() % 20);
          break;
        case 2:
          s.insert(at, s.substr(rng() % s.size(), rng() % 30));
          break;
      }
    }
    auto r = parseLftDump(s, *p.topo, "f");
    if (r.ok()) {
      ++parsed;
      ASSERT_EQ(r->lft.size(), p.topo->size());
    } else {
      EXPECT_EQ(r.error().message.rfind("f:", 0), 0u);
    }
  }
  EXPECT_GT(parsed, 0u);
}

}  // namespace
}  // namespace ibsm::routing
