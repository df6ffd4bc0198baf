#include "daemon/sa/mcast_sa.h"

#include <algorithm>

#include "daemon/state/mft_plan.h"

namespace ibsm::daemon {

SaServer::Handler makeMcMemberHandler(McastGroups& groups, uint64_t gidPrefix) {
  return [&groups, gidPrefix](const SaServer::Query& q) {
    SaServer::Answer a;
    a.recordSize = mad::kMcMemberRecordSize;
    const mad::McMemberRecord req = mad::decodeMcMemberRecord(mad::saData(q.mad));
    const uint64_t mask = q.sa.compMask;
    auto answer = [&](const std::variant<mad::McMemberRecord, McastError>& r) {
      if (const auto* e = std::get_if<McastError>(&r))
        a.status = e->status;
      else
        mad::encodeMcMemberRecord(std::get<mad::McMemberRecord>(r), a.add());
    };
    const uint8_t method = q.header.method;
    if (method == mad::kGet || method == mad::kGetTable) {
      for (const auto& r : groups.query(req, mask)) mad::encodeMcMemberRecord(r, a.add());
      return a;
    }
    if (method != mad::kSet && method != mad::kSaDelete) {
      a.status = mad::kStatusMethodAttrUnsupported;
      return a;
    }
    if (!q.snapshot) {
      a.status = mad::kStatusNoResources;  // no subnet yet
      return a;
    }
    const fabric::Topology& topo = *q.snapshot->topology;
    auto member = topo.findPort(fabric::Guid{req.portGid.guid});
    if (req.portGid.prefix != gidPrefix || !member) {
      a.status = mad::kStatusInvalidGid;
      return a;
    }
    // On behalf of another port: a join when the requester shares a partition with it (or says ProxyJoin), as
    // OpenSM allows it (osmtest -f m); a leave only of a membership that was made that way.
    routing::LidOwner from = q.snapshot->lids.owner(fabric::Lid{q.mad.addr.lid});
    const bool self = from.node == member->first && from.port == member->second;
    bool proxy = false;
    if (!self && !req.proxyJoin) {
      bool allowed = false;
      if (method == mad::kSaDelete) {
        allowed = (mask & mad::mcm::kMgid) && groups.joinedByProxy(req.mgid, req.portGid);
      } else if (from.node != fabric::kNoNode) {
        const auto* parts = q.snapshot->partitions.get();
        allowed = !parts || parts->commonKey(from.node, from.port, member->first, member->second) ||
                  parts->commonKey(member->first, member->second, from.node, from.port);
      }
      if (!allowed) {
        a.status = mad::kStatusReqInvalid;
        return a;
      }
      proxy = true;
    }
    if (method == mad::kSaDelete) {
      answer(groups.leave(req, mask));
      return a;
    }
    // A port joins only groups of its own partitions (the group's P_Key, or the one a new group is to have).
    if (q.snapshot->partitions) {
      const mad::McMemberRecord* g = (mask & mad::mcm::kMgid) ? groups.find(req.mgid) : nullptr;
      const bool keyed = g || (mask & mad::mcm::kPkey);
      if (keyed && !q.snapshot->partitions->keyOf(member->first, member->second, g ? g->pkey : req.pkey)) {
        a.status = mad::kStatusReqInvalid;
        return a;
      }
    }
    McastPortLimits limits;
    const fabric::Port& port = topo.node(member->first).ports.at(member->second.value);
    if (port.attrs.valid) {
      limits.mtuCap = port.attrs.mtuCap ? port.attrs.mtuCap : 4;
      if (port.connected()) {
        const auto& peer = topo.node(port.peerNode).ports[port.peerPort.value].attrs;
        if (peer.valid && peer.mtuCap) limits.mtuCap = std::min(limits.mtuCap, peer.mtuCap);
      }
      if (port.attrs.widthActive) limits.rateCap = mad::rateEnum(mad::rateTenthsGbps(port.attrs));
    }
    answer(groups.join(req, mask, limits, proxy || req.proxyJoin));
    return a;
  };
}

SaServer::Handler makeMftRecordHandler(const McastGroups& groups) {
  return [&groups](const SaServer::Query& q) {
    SaServer::Answer a;
    a.recordSize = mad::kMftRecordSize;
    if (q.header.method != mad::kGet && q.header.method != mad::kGetTable) {
      a.status = mad::kStatusMethodAttrUnsupported;
      return a;
    }
    if (!q.snapshot) return a;
    const fabric::Topology& topo = *q.snapshot->topology;
    const MftPlan plan = planMfts(topo, groups.routes(topo));
    for (fabric::NodeIndex s : topo.switches()) {
      const uint16_t lid = q.snapshot->lids.base(s, fabric::PortNum{0}).value;
      auto blocks = plan.blocks.find(s);
      if (!lid || blocks == plan.blocks.end()) continue;
      for (const auto& [mod, block] : blocks->second) {
        mad::encodeMftRecord(lid, mod, block, a.add());
        a.keepIfMatches(mad::kSaAttrMftRecord, q.sa.compMask, mad::saData(q.mad));
      }
    }
    return a;
  };
}

}  // namespace ibsm::daemon
