// Partition rules resolved against a small fabric built in code:
//
//   sw (GUID 0x20, PartitionCap 8) -- port 1: ca-0 "host-0 HCA-1" (SM here), port 2: ca-1 "host-1 HCA-1",
//                                     port 3: ca-2 "gpu-2 HCA-1" (PartitionCap 2)
#include "fabric/partition.h"

#include <gtest/gtest.h>

namespace ibsm::fabric {
namespace {

using Kind = PartitionMember::Kind;

struct Small {
  TopologyPtr topo;
  NodeIndex sw = 0, ca[3] = {};
};

Small makeSmall() {
  Small s;
  TopologyBuilder b;
  Node sw;
  sw.type = NodeType::kSwitch;
  sw.guid = Guid{0x20};
  sw.numPorts = 4;
  sw.partitionCap = 8;
  sw.sw.partitionEnforcementCap = 3;
  sw.description = "sw";
  s.sw = b.addNode(sw).value();
  b.node(s.sw).ports[0].guid = Guid{0x20};
  const char* names[] = {"host-0 HCA-1", "host-1 HCA-1", "gpu-2 HCA-1"};
  for (int i = 0; i < 3; ++i) {
    Node ca;
    ca.type = NodeType::kCa;
    ca.guid = Guid{0x100u + 0x10u * i};
    ca.numPorts = 1;
    ca.partitionCap = i == 2 ? 2 : 64;
    ca.description = names[i];
    s.ca[i] = b.addNode(ca).value();
    b.node(s.ca[i]).ports[1].guid = Guid{0x101u + 0x10u * i};
    EXPECT_TRUE(b.connect(s.sw, PortNum{static_cast<uint8_t>(i + 1)}, s.ca[i], PortNum{1}).ok());
  }
  b.setSmPort(s.ca[0], PortNum{1});
  s.topo = std::move(b).build().value();
  return s;
}

std::vector<uint16_t> keys(const PartitionMap& m, NodeIndex n, unsigned p) {
  auto k = m.keys(n, PortNum{static_cast<uint8_t>(p)});
  return {k.begin(), k.end()};
}

Partition part(std::string name, uint16_t pkey, std::vector<PartitionMember> members) {
  return Partition{std::move(name), pkey, std::nullopt, std::move(members), "test"};
}

TEST(PartitionMap, WithoutRulesEveryEndportIsAFullDefaultMember) {
  Small s = makeSmall();
  PartitionMap m = PartitionMap::resolve(*s.topo, {});
  for (NodeIndex c : s.ca) EXPECT_EQ(keys(m, c, 1), (std::vector<uint16_t>{0xFFFF}));
  EXPECT_EQ(keys(m, s.sw, 0), (std::vector<uint16_t>{0xFFFF}));
  EXPECT_TRUE(keys(m, s.sw, 1).empty());  // external switch ports are not endports
  ASSERT_EQ(m.partitions().size(), 1u);
  EXPECT_TRUE(m.partitions()[0].ipoib);
}

TEST(PartitionMap, MembersFullLimitedSelfPatternsAndSwitches) {
  Small s = makeSmall();
  std::vector<Partition> rules{
      part("Default", 0x7FFF, {{Kind::kAll, {}, {}, Membership::kLimited}}),
      part("gpus", 0x0010,
           {{Kind::kNodeDesc, {}, "gpu-*", Membership::kFull}, {Kind::kSelf, {}, {}, Membership::kLimited}}),
      part("mgmt", 0x0020,
           {{Kind::kAllSwitches, {}, {}, Membership::kFull},
            {Kind::kPortGuid, Guid{0x111}, {}, Membership::kBoth}}),
      // A second rule of one P_Key merges; the stronger membership wins.
      part("gpus", 0x0010, {{Kind::kPortGuid, Guid{0x101}, {}, Membership::kFull}}),
  };
  PartitionMap m = PartitionMap::resolve(*s.topo, rules);
  // The SM's port stays a full default member whatever ALL=limited says.
  EXPECT_EQ(keys(m, s.ca[0], 1), (std::vector<uint16_t>{0xFFFF, 0x8010}));
  EXPECT_EQ(keys(m, s.ca[1], 1), (std::vector<uint16_t>{0x7FFF, 0x8020}));
  EXPECT_EQ(keys(m, s.ca[2], 1), (std::vector<uint16_t>{0x7FFF, 0x8010}));
  EXPECT_EQ(keys(m, s.sw, 0), (std::vector<uint16_t>{0x7FFF, 0x8020}));
  ASSERT_EQ(m.partitions().size(), 3u);
  EXPECT_EQ(m.partitions()[1].name, "gpus");

  // Paths: limited to limited share nothing; a full end is enough; the source's key is the answer.
  EXPECT_FALSE(m.commonKey(s.ca[1], PortNum{1}, s.ca[2], PortNum{1}));
  EXPECT_EQ(m.commonKey(s.ca[1], PortNum{1}, s.ca[0], PortNum{1}), 0x7FFF);
  EXPECT_EQ(m.commonKey(s.ca[2], PortNum{1}, s.ca[0], PortNum{1}), 0x7FFF);  // the default comes first
  EXPECT_EQ(m.commonKey(s.ca[2], PortNum{1}, s.ca[0], PortNum{1}, 0x0010), 0x8010);
  EXPECT_FALSE(m.commonKey(s.ca[2], PortNum{1}, s.ca[1], PortNum{1}, 0x0020));
  EXPECT_EQ(m.keyOf(s.ca[1], PortNum{1}, 0x8020), 0x8020);
  EXPECT_FALSE(m.keyOf(s.ca[1], PortNum{1}, 0x0010));
}

TEST(PartitionMap, ChecksRefuseDuplicateKeysUnknownPortsAndOverfullTables) {
  Small s = makeSmall();
  auto check = [&](std::vector<Partition> p) { return checkPartitions(p, s.topo.get()).value_or("ok"); };
  EXPECT_EQ(check({part("a", 0x1, {}), part("a", 0x1, {})}), "ok");  // one partition in two rules
  EXPECT_EQ(check({part("a", 0x1, {}), part("b", 0x1, {})}),
            "partition 'b' (test): P_Key 0x0001 is already used by partition 'a' (test)");
  EXPECT_EQ(check({part("a", 0x8001, {})}),
            "partition 'a' (test): P_Key 0x8001 is out of range 0x0001..0x7fff");
  EXPECT_EQ(check({part("a", 0x1, {{Kind::kPortGuid, Guid{0x999}, {}, Membership::kFull}})}),
            "partition 'a' (test): no port 0x0000000000000999 in the fabric");
  // gpu-2 holds 2 keys at most: the default one and one more.
  EXPECT_EQ(check({part("a", 0x1, {{Kind::kNodeDesc, {}, "gpu-2*", Membership::kFull}})}), "ok");
  EXPECT_EQ(
      check({part("a", 0x1, {{Kind::kNodeDesc, {}, "gpu-2*", Membership::kFull}}),
             part("b", 0x2, {{Kind::kPortGuid, Guid{0x121}, {}, Membership::kLimited}})}),
      "port 0x0000000000000121 (gpu-2 HCA-1 port 1) would hold 3 P_Keys, more than its table's 2 entries "
      "(PartitionCap)");
  // host-1's switch port enforces 3 keys at most (the default one and two more).
  EXPECT_EQ(check({part("a", 0x1, {{Kind::kPortGuid, Guid{0x111}, {}, Membership::kFull}}),
                   part("b", 0x2, {{Kind::kPortGuid, Guid{0x111}, {}, Membership::kFull}})}),
            "ok");
  EXPECT_EQ(check({part("a", 0x1, {{Kind::kPortGuid, Guid{0x111}, {}, Membership::kFull}}),
                   part("b", 0x2, {{Kind::kPortGuid, Guid{0x111}, {}, Membership::kFull}}),
                   part("c", 0x3, {{Kind::kPortGuid, Guid{0x111}, {}, Membership::kLimited}})}),
            "port 0x0000000000000111 (host-1 HCA-1 port 1) would hold 4 P_Keys, more than the 3 its switch "
            "port (sw "
            "port 2) can enforce (PartitionEnforcementCap)");
  // Without a topology only the rules themselves are checked.
  std::vector<Partition> unknown{part("a", 0x1, {{Kind::kPortGuid, Guid{0x999}, {}, Membership::kFull}})};
  EXPECT_FALSE(checkPartitions(unknown, nullptr));
}

TEST(PartitionMember, ParsesOpenSmsKeywordsGuidsAndPatterns) {
  auto m = parsePartitionMember(" all_cas = FULL ", Membership::kLimited);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->kind, Kind::kAllCas);
  EXPECT_EQ(m->membership, Membership::kFull);
  EXPECT_EQ(parsePartitionMember("1193046", Membership::kLimited)->guid, Guid{0x123456});  // decimal
  EXPECT_EQ(parsePartitionMember("0x123456", Membership::kFull)->membership, Membership::kFull);
  EXPECT_EQ(parsePartitionMember("node:host-1*", Membership::kFull)->pattern, "host-1*");
  EXPECT_EQ(parsePartitionMember("0x0", Membership::kFull).error().message,
            "'0x0' is not a port GUID, ALL, ALL_CAS, ALL_SWITCHES, ALL_ROUTERS, SELF or node:PATTERN");
  EXPECT_EQ(parsePartitionMember("99999999999999999999999", Membership::kFull).ok(), false);
  EXPECT_EQ(parsePartitionMember("ALL=some", Membership::kFull).error().message,
            "'some' is not a membership (full, limited or both)");
  EXPECT_EQ(toString(*parsePartitionMember("self", Membership::kFull)), "SELF");
}

TEST(PartitionMember, PatternsMatchWithWildcards) {
  EXPECT_TRUE(matchPattern("host-1*", "host-17 HCA-1"));
  EXPECT_TRUE(matchPattern("*HCA-?", "gpu HCA-2"));
  EXPECT_FALSE(matchPattern("host-1?", "host-1"));
  EXPECT_TRUE(matchPattern("*", ""));
  EXPECT_FALSE(matchPattern("a*b*c", "aXbY"));
  EXPECT_TRUE(matchPattern("a*b*c", "aXbYc"));
}

}  // namespace
}  // namespace ibsm::fabric
