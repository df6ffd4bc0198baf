#include "daemon/sa/sa_server.h"

#include <algorithm>
#include <cstring>
#include <iterator>

#include "daemon/sa/path_records.h"
#include "daemon/sa/sa_records.h"

namespace ibsm::daemon {

using fabric::Guid;
using fabric::Lid;
using fabric::NodeIndex;
using fabric::PortNum;
using mad::Gid;
using sa::Endport;
using sa::endportByGid;
using sa::endportByLid;
using sa::endports;
using sa::fail;
using sa::portGuidOf;

namespace {

uint8_t responseMethod(uint8_t method) {
  switch (method) {
    case mad::kGetTable:
      return mad::kGetTableResp;
    case mad::kSaDelete:
      return mad::kSaDeleteResp;
    case mad::kSaGetMulti:
      return mad::kSaGetMultiResp;
    default:
      return mad::kGetResp;  // Get, Set, and unsupported methods
  }
}

// Whether a subscription asks for a generic notice (0xFFFF, 0xFFFFFF: any); a vendor-specific one asks for
// none of them.
bool subscribedTo(const mad::InformInfo& i, const mad::Notice& n) {
  return i.isGeneric && (i.trapNumber == 0xFFFF || i.trapNumber == n.trapNumber) &&
         (i.type == 0xFFFF || i.type == n.type) &&
         (i.producerType == 0xFFFFFF || i.producerType == n.producerType);
}

}  // namespace

uint8_t* SaServer::Answer::add() {
  size_t stride = mad::recordStride(recordSize);
  // Zeroed by value-initialization: resize(n, 0) inlined into a caller (a unity batch) draws a false
  // -Warray-bounds from GCC 12 at -O3, the package build's level.
  records.resize(records.size() + stride);
  ++count;
  return records.data() + records.size() - stride;
}

void SaServer::Answer::keepIfMatches(uint16_t attrId, uint64_t mask, const uint8_t* query) {
  size_t stride = mad::recordStride(recordSize);
  if (mad::recordMatches(attrId, mask, query, records.data() + records.size() - stride)) return;
  records.resize(records.size() - stride);
  --count;
}

void SaCounters::answered(uint16_t attrId, uint16_t status) {
  const std::pair<uint16_t, uint16_t> key{attrId, status};
  if (auto it = byAttrStatus.find(key); it != byAttrStatus.end())
    ++it->second;
  else if (byAttrStatus.size() < kMaxAttrStatus)
    byAttrStatus.emplace(key, 1);
  else
    ++otherAttrStatus;
}

SaServer::SaServer(const mad::Clock& clock, SnapshotFn snapshot, SmInfoFn smInfo, SaOptions options)
    : clock_(clock), snapshot_(std::move(snapshot)), smInfo_(std::move(smInfo)), options_(options) {}

std::vector<mad::MadPacket> SaServer::handle(const mad::MadPacket& req) {
  auto header = mad::parseHeader(req);
  if (!header || header->mgmtClass != mad::kClassSubnAdm || req.size < mad::kMadSize) {
    ++counters_.malformed;
    return {};  // not even a header to answer to
  }
  const mad::MadHeader& h = *header;
  if (h.isResponse()) {
    ++counters_.malformed;  // ReportResponses are matched by the engine; anything else has no business here
    return {};
  }
  auto rmpp = mad::decodeRmpp(req);
  // Active without an RMPP type: the sender's RMPP layer never filled the header (osmtest's MultiPathRecord
  // through umad2sim, which has no RMPP); the MAD itself is a whole request.
  const bool rmppData = rmpp.active() && rmpp.type == mad::kRmppData;
  if (rmpp.active() && !rmppData && rmpp.type != mad::kRmppNone) return rmppControl(req, h);
  ++counters_.requests;
  // A wrong non-zero SA_Key is ignored, not answered (IBA 15.2.1.1; OpenSM drops it, osmtest -f a expects a
  // timeout): an answer would tell a prober that the key is wrong.
  if (const uint64_t key = mad::decodeSaHeader(req).smKey; key != 0 && key != options_.saKey) {
    ++counters_.wrongKey;
    return {};
  }
  if (h.classVersion != mad::kSaClassVersion) {
    ++counters_.errors;
    counters_.answered(h.attrId, mad::kStatusBadVersion);
    return {mad::makeSaResponse(req, responseMethod(h.method), mad::kStatusBadVersion)};
  }
  // A multi-segment request (RMPP DATA that is not first-and-last) is not reassembled: refuse it clearly.
  if (rmppData && (rmpp.flags & (mad::kRmppFirst | mad::kRmppLast)) != (mad::kRmppFirst | mad::kRmppLast)) {
    ++counters_.errors;
    counters_.answered(h.attrId, mad::kStatusReqInvalid);
    return {mad::makeSaResponse(req, responseMethod(h.method), mad::kStatusReqInvalid)};
  }
  // A requester that reuses a TID is done with the answer it had under it: stop resending that one (umad2sim
  // gives every osmtest run the same TIDs, and a late segment of the last run's table would be taken as the
  // answer to this request).
  if (sessions_.erase(SessionKey{req.addr.lid, req.addr.qpn, h.tid})) ++counters_.rmppAborted;
  auto snap = snapshot_ ? snapshot_() : nullptr;
  Query q{req, h, mad::decodeSaHeader(req), snap.get(), clock_.now()};
  Answer a = dispatch(q);
  const uint8_t method = responseMethod(h.method);
  if (a.status == 0 && h.method != mad::kGetTable && h.method != mad::kSaGetMulti) {
    if (a.count == 0)
      a.status = mad::kStatusNoRecords;
    else if (a.count > 1)
      a.status = mad::kStatusTooManyRecords;
  }
  if (a.status != 0) {
    ++counters_.errors;
    counters_.answered(h.attrId, a.status);
    return {mad::makeSaResponse(req, method, a.status)};
  }
  counters_.answered(h.attrId, mad::kStatusOk);
  mad::MadPacket resp = mad::makeSaResponse(req, method, 0);
  mad::SaHeader sa = q.sa;
  sa.attrOffset = static_cast<uint16_t>(mad::recordStride(a.recordSize) / 8);
  mad::encodeSaHeader(sa, resp);
  if (h.method != mad::kGetTable && h.method != mad::kSaGetMulti) {
    std::fill(resp.bytes.begin() + mad::kSaHeaderSize, resp.bytes.end(), 0);
    std::memcpy(mad::saData(resp), a.records.data(), std::min(a.records.size(), mad::kSaDataSize));
    return {resp};
  }
  Session s;
  s.segments = mad::rmppSegments(resp, a.records);
  s.deadline = clock_.now() + options_.rmppTimeout;
  auto out = sendWindow(s);
  if (s.segments.size() > 1) {
    ++counters_.rmppSessions;
    sessions_[SessionKey{req.addr.lid, req.addr.qpn, h.tid}] = std::move(s);
  }
  return out;
}

std::vector<mad::MadPacket> SaServer::sendWindow(Session& s) {
  std::vector<mad::MadPacket> out;
  uint32_t last = std::min<uint32_t>(s.windowLast, static_cast<uint32_t>(s.segments.size()));
  for (uint32_t i = s.acked + 1; i <= last; ++i) out.push_back(s.segments[i - 1]);
  s.sent = std::max(s.sent, last);
  s.deadline = clock_.now() + options_.rmppTimeout;
  return out;
}

std::vector<mad::MadPacket> SaServer::rmppControl(const mad::MadPacket& mad, const mad::MadHeader& h) {
  auto it = sessions_.find(SessionKey{mad.addr.lid, mad.addr.qpn, h.tid});
  if (it == sessions_.end()) return {};  // late ACK of a finished (or single-segment) answer
  auto r = mad::decodeRmpp(mad);
  if (r.type != mad::kRmppAck) {  // STOP or ABORT from the receiver
    ++counters_.rmppAborted;
    sessions_.erase(it);
    return {};
  }
  Session& s = it->second;
  if (r.segNum > s.sent || r.lenOrWindow < r.segNum) {  // ACK of a segment never sent, or shrinking window
    ++counters_.malformed;
    return {};
  }
  s.acked = std::max(s.acked, r.segNum);
  s.windowLast = std::max(s.windowLast, r.lenOrWindow);
  s.retries = 0;
  if (s.acked >= s.segments.size()) {
    sessions_.erase(it);
    return {};
  }
  return sendWindow(s);
}

std::vector<mad::MadPacket> SaServer::poll() {
  std::vector<mad::MadPacket> out;
  mad::TimePoint now = clock_.now();
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    Session& s = it->second;
    if (now < s.deadline) {
      ++it;
      continue;
    }
    if (++s.retries > options_.rmppRetries) {
      ++counters_.rmppAborted;
      it = sessions_.erase(it);
      continue;
    }
    auto again = sendWindow(s);
    out.insert(out.end(), again.begin(), again.end());
    ++it;
  }
  expireLeases(now);
  return out;
}

