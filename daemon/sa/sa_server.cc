#include "daemon/sa/sa_server.h"

#include <algorithm>
#include <cstring>
#include <set>

namespace ibsm::daemon {

using fabric::Guid;
using fabric::Lid;
using fabric::NodeIndex;
using fabric::PortNum;
using mad::Gid;

namespace {

constexpr size_t kMaxHops = 64;
constexpr uint64_t kPirCapMaskBit = 1ULL << 7;

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

using mad::enumTenths;
using mad::rateEnum;
using mad::rateTenthsGbps;

uint8_t linkMtu(const fabric::PortAttrs& a, const fabric::PortAttrs& b) {
  uint8_t x = a.mtuCap ? a.mtuCap : 4, y = b.mtuCap ? b.mtuCap : 4;
  return std::min(x, y);
}

// Selector semantics of IBA 15.2.5.16 for MTU/rate/packet life time (values compared as given by cmp).
// value: what the path offers; returns the value to answer, or nullopt when the path does not qualify.
template <typename Less>
std::optional<uint8_t> applySelector(uint8_t selector, uint8_t wanted, uint8_t offered, Less less) {
  switch (selector) {
    case 0:
      return less(wanted, offered) ? std::optional(offered) : std::nullopt;  // greater than
    case 1:
      return less(offered, wanted) ? std::optional(offered) : std::nullopt;  // less than
    case 2:
      return !less(offered, wanted) ? std::optional(wanted) : std::nullopt;  // exactly (can run at it)
    default:
      return offered;  // largest available
  }
}

struct Endport {
  NodeIndex node;
  PortNum port;
};

// Endports of a snapshot: switch port 0 and every CA port that has a LID.
std::vector<Endport> endports(const SubnetSnapshot& s) {
  std::vector<Endport> out;
  const auto& topo = *s.topology;
  for (NodeIndex i = 0; i < topo.size(); ++i) {
    const auto& n = topo.node(i);
    if (n.isSwitch()) {
      out.push_back({i, PortNum{0}});
      continue;
    }
    for (size_t p = 1; p < n.ports.size(); ++p)
      if (s.lids.base(i, PortNum{static_cast<uint8_t>(p)}).value)
        out.push_back({i, PortNum{static_cast<uint8_t>(p)}});
  }
  return out;
}

Guid portGuidOf(const fabric::Node& n, PortNum p) {
  Guid g = n.isSwitch() ? n.ports.at(0).guid : n.ports.at(p.value).guid;
  return g.value ? g : n.guid;
}

}  // namespace

SaServer::Answer fail(uint16_t status) {
  SaServer::Answer a;
  a.status = status;
  return a;
}

uint8_t* SaServer::Answer::add() {
  size_t stride = mad::recordStride(recordSize);
  records.resize(records.size() + stride, 0);
  ++count;
  return records.data() + records.size() - stride;
}

void SaServer::Answer::keepIfMatches(uint16_t attrId, uint64_t mask, const uint8_t* query) {
  size_t stride = mad::recordStride(recordSize);
  if (mad::recordMatches(attrId, mask, query, records.data() + records.size() - stride)) return;
  records.resize(records.size() - stride);
  --count;
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
  if (h.classVersion != mad::kSaClassVersion) {
    ++counters_.errors;
    return {mad::makeSaResponse(req, responseMethod(h.method), mad::kStatusBadVersion)};
  }
  // A multi-segment request (RMPP DATA that is not first-and-last) is not reassembled: refuse it clearly.
  if (rmppData && (rmpp.flags & (mad::kRmppFirst | mad::kRmppLast)) != (mad::kRmppFirst | mad::kRmppLast)) {
    ++counters_.errors;
    return {mad::makeSaResponse(req, responseMethod(h.method), mad::kStatusReqInvalid)};
  }
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
    return {mad::makeSaResponse(req, method, a.status)};
  }
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
  Answer a;
  auto readOnly = [&](Answer (SaServer::*fn)(const Query&)) {
    if (!get && !table) return fail(mad::kStatusMethodAttrUnsupported);
    return (this->*fn)(q);
  };
  switch (attr) {
    case mad::kSaAttrClassPortInfo: {
      if (!get) return fail(mad::kStatusMethodAttrUnsupported);
      a.recordSize = mad::kClassPortInfoSize;
      mad::ClassPortInfo c;
      c.respTimeValue = options_.subnetTimeout;
      c.capMask = 0x0002;  // IsTrapSupported... the SA forwards traps as reports (InformInfo)
      mad::encodeClassPortInfo(c, a.add());
      return a;
    }
    case mad::kSaAttrNodeRecord:
      return readOnly(&SaServer::nodeRecords);
    case mad::kSaAttrPortInfoRecord:
      return readOnly(&SaServer::portInfoRecords);
    case mad::kSaAttrLinkRecord:
      return readOnly(&SaServer::linkRecords);
    case mad::kSaAttrSwitchInfoRecord:
      return readOnly(&SaServer::switchInfoRecords);
    case mad::kSaAttrLftRecord:
      return readOnly(&SaServer::lftRecords);
    case mad::kSaAttrGuidInfoRecord:
      return readOnly(&SaServer::guidInfoRecords);
    case mad::kSaAttrSmInfoRecord:
      return readOnly(&SaServer::smInfoRecords);
    case mad::kSaAttrPkeyTableRecord:
      return readOnly(&SaServer::pkeyTableRecords);
    case mad::kSaAttrPathRecord:
      return readOnly(&SaServer::pathRecords);
    case mad::kSaAttrInformInfoRecord:
      return readOnly(&SaServer::informInfoRecords);
    case mad::kSaAttrMultiPathRecord:
      if (method != mad::kSaGetMulti) return fail(mad::kStatusMethodAttrUnsupported);
      return multiPathRecords(q);
    case mad::kSaAttrServiceRecord:
      return serviceRecords(q);
    case mad::kSaAttrInformInfo:
      if (!set) return fail(mad::kStatusMethodAttrUnsupported);
      return informInfo(q);
    default:
      return fail(mad::kStatusMethodAttrUnsupported);
  }
}

