#include "daemon/sa/path_records.h"

#include <algorithm>
#include <functional>

namespace ibsm::daemon::sa {

using fabric::Guid;
using fabric::Lid;
using fabric::NodeIndex;
using fabric::PortNum;
using mad::Gid;

namespace {

constexpr size_t kMaxHops = 64;

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

// The path from one endport to another along the LFTs: hop count (switch-to-switch and CA links), the
// smallest MTU and rate of the links crossed; nullopt when the LFTs do not lead there.
struct PathFacts {
  unsigned hops = 0;
  uint8_t mtu = 0;
  unsigned rate = 0;
  uint8_t sl = 0;  // the engine's SL for the pair (RoutingTables::sl; 0 for engines without VL layers)
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
    f.sl = s.tables.pathSl(at, dlid);
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

// The PathRecord from one endport to another; false when there is no path or it does not meet the masked
// fields of `want`.
bool buildPath(const SaOptions& o, const SubnetSnapshot& s, NodeIndex srcNode, PortNum srcPort, uint16_t slid,
               NodeIndex dstNode, PortNum dstPort, uint16_t dlid, const mad::PathRecord& want, uint64_t mask,
               mad::PathRecord& r) {
  auto facts = tracePath(s, Endport{srcNode, srcPort}, Endport{dstNode, dstPort}, Lid{dlid});
  if (!facts) return false;
  if ((mask & mad::kPrSl) && want.sl != facts->sl) return false;  // the SL the routes are deadlock-free on
  // Only ports that share a partition (one of them a full member) have a path; it carries that P_Key.
  std::optional<uint16_t> wanted;
  if (mask & mad::kPrPkey) wanted = want.pkey;
  std::optional<uint16_t> pkey;
  if (s.partitions)
    pkey = s.partitions->commonKey(srcNode, srcPort, dstNode, dstPort, wanted);
  else if (!wanted || (*wanted & 0x7FFF) == 0x7FFF)
    pkey = 0xFFFF;  // no partitions resolved yet: every port a full member of the default one
  if (!pkey) return false;
  const auto& topo = *s.topology;
  r.serviceId = (mask & mad::kPrServiceId) ? want.serviceId : 0;
  r.sgid = Gid{o.gidPrefix, portGuidOf(topo.node(srcNode), srcPort).value};
  r.dgid = Gid{o.gidPrefix, portGuidOf(topo.node(dstNode), dstPort).value};
  r.slid = slid;
  r.dlid = dlid;
  r.hopLimit = static_cast<uint8_t>(facts->hops);
  r.reversible = true;
  r.numbPath = 0;
  r.pkey = *pkey;
  r.sl = facts->sl;
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
  r.packetLifeTime = o.subnetTimeout & 0x3F;
  if (mask & mad::kPrPlt) {
    uint8_t sel = (mask & mad::kPrPltSelector) ? want.pltSelector : 2;
    // "exactly" must be what we give; greater/less against ours; largest is ours.
    if (sel == 2 && want.packetLifeTime != r.packetLifeTime) return false;
    if (sel == 0 && !(r.packetLifeTime > want.packetLifeTime)) return false;
    if (sel == 1 && !(r.packetLifeTime < want.packetLifeTime)) return false;
  }
  return true;
}

}  // namespace

Answer pathRecords(const Query& q, const SaOptions& o) {
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
      byGid = endportByGid(s, gid, o.gidPrefix);
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
  if (srcs.size() * dsts.size() > o.maxRecords) return fail(mad::kStatusNoResources);
  for (const auto& [src, slid] : srcs) {
    for (const auto& [dst, dlid] : dsts) {
      mad::PathRecord r;
      if (!buildPath(o, s, src.node, src.port, slid, dst.node, dst.port, dlid, want, mask, r)) continue;
      mad::encodePathRecord(r, a.add());
    }
  }
  return a;
}

Answer multiPathRecords(const Query& q, const SaOptions& o) {
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
    auto src = endportByGid(*q.snapshot, sg, o.gidPrefix);
    if (!src) return fail(mad::kStatusInvalidGid);
    for (const Gid& dg : req->dgids) {
      auto dst = endportByGid(*q.snapshot, dg, o.gidPrefix);
      if (!dst) return fail(mad::kStatusInvalidGid);
      mad::PathRecord r;
      if (a.count >= limit) return a;
      if (buildPath(o, *q.snapshot, src->node, src->port, q.snapshot->lids.base(src->node, src->port).value,
                    dst->node, dst->port, q.snapshot->lids.base(dst->node, dst->port).value, req->base, mask,
                    r))
        mad::encodePathRecord(r, a.add());
    }
  }
  return a;
}

}  // namespace ibsm::daemon::sa