SaServer::Answer SaServer::dispatch(const Query& q) {
  uint16_t attr = q.header.attrId;
  uint8_t method = q.header.method;
  if (auto it = handlers_.find(attr); it != handlers_.end()) return it->second(q);
  bool get = method == mad::kGet, table = method == mad::kGetTable;
  bool set = method == mad::kSet, del = method == mad::kSaDelete;
  if (!get && !table && !set && !del && method != mad::kSaGetMulti)
    return fail(mad::kStatusMethodUnsupported);
  auto readOnly = [&](auto build) {
    if (!get && !table) return fail(mad::kStatusMethodAttrUnsupported);
    return build(q);
  };
  switch (attr) {
    case mad::kSaAttrClassPortInfo:
      if (!get) return fail(mad::kStatusMethodAttrUnsupported);
      return sa::classPortInfo(options_);
    case mad::kSaAttrNodeRecord:
      return readOnly(sa::nodeRecords);
    case mad::kSaAttrPortInfoRecord:
      return readOnly([&](const Query& x) { return sa::portInfoRecords(x, options_.gidPrefix); });
    case mad::kSaAttrLinkRecord:
      return readOnly(sa::linkRecords);
    case mad::kSaAttrSwitchInfoRecord:
      return readOnly(sa::switchInfoRecords);
    case mad::kSaAttrLftRecord:
      return readOnly([&](const Query& x) { return sa::lftRecords(x, options_.maxRecords); });
    case mad::kSaAttrGuidInfoRecord:
      return readOnly(sa::guidInfoRecords);
    case mad::kSaAttrSmInfoRecord:
      return readOnly([&](const Query& x) { return sa::smInfoRecords(x, smInfo_); });
    case mad::kSaAttrPkeyTableRecord:
      return readOnly(
          [&](const Query& x) { return sa::pkeyTableRecords(x, options_.saKey, options_.maxRecords); });
    case mad::kSaAttrPathRecord:
      return readOnly([&](const Query& x) { return sa::pathRecords(x, options_); });
    case mad::kSaAttrInformInfoRecord:
      return readOnly([&](const Query& x) { return informInfoRecords(x); });
    case mad::kSaAttrMultiPathRecord:
      if (method != mad::kSaGetMulti) return fail(mad::kStatusMethodAttrUnsupported);
      return sa::multiPathRecords(q, options_);
    case mad::kSaAttrServiceRecord:
      return serviceRecords(q);
    case mad::kSaAttrInformInfo:
      if (!set) return fail(mad::kStatusMethodAttrUnsupported);
      return informInfo(q);
    default:
      return fail(mad::kStatusMethodAttrUnsupported);
  }
}