SaServer::Answer SaServer::nodeRecords(const Query& q) {
  Answer a;
  a.recordSize = mad::kNodeRecordSize;
  if (!q.snapshot) return a;
  const auto& topo = *q.snapshot->topology;
  for (const Endport& e : endports(*q.snapshot)) {
    const auto& n = topo.node(e.node);
    mad::NodeInfo ni;
    ni.type = n.type;
    ni.numPorts = n.numPorts;
    ni.systemGuid = n.systemGuid;
    ni.nodeGuid = n.guid;
    ni.portGuid = portGuidOf(n, e.port);
    ni.deviceId = n.deviceId;
    ni.partitionCap = n.partitionCap;
    ni.revision = n.revision;
    ni.vendorId = n.vendorId;
    ni.localPort = e.port.value;
    mad::encodeNodeRecord(q.snapshot->lids.base(e.node, e.port).value, ni, n.description, a.add());
    a.keepIfMatches(mad::kSaAttrNodeRecord, q.sa.compMask, mad::saData(q.mad));
  }
  return a;
}

SaServer::Answer SaServer::portInfoRecords(const Query& q) {
  Answer a;
  a.recordSize = mad::kPortInfoRecordSize;
  if (!q.snapshot) return a;
  const auto& topo = *q.snapshot->topology;
  for (NodeIndex i = 0; i < topo.size(); ++i) {
    const auto& n = topo.node(i);
    uint16_t switchLid = n.isSwitch() ? q.snapshot->lids.base(i, PortNum{0}).value : 0;
    for (size_t p = n.isSwitch() ? 0 : 1; p < n.ports.size(); ++p) {
      const auto& port = n.ports[p];
      PortNum pn{static_cast<uint8_t>(p)};
      uint16_t lid = n.isSwitch() ? switchLid : q.snapshot->lids.base(i, pn).value;
      if (!lid || !port.attrs.valid) continue;
      fabric::PortAttrs attrs = port.attrs;
      if (!n.isSwitch() || p == 0) {
        auto range = q.snapshot->lids.range(i, pn);
        attrs.lid = range.base;
        attrs.lmc = range.lmc;
      }
      uint8_t pi[64] = {};
      mad::encodePortInfo(attrs, pi);
      mad::setPortInfoRecordExtras(pi, pn.value, options_.gidPrefix);
      // CapabilityMask (mask bit 7) matches when the port has every requested capability, as OpenSM does
      // (saquery -s asks for IsSM ports this way); the other fields must be equal.
      uint32_t wantCaps = mad::portInfoCapMask(mad::saData(q.mad) + 4);
      if ((q.sa.compMask & kPirCapMaskBit) && (attrs.capMask & wantCaps) != wantCaps) continue;
      mad::encodePortInfoRecord(lid, pn.value, pi, a.add());
      a.keepIfMatches(mad::kSaAttrPortInfoRecord, q.sa.compMask & ~kPirCapMaskBit, mad::saData(q.mad));
    }
  }
  return a;
}

