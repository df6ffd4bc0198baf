#include "daemon/sa/mcast_groups.h"

#include "mad/sa.h"

namespace ibsm::daemon {

using mad::McMemberRecord;
namespace mcm = mad::mcm;

namespace {

constexpr uint16_t kErrNoResources = 0x0100, kErrReqInvalid = 0x0200, kErrInvalidGid = 0x0500,
                   kErrInsufficientComponents = 0x0600;

// Whether `have` satisfies a selector on `want` (compare: -1/0/1 of have against want).
bool selects(uint8_t selector, int compare) {
  switch (static_cast<mad::Selector>(selector)) {
    case mad::Selector::kGreater:
      return compare > 0;
    case mad::Selector::kLess:
      return compare < 0;
    case mad::Selector::kExactly:
      return compare == 0;
    case mad::Selector::kLargest:
      return true;
  }
  return false;
}

int cmp(unsigned a, unsigned b) {
  return a < b ? -1 : a > b ? 1 : 0;
}

std::variant<McMemberRecord, McastError> fail(uint16_t status, std::string why) {
  return McastError{status, std::move(why)};
}

bool isMulticastGid(const mad::Gid& g) {
  return g.prefix >> 56 == 0xFF;
}

}  // namespace

namespace {
mad::Gid broadcastMgid(uint16_t pkey, uint8_t scope) {
  return {0xFF10401B00000000ULL | static_cast<uint64_t>(scope & 0xF) << 48 |
              static_cast<uint64_t>(pkey | 0x8000) << 16,
          0x00000000FFFFFFFFULL};
}
}  // namespace

void McastGroups::createBroadcastGroup(uint16_t pkey, const fabric::IpoibGroup& params) {
  McMemberRecord r;
  r.mgid = broadcastMgid(pkey, params.scope);
  if (groups_.count(r.mgid)) return;
  auto mlid = freeMlid();
  if (!mlid) return;
  r.mlid = *mlid;
  r.qkey = params.qkey;
  r.pkey = static_cast<uint16_t>(pkey | 0x8000);
  r.mtuSelector = r.rateSelector = r.lifeSelector = static_cast<uint8_t>(mad::Selector::kExactly);
  r.mtu = params.mtu;
  r.rate = params.rate;
  r.sl = params.sl.value_or(0);
  r.packetLifeTime = 18;
  r.scope = params.scope;
  Group g;
  g.rec = r;
  g.permanent = true;
  groups_.emplace(r.mgid, std::move(g));
  ++version_;
}

void McastGroups::setBroadcastGroups(const std::vector<BroadcastGroup>& groups) {
  std::map<mad::Gid, const BroadcastGroup*> wanted;
  for (const BroadcastGroup& b : groups) wanted[broadcastMgid(b.pkey, b.params.scope)] = &b;
  for (auto it = groups_.begin(); it != groups_.end();) {
    if (!it->second.permanent) {
      ++it;
      continue;
    }
    auto w = wanted.find(it->first);
    const McMemberRecord& r = it->second.rec;
    bool same = w != wanted.end() && r.qkey == w->second->params.qkey && r.mtu == w->second->params.mtu &&
                r.rate == w->second->params.rate && r.sl == w->second->params.sl.value_or(0);
    if (same) {
      ++it;
      continue;
    }
    it = groups_.erase(it);
    ++version_;
  }
  for (const BroadcastGroup& b : groups) createBroadcastGroup(b.pkey, b.params);
}

const McMemberRecord* McastGroups::find(const mad::Gid& mgid) const {
  auto it = groups_.find(mgid);
  return it == groups_.end() ? nullptr : &it->second.rec;
}

std::optional<uint16_t> McastGroups::freeMlid() const {
  std::vector<bool> used(routing::kMaxMlid - routing::kMinMlid + 1, false);
  for (const auto& [mgid, g] : groups_) used[g.rec.mlid - routing::kMinMlid] = true;
  for (size_t i = 0; i < used.size(); ++i)
    if (!used[i]) return static_cast<uint16_t>(routing::kMinMlid + i);
  return std::nullopt;
}

McMemberRecord McastGroups::memberRecord(const Group& g, const mad::Gid& port, uint8_t joinState) const {
  McMemberRecord r = g.rec;
  r.portGid = port;
  r.joinState = joinState;
  return r;
}

bool McastGroups::joinedByProxy(const mad::Gid& mgid, const mad::Gid& port) const {
  auto it = groups_.find(mgid);
  return it != groups_.end() && it->second.proxied.count(port);
}

std::variant<McMemberRecord, McastError> McastGroups::join(const McMemberRecord& req, uint64_t mask,
                                                           const McastPortLimits& port, bool proxy) {
  if (!(mask & mcm::kPortGid) || !(mask & mcm::kJoinState))
    return fail(kErrInsufficientComponents, "a join needs PortGID and JoinState");
  if (req.joinState == 0 || req.joinState > 0xF) return fail(kErrReqInvalid, "JoinState 0");
  if (req.portGid.prefix != gidPrefix_) return fail(kErrInvalidGid, "PortGID is not of this subnet");
  const bool named = (mask & mcm::kMgid) && !(req.mgid == mad::Gid{});
  if (named && !isMulticastGid(req.mgid)) return fail(kErrReqInvalid, "MGID is not a multicast GID");
  if (named && groups_.find(req.mgid) == groups_.end()) {
    // A new group's MGID (IBA 4.1.1, as OpenSM checks it): no reserved flag bits, and the SA's own signature
    // A01B only as the SA assigns it, never link-local scope asked for by a client.
    const unsigned flags = static_cast<unsigned>(req.mgid.prefix >> 52 & 0xF);
    const unsigned scope = static_cast<unsigned>(req.mgid.prefix >> 48 & 0xF);
    const unsigned signature = static_cast<unsigned>(req.mgid.prefix >> 32 & 0xFFFF);
    const bool ipoib = signature == 0x401B || signature == 0x601B;
    if (!ipoib && (flags & 0xE)) return fail(kErrReqInvalid, "MGID uses reserved flag bits");
    if (signature == 0xA01B && scope == 2)
      return fail(kErrReqInvalid, "MGID with the SA's signature A01B and link-local scope");
  }

  auto it = named ? groups_.find(req.mgid) : groups_.end();
  if (it == groups_.end()) {
    // Create (IBA o15-0.2.x): only a full member, and it must say what the group is.
    if (!(req.joinState & mad::kJoinFull))
      return fail(kErrReqInvalid, "only a full member may create a group");
    constexpr uint64_t kNeeded = mcm::kQkey | mcm::kPkey | mcm::kSl | mcm::kFlowLabel | mcm::kTClass;
    if ((mask & kNeeded) != kNeeded)
      return fail(kErrInsufficientComponents,
                  "creating a group needs Q_Key, P_Key, SL, FlowLabel and TClass");
    if ((req.pkey & 0x7FFF) == 0) return fail(kErrReqInvalid, "invalid P_Key");
    McMemberRecord g = req;
    g.scope = (mask & mcm::kScope) ? req.scope
              : named              ? static_cast<uint8_t>(req.mgid.prefix >> 48 & 0xF)
                                   : 2;
    if (!named)  // SM-assigned MGID (IBA 4.1.1): FF1<scope>:A01B:<P_Key>:..., unique per SM
      g.mgid = {
          0xFF10A01B00000000ULL | static_cast<uint64_t>(g.scope) << 48 | static_cast<uint64_t>(g.pkey) << 16,
          nextMgid_++};
    // MTU and rate: what the selector asks for, within what the creator's link carries.
    g.mtuSelector = g.rateSelector = g.lifeSelector = static_cast<uint8_t>(mad::Selector::kExactly);
    g.mtu = port.mtuCap;
    if ((mask & mcm::kMtuSelector) && (mask & mcm::kMtu)) {
      switch (static_cast<mad::Selector>(req.mtuSelector)) {
        case mad::Selector::kExactly:
          g.mtu = req.mtu;
          break;
        case mad::Selector::kLess:
          g.mtu = std::min<uint8_t>(port.mtuCap, static_cast<uint8_t>(req.mtu - 1));
          break;
        case mad::Selector::kGreater:
        case mad::Selector::kLargest:
          break;
      }
      if (g.mtu < 1 || g.mtu > port.mtuCap || !selects(req.mtuSelector, cmp(g.mtu, req.mtu)))
        return fail(kErrReqInvalid, "the requested MTU is not available on the member's link");
    }
    g.rate = port.rateCap ? port.rateCap : 3;
    if ((mask & mcm::kRateSelector) && (mask & mcm::kRate)) {
      if (req.rateSelector == static_cast<uint8_t>(mad::Selector::kExactly) ||
          (req.rateSelector == static_cast<uint8_t>(mad::Selector::kLess) && !port.rateCap))
        g.rate = req.rate;
      bool fits = !port.rateCap || mad::enumTenths(g.rate) <= mad::enumTenths(port.rateCap);
      if (!mad::enumTenths(g.rate) || !fits ||
          !selects(req.rateSelector, cmp(mad::enumTenths(g.rate), mad::enumTenths(req.rate))))
        return fail(kErrReqInvalid, "the requested rate is not available on the member's link");
    }
    if (!(mask & mcm::kLife)) g.packetLifeTime = 18;
    if (!(mask & mcm::kHopLimit)) g.hopLimit = 0;
    if (!(mask & mcm::kMlid) || req.mlid == 0) {
      auto mlid = freeMlid();
      if (!mlid) return fail(kErrNoResources, "no free MLID");
      g.mlid = *mlid;
    } else {
      if (req.mlid < routing::kMinMlid || req.mlid > routing::kMaxMlid)
        return fail(kErrReqInvalid, "invalid MLID");
      for (const auto& [mgid, other] : groups_)
        if (other.rec.mlid == req.mlid) return fail(kErrReqInvalid, "MLID in use");
    }
    g.portGid = {};
    g.joinState = 0;
    g.proxyJoin = false;
    Group group;
    group.rec = g;
    it = groups_.emplace(g.mgid, std::move(group)).first;
  } else {
    // Join: every masked group field must agree with the group.
    const McMemberRecord& g = it->second.rec;
    auto differs = [&](uint64_t bit, auto a, auto b) { return (mask & bit) && a != b; };
    if (differs(mcm::kQkey, req.qkey, g.qkey) || differs(mcm::kPkey, req.pkey, g.pkey) ||
        differs(mcm::kSl, req.sl, g.sl) || differs(mcm::kFlowLabel, req.flowLabel, g.flowLabel) ||
        differs(mcm::kTClass, req.tclass, g.tclass) || (differs(mcm::kMlid, req.mlid, g.mlid) && req.mlid) ||
        differs(mcm::kHopLimit, req.hopLimit, g.hopLimit) || differs(mcm::kScope, req.scope, g.scope))
      return fail(kErrReqInvalid, "the request's group fields differ from the group's");
    if ((mask & mcm::kMtuSelector) && (mask & mcm::kMtu) && !selects(req.mtuSelector, cmp(g.mtu, req.mtu)))
      return fail(kErrReqInvalid, "the group's MTU does not satisfy the request");
    if ((mask & mcm::kRateSelector) && (mask & mcm::kRate) &&
        !selects(req.rateSelector, cmp(mad::enumTenths(g.rate), mad::enumTenths(req.rate))))
      return fail(kErrReqInvalid, "the group's rate does not satisfy the request");
    if (g.mtu > port.mtuCap) return fail(kErrReqInvalid, "the member's link cannot carry the group's MTU");
    if (port.rateCap && mad::enumTenths(g.rate) > mad::enumTenths(port.rateCap))
      return fail(kErrReqInvalid, "the member's link is slower than the group's rate");
  }
  uint8_t& state = it->second.members[req.portGid];
  if (proxy && state == 0) it->second.proxied.insert(req.portGid);
  state = static_cast<uint8_t>(state | req.joinState);
  ++version_;
  return memberRecord(it->second, req.portGid, state);
}

std::variant<McMemberRecord, McastError> McastGroups::leave(const McMemberRecord& req, uint64_t mask) {
  constexpr uint64_t kNeeded = mcm::kMgid | mcm::kPortGid | mcm::kJoinState;
  if ((mask & kNeeded) != kNeeded)
    return fail(kErrInsufficientComponents, "a leave needs MGID, PortGID and JoinState");
  auto it = groups_.find(req.mgid);
  if (it == groups_.end()) return fail(kErrReqInvalid, "no such group");
  auto m = it->second.members.find(req.portGid);
  // Every bit to leave must be one the member has (osmtest -f m o15.0.1.14, as OpenSM); the answer carries
  // the JoinState the member keeps.
  if (m == it->second.members.end() || req.joinState == 0 || (m->second & req.joinState) != req.joinState)
    return fail(kErrReqInvalid, "the port is not a member with that JoinState");
  m->second = static_cast<uint8_t>(m->second & ~req.joinState);
  McMemberRecord answer = memberRecord(it->second, req.portGid, m->second);
  if (m->second == 0) {
    it->second.proxied.erase(m->first);
    it->second.members.erase(m);
  }
  if (it->second.members.empty() && !it->second.permanent) groups_.erase(it);
  ++version_;
  return answer;
}

std::vector<McMemberRecord> McastGroups::query(const McMemberRecord& req, uint64_t mask) const {
  auto matches = [&](const McMemberRecord& r) {
    auto same = [&](uint64_t bit, auto a, auto b) { return !(mask & bit) || a == b; };
    return same(mcm::kMgid, r.mgid, req.mgid) && same(mcm::kPortGid, r.portGid, req.portGid) &&
           same(mcm::kQkey, r.qkey, req.qkey) && same(mcm::kMlid, r.mlid, req.mlid) &&
           same(mcm::kMtu, r.mtu, req.mtu) && same(mcm::kTClass, r.tclass, req.tclass) &&
           same(mcm::kPkey, r.pkey, req.pkey) && same(mcm::kRate, r.rate, req.rate) &&
           same(mcm::kSl, r.sl, req.sl) && same(mcm::kFlowLabel, r.flowLabel, req.flowLabel) &&
           same(mcm::kScope, r.scope, req.scope) &&
           (!(mask & mcm::kJoinState) || (r.joinState & req.joinState));
  };
  std::vector<McMemberRecord> out;
  for (const auto& [mgid, g] : groups_) {
    if (mask & mcm::kPortGid) {
      for (const auto& [port, state] : g.members) {
        McMemberRecord r = memberRecord(g, port, state);
        if (matches(r)) out.push_back(r);
      }
    } else {
      McMemberRecord probe = memberRecord(g, {}, 0xF);  // a group's record matches any JoinState
      if (matches(probe)) out.push_back(memberRecord(g, {}, 0));
    }
  }
  return out;
}

size_t McastGroups::dropMissingPorts(const fabric::Topology& topo) {
  size_t dropped = 0;
  for (auto it = groups_.begin(); it != groups_.end();) {
    auto& members = it->second.members;
    for (auto m = members.begin(); m != members.end();) {
      if (topo.findPort(fabric::Guid{m->first.guid})) {
        ++m;
        continue;
      }
      it->second.proxied.erase(m->first);
      m = members.erase(m);
      ++dropped;
    }
    if (members.empty() && !it->second.permanent)
      it = groups_.erase(it);
    else
      ++it;
  }
  if (dropped) ++version_;
  return dropped;
}

std::vector<routing::McastGroupRoute> McastGroups::routes(const fabric::Topology& topo) const {
  std::vector<routing::McastGroupRoute> out;
  for (const auto& [mgid, g] : groups_) {
    routing::McastGroupRoute route{g.rec.mlid, {}};
    for (const auto& [port, state] : g.members) {
      auto where = topo.findPort(fabric::Guid{port.guid});
      if (!where) continue;
      route.members.push_back({where->first, where->second, (state & (mad::kJoinFull | mad::kJoinNon)) != 0});
    }
    out.push_back(std::move(route));
  }
  return out;
}

}  // namespace ibsm::daemon