void SaServer::expireLeases(mad::TimePoint now) {
  std::erase_if(services_, [&](const Service& s) { return !s.infinite && now >= s.expires; });
}

SaServer::Answer SaServer::serviceRecords(const Query& q) {
  Answer a;
  a.recordSize = mad::kServiceRecordSize;
  expireLeases(q.now);
  const uint8_t* query = mad::saData(q.mad);
  const uint8_t method = q.header.method;
  if (method == mad::kGet || method == mad::kGetTable) {
    for (const Service& s : services_) {
      mad::ServiceRecord out = s.rec;
      if (!s.infinite)
        out.lease = static_cast<uint32_t>(
            std::chrono::duration_cast<std::chrono::seconds>(s.expires - q.now).count());
      mad::encodeServiceRecord(out, a.add());
      a.keepIfMatches(mad::kSaAttrServiceRecord, q.sa.compMask, mad::saData(q.mad));
    }
    return a;
  }
  mad::ServiceRecord rec = mad::decodeServiceRecord(query);
  if (method == mad::kSet) {
    // The key of a service is (ServiceID, ServiceGID, ServiceP_Key) (IBA 15.2.5.14); a Set replaces it.
    // A zero ServiceGID: the service is on the requester's own port.
    if (q.snapshot && rec.gid == Gid{}) {
      if (auto e = endportByLid(*q.snapshot, q.mad.addr.lid))
        rec.gid = Gid{options_.gidPrefix, portGuidOf(q.snapshot->topology->node(e->node), e->port).value};
    }
    // The port GUID is what must exist; the prefix is not checked (the record keeps the GID as given):
    // OpenSM's osmtest sends the subnet prefix in host byte order (0x80fe on the wire), as OpenSM accepts.
    Gid check{options_.gidPrefix, rec.gid.guid};
    if (q.snapshot && !endportByGid(*q.snapshot, check, options_.gidPrefix))
      return fail(mad::kStatusInvalidGid);
    std::erase_if(services_, [&](const Service& s) {
      return s.rec.id == rec.id && s.rec.gid == rec.gid && s.rec.pkey == rec.pkey;
    });
    Service s{rec, q.now + std::chrono::seconds(rec.lease), rec.lease == 0xFFFFFFFF};
    services_.push_back(s);
    mad::encodeServiceRecord(rec, a.add());
    return a;
  }
  if (method == mad::kSaDelete) {
    // Delete the services the masked fields select; the answer carries the (first) deleted record.
    std::vector<Service> kept;
    for (const Service& s : services_) {
      uint8_t cand[mad::kServiceRecordSize];
      mad::encodeServiceRecord(s.rec, cand);
      if (mad::recordMatches(mad::kSaAttrServiceRecord, q.sa.compMask, query, cand)) {
        if (a.count == 0) std::memcpy(a.add(), cand, sizeof cand);
      } else {
        kept.push_back(s);
      }
    }
    services_ = std::move(kept);
    return a;
  }
  return fail(mad::kStatusMethodAttrUnsupported);
}

