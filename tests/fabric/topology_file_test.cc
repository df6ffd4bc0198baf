#include "fabric/topology_file.h"

#include <gtest/gtest.h>
#include <stdlib.h>  // mkdtemp

#include <filesystem>
#include <fstream>
#include <random>

#include "tools/fabric_gen/compare.h"

namespace ibsm::fabric {
namespace {

// A plain ibsim net file ...
//
//   H1 --[1] S1 [3]==(4xQDR)==[3] S2 [1]-- H3 (2 ports, port 2 unlinked)
//   H2 --[2]                       [2]-- H4 port 2 (port 1 unlinked)
constexpr const char* kPlainNet = R"(# plain ibsim net file
Switch 4 "S1"
[1] "H1"[1]
[2] "H2"[1]
[3] "S2"[3] w=2 s=4

Switch 4 "S2" # "spine desc" lid 7
[1] "H3"[1]
[2] "H4"[2]
[3] "S1"[3] w=2 s=4

Hca 1 "H1"
[1] "S1"[1]

Hca 1 "H2"
[1] "S1"[2]

Hca 2 "H3"
[1] "S2"[1]

Ca 2 "H4" # "H4 desc"
[2] "S2"[2]
)";

// ... and what ibnetdiscover printed for it when ibsim 0.10 simulated it.
constexpr const char* kIbsimDiscovery = R"(#
# Topology file: generated on Wed Dec  2 16:49:26 2026
#
# Initiated from node 0000000000200000 port 0000000000200000

vendid=0x0
devid=0x0
sysimgguid=0x200001
switchguid=0x200001(200001)
Switch	4 "S-0000000000200001"		# "spine desc" base port 0 lid 7 lmc 0
[1]	"H-0000000000100004"[1](100005) 		# "H3" lid 0 4xSDR
[2]	"H-0000000000100007"[2](100009) 		# "H4 desc" lid 0 4xSDR
[3]	"S-0000000000200000"[3]		# "S1" lid 0 4xQDR

vendid=0x0
devid=0x0
sysimgguid=0x200000
switchguid=0x200000(200000)
Switch	4 "S-0000000000200000"		# "S1" base port 0 lid 0 lmc 0
[1]	"H-0000000000100000"[1](100001) 		# "H1" lid 0 4xSDR
[2]	"H-0000000000100002"[1](100003) 		# "H2" lid 0 4xSDR
[3]	"S-0000000000200001"[3]		# "spine desc" lid 7 4xQDR

vendid=0x0
devid=0x0
sysimgguid=0x100007
caguid=0x100007
Ca	2 "H-0000000000100007"		# "H4 desc"
[2](100009) 	"S-0000000000200001"[2]		# lid 0 lmc 0 "spine desc" lid 7 4xSDR

vendid=0x0
devid=0x0
sysimgguid=0x100004
caguid=0x100004
Ca	2 "H-0000000000100004"		# "H3"
[1](100005) 	"S-0000000000200001"[1]		# lid 0 lmc 0 "spine desc" lid 7 4xSDR

vendid=0x0
devid=0x0
sysimgguid=0x100002
caguid=0x100002
Ca	1 "H-0000000000100002"		# "H2"
[1](100003) 	"S-0000000000200000"[2]		# lid 0 lmc 0 "S1" lid 0 4xSDR

vendid=0x0
devid=0x0
sysimgguid=0x100000
caguid=0x100000
Ca	1 "H-0000000000100000"		# "H1"
[1](100001) 	"S-0000000000200000"[1]		# lid 0 lmc 0 "S1" lid 0 4xSDR
)";

TopologyPtr parseOk(std::string_view text) {
  auto t = parseTopology(text, "t.net");
  EXPECT_TRUE(t.ok()) << t.error().message;
  return t.ok() ? *t : std::make_shared<Topology>();
}

const Node& byGuid(const Topology& t, uint64_t guid) {
  auto i = t.findNode(Guid{guid});
  EXPECT_TRUE(i.has_value()) << std::hex << guid;
  return t.node(i.value_or(0));
}

