// Multicast: the MCMemberRecord codec, the group rules of the SA (create, join, leave, query) and the MFT
// programmer against FakeFabric (trees written where they belong, only changed blocks sent, leaves cleared),
// and the SA's MulticastForwardingTableRecords showing what it wrote.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "daemon/program/mcast_programmer.h"
#include "daemon/sa/mcast_groups.h"
#include "daemon/sa/mcast_sa.h"
#include "mad/mcmember.h"
#include "tests/daemon/fake_fabric_fixture.h"

namespace ibsm::daemon {
namespace {

using mad::McMemberRecord;
namespace mcm = mad::mcm;
constexpr uint64_t kPrefix = 0xfe80000000000000ULL;
constexpr uint64_t kCreate = mcm::kMgid | mcm::kPortGid | mcm::kQkey | mcm::kPkey | mcm::kSl |
                             mcm::kFlowLabel | mcm::kTClass | mcm::kJoinState;

McMemberRecord request(uint64_t portGuid, uint8_t joinState, mad::Gid mgid = {0xff12601b00000000ULL, 0x42}) {
  McMemberRecord r;
  r.mgid = mgid;
  r.portGid = {kPrefix, portGuid};
  r.qkey = 0x1234;
  r.pkey = 0xFFFF;
  r.joinState = joinState;
  return r;
}

template <typename V>
uint16_t statusOf(const V& v) {
  return std::holds_alternative<McastError>(v) ? std::get<McastError>(v).status : 0;
}

TEST(McMemberRecordCodec, RoundTripsEveryField) {
  McMemberRecord r;
  r.mgid = {0xff12401bffff0000ULL, 0x00000000ffffffffULL};
  r.portGid = {kPrefix, 0x0002c90300001234ULL};
  r.qkey = 0x80010000;
  r.mlid = 0xC123;
  r.mtuSelector = 2;
  r.mtu = 4;
  r.tclass = 0x5A;
  r.pkey = 0x8001;
  r.rateSelector = 3;
  r.rate = 7;
  r.lifeSelector = 1;
  r.packetLifeTime = 0x2A;
  r.sl = 9;
  r.flowLabel = 0xABCDE;
  r.hopLimit = 0x7F;
  r.scope = 0xE;
  r.joinState = 5;
  r.proxyJoin = true;
  uint8_t buf[mad::kMcMemberRecordSize];
  mad::encodeMcMemberRecord(r, buf);
  EXPECT_EQ(buf[0], 0xff);
  EXPECT_EQ(buf[36], 0xC1);  // MLID at byte 36
  EXPECT_EQ(buf[38], 2 << 6 | 4);
  EXPECT_EQ(buf[48], 0xE5);  // scope and JoinState share byte 48
  EXPECT_EQ(mad::decodeMcMemberRecord(buf), r);
}

TEST(McastGroups, CreateJoinLeave) {
  McastGroups groups;
  McastPortLimits port;
  // A send-only member may not create; a full member must name the group's fields.
  EXPECT_EQ(statusOf(groups.join(request(1, mad::kJoinSendOnly), kCreate, port)), 0x0200);
  EXPECT_EQ(statusOf(groups.join(request(1, mad::kJoinFull), kCreate & ~mcm::kQkey, port)), 0x0600);
  auto created = groups.join(request(1, mad::kJoinFull), kCreate, port);
  ASSERT_EQ(statusOf(created), 0);
  const McMemberRecord g = std::get<McMemberRecord>(created);
  EXPECT_EQ(g.mlid, 0xC000);
  EXPECT_EQ(g.qkey, 0x1234u);
  EXPECT_EQ(g.mtu, 5);  // the creator's link
  // Joining with a different Q_Key fails; without it, or send-only, works.
  McMemberRecord wrong = request(2, mad::kJoinFull);
  wrong.qkey = 7;
  EXPECT_EQ(statusOf(groups.join(wrong, kCreate, port)), 0x0200);
  EXPECT_EQ(
      statusOf(groups.join(request(2, mad::kJoinFull), mcm::kMgid | mcm::kPortGid | mcm::kJoinState, port)),
      0);
  EXPECT_EQ(statusOf(groups.join(request(3, mad::kJoinSendOnly), mcm::kMgid | mcm::kPortGid | mcm::kJoinState,
                                 port)),
            0);
  // A member whose link cannot carry the group's MTU is refused.
  EXPECT_EQ(statusOf(groups.join(request(4, mad::kJoinFull), mcm::kMgid | mcm::kPortGid | mcm::kJoinState,
                                 McastPortLimits{4, 0})),
            0x0200);
  EXPECT_EQ(groups.query(request(0, 0), mcm::kMgid | mcm::kPortGid).size(), 0u);  // port GID 0 is nobody
  EXPECT_EQ(groups.query(request(0, 0), mcm::kMgid).size(), 1u);
  auto members = groups.query(McMemberRecord{}, mcm::kPortGid & 0);  // every group
  EXPECT_EQ(members.size(), 1u);
  // Leaves: a non-member fails; the last member leaving deletes the group and frees the MLID.
  constexpr uint64_t kLeave = mcm::kMgid | mcm::kPortGid | mcm::kJoinState;
  EXPECT_EQ(statusOf(groups.leave(request(9, mad::kJoinFull), kLeave)), 0x0200);
  for (uint64_t p : {1, 2}) EXPECT_EQ(statusOf(groups.leave(request(p, mad::kJoinFull), kLeave)), 0);
  EXPECT_EQ(groups.size(), 1u);  // the send-only member keeps it
  EXPECT_EQ(statusOf(groups.leave(request(3, mad::kJoinSendOnly), kLeave)), 0);
  EXPECT_EQ(groups.size(), 0u);
  auto again = groups.join(request(5, mad::kJoinFull, {0xff12601b00000000ULL, 0x43}), kCreate, port);
  ASSERT_EQ(statusOf(again), 0);
  EXPECT_EQ(std::get<McMemberRecord>(again).mlid, 0xC000);
}

TEST(McastGroups, SmAssignedMgidAndBroadcastGroup) {
  McastGroups groups;
  groups.createBroadcastGroup();
  groups.createBroadcastGroup();
  ASSERT_EQ(groups.size(), 1u);
  auto all = groups.query(McMemberRecord{}, 0);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].mgid, (mad::Gid{0xff12401bffff0000ULL, 0x00000000ffffffffULL}));
  EXPECT_EQ(all[0].qkey, 0x0Bu);
  // IPoIB joins it with just MGID, PortGID, JoinState (and what it knows about it).
  McMemberRecord join = request(7, mad::kJoinFull, all[0].mgid);
  join.qkey = 0x0B;
  auto joined = groups.join(join, mcm::kMgid | mcm::kPortGid | mcm::kJoinState | mcm::kQkey, {});
  ASSERT_EQ(statusOf(joined), 0);
  EXPECT_EQ(statusOf(groups.leave(join, mcm::kMgid | mcm::kPortGid | mcm::kJoinState)), 0);
  EXPECT_EQ(groups.size(), 1u) << "the broadcast group outlives its members";
  // MGID 0: the SM picks one, in the SM-assigned (A01B) range.
  McMemberRecord anon = request(8, mad::kJoinFull, {});
  auto made = groups.join(anon, kCreate, {});
  ASSERT_EQ(statusOf(made), 0);
  EXPECT_EQ(std::get<McMemberRecord>(made).mgid.prefix >> 32 & 0xFFFF, 0xA01Bu);
  EXPECT_NE(std::get<McMemberRecord>(made).mlid, all[0].mlid);
  // A unicast GID as MGID: ERR_REQ_INVALID (IBA o15-0.1.6, as osmtest -f m expects and OpenSM answers).
  EXPECT_EQ(statusOf(groups.join(request(8, mad::kJoinFull, {kPrefix, 1}), kCreate, {})), 0x0200);
}