SaServer::Answer SaServer::linkRecords(const Query& q) {
  Answer a;
  a.recordSize = mad::kLinkRecordSize;
  if (!q.snapshot) return a;
  const auto& topo = *q.snapshot->topology;
  auto lidOf = [&](NodeIndex n, PortNum p) {
    return q.snapshot->lids.base(n, topo.node(n).isSwitch() ? PortNum{0} : p).value;
  };
  for (const auto& l : topo.links()) {
    for (int dir = 0; dir < 2; ++dir) {
      NodeIndex from = dir ? l.b : l.a, to = dir ? l.a : l.b;
      PortNum fp = dir ? l.portB : l.portA, tp = dir ? l.portA : l.portB;
      mad::LinkRecord r{lidOf(from, fp), fp.value, tp.value, lidOf(to, tp)};
      if (!r.fromLid || !r.toLid) continue;
      mad::encodeLinkRecord(r, a.add());
      a.keepIfMatches(mad::kSaAttrLinkRecord, q.sa.compMask, mad::saData(q.mad));
    }
  }
  return a;
}

SaServer::Answer SaServer::switchInfoRecords(const Query& q) {
  Answer a;
  a.recordSize = mad::kSwitchInfoRecordSize;
  if (!q.snapshot) return a;
  const auto& topo = *q.snapshot->topology;
  for (NodeIndex s : topo.switches()) {
    uint16_t lid = q.snapshot->lids.base(s, PortNum{0}).value;
    if (!lid) continue;
    uint8_t si[64] = {};
    fabric::SwitchAttrs attrs = topo.node(s).sw;
    if (s < q.snapshot->tables.lft.size() && !q.snapshot->tables.lft[s].empty())
      attrs.linearFdbTop = static_cast<uint16_t>(q.snapshot->tables.lft[s].size() - 1);
    mad::encodeSwitchInfo(attrs, si);
    mad::encodeSwitchInfoRecord(lid, si, a.add());
    a.keepIfMatches(mad::kSaAttrSwitchInfoRecord, q.sa.compMask, mad::saData(q.mad));
  }
  return a;
}

SaServer::Answer SaServer::lftRecords(const Query& q) {
  Answer a;
  a.recordSize = mad::kLftRecordSize;
  if (!q.snapshot) return a;
  const auto& topo = *q.snapshot->topology;
  for (NodeIndex s : topo.switches()) {
    uint16_t lid = q.snapshot->lids.base(s, PortNum{0}).value;
    if (!lid || s >= q.snapshot->tables.lft.size()) continue;
    const auto& lft = q.snapshot->tables.lft[s];
    for (size_t block = 0; block * 64 < lft.size(); ++block) {
      uint8_t ports[64];
      std::fill(ports, ports + 64, routing::kNoPort);
      std::copy(lft.begin() + static_cast<long>(block * 64),
                lft.begin() + static_cast<long>(std::min(lft.size(), block * 64 + 64)), ports);
      mad::encodeLftRecord(lid, static_cast<uint16_t>(block), ports, a.add());
      a.keepIfMatches(mad::kSaAttrLftRecord, q.sa.compMask, mad::saData(q.mad));
      if (a.count > options_.maxRecords) return fail(mad::kStatusNoResources);
    }
  }
  return a;
}