TEST(TopologyFileTest, PlainNetFileEqualsIbsimsDiscoveryOfIt) {
  TopologyPtr plain = parseOk(kPlainNet);
  TopologyPtr discovered = parseOk(kIbsimDiscovery);
  ASSERT_EQ(plain->size(), 6u);
  EXPECT_EQ(tools::diffTopologies(*plain, *discovered), "");
}

TEST(TopologyFileTest, ReadsIbnetdiscoverFields) {
  TopologyPtr t = parseOk(kIbsimDiscovery);
  ASSERT_EQ(t->size(), 6u);
  EXPECT_EQ(t->switches().size(), 2u);
  EXPECT_EQ(t->cas().size(), 4u);
  EXPECT_EQ(t->links().size(), 5u);

  const Node& s2 = byGuid(*t, 0x200001);
  EXPECT_EQ(s2.type, NodeType::kSwitch);
  EXPECT_EQ(s2.description, "spine desc");
  EXPECT_EQ(s2.numPorts, 4);
  EXPECT_EQ(s2.systemGuid, Guid{0x200001});
  EXPECT_EQ(s2.ports[0].attrs.lid, Lid{7});
  EXPECT_TRUE(s2.ports[0].attrs.valid);
  EXPECT_FALSE(s2.sw.enhancedPort0);
  EXPECT_FALSE(s2.ports[4].connected());

  const Port& up = s2.ports[3];
  ASSERT_TRUE(up.connected());
  EXPECT_EQ(t->node(up.peerNode).guid, Guid{0x200000});
  EXPECT_EQ(up.peerPort, PortNum{3});
  EXPECT_EQ(up.attrs.widthActive, 2);  // 4x
  EXPECT_EQ(up.attrs.speedActive, 4);  // QDR
  EXPECT_EQ(up.attrs.state, PortState::kActive);
  EXPECT_TRUE(up.attrs.valid);

  const Node& h4 = byGuid(*t, 0x100007);
  EXPECT_EQ(h4.type, NodeType::kCa);
  EXPECT_EQ(h4.description, "H4 desc");
  EXPECT_EQ(h4.ports[2].guid, Guid{0x100009});
  EXPECT_EQ(h4.ports[1].guid, Guid{0x100008});  // unlisted: ibsim's node GUID + port
  EXPECT_FALSE(h4.ports[1].connected());
  ASSERT_TRUE(h4.ports[2].connected());
  EXPECT_EQ(t->node(h4.ports[2].peerNode).guid, Guid{0x200001});
  EXPECT_EQ(h4.ports[2].peerPort, PortNum{2});
  EXPECT_EQ(h4.ports[2].attrs.speedActive, 1);  // SDR
  auto where = t->findPort(Guid{0x100009});
  ASSERT_TRUE(where.has_value());
  EXPECT_EQ(where->second, PortNum{2});
}

TEST(TopologyFileTest, AssignsGuidsLikeIbsim) {
  TopologyPtr t = parseOk(R"(Switch 4 "S1"
[1] "H1"[1]
[2] "H2"[1]

Hca 3 "H1"
[1] "S1"[1]

Hca 1 "H2"
[1] "S1"[2]

switchguid=0x500
Switch 2 "S2"

Switch 2 "S3"

caguid=0x900
Ca 1 "H3"
)");
  EXPECT_EQ(byGuid(*t, 0x200000).description, "S1");
  const Node& h1 = byGuid(*t, 0x100000);  // a CA takes nports+1 GUIDs: node, then one per port
  EXPECT_EQ(h1.description, "H1");
  EXPECT_EQ(h1.ports[1].guid, Guid{0x100001});
  EXPECT_EQ(h1.ports[3].guid, Guid{0x100003});
  EXPECT_EQ(byGuid(*t, 0x100004).description, "H2");
  EXPECT_EQ(byGuid(*t, 0x100004).ports[1].guid, Guid{0x100005});
  EXPECT_EQ(byGuid(*t, 0x500).description, "S2");
  EXPECT_EQ(byGuid(*t, 0x501).description, "S3");
  EXPECT_EQ(byGuid(*t, 0x900).description, "H3");
}

