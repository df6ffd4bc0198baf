// SA codecs: headers, RMPP segmentation, record layouts and component-mask matching.
#include "mad/sa.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

namespace ibsm::mad {
namespace {

TEST(SaCodec, HeaderAndRmppRoundTrip) {
  MadPacket m = makeSaMad(kGetTable, kSaAttrNodeRecord, 7);
  encodeSaHeader(SaHeader{0x1122334455667788ULL, 14, 0x81}, m);
  RmppHeader r;
  r.version = 1;
  r.type = kRmppAck;
  r.flags = kRmppActive;
  r.respTime = 0x12;
  r.segNum = 3;
  r.lenOrWindow = 9;
  encodeRmpp(r, m);
  auto h = parseHeader(m);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->mgmtClass, kClassSubnAdm);
  EXPECT_EQ(h->classVersion, 2);
  EXPECT_EQ(h->method, kGetTable);
  EXPECT_EQ(h->attrId, kSaAttrNodeRecord);
  SaHeader sa = decodeSaHeader(m);
  EXPECT_EQ(sa.smKey, 0x1122334455667788ULL);
  EXPECT_EQ(sa.attrOffset, 14);
  EXPECT_EQ(sa.compMask, 0x81u);
  // SA header on the wire: SM_Key at 36, AttributeOffset at 44, ComponentMask at 48 (IBA 15.2.1.1).
  EXPECT_EQ(m.bytes[36], 0x11);
  EXPECT_EQ(m.bytes[45], 14);
  EXPECT_EQ(m.bytes[55], 0x81);
  RmppHeader back = decodeRmpp(m);
  EXPECT_EQ(back.type, kRmppAck);
  EXPECT_EQ(back.segNum, 3u);
  EXPECT_EQ(back.lenOrWindow, 9u);
  EXPECT_EQ(back.respTime, 0x12);
  EXPECT_TRUE(back.active());
}

TEST(SaCodec, RmppSegmentsCarryThePayloadInOrder) {
  MadPacket h = makeSaMad(kGetTableResp, kSaAttrNodeRecord);
  std::vector<uint8_t> payload(450);
  std::iota(payload.begin(), payload.end(), 0);
  auto segs = rmppSegments(h, payload);
  ASSERT_EQ(segs.size(), 3u);  // 200 + 200 + 50
  std::vector<uint8_t> joined;
  for (size_t i = 0; i < segs.size(); ++i) {
    RmppHeader r = decodeRmpp(segs[i]);
    EXPECT_EQ(r.type, kRmppData);
    EXPECT_EQ(r.segNum, i + 1);
    EXPECT_TRUE(r.active());
    EXPECT_EQ(bool(r.flags & kRmppFirst), i == 0);
    EXPECT_EQ(bool(r.flags & kRmppLast), i == 2);
    joined.insert(joined.end(), saData(segs[i]), saData(segs[i]) + kSaDataSize);
  }
  EXPECT_EQ(decodeRmpp(segs[0]).lenOrWindow, 450u + 3 * 20);  // total, SA headers included
  EXPECT_EQ(decodeRmpp(segs[2]).lenOrWindow, 50u + 20);
  // The last segment is as long as what it carries (a receiver without RMPP counts records by the length).
  EXPECT_EQ(segs[0].size, kMadSize);
  EXPECT_EQ(segs[1].size, kMadSize);
  EXPECT_EQ(segs[2].size, kSaHeaderSize + 50);
  joined.resize(450);
  EXPECT_EQ(joined, payload);
  // Nothing to send still gives one (first and last) segment.
  auto empty = rmppSegments(h, {});
  ASSERT_EQ(empty.size(), 1u);
  EXPECT_EQ(decodeRmpp(empty[0]).flags, kRmppActive | kRmppFirst | kRmppLast);
  EXPECT_EQ(empty[0].size, kSaHeaderSize);
}

TEST(SaCodec, NodeRecordLayoutAndMask) {
  NodeInfo ni;
  ni.type = fabric::NodeType::kCa;
  ni.numPorts = 2;
  ni.nodeGuid = fabric::Guid{0x100000};
  ni.portGuid = fabric::Guid{0x100001};
  ni.systemGuid = fabric::Guid{0x100000};
  ni.vendorId = 0x2c9;
  ni.localPort = 1;
  uint8_t rec[kNodeRecordSize];
  encodeNodeRecord(17, ni, "host-0 HCA-1", rec);
  auto v = decodeNodeRecord(rec);
  EXPECT_EQ(v.lid, 17);
  EXPECT_EQ(v.info.portGuid.value, 0x100001u);
  EXPECT_EQ(v.info.vendorId, 0x2c9u);
  EXPECT_EQ(v.info.localPort, 1);
  EXPECT_EQ(v.description, "host-0 HCA-1");
  EXPECT_EQ(rec[1], 17);     // LID at 0
  EXPECT_EQ(rec[4 + 2], 1);  // NodeType at 6

  uint8_t query[kNodeRecordSize] = {};
  query[1] = 17;
  EXPECT_TRUE(recordMatches(kSaAttrNodeRecord, 1 << 0, query, rec));   // LID equal
  EXPECT_FALSE(recordMatches(kSaAttrNodeRecord, 1 << 4, query, rec));  // NodeType 0 != 1
  EXPECT_TRUE(recordMatches(kSaAttrNodeRecord, 0, query, rec));        // empty mask: everything
  encodeNodeRecord(0, ni, "", query);
  EXPECT_TRUE(recordMatches(kSaAttrNodeRecord, 1 << 8, query, rec));    // PortGUID
  EXPECT_FALSE(recordMatches(kSaAttrNodeRecord, 1 << 14, query, rec));  // NodeDescription differs
}

TEST(SaCodec, PathRecordRoundTrip) {
  PathRecord p;
  p.dgid = Gid{kDefaultGidPrefix, 0x100003};
  p.sgid = Gid{kDefaultGidPrefix, 0x100001};
  p.dlid = 5;
  p.slid = 9;
  p.hopLimit = 3;
  p.mtu = 4;
  p.rate = 7;
  p.packetLifeTime = 18;
  p.sl = 0;
  p.numbPath = 1;
  uint8_t rec[kPathRecordSize];
  encodePathRecord(p, rec);
  PathRecord b = decodePathRecord(rec);
  EXPECT_EQ(b.dgid, p.dgid);
  EXPECT_EQ(b.sgid, p.sgid);
  EXPECT_EQ(b.dlid, 5);
  EXPECT_EQ(b.slid, 9);
  EXPECT_EQ(b.hopLimit, 3);
  EXPECT_EQ(b.mtu, 4);
  EXPECT_EQ(b.mtuSelector, 2);
  EXPECT_EQ(b.rate, 7);
  EXPECT_EQ(b.packetLifeTime, 18);
  EXPECT_TRUE(b.reversible);
  // DLID at byte 40, SLID at 42, MTU selector|MTU at 54 (IBA 15.2.5.16).
  EXPECT_EQ(rec[41], 5);
  EXPECT_EQ(rec[43], 9);
  EXPECT_EQ(rec[54], 0x84);
  uint8_t query[kPathRecordSize] = {};
  query[41] = 5;
  EXPECT_TRUE(recordMatches(kSaAttrPathRecord, kPrDlid, query, rec));
  EXPECT_FALSE(recordMatches(kSaAttrPathRecord, kPrDlid | kPrSlid, query, rec));
}

TEST(SaCodec, LinkServiceInformRoundTrip) {
  uint8_t lr[kLinkRecordSize];
  encodeLinkRecord(LinkRecord{1, 3, 4, 2}, lr);
  EXPECT_EQ(decodeLinkRecord(lr), (LinkRecord{1, 3, 4, 2}));
  uint8_t q[kLinkRecordSize] = {0, 1, 0, 0, 0, 0, 0, 0};
  EXPECT_TRUE(recordMatches(kSaAttrLinkRecord, 1, q, lr));
  EXPECT_FALSE(recordMatches(kSaAttrLinkRecord, 1 | 2, q, lr));

  ServiceRecord s;
  s.id = 0x1000117;
  s.gid = Gid{kDefaultGidPrefix, 0x100001};
  s.pkey = 0xFFFF;
  s.lease = 60;
  std::memcpy(s.name.data(), "osmtest", 7);
  s.data[0] = 0xAB;
  uint8_t sr[kServiceRecordSize];
  encodeServiceRecord(s, sr);
  ServiceRecord t = decodeServiceRecord(sr);
  EXPECT_EQ(t.id, s.id);
  EXPECT_EQ(t.gid, s.gid);
  EXPECT_EQ(t.lease, 60u);
  EXPECT_EQ(t.name, s.name);
  EXPECT_EQ(t.data, s.data);
  EXPECT_EQ(sr[7], 0x17);  // ServiceID at 0

  InformInfo ii;
  ii.gid = Gid{kDefaultGidPrefix, 0x100001};
  ii.trapNumber = 128;
  ii.qpn = 0x123456;
  ii.respTimeValue = 19;
  ii.subscribe = true;
  uint8_t in[kInformInfoSize];
  encodeInformInfo(ii, in);
  InformInfo jj = decodeInformInfo(in);
  EXPECT_EQ(jj.trapNumber, 128);
  EXPECT_EQ(jj.qpn, 0x123456u);
  EXPECT_EQ(jj.respTimeValue, 19);
  EXPECT_TRUE(jj.subscribe);
  EXPECT_TRUE(jj.isGeneric);
}

TEST(SaCodec, NoticeForReport) {
  Notice n;
  n.generic = true;
  n.type = 4;
  n.producerType = 4;
  n.trapNumber = 64;
  n.issuerLid = 1;
  Gid g{kDefaultGidPrefix, 0x100001};
  uint8_t rec[kNoticeSize];
  encodeNotice(n, &g, rec);
  EXPECT_EQ(rec[0], 0x84);   // IsGeneric | type 4
  EXPECT_EQ(rec[3], 4);      // producer
  EXPECT_EQ(rec[5], 64);     // trap number
  EXPECT_EQ(rec[7], 1);      // issuer LID
  EXPECT_EQ(rec[16], 0xfe);  // GID after 6 reserved bytes of the data details
  EXPECT_EQ(rec[31], 0x01);
}

TEST(SaCodec, MultiPathRequestValidated) {
  uint8_t rec[kSaDataSize] = {};
  rec[15] = 1;
  rec[16] = 1;
  putGid(rec + 24, Gid{kDefaultGidPrefix, 0x100001});  // the GIDs follow the fixed part at byte 24
  putGid(rec + 40, Gid{kDefaultGidPrefix, 0x100003});
  auto m = decodeMultiPathRecord(rec, sizeof rec);
  ASSERT_TRUE(m);
  ASSERT_EQ(m->sgids.size(), 1u);
  ASSERT_EQ(m->dgids.size(), 1u);
  EXPECT_EQ(m->sgids[0].guid, 0x100001u);
  EXPECT_EQ(m->dgids[0].guid, 0x100003u);
  rec[16] = 20;  // GIDs past the MAD
  EXPECT_FALSE(decodeMultiPathRecord(rec, sizeof rec));
}

TEST(SaCodec, PkeyTableRecordLayoutAndMask) {
  PkeyTableRecord r;
  r.lid = 0x0102;
  r.block = 1;
  r.port = 3;
  r.pkeys[0] = 0xFFFF;
  r.pkeys[5] = 0x8002;
  uint8_t rec[kPkeyTableRecordSize];
  encodePkeyTableRecord(r, rec);
  // LID 0-1, BlockNum 2-3, PortNum 4, reserved 5-7, the P_KeyTable block from 8 (IBA 15.2.5.11).
  EXPECT_EQ(rec[0], 0x01);
  EXPECT_EQ(rec[1], 0x02);
  EXPECT_EQ(rec[2], 0x00);
  EXPECT_EQ(rec[3], 0x01);
  EXPECT_EQ(rec[4], 3);
  EXPECT_EQ(rec[8], 0xFF);
  EXPECT_EQ(rec[18], 0x80);
  EXPECT_EQ(rec[19], 0x02);
  PkeyTableRecord back = decodePkeyTableRecord(rec);
  EXPECT_EQ(back.lid, r.lid);
  EXPECT_EQ(back.block, 1);
  EXPECT_EQ(back.port, 3);
  EXPECT_EQ(back.pkeys, r.pkeys);
  EXPECT_EQ(recordSize(kSaAttrPkeyTableRecord), 72u);

  PkeyTableRecord want;
  want.lid = 0x0102;
  want.block = 0;
  want.port = 3;
  uint8_t q[kPkeyTableRecordSize];
  encodePkeyTableRecord(want, q);
  EXPECT_TRUE(recordMatches(kSaAttrPkeyTableRecord, kPktrLid | kPktrPort, q, rec));
  EXPECT_FALSE(recordMatches(kSaAttrPkeyTableRecord, kPktrLid | kPktrBlock, q, rec));
  want.port = 2;
  encodePkeyTableRecord(want, q);
  EXPECT_FALSE(recordMatches(kSaAttrPkeyTableRecord, kPktrPort, q, rec));
  EXPECT_TRUE(recordMatches(kSaAttrPkeyTableRecord, kPktrLid, q, rec));
}

}  // namespace
}  // namespace ibsm::mad
