#include "daemon/sm/flap_damping.h"

#include <algorithm>

namespace ibsm::daemon {

FlapDamping::LinkChanges FlapDamping::noteLinkChanges(const fabric::Topology& before,
                                                      const fabric::Topology& after,
                                                      const std::vector<fabric::Guid>& switches) {
  LinkChanges changes;
  for (fabric::Guid g : switches) {
    auto b = before.findNode(g);
    auto a = after.findNode(g);
    if (!b) continue;
    const fabric::Node& nb = before.node(*b);
    for (unsigned p = 1; p <= nb.numPorts; ++p) {
      bool wasUp = nb.ports[p].connected();
      bool isUp = a && after.node(*a).ports[p].connected();
      if (wasUp == isUp) continue;
      if (isUp) {
        ++changes.up;
        continue;
      }
      ++changes.down;
      noteDown(g, static_cast<uint8_t>(p));
    }
  }
  return changes;
}

void FlapDamping::noteDown(fabric::Guid node, uint8_t port) {
  const mad::TimePoint now = clock_.now();
  // Each down within the back-off window doubles the hold-down, up to the maximum.
  Flap& f = flaps_[{node, port}];
  bool recent = f.holdDown.count() && now - f.lastDown < maxHoldDown_;
  f.holdDown = recent ? std::min(f.holdDown * 2, maxHoldDown_) : holdDown_;
  f.lastDown = now;
}

std::vector<std::pair<fabric::Guid, uint8_t>> FlapDamping::active() const {
  const mad::TimePoint now = clock_.now();
  std::vector<std::pair<fabric::Guid, uint8_t>> held;
  for (const auto& [key, f] : flaps_)
    if (now < f.lastDown + f.holdDown) held.push_back(key);
  return held;
}

std::optional<mad::TimePoint> FlapDamping::heldUntil(fabric::Guid node, uint8_t port) const {
  auto f = flaps_.find({node, port});
  if (f == flaps_.end()) return std::nullopt;
  return f->second.lastDown + f->second.holdDown;
}

}  // namespace ibsm::daemon
