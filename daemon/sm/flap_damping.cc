#include "daemon/sm/flap_damping.h"

#include <algorithm>

namespace ibsm::daemon {

FlapDamping::LinkChanges FlapDamping::noteLinkChanges(const fabric::Topology& before,
                                                      const fabric::Topology& after,
                                                      const std::vector<fabric::Guid>& switches) {
  LinkChanges changes;
  std::vector<fabric::Guid> sorted = switches;
  std::sort(sorted.begin(), sorted.end());
  for (fabric::Guid g : switches) {
    auto b = before.findNode(g);
    auto a = after.findNode(g);
    if (!b) continue;
    const fabric::Node& nb = before.node(*b);
    for (unsigned p = 1; p <= nb.numPorts; ++p) {
      bool wasUp = nb.ports[p].connected();
      bool isUp = a && after.node(*a).ports[p].connected();
      if (wasUp == isUp) continue;
      // A link seen from both its ends counts once (at the end with the lower GUID).
      const fabric::Port& port = isUp ? after.node(*a).ports[p] : nb.ports[p];
      const fabric::Guid peer = (isUp ? after : before).node(port.peerNode).guid;
      const bool once = peer > g || !std::binary_search(sorted.begin(), sorted.end(), peer);
      if (isUp) {
        changes.up += once;
        continue;
      }
      changes.down += once;
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