TEST(TopologyFileTest, LinkOptionsAndDefaults) {
  TopologyPtr t = parseOk(R"(width=11
Switch 4 "S1"
[1] "S2"[1] w=8 s=2
[2] "S2"[2] e=2 s=4
[3] "S2"[3]
[4] "H1"

Switch 4 "S2"
[1] "S1"[1] s=3
[2] "S1"[2] e=3 s=7
[3] "S1"[3]

Hca 1 "H1"
[1] "S1"[4] w=2
)");
  const Node& s1 = byGuid(*t, 0x200000);
  EXPECT_EQ(s1.ports[1].attrs.widthActive, 8);  // 12x
  EXPECT_EQ(s1.ports[1].attrs.speedActive, 2);  // DDR: the best of 2 and 1|2
  EXPECT_EQ(s1.ports[2].attrs.speedActive, 4);
  EXPECT_EQ(s1.ports[2].attrs.speedExtActive, 2);  // EDR
  EXPECT_EQ(s1.ports[3].attrs.widthActive, 8);     // the width= line enables 1x|4x|12x on both
  EXPECT_EQ(s1.ports[3].attrs.speedActive, 1);     // ibsim's default SDR
  ASSERT_TRUE(s1.ports[4].connected());            // the remote port defaults to 1
  EXPECT_EQ(s1.ports[4].peerPort, PortNum{1});
  EXPECT_EQ(s1.ports[4].attrs.widthActive, 2);
}

// Two switches, a CA with explicit non-sequential port GUIDs, a router and a CA-to-CA link:
//
//   CA1 [1]--[1] SW1 [2]==12xEDR==[3] SW2 [1]--[2] RT
//   CA1 [2]--[1] CA2      SW1 [5]--8xDDR--[5] SW2
TopologyPtr sampleTopology() {
  TopologyBuilder b;
  auto node = [&](NodeType type, uint64_t guid, uint8_t ports, std::string desc) {
    Node n;
    n.type = type;
    n.guid = Guid{guid};
    n.systemGuid = Guid{guid & ~0xFULL};
    n.vendorId = 0x2c9;
    n.deviceId = 0xc738;
    n.numPorts = ports;
    n.description = std::move(desc);
    return *b.addNode(std::move(n));
  };
  NodeIndex sw1 = node(NodeType::kSwitch, 0xe41d2d0300112230, 36, "MF0;switch-1:SX6036/U1");
  NodeIndex sw2 = node(NodeType::kSwitch, 0xe41d2d0300112240, 8, "switch two");
  NodeIndex ca1 = node(NodeType::kCa, 0x0002c90300aa0010, 2, "host-a mlx4_0");
  NodeIndex ca2 = node(NodeType::kCa, 0x0002c90300aa0020, 1, "host-b mlx4_0");
  NodeIndex rt = node(NodeType::kRouter, 0x0002c90300bb0000, 2, "router");
  b.node(sw1).ports[0].guid = Guid{0xe41d2d0300112231};  // a port GUID other than the node GUID
  b.node(sw1).ports[0].attrs.lid = Lid{5};
  b.node(sw1).ports[0].attrs.lmc = 1;
  b.node(sw1).sw.enhancedPort0 = true;
  b.node(sw2).ports[0].attrs.lid = Lid{9};
  b.node(ca1).ports[1].guid = Guid{0x0002c90300aa0111};
  b.node(ca1).ports[2].guid = Guid{0x0002c90300aa0222};
  b.node(ca1).ports[1].attrs.lid = Lid{17};
  b.node(ca1).ports[1].attrs.lmc = 2;
  b.node(ca1).ports[2].attrs.lid = Lid{21};
  b.node(ca2).ports[1].guid = Guid{0x0002c90300aa0021};
  b.node(ca2).ports[1].attrs.lid = Lid{0xBFFF};
  b.node(rt).ports[1].guid = Guid{0x0002c90300bb0001};
  b.node(rt).ports[2].guid = Guid{0x0002c90300bb0002};
  b.node(rt).ports[2].attrs.lid = Lid{30};
  auto link = [&](NodeIndex x, uint8_t px, NodeIndex y, uint8_t py, const char* ws) {
    EXPECT_TRUE(b.connect(x, PortNum{px}, y, PortNum{py}).ok());
    auto w = parseWidthSpeed(ws).value();
    for (auto [n, p] : {std::pair{x, px}, std::pair{y, py}}) {
      PortAttrs& a = b.node(n).ports[p].attrs;
      a.widthActive = w.width;
      a.speedActive = w.speed;
      a.speedExtActive = w.speedExt;
      a.state = PortState::kActive;
    }
  };
  link(ca1, 1, sw1, 1, "4xHDR");
  link(sw1, 2, sw2, 3, "12xEDR");
  link(sw1, 5, sw2, 5, "8xDDR");
  link(sw2, 1, rt, 2, "1xSDR");
  link(ca1, 2, ca2, 1, "2xFDR");
  return *std::move(b).build();
}

