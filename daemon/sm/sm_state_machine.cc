#include "daemon/sm/sm_state_machine.h"

#include <algorithm>

namespace ibsm::daemon {

using fabric::Guid;

bool better(uint8_t pa, Guid ga, uint8_t pb, Guid gb) {
  return pa != pb ? pa > pb : ga.value < gb.value;
}

const char* toString(SmState s) {
  switch (s) {
    case SmState::kNotActive:
      return "NOTACTIVE";
    case SmState::kDiscovering:
      return "DISCOVERING";
    case SmState::kStandby:
      return "STANDBY";
    case SmState::kMaster:
      return "MASTER";
  }
  return "?";
}

void SmStateMachine::startDiscovery() {
  if (state_ == SmState::kNotActive || state_ == SmState::kMaster) return;
  if (state_ == SmState::kStandby) wasStandby_ = true;
  state_ = SmState::kDiscovering;
}

const RemoteSm& SmStateMachine::noteRemote(Guid guid, uint16_t lid, const fabric::DrPath& route,
                                           const std::optional<mad::SmInfo>& info, mad::TimePoint now) {
  auto it = std::find_if(remotes_.begin(), remotes_.end(), [&](const RemoteSm& r) { return r.guid == guid; });
  if (it == remotes_.end()) {
    remotes_.push_back(RemoteSm{});
    it = remotes_.end() - 1;
    it->guid = guid;
  }
  it->lid = lid;
  it->route = route;
  it->answered = info.has_value();
  if (!info) return *it;
  it->keyOk = trusted(*info);
  if (!it->keyOk) ++badKeys_;
  it->priority = info->priority;
  it->state = info->state <= 3 ? static_cast<SmState>(info->state) : SmState::kNotActive;
  it->actCount = info->actCount;
  it->lastSeen = now;
  return *it;
}

void SmStateMachine::keepOnly(const std::vector<Guid>& present) {
  std::erase_if(remotes_, [&](const RemoteSm& r) {
    return std::find(present.begin(), present.end(), r.guid) == present.end();
  });
}

const RemoteSm* SmStateMachine::findRemote(Guid guid) const {
  for (const auto& r : remotes_)
    if (r.guid == guid) return &r;
  return nullptr;
}

void SmStateMachine::becomeMaster() {
  if (state_ != SmState::kMaster) ++masterTerms_;
  tookOver_ = wasStandby_ || forceMaster_;
  wasStandby_ = forceMaster_ = false;
  state_ = SmState::kMaster;
  master_.reset();
  handoverTo_.reset();
}

void SmStateMachine::becomeStandby(Guid master, mad::TimePoint now) {
  state_ = SmState::kStandby;
  master_ = master;
  failedPolls_ = 0;
  nextPoll_ = now + options_.pollInterval;
  handoverTo_.reset();
  wasStandby_ = forceMaster_ = false;
}

SmStateMachine::Decision SmStateMachine::decide(mad::TimePoint now) {
  // The trusted SMs that answered; the best master among them, and the best non-master better than us.
  const RemoteSm* bestMaster = nullptr;
  const RemoteSm* bestOther = nullptr;
  for (const auto& r : remotes_) {
    if (!r.answered || !r.keyOk || r.guid == self_) continue;
    if (r.state == SmState::kMaster) {
      if (!bestMaster || better(r.priority, r.guid, bestMaster->priority, bestMaster->guid)) bestMaster = &r;
    } else if (r.state == SmState::kStandby || r.state == SmState::kDiscovering) {
      if (better(r.priority, r.guid, options_.priority, self_) &&
          (!bestOther || better(r.priority, r.guid, bestOther->priority, bestOther->guid)))
        bestOther = &r;
    }
  }
  Decision d;
  if (state_ == SmState::kDiscovering) {
    if (!forceMaster_ && bestMaster)
      becomeStandby(bestMaster->guid, now);  // a master exists: never two
    else if (!forceMaster_ && bestOther)
      becomeStandby(bestOther->guid, now);  // it will be master
    else
      becomeMaster();
  } else if (state_ == SmState::kMaster) {
    if (bestMaster && better(bestMaster->priority, bestMaster->guid, options_.priority, self_))
      becomeStandby(bestMaster->guid, now);  // two masters (merged subnets): the better one keeps it
    else if (bestOther && !handoverPending(now))
      d.handoverTo = bestOther->guid;
  }
  d.state = state_;
  d.master = master_;
  return d;
}

bool SmStateMachine::pollResult(const std::optional<mad::SmInfo>& info, mad::TimePoint now) {
  if (state_ != SmState::kStandby || !master_) return false;
  bool ok = false;
  if (info) {
    ok = trusted(*info) && info->state == static_cast<uint8_t>(SmState::kMaster);
    if (const RemoteSm* r = findRemote(*master_)) {
      RemoteSm copy = *r;
      noteRemote(copy.guid, copy.lid, copy.route, info, now);  // counts a wrong SM_Key
    } else if (!trusted(*info)) {
      ++badKeys_;
    }
  }
  if (ok) {
    failedPolls_ = 0;
    return false;
  }
  ++failedPolls_;
  return failedPolls_ >= options_.pollRetries;
}

void SmStateMachine::handoverSent(Guid to, mad::TimePoint now) {
  handoverTo_ = to;
  handoverSince_ = now;
}

std::optional<Guid> SmStateMachine::handoverPending(mad::TimePoint now) const {
  if (handoverTo_ && now < handoverSince_ + options_.pollInterval * options_.pollRetries) return handoverTo_;
  return std::nullopt;
}

SmStateMachine::SetOutcome SmStateMachine::onSet(uint32_t control, const mad::SmInfo& from,
                                                 mad::TimePoint now) {
  if (!trusted(from)) {
    ++badKeys_;
    return SetOutcome::kBadKey;
  }
  switch (static_cast<SmControl>(control)) {
    case SmControl::kHandover:
      if (state_ == SmState::kMaster) return SetOutcome::kAcknowledge;
      if (state_ != SmState::kStandby && state_ != SmState::kDiscovering) return SetOutcome::kIgnored;
      forceMaster_ = true;
      becomeMaster();
      return SetOutcome::kBecomeMaster;
    case SmControl::kAcknowledge:
      if (state_ != SmState::kMaster || !handoverPending(now) || *handoverTo_ != from.guid)
        return SetOutcome::kIgnored;
      becomeStandby(from.guid, now);
      return SetOutcome::kNowStandby;
    case SmControl::kDisable:
      if (state_ != SmState::kStandby && state_ != SmState::kDiscovering) return SetOutcome::kIgnored;
      state_ = SmState::kNotActive;
      master_.reset();
      return SetOutcome::kDisabled;
    case SmControl::kStandby:
      if (state_ != SmState::kDiscovering) return SetOutcome::kIgnored;
      becomeStandby(from.guid, now);
      return SetOutcome::kNowStandby;
    case SmControl::kDiscover:
      if (state_ != SmState::kNotActive) return SetOutcome::kIgnored;
      state_ = SmState::kDiscovering;
      return SetOutcome::kDiscover;
  }
  return SetOutcome::kIgnored;
}

}  // namespace ibsm::daemon
