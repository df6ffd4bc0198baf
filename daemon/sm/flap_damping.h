// Flap damping: a port that goes down again soon after it went down is held down (treated as down by
// targeted re-discovery) for a while, so a flapping link does not make the SM re-route on every bounce. Each
// down within the back-off window (maxHoldDown) doubles the port's hold-down, up to maxHoldDown.
#pragma once

#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "fabric/topology.h"
#include "mad/clock.h"

namespace ibsm::daemon {

class FlapDamping {
 public:
  FlapDamping(const mad::Clock& clock, mad::Duration holdDown, mad::Duration maxHoldDown)
      : clock_(clock), holdDown_(holdDown), maxHoldDown_(maxHoldDown) {}
  void setHoldDowns(mad::Duration holdDown, mad::Duration maxHoldDown) {
    holdDown_ = holdDown;
    maxHoldDown_ = maxHoldDown;
  }

  struct LinkChanges {
    size_t up = 0, down = 0;
  };
  // Compares the ports of the re-read switches before and after; every link that went down is noted. A link
  // both of whose ends were re-read counts once.
  LinkChanges noteLinkChanges(const fabric::Topology& before, const fabric::Topology& after,
                              const std::vector<fabric::Guid>& switches);
  // The port (of a node by GUID) went down now.
  void noteDown(fabric::Guid node, uint8_t port);
  // Ports held down now, as (node GUID, port).
  std::vector<std::pair<fabric::Guid, uint8_t>> active() const;
  // When the hold-down of this port ends (its last one, even if over); nothing for a port never down.
  std::optional<mad::TimePoint> heldUntil(fabric::Guid node, uint8_t port) const;

 private:
  struct Flap {
    mad::TimePoint lastDown{};
    mad::Duration holdDown{};
  };
  const mad::Clock& clock_;
  mad::Duration holdDown_, maxHoldDown_;
  std::map<std::pair<fabric::Guid, uint8_t>, Flap> flaps_;
};

}  // namespace ibsm::daemon