// The MFT programmer on a 4-ary 3-tree: a packet flooded along the MFTs the fake switches hold reaches every
// receiver exactly once; a second run sends nothing; members leaving clear their branches.
class McastProgrammerTest : public ::testing::Test, public testing::FakeFabricFixture {
 protected:
  SwitchTableCache cache;
  Up up;
  McastGroups groups;
  // The fabric brought up, with IPoIB's broadcast group (no members yet).
  const fabric::Topology& upWithBroadcastGroup() {
    start(testing::generate(tools::FabricSpec{}));
    up = bringUp(cache);
    groups.createBroadcastGroup();
    return *up.found.topology;
  }
  // CA port GUIDs -> copies received of one packet sent by `from`, following the fake switches' MFTs.
  std::map<uint64_t, int> flood(const fabric::Topology& topo, uint16_t mlid, fabric::NodeIndex from) {
    std::map<uint64_t, int> got;
    const auto& src = topo.node(from).ports[1];
    std::vector<std::pair<fabric::NodeIndex, unsigned>> work{{src.peerNode, src.peerPort.value}};
    for (size_t steps = 0; !work.empty() && steps < 10000; ++steps) {
      auto [sw, in] = work.back();
      work.pop_back();
      for (unsigned p : fabric->mftPorts(fakeIndex(topo, sw), mlid)) {
        if (p == in || p == 0) continue;
        const auto& port = topo.node(sw).ports[p];
        if (topo.node(port.peerNode).isSwitch())
          work.emplace_back(port.peerNode, port.peerPort.value);
        else
          ++got[topo.node(port.peerNode).ports[port.peerPort.value].guid.value];
      }
    }
    return got;
  }
};