SaServer::Answer SaServer::guidInfoRecords(const Query& q) {
  Answer a;
  a.recordSize = mad::kGuidInfoRecordSize;
  if (!q.snapshot) return a;
  const auto& topo = *q.snapshot->topology;
  for (const Endport& e : endports(*q.snapshot)) {
    mad::encodeGuidInfoRecord(q.snapshot->lids.base(e.node, e.port).value, 0,
                              {portGuidOf(topo.node(e.node), e.port).value}, a.add());
    a.keepIfMatches(mad::kSaAttrGuidInfoRecord, q.sa.compMask, mad::saData(q.mad));
  }
  return a;
}

SaServer::Answer SaServer::smInfoRecords(const Query& q) {
  Answer a;
  a.recordSize = mad::kSmInfoRecordSize;
  if (!q.snapshot || !smInfo_) return a;
  const auto& topo = *q.snapshot->topology;
  if (topo.smNode() == fabric::kNoNode) return a;
  PortNum smPort = topo.node(topo.smNode()).isSwitch() ? PortNum{0} : topo.smPort();
  mad::SmInfo info = smInfo_();
  if (!info.guid.value) info.guid = portGuidOf(topo.node(topo.smNode()), smPort);
  // SM_Key is shown only to a requester that presents it (IBA 14.4.1, 15.4.2).
  if (q.sa.smKey != info.smKey) info.smKey = 0;
  mad::encodeSmInfoRecord(q.snapshot->lids.base(topo.smNode(), smPort).value, info, a.add());
  a.keepIfMatches(mad::kSaAttrSmInfoRecord, q.sa.compMask, mad::saData(q.mad));
  return a;
}

// One record per block of every P_Key table the SM read: a switch's port 0, and for a CA the port its LID
// belongs to (PortNum is then the port, and not matched: the LID names it).
SaServer::Answer SaServer::pkeyTableRecords(const Query& q) {
  Answer a;
  a.recordSize = mad::kPkeyTableRecordSize;
  // P_KeyTableRecords are given to trusted requesters only (IBA 15.2.5.11): those presenting the SM_Key.
  if (q.sa.smKey != (smInfo_ ? smInfo_().smKey : 0)) return fail(mad::kStatusReqInvalid);
  if (!q.snapshot || !q.snapshot->pkeys) return a;
  const auto& topo = *q.snapshot->topology;
  const uint8_t* query = mad::saData(q.mad);
  for (NodeIndex i = 0; i < topo.size(); ++i) {
    const auto& n = topo.node(i);
    const uint64_t mask = n.isSwitch() ? q.sa.compMask : q.sa.compMask & ~uint64_t{mad::kPktrPort};
    for (size_t p = n.isSwitch() ? 0 : 1; p < n.ports.size(); ++p) {
      const std::vector<uint16_t>* table = q.snapshot->pkeys->find(n.guid, static_cast<uint8_t>(p));
      uint16_t lid = q.snapshot->lids.base(i, PortNum{static_cast<uint8_t>(n.isSwitch() ? 0 : p)}).value;
      if (!table || !lid) continue;
      for (size_t b = 0; b * mad::kPkeyBlockEntries < table->size(); ++b) {
        mad::PkeyTableRecord r;
        r.lid = lid;
        r.block = static_cast<uint16_t>(b);
        r.port = static_cast<uint8_t>(p);
        std::copy_n(table->begin() + static_cast<long>(b * mad::kPkeyBlockEntries), mad::kPkeyBlockEntries,
                    r.pkeys.begin());
        mad::encodePkeyTableRecord(r, a.add());
        a.keepIfMatches(mad::kSaAttrPkeyTableRecord, mask, query);
        if (a.count > options_.maxRecords) return fail(mad::kStatusNoResources);
      }
    }
  }
  return a;
}

