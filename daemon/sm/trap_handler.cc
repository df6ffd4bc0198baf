#include "daemon/sm/trap_handler.h"

namespace ibsm::daemon {

using fabric::Guid;

namespace {
constexpr uint16_t kTrapSmAppeared = 144;  // with capMask IsSM
constexpr uint16_t kTrapBadMkey = 256;
constexpr size_t kMaxRecent = 4096;  // more distinct traps than this within a window: forget them all
}  // namespace

TrapHandler::Outcome TrapHandler::onTrap(const mad::MadPacket& trap, const SubnetSnapshot* snap) {
  Outcome out;
  ++counters_.received;
  (void)engine_.sendUnmatched(mad::makeTrapRepress(trap));
  auto notice = mad::decodeNotice(trap);
  if (!notice) {
    ++counters_.malformed;
    return out;
  }
  if (auto it = counters_.byNumber.find(notice->trapNumber); it != counters_.byNumber.end())
    ++it->second;
  else if (counters_.byNumber.size() < kMaxTrapNumbers)
    counters_.byNumber.emplace(notice->trapNumber, 1);
  else
    ++counters_.otherNumbers;
  if (duplicate(*notice)) {
    ++counters_.duplicates;
    return out;
  }
  if (onNotice_) onNotice_(*notice);
  if (notice->trapNumber == kTrapBadMkey) {
    // Bad M_Key: a security event about who sent the SMP, not a topology change; nothing to re-read.
    ++counters_.badMkey;
    return out;
  }
  if (!snap) return out;  // not master of a programmed subnet yet: the coming sweep sees it all
  const fabric::Lid lid{notice->lidAddr};
  if (notice->trapNumber == kTrapSmAppeared && (notice->capMask & mad::kCapIsSm)) {
    routing::LidOwner o = snap->lids.owner(lid);
    if (o.node != fabric::kNoNode) {
      Guid g = snap->topology->node(o.node).port(o.port).guid;
      if (g.value != 0) out.smPort = g;
    }
  }
  out.switches = switchesConcerned(*snap, lid);
  out.cause = "trap " + std::to_string(notice->trapNumber) + " about LID " + std::to_string(notice->lidAddr);
  return out;
}

bool TrapHandler::duplicate(const mad::Notice& notice) {
  const mad::TimePoint now = clock_.now();
  auto key = std::tuple{notice.trapNumber, notice.lidAddr, notice.portNum};
  auto seen = recent_.find(key);
  bool dup = seen != recent_.end() && now - seen->second < window_;
  recent_[key] = now;
  if (recent_.size() > kMaxRecent) recent_.clear();
  return dup;
}

// The switch the trap is about, or the switches next to the CA it is about; for a LID we do not know, every
// switch (only a full look will tell).
std::vector<Guid> TrapHandler::switchesConcerned(const SubnetSnapshot& snap, fabric::Lid lid) {
  std::vector<Guid> switches;
  const fabric::Topology& topo = *snap.topology;
  routing::LidOwner owner = snap.lids.owner(lid);
  if (owner.node != fabric::kNoNode) {
    const fabric::Node& n = topo.node(owner.node);
    if (n.isSwitch())
      switches.push_back(n.guid);
    else
      for (const auto& p : n.ports)
        if (p.connected()) switches.push_back(topo.node(p.peerNode).guid);
  }
  if (switches.empty())
    for (fabric::NodeIndex s : topo.switches()) switches.push_back(topo.node(s).guid);
  return switches;
}

}  // namespace ibsm::daemon