SaServer::Answer SaServer::informInfo(const Query& q) {
  Answer a;
  a.recordSize = mad::kInformInfoSize;
  // Vendor-specific subscriptions are kept (and listed) as OpenSM keeps them; no notice the SM forwards
  // matches them.
  mad::InformInfo info = mad::decodeInformInfo(mad::saData(q.mad));
  // A subscription without a QPN is for the requester's own (OpenSM keeps it so): a later request naming that
  // QPN finds it. An unsubscribe names the QPN it means.
  if (info.subscribe && !info.qpn) info.qpn = q.mad.addr.qpn;
  Gid subscriber = info.gid;
  if (q.snapshot && q.mad.addr.lid) {
    if (auto e = endportByLid(*q.snapshot, q.mad.addr.lid))
      subscriber = Gid{options_.gidPrefix, portGuidOf(q.snapshot->topology->node(e->node), e->port).value};
  }
  auto same = [&](const Subscriber& s) {
    // A subscription belongs to the port that sent it (its LID), whatever the snapshot says of that LID now.
    return s.addr.lid == q.mad.addr.lid && s.info.trapNumber == info.trapNumber && s.info.type == info.type &&
           s.info.producerType == info.producerType && s.info.qpn == info.qpn &&
           s.info.lidBegin == info.lidBegin && s.info.lidEnd == info.lidEnd;
  };
  if (info.subscribe) {
    if (std::none_of(subscribers_.begin(), subscribers_.end(), same)) {
      mad::MadAddress addr = q.mad.addr;
      addr.qpn = info.qpn;
      subscribers_.push_back(Subscriber{info, addr, subscriber});
    }
  } else {
    size_t before = subscribers_.size();
    std::erase_if(subscribers_, same);
    if (subscribers_.size() == before) return fail(mad::kStatusReqInvalid);  // nothing to unsubscribe
  }
  mad::encodeInformInfo(info, a.add());
  return a;
}