namespace {
// The path from one endport to another along the LFTs: hop count (switch-to-switch and CA links), the
// smallest MTU and rate of the links crossed; nullopt when the LFTs do not lead there.
struct PathFacts {
  unsigned hops = 0;
  uint8_t mtu = 0;
  unsigned rate = 0;
};
std::optional<PathFacts> tracePath(const SubnetSnapshot& s, Endport src, Endport dst, Lid dlid) {
  const auto& topo = *s.topology;
  PathFacts f{0, 0xFF, ~0u};
  auto cross = [&](const fabric::Port& out) {
    const auto& peer = topo.node(out.peerNode).ports.at(out.peerPort.value);
    f.mtu = std::min(f.mtu, linkMtu(out.attrs, peer.attrs));
    f.rate = std::min(f.rate, rateTenthsGbps(out.attrs));
    ++f.hops;
  };
  if (src.node == dst.node && (topo.node(src.node).isSwitch() || src.port == dst.port)) {
    const auto& p = topo.node(src.node).ports.at(src.port.value);
    return PathFacts{0, p.attrs.mtuCap ? p.attrs.mtuCap : uint8_t{4},
                     p.attrs.valid && p.attrs.widthActive ? rateTenthsGbps(p.attrs) : 100};
  }
  NodeIndex at = src.node;
  if (!topo.node(at).isSwitch()) {
    const auto& p = topo.node(at).ports.at(src.port.value);
    if (!p.connected()) return std::nullopt;
    cross(p);
    at = p.peerNode;
    if (at == dst.node) return f;  // CA back to back
  }
  for (size_t guard = 0; guard < kMaxHops; ++guard) {
    if (at == dst.node) return f;
    const auto& n = topo.node(at);
    if (!n.isSwitch() || at >= s.tables.lft.size()) return std::nullopt;
    uint8_t out = s.tables.port(at, dlid);
    if (out == routing::kNoPort || out == 0 || out >= n.ports.size() || !n.ports[out].connected())
      return std::nullopt;
    cross(n.ports[out]);
    at = n.ports[out].peerNode;
    if (at == dst.node) {
      // Entering a CA: it must be the destination port itself.
      if (!topo.node(at).isSwitch() && n.ports[out].peerPort != dst.port) return std::nullopt;
      return f;
    }
  }
  return std::nullopt;
}

std::optional<Endport> endportByLid(const SubnetSnapshot& s, uint16_t lid) {
  auto owner = s.lids.owner(Lid{lid});
  if (owner.node == fabric::kNoNode) return std::nullopt;
  return Endport{owner.node, owner.port};
}
std::optional<Endport> endportByGid(const SubnetSnapshot& s, const Gid& gid, uint64_t prefix) {
  if (gid.prefix != prefix) return std::nullopt;
  auto found = s.topology->findPort(Guid{gid.guid});
  if (!found) return std::nullopt;
  PortNum p = s.topology->node(found->first).isSwitch() ? PortNum{0} : found->second;
  if (!s.lids.base(found->first, p).value) return std::nullopt;
  return Endport{found->first, p};
}
}  // namespace