TEST_F(McastProgrammerTest, WritesTreesAndOnlyWhatChanged) {
  const fabric::Topology& topo = upWithBroadcastGroup();
  McastProgrammer programmer(*engine, clock);
  std::vector<fabric::NodeIndex> members;
  for (size_t i = 0; i < topo.cas().size(); i += 5) members.push_back(topo.cas()[i]);
  const uint64_t kBroadcast = mcm::kMgid | mcm::kPortGid | mcm::kJoinState;
  McMemberRecord join = groups.query(McMemberRecord{}, 0).front();
  for (fabric::NodeIndex n : members) {
    join.portGid = {kPrefix, topo.node(n).ports[1].guid.value};
    join.joinState = mad::kJoinFull;
    ASSERT_EQ(statusOf(groups.join(join, kBroadcast, {})), 0);
  }
  McastReport first = programmer.program(topo, groups.routes(topo));
  EXPECT_TRUE(first.errors.empty());
  EXPECT_GT(first.blocksSent, 0u);
  EXPECT_EQ(first.unreachableMembers, 0u);
  for (fabric::NodeIndex from : members) {
    auto got = flood(topo, join.mlid, from);
    std::map<uint64_t, int> want;
    for (fabric::NodeIndex m : members)
      if (m != from) want[topo.node(m).ports[1].guid.value] = 1;
    EXPECT_EQ(got, want);
  }
  McastReport second = programmer.program(topo, groups.routes(topo));
  EXPECT_EQ(second.blocksSent, 0u);
  EXPECT_EQ(second.phase.smps, 0u);
  // All but two leave: the rest of the tree is cleared.
  for (size_t i = 2; i < members.size(); ++i) {
    join.portGid = {kPrefix, topo.node(members[i]).ports[1].guid.value};
    ASSERT_EQ(statusOf(groups.leave(join, kBroadcast)), 0);
  }
  McastReport third = programmer.program(topo, groups.routes(topo));
  EXPECT_GT(third.blocksSent, 0u);
  EXPECT_EQ(flood(topo, join.mlid, members[0]),
            (std::map<uint64_t, int>{{topo.node(members[1]).ports[1].guid.value, 1}}));
  size_t switchesWithEntries = 0;
  for (fabric::NodeIndex s : topo.switches())
    switchesWithEntries += !fabric->mftPorts(fakeIndex(topo, s), join.mlid).empty();
  EXPECT_LE(switchesWithEntries, 5u) << "a two-member tree on a 3-level tree spans at most 5 switches";
}