SaServer::Answer SaServer::informInfoRecords(const Query& q) {
  Answer a;
  a.recordSize = mad::kInformInfoRecordSize;
  uint16_t e = 0;
  for (const Subscriber& s : subscribers_) {
    mad::encodeInformInfoRecord(s.gid, e++, s.info, a.add());
    a.keepIfMatches(mad::kSaAttrInformInfoRecord, q.sa.compMask, mad::saData(q.mad));
  }
  return a;
}

mad::MadPacket SaServer::makeReport(const Subscriber& s, const uint8_t* notice) {
  mad::MadPacket m = mad::makeSaMad(mad::kReport, mad::kSaAttrNotice);
  std::memcpy(mad::saData(m), notice, mad::kNoticeSize);
  m.addr = s.addr;
  ++counters_.reports;
  return m;
}

std::vector<mad::MadPacket> SaServer::reportsFor(const mad::Notice& n) {
  std::vector<mad::MadPacket> out;
  uint8_t notice[mad::kNoticeSize];
  mad::encodeNotice(n, nullptr, notice);
  for (const Subscriber& s : subscribers_) {
    const auto& i = s.info;
    if (!subscribedTo(i, n)) continue;
    if (i.lidBegin != 0xFFFF && (n.lidAddr < i.lidBegin || n.lidAddr > std::max(i.lidBegin, i.lidEnd)))
      continue;
    out.push_back(makeReport(s, notice));
  }
  return out;
}

std::vector<mad::MadPacket> SaServer::reportsForSnapshot() {
  auto snap = snapshot_ ? snapshot_() : nullptr;
  if (snap == reported_) return {};
  auto before = reported_;
  reported_ = snap;
  if (!reportedOnce_) {
    reportedOnce_ = true;
    return {};
  }
  if (subscribers_.empty()) return {};  // nobody to tell: the fabric is not compared
  auto active = [&](const std::shared_ptr<const SubnetSnapshot>& s) {
    std::vector<uint64_t> guids;
    if (!s) return guids;
    for (const Endport& e : endports(*s)) {
      const auto& n = s->topology->node(e.node);
      const auto& p = n.ports.at(e.port.value);
      if (n.isSwitch() || p.attrs.state == fabric::PortState::kActive || !p.attrs.valid)
        guids.push_back(portGuidOf(n, e.port).value);
    }
    std::sort(guids.begin(), guids.end());
    return guids;
  };
  const std::vector<uint64_t> was = active(before), now = active(snap);
  std::vector<mad::MadPacket> out;
  uint16_t smLid = 0;
  if (smInfo_ && snap && snap->topology->smNode() != fabric::kNoNode) {
    const auto& t = *snap->topology;
    smLid = snap->lids.base(t.smNode(), t.node(t.smNode()).isSwitch() ? PortNum{0} : t.smPort()).value;
  }
  auto emit = [&](uint16_t trap, uint64_t guid) {
    mad::Notice n;
    n.generic = true;
    n.type = 4;          // informational
    n.producerType = 4;  // class manager
    n.trapNumber = trap;
    n.issuerLid = smLid;
    Gid gid{options_.gidPrefix, guid};
    uint8_t notice[mad::kNoticeSize];
    mad::encodeNotice(n, &gid, notice);
    for (const Subscriber& s : subscribers_)
      if (subscribedTo(s.info, n)) out.push_back(makeReport(s, notice));
  };
  std::vector<uint64_t> came, left;
  std::set_difference(now.begin(), now.end(), was.begin(), was.end(), std::back_inserter(came));
  std::set_difference(was.begin(), was.end(), now.begin(), now.end(), std::back_inserter(left));
  for (uint64_t g : came) emit(64, g);
  for (uint64_t g : left) emit(65, g);
  return out;
}

}  // namespace ibsm::daemon