TEST(TopologyFileTest, RoundTripKeepsEverythingTheFileCarries) {
  TopologyPtr t = sampleTopology();
  std::string text = formatTopology(*t);
  TopologyPtr back = parseOk(text);
  EXPECT_EQ(tools::diffTopologies(*t, *back), "") << text;
  ASSERT_EQ(back->size(), t->size());
  for (NodeIndex i = 0; i < t->size(); ++i) {  // file order is node order
    const Node &a = t->node(i), &b = back->node(i);
    EXPECT_EQ(a.guid, b.guid);
    EXPECT_EQ(a.systemGuid, b.systemGuid);
    EXPECT_EQ(a.vendorId, b.vendorId);
    EXPECT_EQ(a.deviceId, b.deviceId);
  }
  EXPECT_EQ(formatTopology(*back), text);
}

TEST(TopologyFileTest, WritesIbnetdiscoversLayout) {
  TopologyPtr t = parseOk(R"(switchguid=0x200001(200001)
Switch 4 "A" # "S2" lid 3
[1] "B"[2] # "H4" lid 0 4xSDR

caguid=0x100006
Ca 2 "B" # "H4"
[2] "A"[1] # lid 4 lmc 0 "S2" lid 3 4xSDR
)");
  EXPECT_EQ(formatTopology(*t),
            "#\n# Topology file: written by ibsm in ibnetdiscover format\n#\n"
            "\nvendid=0x0\ndevid=0x0\nsysimgguid=0x200001\nswitchguid=0x200001(200001)\n"
            "Switch\t4 \"S-0000000000200001\"\t\t# \"S2\" base port 0 lid 3 lmc 0\n"
            "[1]\t\"H-0000000000100006\"[2](100008) \t\t# \"H4\" lid 4 4xSDR\n"
            "\nvendid=0x0\ndevid=0x0\nsysimgguid=0x100006\ncaguid=0x100006\n"
            "Ca\t2 \"H-0000000000100006\"\t\t# \"H4\"\n"
            "[2](100008) \t\"S-0000000000200001\"[1]\t\t# lid 4 lmc 0 \"S2\" lid 3 4xSDR\n");
}

struct BadInput {
  const char* text;
  const char* error;  // expected substring of the error message
};

class TopologyFileErrorTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(TopologyFileErrorTest, FailsNamingTheLine) {
  auto t = parseTopology(GetParam().text, "t.net");
  ASSERT_FALSE(t.ok()) << GetParam().text;
  EXPECT_NE(t.error().message.find(GetParam().error), std::string::npos) << t.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Malformed, TopologyFileErrorTest,
    ::testing::Values(
        BadInput{"Switch 4 \"S1\"\n[1] \"H1\"[1]\n\nHca 1 \"H1\"\n",
                 "t.net:2: link to \"H1\"[1] is listed on this end only"},
        BadInput{"Switch 4 \"S1\"\n[1] \"H1\"[1]\n\nHca 1 \"H1\"\n[1] \"S1\"[2]\n",
                 "t.net:2: link to \"H1\"[1] does not match line 5"},
        BadInput{"Switch 4 \"S1\"\n[5] \"H1\"[1]\n", "t.net:2: port 5 is past the switch's 4 ports"},
        BadInput{"Hca 2 \"H1\"\n[3] \"S1\"[1]\n", "t.net:2: port 3 is past the CA's 2 ports"},
        BadInput{"Switch 4 \"S1\"\n[1] \"H1\"[3]\n\nHca 1 \"H1\"\n[1] \"S1\"[1]\n",
                 "t.net:2: port 3 is past \"H1\"'s 1 ports"},
        BadInput{"Switch 4 \"S1\"\n[0] \"H1\"[1]\n", "t.net:2: port 0 cannot be linked"},
        BadInput{"Switch 4 \"S1\"\n[1] \"S1\"[1]\n", "t.net:2: port linked to itself"},
        BadInput{"Switch 4 \"S1\"\n[1] \"H1\"[1]\n[1] \"H1\"[1]\n",
                 "t.net:3: port 1 is listed twice (also on line 2)"},
        BadInput{"Switch 4 \"S1\"\n[1] \"nosuch\"[1]\n", "t.net:2: unknown node \"nosuch\""},
        BadInput{"switchguid=0x10\nSwitch 4 \"S1\"\n\nswitchguid=0x10\nSwitch 4 \"S2\"\n",
                 "t.net:5: duplicate node GUID 0x0000000000000010 (also on line 2)"},
        BadInput{"Ca 1 \"H1\"\n[1](77) \"S1\"[1]\n\nCa 1 \"H2\"\n[1](77) \"S1\"[2]\n\n"
                 "Switch 4 \"S1\"\n[1] \"H1\"[1]\n[2] \"H2\"[1]\n",
                 "t.net:5: duplicate port GUID 0x0000000000000077 (also on line 2)"},
        BadInput{"Switch 4 \"S1\"\n\nSwitch 4 \"S1\"\n", "t.net:3: node id \"S1\" is already used on line 1"},
        BadInput{"Switch x \"S1\"\n", "t.net:1: bad port count \"x\""},
        BadInput{"Switch 0 \"S1\"\n", "t.net:1: bad port count \"0\""},
        BadInput{"Switch 300 \"S1\"\n", "t.net:1: bad port count \"300\""},
        BadInput{"Switch 99999999999999999999999 \"S1\"\n", "t.net:1: bad port count"},
        BadInput{"Switch 4 S1\n", "t.net:1: bad node header: expected a quoted node id"},
        BadInput{"Switch 4 \"S1\n", "t.net:1: unterminated node id"},
        BadInput{"Switch 4 \"\"\n", "t.net:1: empty node id"},
        BadInput{"Switch4 \"S1\"\n", "t.net:1: bad node header"},
        BadInput{"Switch\n", "t.net:1: bad node header"},
        BadInput{"Switch 4 \"S1\" junk\n", "t.net:1: unexpected \"junk\" in node header"},
        BadInput{"Switch 4 \"S1\" # \"desc\n", "t.net:1: unterminated node description"},
        BadInput{"Switch 4 \"S1\" # d\"esc\n", "t.net:1: unbalanced quote in node description"},
        BadInput{"Switch 4 \"S1\" # \"d\" lid 70000\n", "t.net:1: bad LID \"70000\""},
        BadInput{"Switch 4 \"S1\" # \"d\" lid 1 lmc 9\n", "t.net:1: bad LMC \"9\""},
        BadInput{"Switch 4 \"S1\"\n[1 \"H1\"[1]\n", "t.net:2: bad port line: missing ']'"},
        BadInput{"Switch 4 \"S1\"\n[x] \"H1\"[1]\n", "t.net:2: bad port number \"x\""},
        BadInput{"Switch 4 \"S1\"\n[1] H1[1]\n", "t.net:2: bad port line: expected \"remote-id\""},
        BadInput{"Switch 4 \"S1\"\n[1] \"H1[1]\n", "t.net:2: unterminated remote node id"},
        BadInput{"Switch 4 \"S1\"\n[1] \"H1\"[0]\n", "t.net:2: bad remote port"},
        BadInput{"Switch 4 \"S1\"\n[1] \"H1\"[1](zz)\n", "t.net:2: bad remote port GUID"},
        BadInput{"Switch 4 \"S1\"\n[1](10) \"H1\"[1]\n",
                 "t.net:2: unexpected port GUID on a switch port line"},
        BadInput{"Ca 1 \"H1\"\n[1](xyz) \"S1\"[1]\n", "t.net:2: bad port GUID"},
        BadInput{"Switch 4 \"S1\"\n[1] \"H1\"[1] x=3\n", "t.net:2: bad link option \"x=3\""},
        BadInput{"Switch 4 \"S1\"\n[1] \"H1\"[1] w=0\n", "t.net:2: bad link option \"w=0\""},
        BadInput{"Switch 4 \"S1\"\n[1] \"H1\"[1] junk\n", "t.net:2: bad link option \"junk\""},
        BadInput{"Switch 4 \"S1\"\n[1] \"H1\"[1] # \"H1\" lid 0 4xFOO\n",
                 "t.net:2: bad link width/speed \"4xFOO\""},
        BadInput{"Switch 4 \"S1\"\n[1] \"H1\"[1] # \"H1\" lid -1 4xSDR\n", "t.net:2: bad remote LID \"-1\""},
        BadInput{"Switch 4 \"S1\"\n[1] \"H1\"[1] # \"H1 lid 0 4xSDR\n",
                 "t.net:2: unterminated remote description"},
        BadInput{"Ca 1 \"H1\"\n[1] \"S1\"[1] # lid 1 lmc 8 \"S1\" lid 0 4xSDR\n", "t.net:2: bad LMC \"8\""},
        BadInput{"Switch 4 \"S1\"\n[1] \"H1\"[1] w=1\n\nHca 1 \"H1\"\n[1] \"S1\"[1] w=2\n",
                 "t.net:2: the two ends of this link enable no common width or speed"},
        BadInput{"Switch 4 \"S1\"\n[1] \"H1\"[1]\nHca 1 \"H1\"\n[1] \"S1\"[1]\n",
                 "t.net:3: expected a blank line after the ports of \"S1\""},
        BadInput{"Switch 4 \"S1\"\nSwitch 4 \"S2\"\n", "t.net:2: expected a blank line"},
        BadInput{"Switch 4 \"S1\"\n\n[1] \"H1\"[1]\n", "t.net:3: port line outside a node block"},
        BadInput{"[1] \"H1\"[1]\n", "t.net:1: port line outside a node block"},
        BadInput{"foo=1\n", "t.net:1: unknown setting \"foo\""},
        BadInput{"vendid=zz\n", "t.net:1: bad value \"zz\" for vendid"},
        BadInput{"devid=0x10000\n", "t.net:1: bad value \"0x10000\" for devid"},
        BadInput{"switchguid=0xfoo\n", "t.net:1: bad GUID \"0xfoo\""},
        BadInput{"switchguid=0x10(zz)\n", "t.net:1: bad GUID line"},
        BadInput{"caguid=0x10(11)\n", "t.net:1: bad GUID line"},
        BadInput{"vendid+1\n", "t.net:1: '+' is only allowed with GUID bases"},
        BadInput{"Rt 2 \"R1\"\n", "t.net:1: node GUID would be 0: give it a rtguid= line"},
        BadInput{"caguid=0xffffffffffffffff\nCa 2 \"H1\"\n", "t.net:2: node GUID range overflows"},
        BadInput{"hello world\n", "t.net:1: unrecognized line"},
        BadInput{"\x01\x02\xff\xfe garbage\n", "t.net:1: unrecognized line"},
        BadInput{"", "t.net: no nodes found"}, BadInput{"# only a comment\n\n", "t.net: no nodes found"}));