SaServer::Answer SaServer::pathRecords(const Query& q) {
  Answer a;
  a.recordSize = mad::kPathRecordSize;
  if (!q.snapshot) return a;
  const SubnetSnapshot& s = *q.snapshot;
  const uint64_t mask = q.sa.compMask;
  mad::PathRecord want = mad::decodePathRecord(mad::saData(q.mad));
  // Endpoint sets: given by GID or LID (both must agree), all endports when neither is given.
  auto side = [&](uint64_t gidBit, uint64_t lidBit, const Gid& gid, uint16_t lid,
                  std::vector<std::pair<Endport, uint16_t>>& out) -> uint16_t {
    std::optional<Endport> byGid, byLid;
    if (mask & gidBit) {
      byGid = endportByGid(s, gid, options_.gidPrefix);
      if (!byGid) return mad::kStatusInvalidGid;
    }
    if (mask & lidBit) {
      byLid = endportByLid(s, lid);
      if (!byLid) return 0;  // no such LID: no records
    }
    if (byGid && byLid && (byGid->node != byLid->node || byGid->port != byLid->port)) return 0;
    if (byLid)
      out.push_back({*byLid, lid});
    else if (byGid)
      out.push_back({*byGid, s.lids.base(byGid->node, byGid->port).value});
    else
      for (const Endport& e : endports(s)) out.push_back({e, s.lids.base(e.node, e.port).value});
    return 0;
  };
  std::vector<std::pair<Endport, uint16_t>> srcs, dsts;
  if (uint16_t st = side(mad::kPrSgid, mad::kPrSlid, want.sgid, want.slid, srcs)) return fail(st);
  if (uint16_t st = side(mad::kPrDgid, mad::kPrDlid, want.dgid, want.dlid, dsts)) return fail(st);
  if (srcs.size() * dsts.size() > options_.maxRecords) return fail(mad::kStatusNoResources);
  for (const auto& [src, slid] : srcs) {
    for (const auto& [dst, dlid] : dsts) {
      mad::PathRecord r;
      if (!buildPath(s, src.node, src.port, slid, dst.node, dst.port, dlid, want, mask, r)) continue;
      mad::encodePathRecord(r, a.add());
    }
  }
  return a;
}

bool SaServer::buildPath(const SubnetSnapshot& s, NodeIndex srcNode, PortNum srcPort, uint16_t slid,
                         NodeIndex dstNode, PortNum dstPort, uint16_t dlid, const mad::PathRecord& want,
                         uint64_t mask, mad::PathRecord& r) const {
  auto facts = tracePath(s, Endport{srcNode, srcPort}, Endport{dstNode, dstPort}, Lid{dlid});
  if (!facts) return false;
  if ((mask & mad::kPrSl) && want.sl != 0) return false;                      // every path uses SL 0
  if ((mask & mad::kPrPkey) && (want.pkey & 0x7FFF) != 0x7FFF) return false;  // default partition only
  const auto& topo = *s.topology;
  r.serviceId = (mask & mad::kPrServiceId) ? want.serviceId : 0;
  r.sgid = Gid{options_.gidPrefix, portGuidOf(topo.node(srcNode), srcPort).value};
  r.dgid = Gid{options_.gidPrefix, portGuidOf(topo.node(dstNode), dstPort).value};
  r.slid = slid;
  r.dlid = dlid;
  r.hopLimit = static_cast<uint8_t>(facts->hops);
  r.reversible = true;
  r.numbPath = 0;
  r.pkey = 0xFFFF;
  r.sl = 0;
  r.mtuSelector = 2;
  r.mtu = facts->mtu;
  if (mask & mad::kPrMtu) {
    uint8_t sel = (mask & mad::kPrMtuSelector) ? want.mtuSelector : 2;
    auto m = applySelector(sel, want.mtu, facts->mtu, std::less<uint8_t>{});
    if (!m) return false;
    r.mtu = *m;
  }
  r.rateSelector = 2;
  r.rate = rateEnum(facts->rate);
  if (mask & mad::kPrRate) {
    uint8_t sel = (mask & mad::kPrRateSelector) ? want.rateSelector : 2;
    auto lessRate = [](uint8_t x, uint8_t y) { return enumTenths(x) < enumTenths(y); };
    auto m = applySelector(sel, want.rate, r.rate, lessRate);
    if (!m) return false;
    r.rate = *m;
  }
  r.pltSelector = 2;
  r.packetLifeTime = options_.subnetTimeout & 0x3F;
  if (mask & mad::kPrPlt) {
    uint8_t sel = (mask & mad::kPrPltSelector) ? want.pltSelector : 2;
    // "exactly" must be what we give; greater/less against ours; largest is ours.
    if (sel == 2 && want.packetLifeTime != r.packetLifeTime) return false;
    if (sel == 0 && !(r.packetLifeTime > want.packetLifeTime)) return false;
    if (sel == 1 && !(r.packetLifeTime < want.packetLifeTime)) return false;
  }
  return true;
}

