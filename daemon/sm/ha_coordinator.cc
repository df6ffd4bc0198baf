// The decisions are SmStateMachine's; this file only sends, receives and validates.
#include "daemon/sm/ha_coordinator.h"

#include <algorithm>

#include "mad/notice.h"
#include "mad/sa.h"
#include "mad/smp.h"

namespace ibsm::daemon {

using fabric::Guid;
using fabric::NodeIndex;

namespace {
constexpr std::chrono::milliseconds kQueryTimeout{200};
constexpr uint16_t kMadStatusBusy = 0x0001;  // MAD status bit 0: busy, ask again later

std::optional<mad::SmInfo> smInfoOf(const mad::MadResult& r) {
  if (!r.ok() || r.header.status != 0 || r.header.attrId != mad::kAttrSmInfo) return std::nullopt;
  return mad::decodeSmInfo(mad::smpData(r.response));
}

const char* controlName(uint32_t c) {
  switch (c) {
    case 1:
      return "HANDOVER";
    case 2:
      return "ACKNOWLEDGE";
    case 3:
      return "DISABLE";
    case 4:
      return "STANDBY";
    case 5:
      return "DISCOVER";
  }
  return "unknown";
}
}  // namespace

HaCoordinator::HaCoordinator(mad::MadEngine& engine, const mad::Clock& clock, SmStateOptions options,
                             Guid self, std::function<void(TopologyEvent)> events)
    : engine_(engine),
      clock_(clock),
      options_(options),
      sm_(options),
      portGuid_(self),
      events_(std::move(events)),
      configuredPriority_(options.priority) {
  sm_.setSelf(portGuid_);
}

void HaCoordinator::noteOwnPort(const fabric::Topology& topo) {
  if (topo.smNode() != fabric::kNoNode) portGuid_ = topo.node(topo.smNode()).port(topo.smPort()).guid;
}

mad::SmInfo HaCoordinator::ownSmInfo() const {
  mad::SmInfo info;
  info.guid = portGuid_;
  info.smKey = options_.smKey;
  // ActCount, the heartbeat a standby may watch: SMPs sent so far (as OpenSM reports it).
  info.actCount = static_cast<uint32_t>(engine_.counters().sent);
  info.priority = options_.priority;
  info.state = static_cast<uint8_t>(sm_.state());
  return info;
}

// Our SMInfo goes in the request, as OpenSM does: the receiver learns who asks, and sees our SM_Key.
mad::MadPacket HaCoordinator::smInfoRequest(uint8_t method, uint32_t attrMod,
                                            const fabric::DrPath& route) const {
  mad::MadPacket m = mad::makeDirectedSmp(method, mad::kAttrSmInfo, attrMod, route);
  mad::encodeSmInfo(ownSmInfo(), mad::smpData(m));
  return m;
}

// The directed route and LID of the port with this GUID in the last discovered topology.
std::optional<HaCoordinator::SmAt> HaCoordinator::locateSm(Guid portGuid) const {
  auto topo = seen_;
  if (!topo) return std::nullopt;
  auto at = topo->findPort(portGuid);
  if (!at) return std::nullopt;
  const fabric::Node& n = topo->node(at->first);
  const fabric::Port& p = n.port(n.isSwitch() ? fabric::PortNum{0} : at->second);
  fabric::DrPath route = topo->routeVia(at->first, at->second);
  if (!n.isSwitch() && !p.connected()) return std::nullopt;
  return std::tuple{portGuid, n.isSwitch() ? n.port(fabric::PortNum{0}).attrs.lid.value : p.attrs.lid.value,
                    route};
}

void HaCoordinator::querySms(const std::vector<SmAt>& sms) {
  mad::RequestOptions ro;
  ro.timeout = kQueryTimeout;
  ro.retries = 1;
  for (const auto& [guid, lid, route] : sms) {
    engine_.submit(
        smInfoRequest(mad::kGet, 0, route),
        [this, guid = guid, lid = lid,
         route = route](const mad::MadResult& r) {  // clang 14: no binding captures
          auto info = smInfoOf(r);
          // The answer must come from the port we asked (a stale route could reach another one).
          if (info && info->guid != guid) info.reset();
          sm_.noteRemote(guid, lid, route, info, clock_.now());
        },
        ro);
  }
  engine_.runUntilIdle();
}

SmStateMachine::Decision HaCoordinator::discover(fabric::TopologyPtr topology) {
  seen_ = std::move(topology);
  const fabric::Topology& topo = *seen_;
  noteOwnPort(topo);
  sm_.setSelf(portGuid_);
  sm_.startDiscovery();
  // Every port (other than ours) whose CapabilityMask says IsSM: a CA port, or a switch's port 0.
  std::vector<SmAt> sms;
  std::vector<Guid> present;
  for (NodeIndex i = 0; i < topo.size(); ++i) {
    const fabric::Node& n = topo.node(i);
    for (unsigned p = n.isSwitch() ? 0 : 1; p < (n.isSwitch() ? 1u : n.ports.size()); ++p) {
      const fabric::Port& port = n.ports[p];
      if (!port.attrs.valid || !(port.attrs.capMask & mad::kCapIsSm) || port.guid == portGuid_) continue;
      if (auto at = locateSm(port.guid)) {
        present.push_back(port.guid);
        // The master whose polls failed is not asked again: that would cost the takeover a query timeout
        // and its retry for an answer the polls already gave.
        if (lost_ && *lost_ == port.guid)
          sm_.noteRemote(port.guid, std::get<1>(*at), std::get<2>(*at), std::nullopt, clock_.now());
        else
          sms.push_back(*at);
      }
    }
  }
  sm_.keepOnly(present);
  lost_.reset();
  const SmState before = sm_.state();
  querySms(sms);
  auto d = sm_.decide(clock_.now());
  if (d.state != before && before != SmState::kDiscovering) stateEvent("discovery", before);
  if (d.state == SmState::kStandby && d.master) announceTo(topo, *d.master);
  return d;
}

// A new STANDBY tells the master about itself with a Trap 144 from its port, as OpenSM does: the master may
// have asked for our SMInfo while we were still discovering (and got no SM_Key, so it ignored us); the trap
// makes it look again, now that we are a standby that knows its master, and hand over if we are better.
void HaCoordinator::announceTo(const fabric::Topology& topo, Guid master) {
  const RemoteSm* m = sm_.findRemote(master);
  if (!m || m->lid == 0 || topo.smNode() == fabric::kNoNode) return;
  const fabric::Node& self = topo.node(topo.smNode());
  const fabric::PortAttrs& a = self.port(self.isSwitch() ? fabric::PortNum{0} : topo.smPort()).attrs;
  if (!a.valid || a.lid.value == 0) return;
  mad::Notice n;
  n.generic = true;
  n.type = 4;  // informational
  n.producerType = self.isSwitch() ? 2 : 1;
  n.trapNumber = 144;
  n.issuerLid = n.lidAddr = a.lid.value;
  n.capMask = a.capMask;
  (void)engine_.sendUnmatched(mad::makeTrap(n, m->lid));
}

// MASTER: asks the known SMs (and the ones that queried us) what they are now; hands over to a better one.
void HaCoordinator::checkRemoteSms(const std::string& why) {
  std::vector<SmAt> sms;
  for (const RemoteSm& r : sm_.remotes()) sms.emplace_back(r.guid, r.lid, r.route);
  for (Guid g : learn_)
    if (!sm_.findRemote(g))
      if (auto at = locateSm(g)) sms.push_back(*at);
  learn_.clear();
  if (sms.empty()) return;
  const SmState before = sm_.state();
  querySms(sms);
  auto d = sm_.decide(clock_.now());
  if (d.state != before) stateEvent(why, before);
  if (d.handoverTo) sendSmInfoSet(*d.handoverTo, SmControl::kHandover);
}

fabric::Result<Guid> HaCoordinator::planHandover(std::optional<Guid> to) {
  if (sm_.state() != SmState::kMaster)
    return fabric::makeError(std::string("this SM is not the master (") + toString(sm_.state()) + ")");
  const RemoteSm* target = nullptr;
  for (const RemoteSm& r : sm_.remotes())
    if (r.answered && r.keyOk && r.state == SmState::kStandby && (!to || r.guid == *to) &&
        (!target || better(r.priority, r.guid, target->priority, target->guid)))
      target = &r;
  if (!target)
    return fabric::makeError(to ? "SM " + fabric::toString(*to) +
                                      " is not a standby SM that answered this master"
                                : std::string("no standby SM answered this master"));
  if (!better(target->priority, target->guid, 0, portGuid_))
    return fabric::makeError("SM " + fabric::toString(target->guid) + " (priority " +
                             std::to_string(target->priority) +
                             ") is not better than this SM at priority 0 (on a tie the lower port GUID "
                             "wins) and would hand the subnet back: raise its sm.priority");
  const Guid guid = target->guid;
  handedOver_ = true;
  options_.priority = 0;
  sm_.setOptions(options_);
  sendSmInfoSet(guid, SmControl::kHandover);
  return guid;
}

void HaCoordinator::sendSmInfoSet(Guid to, SmControl control) {
  const RemoteSm* r = sm_.findRemote(to);
  std::optional<SmAt> at;
  if (r)
    at = std::tuple{r->guid, r->lid, r->route};
  else
    at = locateSm(to);
  if (!at) return;
  // Before the Set: its ACKNOWLEDGE may arrive before the answer to the Set.
  if (control == SmControl::kHandover) sm_.handoverSent(to, clock_.now());
  mad::RequestOptions ro;
  ro.timeout = kQueryTimeout;
  ro.retries = 2;
  engine_.submit(smInfoRequest(mad::kSet, static_cast<uint32_t>(control), std::get<2>(*at)), nullptr, ro);
}

void HaCoordinator::pollMaster() {
  const mad::TimePoint now = clock_.now();
  sm_.pollSent(now);
  const RemoteSm* m = sm_.master() ? sm_.findRemote(*sm_.master()) : nullptr;
  if (!m) {
    if (sm_.pollResult(std::nullopt, now)) takeover_ = true;
    return;
  }
  mad::RequestOptions ro;
  // At most one interval (and 1 s) per poll: the polls never pile up, and a dead master is noticed within
  // (pollRetries + 1) * pollInterval of its last answer (800 ms with the defaults).
  ro.timeout = std::min<mad::Duration>(options_.pollInterval, std::chrono::milliseconds(1000));
  ro.retries = 0;
  ro.urgent = true;  // not behind a sweep's queued reads
  Guid guid = m->guid;
  engine_.submit(
      smInfoRequest(mad::kGet, 0, m->route),
      [this, guid](const mad::MadResult& r) {
        auto info = smInfoOf(r);
        if (info && info->guid != guid) info.reset();
        if (sm_.pollResult(info, clock_.now())) takeover_ = true;
      },
      ro);
}

void HaCoordinator::stateEvent(const std::string& cause, SmState before) {
  TopologyEvent ev;
  ev.cause = cause;
  ev.action = std::string("SM state ") + toString(before) + " -> " + toString(sm_.state());
  if (events_) events_(std::move(ev));
}

void HaCoordinator::onSmInfo(const mad::MadPacket& mad, const mad::MadHeader& h) {
  if (h.method == mad::kSet) return onSet(mad, h);
  if (h.method != mad::kGet) return;
  answerGet(mad, h);
  noteRequester(mad);
}

void HaCoordinator::answerGet(const mad::MadPacket& mad, const mad::MadHeader& h) {
  mad::MadPacket reply = mad::makeResponse(mad);
  mad::SmInfo info = ownSmInfo();
  // SM_Key is returned only to a requester that presents it (IBA 14.4.1); others see zero.
  // So does OpenSM for the master it stands by for (its Gets carry no SMInfo, so a STANDBY takes a query
  // without one as the master's).
  mad::SmInfo asked = mad::decodeSmInfo(mad::smpData(mad));
  bool fromMaster = sm_.state() == SmState::kStandby && sm_.master() &&
                    (asked.guid == *sm_.master() || asked.guid.value == 0);
  info.smKey = asked.smKey == options_.smKey || fromMaster ? options_.smKey : 0;
  mad::encodeSmInfo(info, mad::smpData(reply));
  reply.addr = mad.addr;
  if (h.mgmtClass == mad::kClassSmiDirected) reply.addr.lid = 0xFFFF;
  (void)engine_.sendUnmatched(reply);
}

void HaCoordinator::refuseSa(const mad::MadPacket& mad, const mad::MadHeader& h) {
  if (h.method & 0x80) return;
  ++saNotMaster_;
  const uint8_t resp = h.method == mad::kSet ? uint8_t{mad::kGetResp} : static_cast<uint8_t>(h.method | 0x80);
  (void)engine_.sendUnmatched(mad::makeSaResponse(mad, resp, kMadStatusBusy));
}

void HaCoordinator::onSet(const mad::MadPacket& mad, const mad::MadHeader& h) {
  ++smSets_;
  mad::SmInfo from = mad::decodeSmInfo(mad::smpData(mad));
  const SmState before = sm_.state();
  auto outcome = sm_.onSet(h.attrMod, from, clock_.now());
  // The answer carries our (new) state; the SM_Key only for a requester that presented it.
  mad::MadPacket reply = mad::makeResponse(mad);
  mad::SmInfo info = ownSmInfo();
  if (from.smKey != options_.smKey) info.smKey = 0;
  mad::encodeSmInfo(info, mad::smpData(reply));
  reply.addr = mad.addr;
  if (h.mgmtClass == mad::kClassSmiDirected) reply.addr.lid = 0xFFFF;
  (void)engine_.sendUnmatched(reply);
  using O = SmStateMachine::SetOutcome;
  switch (outcome) {
    case O::kBecomeMaster:
      ackTo_ = from.guid;
      sweepWanted_ = true;
      break;
    case O::kAcknowledge:
      ackTo_ = from.guid;
      break;
    case O::kDiscover:
      sweepWanted_ = true;
      break;
    default:
      break;
  }
  if (sm_.state() != before)
    stateEvent(std::string("SMInfo Set ") + controlName(h.attrMod) + " from " + fabric::toString(from.guid),
               before);
}

// Someone asked for our SMInfo: if it is an SM we do not know (or it changed), the master looks at it.
void HaCoordinator::noteRequester(const mad::MadPacket& mad) {
  if (sm_.state() != SmState::kMaster) return;
  mad::SmInfo from = mad::decodeSmInfo(mad::smpData(mad));
  // Only a request with an SMInfo in it names an SM (diagnostics such as sminfo ask too; OpenSM is found by
  // its Trap 144 instead).
  Guid g = from.guid;
  if (g.value == 0 || g == portGuid_) return;
  const RemoteSm* r = sm_.findRemote(g);
  if (r && r->answered && r->priority == from.priority && static_cast<uint8_t>(r->state) == from.state)
    return;
  const mad::TimePoint now = clock_.now();
  auto last = learnedAt_.find(g);
  if (last != learnedAt_.end() && now - last->second < options_.pollInterval) return;  // rate limit
  learnedAt_[g] = now;
  if (learnedAt_.size() > 1024) learnedAt_.clear();
  learn_.insert(g);
}

void HaCoordinator::smAppeared(Guid g) {
  if (g.value != 0 && g != portGuid_) learn_.insert(g);
}

HaCoordinator::Turn HaCoordinator::tick(bool lightSweepDue) {
  const mad::TimePoint now = clock_.now();
  if (ackTo_) {
    Guid to = *ackTo_;
    ackTo_.reset();
    sendSmInfoSet(to, SmControl::kAcknowledge);
  }
  switch (sm_.state()) {
    case SmState::kNotActive:
      return {};
    case SmState::kDiscovering:
      return {};  // a sweep is deciding
    case SmState::kStandby:
      if (takeover_) {
        takeover_ = false;
        const RemoteSm* m = sm_.master() ? sm_.findRemote(*sm_.master()) : nullptr;
        if (m) lost_ = m->guid;
        return {"failover: master " + (m ? fabric::toString(m->guid) : std::string("?")) + " lost after " +
                std::to_string(sm_.failedPolls()) + " failed polls"};
      }
      if (sm_.pollDue(now)) pollMaster();
      return {};
    case SmState::kMaster:
      break;
  }
  takeover_ = false;
  if (sweepWanted_) {
    sweepWanted_ = false;
    return {"handover"};
  }
  if (recheck_) checkRemoteSms("sm.priority changed");
  recheck_ = false;
  if (!learn_.empty()) checkRemoteSms("an SM queried us");
  if (lightSweepDue && !sm_.remotes().empty()) checkRemoteSms("light sweep");
  return {std::nullopt, sm_.state() == SmState::kMaster};
}

bool HaCoordinator::standbyReadInterrupted() {
  if (sm_.state() != SmState::kStandby || takeover_ || sweepWanted_) return true;
  if (sm_.pollDue(clock_.now())) pollMaster();
  return takeover_;
}

}  // namespace ibsm::daemon