TEST(TopologyFileTest, TruncatedFilesFailOrParseButNeverCrash) {
  const std::string text = formatTopology(*sampleTopology());
  size_t failures = 0;
  for (size_t n = 0; n < text.size(); ++n) {
    auto t = parseTopology(std::string_view(text).substr(0, n), "t.net");
    if (!t.ok()) {
      ++failures;
      EXPECT_EQ(t.error().message.rfind("t.net", 0), 0u) << t.error().message;
    }
  }
  // Cut anywhere before the last block's final port line, a link loses its other end (or a line is cut).
  EXPECT_GT(failures, text.size() * 9 / 10);
}

TEST(TopologyFileTest, TruncationMidLineNamesThatLine) {
  // Cut in the middle of the remote id on line 3.
  auto t = parseTopology("Switch 4 \"S1\"\n[1] \"H1\"[1]\n[2] \"H2", "cut.net");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().message, "cut.net:3: unterminated remote node id");
}

TEST(TopologyFileTest, GarbageBytesAreErrorsNotCrashes) {
  std::mt19937 rng(12345);
  for (int round = 0; round < 500; ++round) {
    std::string junk(rng() % 300, '\0');
    for (char& c : junk) c = static_cast<char>(rng() % 256);
    auto t = parseTopology(junk, "junk.net");
    EXPECT_FALSE(t.ok());
  }
}