SaServer::Answer SaServer::multiPathRecords(const Query& q) {
  Answer a;
  a.recordSize = mad::kPathRecordSize;
  if (!q.snapshot) return a;
  auto req = mad::decodeMultiPathRecord(mad::saData(q.mad), mad::kSaDataSize);
  if (!req) return fail(mad::kStatusReqInvalid);
  if (req->sgids.empty() || req->dgids.empty()) return fail(mad::kStatusInsufficientComponents);
  // MultiPathRecord mask bits for MTU/rate/PLT (IBA 15.2.5.20): MTUSelector 10, MTU 11, RateSelector 12,
  // Rate 13, PLTSelector 14, PLT 15. Map them onto the PathRecord bits buildPath understands.
  uint64_t m = q.sa.compMask, mask = 0;
  if (m & (1ULL << 10)) mask |= mad::kPrMtuSelector;
  if (m & (1ULL << 11)) mask |= mad::kPrMtu;
  if (m & (1ULL << 12)) mask |= mad::kPrRateSelector;
  if (m & (1ULL << 13)) mask |= mad::kPrRate;
  if (m & (1ULL << 14)) mask |= mad::kPrPltSelector;
  if (m & (1ULL << 15)) mask |= mad::kPrPlt;
  size_t limit = req->numbPath ? req->numbPath : SIZE_MAX;
  for (const Gid& sg : req->sgids) {
    auto src = endportByGid(*q.snapshot, sg, options_.gidPrefix);
    if (!src) return fail(mad::kStatusInvalidGid);
    for (const Gid& dg : req->dgids) {
      auto dst = endportByGid(*q.snapshot, dg, options_.gidPrefix);
      if (!dst) return fail(mad::kStatusInvalidGid);
      mad::PathRecord r;
      if (a.count >= limit) return a;
      if (buildPath(*q.snapshot, src->node, src->port, q.snapshot->lids.base(src->node, src->port).value,
                    dst->node, dst->port, q.snapshot->lids.base(dst->node, dst->port).value, req->base, mask,
                    r))
        mad::encodePathRecord(r, a.add());
    }
  }
  return a;
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
  mad::InformInfo info = mad::decodeInformInfo(mad::saData(q.mad));
  if (!info.isGeneric)
    return fail(mad::kStatusReqInvalid);  // vendor-specific subscriptions are not supported
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
      if (info.qpn) addr.qpn = info.qpn;
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
    if (i.trapNumber != 0xFFFF && i.trapNumber != n.trapNumber) continue;
    if (i.type != 0xFFFF && i.type != n.type) continue;
    if (i.producerType != 0xFFFFFF && i.producerType != n.producerType) continue;
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
  auto active = [&](const std::shared_ptr<const SubnetSnapshot>& s) {
    std::set<uint64_t> guids;
    if (!s) return guids;
    for (const Endport& e : endports(*s)) {
      const auto& n = s->topology->node(e.node);
      const auto& p = n.ports.at(e.port.value);
      if (n.isSwitch() || p.attrs.state == fabric::PortState::kActive || !p.attrs.valid)
        guids.insert(portGuidOf(n, e.port).value);
    }
    return guids;
  };
  std::set<uint64_t> was = active(before), now = active(snap);
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
    for (const Subscriber& s : subscribers_) {
      if (s.info.trapNumber != 0xFFFF && s.info.trapNumber != trap) continue;
      if (s.info.type != 0xFFFF && s.info.type != 4) continue;
      if (s.info.producerType != 0xFFFFFF && s.info.producerType != 4) continue;
      out.push_back(makeReport(s, notice));
    }
  };
  for (uint64_t g : now)
    if (!was.count(g)) emit(64, g);
  for (uint64_t g : was)
    if (!now.count(g)) emit(65, g);
  return out;
}

}  // namespace ibsm::daemon
