// SaServer against a fabric brought up on FakeFabric (a 2-ary 2-tree: 4 switches, 4 hosts):
//   leaf-0 -- host-0, host-1     leaf-1 -- host-2, host-3     both leaves -- spine-0, spine-1
#include "daemon/sa/sa_server.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "daemon/program/pkey_programmer.h"
#include "tests/daemon/fake_fabric_fixture.h"

namespace ibsm::daemon {
namespace {

using namespace std::chrono_literals;

struct SaFixture : testing::FakeFabricFixture {
  SwitchTableCache cache;
  std::shared_ptr<const SubnetSnapshot> snap;
  std::unique_ptr<SaServer> sa;

  SaFixture() {
    tools::FabricSpec spec;
    spec.k = 2;
    spec.n = 2;
    start(testing::generate(spec));
    auto up = bringUp(cache);
    PkeyProgrammer pkeys(*engine, clock);
    auto parts =
        std::make_shared<const fabric::PartitionMap>(fabric::PartitionMap::resolve(*up.found.topology, {}));
    EXPECT_TRUE(pkeys.program(*up.found.topology, *parts).warnings.empty());
    auto s = std::make_shared<SubnetSnapshot>();
    s->topology = up.found.topology;
    s->lids = up.lids;
    s->tables = up.tables;
    s->pkeys = pkeys.tables();
    s->partitions = parts;
    snap = s;
    sa = std::make_unique<SaServer>(
        clock, [this] { return snap; },
        [this] {
          mad::SmInfo i;
          i.priority = 3;
          i.state = 3;
          i.actCount = 7;
          i.smKey = smKey;
          return i;
        });
  }
  uint64_t smKey = 0;
  uint64_t saKey = 0;  // what requests present (SaOptions::saKey, 1, is the trusted one)
  mad::MadPacket request(uint8_t method, uint16_t attr, uint64_t mask = 0, const uint8_t* rec = nullptr,
                         size_t len = 0) {
    mad::MadPacket m = mad::makeSaMad(method, attr);
    mad::setTid(m, 0x42);
    mad::encodeSaHeader(mad::SaHeader{saKey, 0, mask}, m);
    if (rec) std::memcpy(mad::saData(m), rec, len);
    m.addr = mad::MadAddress{7, 1, 0x80010000, 0, 0};
    return m;
  }
  uint16_t status(const mad::MadPacket& m) { return mad::parseHeader(m)->status; }
  // All records of a GetTable answer, following RMPP ACKs to the end.
  std::vector<std::vector<uint8_t>> table(uint16_t attr, uint64_t mask = 0, const uint8_t* rec = nullptr,
                                          size_t len = 0) {
    auto out = sa->handle(request(mad::kGetTable, attr, mask, rec, len));
    EXPECT_FALSE(out.empty());
    std::vector<uint8_t> payload;
    size_t stride = 0, total = 0;
    for (uint32_t guard = 0; guard < 1000 && !out.empty(); ++guard) {
      uint32_t last = 0;
      for (const auto& seg : out) {
        EXPECT_EQ(status(seg), 0);
        auto r = mad::decodeRmpp(seg);
        EXPECT_TRUE(r.active());
        EXPECT_EQ(r.segNum, last ? last + 1 : r.segNum);
        last = r.segNum;
        if (r.segNum == 1) {
          total = r.lenOrWindow;
          stride = mad::decodeSaHeader(seg).attrOffset * 8u;
        }
        payload.insert(payload.end(), mad::saData(seg), mad::saData(seg) + mad::kSaDataSize);
        if (r.flags & mad::kRmppLast) {
          mad::MadPacket ack = request(mad::kGetTable, attr);  // the receiver ACKs the last one too
          mad::RmppHeader a;
          a.version = 1;
          a.type = mad::kRmppAck;
          a.flags = mad::kRmppActive;
          a.segNum = a.lenOrWindow = r.segNum;
          mad::encodeRmpp(a, ack);
          EXPECT_TRUE(sa->handle(ack).empty());
          out.clear();
          break;
        }
      }
      if (out.empty()) break;
      mad::MadPacket ack = request(mad::kGetTable, attr);
      mad::RmppHeader a;
      a.version = 1;
      a.type = mad::kRmppAck;
      a.flags = mad::kRmppActive;
      a.segNum = last;
      a.lenOrWindow = last + 4;
      mad::encodeRmpp(a, ack);
      out = sa->handle(ack);
    }
    size_t segments = (payload.size() + mad::kSaDataSize - 1) / mad::kSaDataSize;
    size_t bytes = total - 20 * segments;
    std::vector<std::vector<uint8_t>> recs;
    for (size_t off = 0; stride && off + stride <= bytes; off += stride)
      recs.emplace_back(payload.begin() + static_cast<long>(off),
                        payload.begin() + static_cast<long>(off + stride));
    return recs;
  }
  uint16_t lidOf(uint64_t portGuid) {
    auto p = snap->topology->findPort(fabric::Guid{portGuid});
    EXPECT_TRUE(p);
    bool sw = snap->topology->node(p->first).isSwitch();
    return snap->lids.base(p->first, sw ? fabric::PortNum{0} : p->second).value;
  }
};

TEST(SaServer, NodeRecordsOnePerEndportAndByLid) {
  SaFixture f;
  auto all = f.table(mad::kSaAttrNodeRecord);  // 2 pages of RMPP: 8 records x 112 bytes
  ASSERT_EQ(all.size(), 8u);
  std::set<uint64_t> guids;
  for (auto& r : all) guids.insert(mad::decodeNodeRecord(r.data()).info.portGuid.value);
  EXPECT_EQ(guids.size(), 8u);
  EXPECT_EQ(f.sa->rmppInFlight(), 0u);  // the last ACK closed the session

  uint16_t lid = f.lidOf(0x100001);
  uint8_t q[mad::kNodeRecordSize] = {};
  q[0] = static_cast<uint8_t>(lid >> 8);
  q[1] = static_cast<uint8_t>(lid);
  auto one = f.sa->handle(f.request(mad::kGet, mad::kSaAttrNodeRecord, 1, q, sizeof q));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(f.status(one[0]), 0);
  EXPECT_EQ(mad::parseHeader(one[0])->method, mad::kGetResp);
  auto v = mad::decodeNodeRecord(mad::saData(one[0]));
  EXPECT_EQ(v.info.portGuid.value, 0x100001u);
  EXPECT_EQ(v.lid, lid);
  EXPECT_EQ(one[0].addr.lid, 7);  // back to the requester
  EXPECT_EQ(mad::getTid(one[0]), 0x42u);
}

TEST(SaServer, ErrorsAreAnswered) {
  SaFixture f;
  // Get matching every node: too many; Get of a LID nobody has: no records.
  EXPECT_EQ(f.status(f.sa->handle(f.request(mad::kGet, mad::kSaAttrNodeRecord))[0]),
            mad::kStatusTooManyRecords);
  uint8_t q[mad::kNodeRecordSize] = {};
  q[1] = 200;
  EXPECT_EQ(f.status(f.sa->handle(f.request(mad::kGet, mad::kSaAttrNodeRecord, 1, q, sizeof q))[0]),
            mad::kStatusNoRecords);
  // GetTable with no match is a success with no records.
  EXPECT_TRUE(f.table(mad::kSaAttrNodeRecord, 1, q, sizeof q).empty());
  EXPECT_EQ(f.status(f.sa->handle(f.request(mad::kGet, 0x77))[0]), mad::kStatusMethodAttrUnsupported);
  EXPECT_EQ(f.status(f.sa->handle(f.request(0x11, mad::kSaAttrNodeRecord))[0]),
            mad::kStatusMethodUnsupported);
  EXPECT_EQ(f.status(f.sa->handle(f.request(mad::kSet, mad::kSaAttrNodeRecord))[0]),
            mad::kStatusMethodAttrUnsupported);
  mad::MadPacket bad = f.request(mad::kGet, mad::kSaAttrNodeRecord);
  bad.bytes[2] = 1;  // class version 1
  EXPECT_EQ(f.status(f.sa->handle(bad)[0]), mad::kStatusBadVersion);
  mad::MadPacket shortMad = bad;
  shortMad.size = 10;
  EXPECT_TRUE(f.sa->handle(shortMad).empty());
  EXPECT_EQ(f.sa->counters().malformed, 1u);
  // Each answer is counted by attribute and status (the metrics' ibsm_sa_requests_total).
  const auto& by = f.sa->counters().byAttrStatus;
  auto count = [&](uint16_t attr, uint16_t status) {
    auto it = by.find({attr, status});
    return it == by.end() ? uint64_t{0} : it->second;
  };
  EXPECT_EQ(count(mad::kSaAttrNodeRecord, mad::kStatusTooManyRecords), 1u);
  EXPECT_EQ(count(mad::kSaAttrNodeRecord, mad::kStatusNoRecords), 1u);
  EXPECT_EQ(count(mad::kSaAttrNodeRecord, mad::kStatusOk), 1u);  // the empty GetTable
  EXPECT_EQ(count(0x77, mad::kStatusMethodAttrUnsupported), 1u);
  EXPECT_EQ(count(mad::kSaAttrNodeRecord, mad::kStatusBadVersion), 1u);
}

TEST(SaServer, AnswersByAttributeAndStatusAreCappedAgainstHostileAttributes) {
  SaFixture f;
  for (uint16_t attr = 0x1000; attr < 0x1000 + SaCounters::kMaxAttrStatus + 10; ++attr)
    (void)f.sa->handle(f.request(mad::kGet, attr));
  EXPECT_EQ(f.sa->counters().byAttrStatus.size(), SaCounters::kMaxAttrStatus);
  EXPECT_EQ(f.sa->counters().otherAttrStatus, 10u);
}

// osmtest sends its MultiPathRecord GetMulti with RMPP Active set and nothing else in the RMPP header (the
// kernel would fill it in; umad2sim does not): a whole request, answered.
TEST(SaServer, RequestWithAnUnfilledRmppHeaderIsAnswered) {
  SaFixture f;
  uint8_t rec[mad::kSaDataSize] = {};
  rec[15] = rec[16] = 1;
  mad::putGid(rec + 24, mad::Gid{mad::kDefaultGidPrefix, 0x100001});
  mad::putGid(rec + 40, mad::Gid{mad::kDefaultGidPrefix, 0x100003});
  mad::MadPacket m = f.request(mad::kSaGetMulti, mad::kSaAttrMultiPathRecord, 0, rec, sizeof rec);
  mad::RmppHeader r;
  r.flags = mad::kRmppActive;
  mad::encodeRmpp(r, m);
  auto out = f.sa->handle(m);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(f.status(out[0]), 0);
  EXPECT_EQ(mad::parseHeader(out[0])->method, mad::kSaGetMultiResp);
  mad::PathRecord p = mad::decodePathRecord(mad::saData(out[0]));
  EXPECT_EQ(p.sgid.guid, 0x100001u);
  EXPECT_EQ(p.dgid.guid, 0x100003u);
}

TEST(SaServer, LinkRecordsAreEveryLinkBothWays) {
  SaFixture f;
  auto links = f.table(mad::kSaAttrLinkRecord);
  EXPECT_EQ(links.size(), 2 * f.snap->topology->links().size());
  std::set<std::tuple<uint16_t, uint8_t, uint16_t, uint8_t>> seen;
  for (auto& r : links) {
    auto l = mad::decodeLinkRecord(r.data());
    seen.insert({l.fromLid, l.fromPort, l.toLid, l.toPort});
  }
  for (auto& r : links) {
    auto l = mad::decodeLinkRecord(r.data());
    EXPECT_TRUE(seen.count({l.toLid, l.toPort, l.fromLid, l.fromPort}));
  }
}

TEST(SaServer, PathRecordFollowsTheLfts) {
  SaFixture f;
  uint16_t h0 = f.lidOf(0x100001), h1 = f.lidOf(0x100003), h2 = f.lidOf(0x100005);
  auto path = [&](uint16_t s, uint16_t d) {
    mad::PathRecord q;
    q.slid = s;
    q.dlid = d;
    uint8_t rec[mad::kPathRecordSize];
    mad::encodePathRecord(q, rec);
    auto out = f.sa->handle(
        f.request(mad::kGet, mad::kSaAttrPathRecord, mad::kPrSlid | mad::kPrDlid, rec, sizeof rec));
    EXPECT_EQ(out.size(), 1u);
    EXPECT_EQ(f.status(out[0]), 0);
    return mad::decodePathRecord(mad::saData(out[0]));
  };
  auto same = path(h0, h1);  // through leaf-0
  EXPECT_EQ(same.hopLimit, 2);
  EXPECT_EQ(same.dgid.guid, 0x100003u);
  EXPECT_EQ(same.sgid.guid, 0x100001u);
  EXPECT_EQ(same.dgid.prefix, mad::kDefaultGidPrefix);
  EXPECT_EQ(same.sl, 0);
  EXPECT_EQ(same.packetLifeTime, 18);
  auto far = path(h0, h2);  // leaf, spine, leaf
  EXPECT_EQ(far.hopLimit, 4);
  EXPECT_EQ(far.mtu, same.mtu);
  EXPECT_GT(far.rate, 0);
  // By GID; an unknown GID is ERR_INVALID_GID.
  mad::PathRecord q;
  q.sgid = mad::Gid{mad::kDefaultGidPrefix, 0x100001};
  q.dgid = mad::Gid{mad::kDefaultGidPrefix, 0x100005};
  uint8_t rec[mad::kPathRecordSize];
  mad::encodePathRecord(q, rec);
  auto out = f.sa->handle(
      f.request(mad::kGet, mad::kSaAttrPathRecord, mad::kPrSgid | mad::kPrDgid, rec, sizeof rec));
  EXPECT_EQ(mad::decodePathRecord(mad::saData(out[0])).dlid, h2);
  q.dgid.guid = 0xdead;
  mad::encodePathRecord(q, rec);
  out = f.sa->handle(
      f.request(mad::kGet, mad::kSaAttrPathRecord, mad::kPrSgid | mad::kPrDgid, rec, sizeof rec));
  EXPECT_EQ(f.status(out[0]), mad::kStatusInvalidGid);
  // MTU "greater than" what the path offers: nothing.
  q.dgid.guid = 0x100005;
  q.mtuSelector = 0;
  q.mtu = far.mtu;
  mad::encodePathRecord(q, rec);
  out = f.sa->handle(f.request(mad::kGet, mad::kSaAttrPathRecord,
                               mad::kPrSgid | mad::kPrDgid | mad::kPrMtu | mad::kPrMtuSelector, rec,
                               sizeof rec));
  EXPECT_EQ(f.status(out[0]), mad::kStatusNoRecords);
  // All pairs from one source: 8 endports.
  mad::encodePathRecord(mad::PathRecord{}, rec);
  rec[43] = static_cast<uint8_t>(h0);
  EXPECT_EQ(f.table(mad::kSaAttrPathRecord, mad::kPrSlid, rec, sizeof rec).size(), 8u);
}

// An engine with VL layers gives each (ingress switch, destination LID) an SL; the PathRecord carries it, and
// a query that asks for another SL finds no path.
TEST(SaServer, PathRecordCarriesTheEnginesSl) {
  SaFixture f;
  uint16_t h0 = f.lidOf(0x100001), h1 = f.lidOf(0x100003), h2 = f.lidOf(0x100005);
  SubnetSnapshot layered = *f.snap;
  const auto& topo = *layered.topology;
  auto src = topo.findPort(fabric::Guid{0x100001});
  ASSERT_TRUE(src);
  fabric::NodeIndex leaf = topo.node(src->first).ports[src->second.value].peerNode;
  layered.tables.slLayers = 4;
  layered.tables.sl.resize(topo.size());
  layered.tables.sl[leaf].assign(layered.lids.maxLid().value + 1u, 0);
  layered.tables.sl[leaf][h2] = 3;
  f.snap = std::make_shared<const SubnetSnapshot>(std::move(layered));
  auto query = [&](uint16_t d, std::optional<uint8_t> sl) {
    mad::PathRecord q;
    q.slid = h0;
    q.dlid = d;
    q.sl = sl.value_or(0);
    uint8_t rec[mad::kPathRecordSize];
    mad::encodePathRecord(q, rec);
    uint64_t mask = uint64_t{mad::kPrSlid} | mad::kPrDlid | (sl ? uint64_t{mad::kPrSl} : uint64_t{0});
    auto out = f.sa->handle(f.request(mad::kGet, mad::kSaAttrPathRecord, mask, rec, sizeof rec));
    EXPECT_EQ(out.size(), 1u);
    return out[0];
  };
  EXPECT_EQ(mad::decodePathRecord(mad::saData(query(h2, std::nullopt))).sl, 3);
  EXPECT_EQ(mad::decodePathRecord(mad::saData(query(h1, std::nullopt))).sl, 0);
  EXPECT_EQ(f.status(query(h2, 3)), 0);
  EXPECT_EQ(f.status(query(h2, 0)), mad::kStatusNoRecords);
}

TEST(SaServer, ServiceRecordLeaseAndDelete) {
  SaFixture f;
  mad::ServiceRecord s;
  s.id = 0x10;
  s.gid = mad::Gid{mad::kDefaultGidPrefix, 0x100001};
  s.pkey = 0xFFFF;
  s.lease = 5;
  uint8_t rec[mad::kServiceRecordSize];
  mad::encodeServiceRecord(s, rec);
  auto out = f.sa->handle(f.request(mad::kSet, mad::kSaAttrServiceRecord, 0, rec, sizeof rec));
  EXPECT_EQ(f.status(out[0]), 0);
  EXPECT_EQ(f.table(mad::kSaAttrServiceRecord).size(), 1u);
  f.clock.advance(6s);
  EXPECT_TRUE(f.table(mad::kSaAttrServiceRecord).empty());  // lease expired
  s.lease = 0xFFFFFFFF;
  mad::encodeServiceRecord(s, rec);
  f.sa->handle(f.request(mad::kSet, mad::kSaAttrServiceRecord, 0, rec, sizeof rec));
  f.clock.advance(1h);
  EXPECT_EQ(f.table(mad::kSaAttrServiceRecord, 1, rec, sizeof rec).size(), 1u);  // by ServiceID
  out = f.sa->handle(f.request(mad::kSaDelete, mad::kSaAttrServiceRecord, 1, rec, sizeof rec));
  EXPECT_EQ(f.status(out[0]), 0);
  EXPECT_EQ(mad::parseHeader(out[0])->method, mad::kSaDeleteResp);
  EXPECT_EQ(f.sa->services(), 0u);
  out = f.sa->handle(f.request(mad::kSaDelete, mad::kSaAttrServiceRecord, 1, rec, sizeof rec));
  EXPECT_EQ(f.status(out[0]), mad::kStatusNoRecords);
}

TEST(SaServer, InformInfoSubscribersGetReports) {
  SaFixture f;
  mad::InformInfo ii;
  ii.trapNumber = 128;
  ii.qpn = 5;
  ii.lidBegin = 0xFFFF;
  uint8_t rec[mad::kInformInfoSize];
  mad::encodeInformInfo(ii, rec);
  auto out = f.sa->handle(f.request(mad::kSet, mad::kSaAttrInformInfo, 0, rec, sizeof rec));
  EXPECT_EQ(f.status(out[0]), 0);
  EXPECT_EQ(f.sa->subscriptions(), 1u);
  mad::Notice n;
  n.generic = true;
  n.type = 1;
  n.producerType = 2;
  n.trapNumber = 128;
  n.lidAddr = 3;
  auto reports = f.sa->reportsFor(n);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(mad::parseHeader(reports[0])->method, mad::kReport);
  EXPECT_EQ(reports[0].addr.lid, 7);
  EXPECT_EQ(reports[0].addr.qpn, 5u);
  n.trapNumber = 129;
  EXPECT_TRUE(f.sa->reportsFor(n).empty());
  // 64/65 only for subscribers of them; a new snapshot without a host gives 65.
  ii.trapNumber = 0xFFFF;
  mad::encodeInformInfo(ii, rec);
  f.sa->handle(f.request(mad::kSet, mad::kSaAttrInformInfo, 0, rec, sizeof rec));
  EXPECT_TRUE(f.sa->reportsForSnapshot().empty());  // first look only records
  routing::LidAssignment lids = f.snap->lids;
  auto host = f.snap->topology->findPort(fabric::Guid{0x100005});
  lids.set(host->first, host->second, routing::LidRange{fabric::Lid{0}, 0});
  auto without = std::make_shared<SubnetSnapshot>(*f.snap);
  without->lids = lids;
  f.snap = without;
  reports = f.sa->reportsForSnapshot();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(mad::saData(reports[0])[5], 65);
  // Unsubscribe.
  ii.subscribe = false;
  mad::encodeInformInfo(ii, rec);
  EXPECT_EQ(f.status(f.sa->handle(f.request(mad::kSet, mad::kSaAttrInformInfo, 0, rec, sizeof rec))[0]), 0);
  EXPECT_EQ(f.sa->subscriptions(), 1u);
}

TEST(SaServer, RmppResendsOnTimeoutThenGivesUp) {
  SaFixture f;
  auto first = f.sa->handle(f.request(mad::kGetTable, mad::kSaAttrPortInfoRecord));
  ASSERT_EQ(first.size(), 1u);  // window of one until the receiver ACKs
  EXPECT_EQ(f.sa->rmppInFlight(), 1u);
  EXPECT_TRUE(f.sa->poll().empty());
  for (int i = 0; i < 3; ++i) {
    f.clock.advance(250ms);
    auto again = f.sa->poll();
    ASSERT_EQ(again.size(), 1u);
    EXPECT_EQ(mad::decodeRmpp(again[0]).segNum, 1u);
  }
  f.clock.advance(250ms);
  EXPECT_TRUE(f.sa->poll().empty());
  EXPECT_EQ(f.sa->rmppInFlight(), 0u);
  EXPECT_EQ(f.sa->counters().rmppAborted, 1u);
}

TEST(SaServer, HandlerRegistryServesOtherAttributes) {
  SaFixture f;
  f.sa->setHandler(mad::kSaAttrMcMemberRecord, [](const SaServer::Query& q) {
    SaServer::Answer a;
    a.recordSize = 53;
    if (q.header.method == mad::kGet) a.add()[0] = 0xAA;
    return a;
  });
  auto out = f.sa->handle(f.request(mad::kGet, mad::kSaAttrMcMemberRecord));
  EXPECT_EQ(f.status(out[0]), 0);
  EXPECT_EQ(mad::saData(out[0])[0], 0xAA);
}

TEST(SaServer, SmInfoRecordAndClassPortInfo) {
  SaFixture f;
  auto recs = f.table(mad::kSaAttrSmInfoRecord);
  ASSERT_EQ(recs.size(), 1u);
  uint16_t lid = 0;
  mad::SmInfo i = mad::decodeSmInfoRecord(recs[0].data(), &lid);
  EXPECT_EQ(i.priority, 3);
  EXPECT_EQ(i.state, 3);
  EXPECT_EQ(i.actCount, 7u);
  EXPECT_NE(i.guid.value, 0u);
  EXPECT_NE(lid, 0);
  auto cpi = f.sa->handle(f.request(mad::kGet, mad::kSaAttrClassPortInfo));
  EXPECT_EQ(f.status(cpi[0]), 0);
  EXPECT_EQ(mad::saData(cpi[0])[1], mad::kSaClassVersion);
}

// P_KeyTableRecords from the tables the SM read (FakeFabric boots them as ibsim: CA ports 64 entries, switch
// port 0 8, switch ports 64; 0xFFFF in entry 0).
TEST(SaServer, PkeyTableRecordsForEndports) {
  SaFixture f;
  f.saKey = 1;  // trusted
  auto query = [&](uint64_t mask, uint16_t lid, uint16_t block, uint8_t port) {
    mad::PkeyTableRecord q;
    q.lid = lid;
    q.block = block;
    q.port = port;
    uint8_t rec[mad::kPkeyTableRecordSize];
    mad::encodePkeyTableRecord(q, rec);
    std::vector<mad::PkeyTableRecord> out;
    for (const auto& r : f.table(mad::kSaAttrPkeyTableRecord, mask, rec, sizeof rec))
      out.push_back(mad::decodePkeyTableRecord(r.data()));
    return out;
  };
  // A CA's LID: its port's two blocks; PortNum is the port and is not matched (the LID names the port).
  const uint16_t h0 = f.lidOf(0x100001);
  for (uint8_t asked : {0, 1, 5}) {
    auto ca = query(mad::kPktrLid | mad::kPktrPort, h0, 0, asked);
    ASSERT_EQ(ca.size(), 2u);
    EXPECT_EQ(ca[0].lid, h0);
    EXPECT_EQ(ca[0].port, 1);
    EXPECT_EQ(ca[0].block, 0);
    EXPECT_EQ(ca[1].block, 1);
    EXPECT_EQ(ca[0].pkeys[0], 0xFFFF);
    EXPECT_EQ(ca[1].pkeys[0], 0);
  }
  // A switch's LID: port 0 only (1 block); its external ports have no records
  // (daemon/program/pkey_programmer.h).
  const uint16_t sw = f.lidOf(0x200000);
  auto all = query(mad::kPktrLid, sw, 0, 0);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].port, 0);
  EXPECT_TRUE(query(mad::kPktrLid | mad::kPktrPort | mad::kPktrBlock, sw, 1, 3).empty());
  EXPECT_EQ(query(mad::kPktrLid | mad::kPktrPort, sw, 0, 0).size(), 1u);
  // Every table: switch port 0 one block each, hosts 2.
  EXPECT_EQ(query(0, 0, 0, 0).size(), 4u * 1 + 4 * 2);
  // Get of exactly one record.
  mad::PkeyTableRecord q;
  q.lid = h0;
  q.block = 0;
  uint8_t rec[mad::kPkeyTableRecordSize];
  mad::encodePkeyTableRecord(q, rec);
  auto got = f.sa->handle(
      f.request(mad::kGet, mad::kSaAttrPkeyTableRecord, mad::kPktrLid | mad::kPktrBlock, rec, sizeof rec));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(f.status(got[0]), 0);
  EXPECT_EQ(mad::decodePkeyTableRecord(mad::saData(got[0])).pkeys[0], 0xFFFF);
  EXPECT_EQ(mad::decodeSaHeader(got[0]).attrOffset, 9);  // 72 bytes
}