TEST(TopologyFileTest, MutatedFilesNeverCrash) {
  const std::string text = formatTopology(*sampleTopology());
  const std::string alphabet = "[]()\"#=\n\t 0123456789xwseSwitchCa-lidlmc";
  std::mt19937 rng(777);
  size_t accepted = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string m = text;
    for (int edits = 1 + rng() % 4; edits > 0; --edits) {
      size_t at = rng() % m.size();
      switch (rng() % 3) {
        case 0:
          m[at] = alphabet[rng() % alphabet.size()];
          break;
        case 1:
          m.insert(at, 1, alphabet[rng() % alphabet.size()]);
          break;
        default:
          m.erase(at, 1 + rng() % 8);
          break;
      }
    }
    auto t = parseTopology(m, "m.net");
    if (t.ok()) {
      ++accepted;
      // Whatever was accepted must be writable and read back the same.
      auto again = parseTopology(formatTopology(**t), "again.net");
      ASSERT_TRUE(again.ok()) << again.error().message << "\n" << m;
      EXPECT_EQ(tools::diffTopologies(**t, **again), "") << m;
    } else {
      EXPECT_EQ(t.error().message.rfind("m.net", 0), 0u) << t.error().message;
    }
  }
  EXPECT_GT(accepted, 0u);  // some edits land in comments and descriptions
}

class TopologyFileIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ibsm-topofile-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(TopologyFileIoTest, WriteThenReadGivesTheSameTopology) {
  TopologyPtr t = sampleTopology();
  std::string path = dir_ / "fabric.net";
  ASSERT_TRUE(writeTopologyFile(*t, path).ok());
  auto back = readTopologyFile(path);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(tools::diffTopologies(*t, **back), "");
  // Overwriting works and leaves no temp file behind.
  ASSERT_TRUE(writeTopologyFile(*parseOk(kPlainNet), path).ok());
  EXPECT_EQ((*readTopologyFile(path))->size(), 6u);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_), std::filesystem::directory_iterator()),
            1);
}

TEST_F(TopologyFileIoTest, NonRegularTargetsAreWrittenInPlace) {
  // Renaming a temp file over a symlink (or /dev/stdout, or a device) would replace the link itself.
  std::filesystem::path target = dir_ / "target.net", link = dir_ / "link.net";
  std::ofstream(target) << "old";
  std::filesystem::create_symlink(target, link);
  ASSERT_TRUE(writeTopologyFile(*parseOk(kPlainNet), link.string()).ok());
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  auto back = readTopologyFile(target.string());
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ((*back)->size(), 6u);
}

TEST_F(TopologyFileIoTest, ErrorsNameTheFile) {
  std::string missing = dir_ / "missing.net";
  auto r = readTopologyFile(missing);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find(missing), std::string::npos);

  std::string bad = dir_ / "bad.net";
  std::ofstream(bad) << "Switch 4 \"S1\"\n[9] \"H1\"[1]\n";
  r = readTopologyFile(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, bad + ":2: port 9 is past the switch's 4 ports");

  auto w = writeTopologyFile(*sampleTopology(), (dir_ / "no-such-dir" / "f.net").string());
  EXPECT_FALSE(w.ok());
}

}  // namespace
}  // namespace ibsm::fabric
