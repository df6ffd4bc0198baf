#include "mad/smp.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace ibsm::mad {
namespace {

TEST(Smp, DirectedSmpHeader) {
  fabric::DrPath path;
  path = *path.extended(3);
  path = *path.extended(7);
  MadPacket m = makeDirectedSmp(kGet, kAttrPortInfo, 5, path);
  setTid(m, 0x1234);
  auto h = parseHeader(m);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->mgmtClass, kClassSmiDirected);
  EXPECT_EQ(h->method, kGet);
  EXPECT_EQ(h->attrId, kAttrPortInfo);
  EXPECT_EQ(h->attrMod, 5u);
  EXPECT_EQ(h->hopCount, 2);
  EXPECT_EQ(h->tid, 0x1234u);
  EXPECT_EQ(m.bytes[128 + 1], 3);  // InitialPath[1]
  EXPECT_EQ(m.bytes[128 + 2], 7);
  EXPECT_EQ(m.addr.lid, 0xFFFF);
}

TEST(Smp, ResponseMethodCarriesResponseBit) {
  MadPacket m = makeLidRoutedSmp(kGet, kAttrNodeInfo, 0, 4);
  m.bytes[3] = kGetResp;
  auto h = parseHeader(m);
  ASSERT_TRUE(h);
  EXPECT_TRUE(h->isResponse());
  EXPECT_EQ(h->method, kGetResp);
}

TEST(Smp, NodeInfoRoundTripAndValidation) {
  uint8_t d[64] = {};
  NodeInfo n;
  n.type = fabric::NodeType::kSwitch;
  n.numPorts = 36;
  n.nodeGuid = fabric::Guid{0x0002c903008e4900};
  n.portGuid = n.nodeGuid;
  n.systemGuid = n.nodeGuid;
  n.vendorId = 0x2c9;
  n.deviceId = 0xc738;
  n.localPort = 17;
  encodeNodeInfo(n, d);
  auto back = decodeNodeInfo(d);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->nodeGuid, n.nodeGuid);
  EXPECT_EQ(back->numPorts, 36);
  EXPECT_EQ(back->localPort, 17);
  EXPECT_EQ(back->vendorId, 0x2c9u);

  n.type = fabric::NodeType::kCa;
  n.numPorts = 2;
  n.localPort = 3;  // past NumPorts
  encodeNodeInfo(n, d);
  EXPECT_FALSE(decodeNodeInfo(d));
  uint8_t zeros[64] = {};
  EXPECT_FALSE(decodeNodeInfo(zeros));
}

TEST(Smp, PortInfoRoundTripAndSet) {
  uint8_t d[64] = {};
  fabric::PortAttrs a;
  a.lid = fabric::Lid{0x1234};
  a.smLid = fabric::Lid{1};
  a.lmc = 2;
  a.state = fabric::PortState::kArmed;
  a.physState = 5;
  a.widthActive = 2;
  a.speedActive = 4;
  a.mtuCap = 5;
  a.vlCap = 4;
  encodePortInfo(a, d);
  fabric::PortAttrs b = decodePortInfo(d);
  EXPECT_EQ(b.lid, a.lid);
  EXPECT_EQ(b.lmc, 2);
  EXPECT_EQ(b.state, fabric::PortState::kArmed);
  EXPECT_EQ(b.widthActive, 2);
  EXPECT_EQ(b.mtuCap, 5);

  PortInfoSet set;
  set.lid = 77;
  set.state = 4;
  applyPortInfoSet(set, d);
  b = decodePortInfo(d);
  EXPECT_EQ(b.lid.value, 77);
  EXPECT_EQ(b.state, fabric::PortState::kActive);
  EXPECT_EQ(b.physState, 0);  // "no change" on a Set
  EXPECT_EQ(b.lmc, 2);        // untouched
}

TEST(Smp, PortInfoStateAndClientReregisterAsKept) {
  uint8_t d[64] = {};
  fabric::PortAttrs a;
  a.lid = fabric::Lid{9};
  a.state = fabric::PortState::kInit;
  a.physState = 5;
  encodePortInfo(a, d);
  PortInfoSet set;
  set.state = static_cast<uint8_t>(fabric::PortState::kArmed);
  set.clientReregister = true;
  applyPortInfoSet(set, d);  // a Set: PhysState 0 ("no change"), ClientReregister 1
  EXPECT_EQ(decodePortInfo(d).physState, 0);

  // What the port keeps: its states, no ClientReregister command.
  setPortInfoState(d, fabric::PortState::kArmed, 5);
  clearPortInfoClientReregister(d);
  fabric::PortAttrs b = decodePortInfo(d);
  EXPECT_EQ(b.state, fabric::PortState::kArmed);
  EXPECT_EQ(b.physState, 5);
  EXPECT_EQ(b.lid.value, 9);  // untouched
  set = {};
  set.clientReregister = true;
  uint8_t e[64] = {};
  std::copy(d, d + 64, e);
  applyPortInfoSet(set, e);
  EXPECT_FALSE(std::equal(d, d + 64, e));  // the bit is set in e ...
  clearPortInfoClientReregister(e);
  set = {};
  applyPortInfoSet(set, d);  // ... and only that bit: both blocks with the state commands cleared
  applyPortInfoSet(set, e);
  EXPECT_TRUE(std::equal(d, d + 64, e));
}

