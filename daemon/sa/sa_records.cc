#include "daemon/sa/sa_records.h"

#include <algorithm>

namespace ibsm::daemon::sa {

using fabric::Guid;
using fabric::Lid;
using fabric::NodeIndex;
using fabric::PortNum;
using mad::Gid;

namespace {
constexpr uint64_t kPirCapMaskBit = 1ULL << 7;
}  // namespace

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

Answer fail(uint16_t status) {
  SaServer::Answer a;
  a.status = status;
  return a;
}

Answer classPortInfo(const SaOptions& options) {
  Answer a;
  a.recordSize = mad::kClassPortInfoSize;
  mad::ClassPortInfo c;
  c.respTimeValue = options.subnetTimeout;
  c.capMask = 0x0002;  // IsTrapSupported... the SA forwards traps as reports (InformInfo)
  mad::encodeClassPortInfo(c, a.add());
  return a;
}

Answer nodeRecords(const Query& q) {
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

Answer portInfoRecords(const Query& q, uint64_t gidPrefix) {
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
      mad::setPortInfoRecordExtras(pi, pn.value, gidPrefix);
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

Answer linkRecords(const Query& q) {
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

Answer switchInfoRecords(const Query& q) {
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

Answer lftRecords(const Query& q, size_t maxRecords) {
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
      for (size_t i = 0; i < 64; ++i)
        ports[i] = block * 64 + i < lft.size() ? lft[block * 64 + i] : routing::kNoPort;
      mad::encodeLftRecord(lid, static_cast<uint16_t>(block), ports, a.add());
      a.keepIfMatches(mad::kSaAttrLftRecord, q.sa.compMask, mad::saData(q.mad));
      if (a.count > maxRecords) return fail(mad::kStatusNoResources);
    }
  }
  return a;
}

Answer guidInfoRecords(const Query& q) {
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

Answer smInfoRecords(const Query& q, const SaServer::SmInfoFn& smInfo) {
  Answer a;
  a.recordSize = mad::kSmInfoRecordSize;
  if (!q.snapshot || !smInfo) return a;
  const auto& topo = *q.snapshot->topology;
  if (topo.smNode() == fabric::kNoNode) return a;
  PortNum smPort = topo.node(topo.smNode()).isSwitch() ? PortNum{0} : topo.smPort();
  mad::SmInfo info = smInfo();
  if (!info.guid.value) info.guid = portGuidOf(topo.node(topo.smNode()), smPort);
  // SM_Key is shown only to a requester that presents it (IBA 14.4.1, 15.4.2).
  if (q.sa.smKey != info.smKey) info.smKey = 0;
  mad::encodeSmInfoRecord(q.snapshot->lids.base(topo.smNode(), smPort).value, info, a.add());
  a.keepIfMatches(mad::kSaAttrSmInfoRecord, q.sa.compMask, mad::saData(q.mad));
  return a;
}

// One record per block of every P_Key table the SM read: a switch's port 0, and for a CA the port its LID
// belongs to (PortNum is then the port, and not matched: the LID names it).
Answer pkeyTableRecords(const Query& q, uint64_t saKey, size_t maxRecords) {
  Answer a;
  a.recordSize = mad::kPkeyTableRecordSize;
  // P_KeyTableRecords are given to trusted requesters only (IBA 15.2.5.11): those presenting the SA_Key.
  if (q.sa.smKey != saKey) return fail(mad::kStatusReqInvalid);
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
        if (a.count > maxRecords) return fail(mad::kStatusNoResources);
      }
    }
  }
  return a;
}

}  // namespace ibsm::daemon::sa