// The SA_Key (sm.sa_key, default 1 as OpenSM's sa_key, which osmtest presents): 0 is an untrusted request,
// the key a trusted one, any other key is ignored (osmtest -f a waits for a timeout).
TEST(SaServer, PkeyTableRecordsOnlyForTrustedRequestersAndAWrongKeyIsIgnored) {
  SaFixture f;
  f.smKey = 5;  // the SM_Key is not the SA's key
  auto ask = [&](uint64_t key) {
    mad::MadPacket m = f.request(mad::kGetTable, mad::kSaAttrPkeyTableRecord);
    mad::encodeSaHeader(mad::SaHeader{key, 0, 0}, m);
    return f.sa->handle(m);
  };
  EXPECT_EQ(f.status(ask(0).at(0)), mad::kStatusReqInvalid);
  EXPECT_EQ(f.status(ask(1).at(0)), 0);
  EXPECT_TRUE(ask(5).empty());
  EXPECT_TRUE(ask(2).empty());
  EXPECT_EQ(f.sa->counters().wrongKey, 2u);
}

// osmtest -f v: a subscription without a QPN is the requester's QPN (an unsubscribe naming QPN 1 from QP 1
// finds it, and a subscribe naming it is the same one); a vendor-specific subscription is kept and gets no
// report of the generic notices the SM forwards.
TEST(SaServer, InformInfoWithoutQpnIsTheRequestersAndVendorSubscriptionsAreKept) {
  SaFixture f;
  auto set = [&](const mad::InformInfo& ii) {
    uint8_t rec[mad::kInformInfoSize];
    mad::encodeInformInfo(ii, rec);
    return f.status(f.sa->handle(f.request(mad::kSet, mad::kSaAttrInformInfo, 0, rec, sizeof rec)).at(0));
  };
  mad::InformInfo ii;  // all traps, QPN 0
  EXPECT_EQ(set(ii), 0);
  ii.qpn = 1;  // the request's QPN (SaFixture::request)
  EXPECT_EQ(set(ii), 0);
  EXPECT_EQ(f.sa->subscriptions(), 1u);
  ii.subscribe = false;
  ii.qpn = 0;  // an unsubscribe means the QPN it names
  EXPECT_EQ(set(ii), mad::kStatusReqInvalid);
  ii.qpn = 1;
  EXPECT_EQ(set(ii), 0);
  EXPECT_EQ(f.sa->subscriptions(), 0u);
  mad::InformInfo vendor;
  vendor.isGeneric = false;
  vendor.trapNumber = 0;    // device id
  vendor.producerType = 0;  // vendor id
  vendor.type = 0;
  EXPECT_EQ(set(vendor), 0);
  EXPECT_EQ(f.sa->subscriptions(), 1u);
  mad::Notice n;
  n.generic = true;
  n.trapNumber = 0;
  EXPECT_TRUE(f.sa->reportsFor(n).empty());
}

// A requester reusing a TID (umad2sim gives every osmtest run the same ones) ends the RMPP answer it had
// under it: no segment of the old table is resent.
TEST(SaServer, ATidReusedEndsTheOldRmppAnswer) {
  SaFixture f;
  ASSERT_EQ(f.sa->handle(f.request(mad::kGetTable, mad::kSaAttrPortInfoRecord)).size(), 1u);
  EXPECT_EQ(f.sa->rmppInFlight(), 1u);
  auto again = f.sa->handle(f.request(mad::kGetTable, mad::kSaAttrNodeRecord));
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(mad::parseHeader(again[0])->attrId, mad::kSaAttrNodeRecord);
  EXPECT_EQ(f.sa->rmppInFlight(), 1u);
  f.clock.advance(250ms);
  auto resent = f.sa->poll();
  ASSERT_EQ(resent.size(), 1u);
  EXPECT_EQ(mad::parseHeader(resent[0])->attrId, mad::kSaAttrNodeRecord);
}

}  // namespace
}  // namespace ibsm::daemon