TEST(Smp, NodeDescriptionIsSanitised) {
  uint8_t d[64] = {};
  encodeNodeDescription(std::string("host\x01\xff-1", 8), d);
  EXPECT_EQ(decodeNodeDescription(d),
            "host?"
            "?-1");
  std::string longDesc(100, 'x');
  encodeNodeDescription(longDesc, d);
  EXPECT_EQ(decodeNodeDescription(d).size(), 64u);
}

TEST(Smp, SwitchInfoAndSmInfoRoundTrip) {
  uint8_t d[64] = {};
  fabric::SwitchAttrs s;
  s.linearFdbCap = 49152;
  s.linearFdbTop = 300;
  s.lifeTime = 18;
  s.enhancedPort0 = true;
  s.partitionEnforcementCap = 64;
  encodeSwitchInfo(s, d);
  auto t = decodeSwitchInfo(d);
  EXPECT_EQ(t.linearFdbCap, 49152);
  EXPECT_EQ(t.linearFdbTop, 300);
  EXPECT_EQ(t.lifeTime, 18);
  EXPECT_TRUE(t.enhancedPort0);
  EXPECT_EQ(t.partitionEnforcementCap, 64);
  EXPECT_EQ(d[14], 0);  // PartitionEnforcementCap: bytes 14-15 (IBA 14.2.5.4)
  EXPECT_EQ(d[15], 64);

  uint8_t e[64] = {};
  SmInfo i{fabric::Guid{0xabc}, 0x1122334455667788ull, 9, 14, 3};
  encodeSmInfo(i, e);
  SmInfo j = decodeSmInfo(e);
  EXPECT_EQ(j.guid, i.guid);
  EXPECT_EQ(j.smKey, i.smKey);
  EXPECT_EQ(j.priority, 14);
  EXPECT_EQ(j.state, 3);
}

TEST(Smp, SwitchInfoSetWritesOnlyItsFields) {
  uint8_t d[64] = {};
  fabric::SwitchAttrs s;
  s.linearFdbCap = 49152;
  s.linearFdbTop = 12;
  s.multicastFdbCap = 1024;
  s.lifeTime = 5;
  s.portStateChange = false;
  encodeSwitchInfo(s, d);
  applySwitchInfoSet(SwitchInfoSet{300, 18, true}, d);
  fabric::SwitchAttrs t = decodeSwitchInfo(d);
  EXPECT_EQ(t.linearFdbTop, 300);
  EXPECT_EQ(t.lifeTime, 18);
  EXPECT_TRUE(t.portStateChange);
  EXPECT_EQ(t.linearFdbCap, 49152);  // untouched
  EXPECT_EQ(t.multicastFdbCap, 1024);
  SwitchInfoSet clear;
  clear.portStateChange = false;
  applySwitchInfoSet(clear, d);
  t = decodeSwitchInfo(d);
  EXPECT_FALSE(t.portStateChange);
  EXPECT_EQ(t.linearFdbTop, 300);
  EXPECT_EQ(t.lifeTime, 18);
  EXPECT_EQ(d[6], 300 >> 8);  // LinearFDBTop: bytes 6-7 (IBA 14.2.5.4)
  EXPECT_EQ(d[7], 300 & 0xFF);
}

TEST(Smp, LftBlockIsOnePortPerLid) {
  LftBlock b{};
  for (unsigned i = 0; i < kLftBlockLids; ++i) b[i] = static_cast<uint8_t>(i % 37);
  b[63] = 0xFF;
  uint8_t d[64] = {};
  encodeLftBlock(b, d);
  EXPECT_EQ(d[0], 0);
  EXPECT_EQ(d[5], 5);
  EXPECT_EQ(d[40], 3);
  EXPECT_EQ(d[63], 0xFF);
  EXPECT_EQ(decodeLftBlock(d), b);
}

TEST(Smp, PkeyBlockIsBigEndianWithPortInTheModifier) {
  PkeyBlock b{};
  b[0] = kDefaultPkey;
  b[1] = 0x8001;
  b[31] = 0x7FFF;
  uint8_t d[64] = {};
  encodePkeyBlock(b, d);
  EXPECT_EQ(d[0], 0xFF);
  EXPECT_EQ(d[1], 0xFF);
  EXPECT_EQ(d[2], 0x80);
  EXPECT_EQ(d[3], 0x01);
  EXPECT_EQ(d[62], 0x7F);
  EXPECT_EQ(decodePkeyBlock(d), b);
  EXPECT_EQ(pkeyAttrMod(3, 1), 0x00030001u);
}

}  // namespace
}  // namespace ibsm::mad