// The SA's MulticastForwardingTableRecords (osmtest -f v asks for them) show what the MFT programmer wrote:
// every entry of every record is the fake switch's port set for that MLID, one record per block and
// position in use; a LID in the component mask picks that switch's records.
TEST_F(McastProgrammerTest, MftRecordsShowWhatTheSwitchesHold) {
  const fabric::Topology& topo = upWithBroadcastGroup();
  McMemberRecord join = groups.query(McMemberRecord{}, 0).front();
  for (size_t i = 0; i < topo.cas().size(); i += 3) {
    join.portGid = {kPrefix, topo.node(topo.cas()[i]).ports[1].guid.value};
    join.joinState = mad::kJoinFull;
    ASSERT_EQ(statusOf(groups.join(join, mcm::kMgid | mcm::kPortGid | mcm::kJoinState, {})), 0);
  }
  ASSERT_TRUE(McastProgrammer(*engine, clock).program(topo, groups.routes(topo)).errors.empty());
  auto snap = std::make_shared<SubnetSnapshot>();
  snap->topology = up.found.topology;
  snap->lids = up.lids;
  SaServer sa(
      clock, [&] { return snap; }, nullptr);
  sa.setHandler(mad::kSaAttrMftRecord, makeMftRecordHandler(groups));
  auto ask = [&](uint16_t lid) {
    mad::MadPacket m = mad::makeSaMad(mad::kGetTable, mad::kSaAttrMftRecord);
    mad::encodeSaHeader(mad::SaHeader{0, 0, lid ? 1u : 0u}, m);
    mad::saData(m)[0] = static_cast<uint8_t>(lid >> 8);
    mad::saData(m)[1] = static_cast<uint8_t>(lid);
    m.addr = mad::MadAddress{7, 1, 0x80010000, 0, 0};
    auto out = sa.handle(m);
    EXPECT_EQ(out.size(), 1u);  // one segment: few switches hold the group
    EXPECT_EQ(mad::parseHeader(out.at(0))->status, 0);
    EXPECT_EQ(mad::decodeSaHeader(out[0]).attrOffset, 9);  // 72 bytes
    return out[0];
  };
  std::map<uint16_t, fabric::NodeIndex> byLid;
  for (fabric::NodeIndex s : topo.switches()) byLid[up.lids.base(s, fabric::PortNum{0}).value] = s;
  size_t withEntries = 0, shown = 0;
  for (auto [lid, s] : byLid) {
    const std::vector<unsigned> holds = fabric->mftPorts(fakeIndex(topo, s), join.mlid);
    const std::set<unsigned> held(holds.begin(), holds.end());
    withEntries += !held.empty();
    const mad::MadPacket got = ask(lid);
    std::set<unsigned> ports;
    const size_t records = (got.size - mad::kSaHeaderSize) / 72;
    for (size_t r = 0; r < records; ++r) {
      const uint8_t* rec = mad::saData(got) + 72 * r;
      EXPECT_EQ(rec[0] << 8 | rec[1], lid);
      const unsigned position = rec[2] >> 4, block = (rec[2] & 1u) << 8 | rec[3];
      EXPECT_EQ(block, (join.mlid - 0xC000u) / 32);
      const uint16_t mask = mad::decodeMftBlock(rec + 8)[(join.mlid - 0xC000u) % 32];
      for (unsigned b = 0; b < 16; ++b)
        if (mask >> b & 1) ports.insert(position * 16 + b);
    }
    shown += records > 0;
    EXPECT_EQ(ports, held) << "switch LID " << lid;
  }
  EXPECT_GT(withEntries, 0u);
  EXPECT_EQ(shown, withEntries);
}

}  // namespace
}  // namespace ibsm::daemon
