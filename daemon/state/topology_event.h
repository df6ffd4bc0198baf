// What the SM did about a change of the fabric, as the event log keeps it (sm/ writes it, control/ shows it).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "mad/clock.h"

namespace ibsm::daemon {

// One entry of the event log: a topology change and what the SM did about it.
struct TopologyEvent {
  std::chrono::system_clock::time_point when;
  std::string cause;   // "trap 128 from LID 12", "light sweep", "heavy sweep: start", ...
  std::string action;  // "targeted re-discovery of 2 switches", "heavy sweep", ...
  size_t linksDown = 0, linksUp = 0;
  size_t lftEntriesChanged = 0;  // (switch, LID) routes that changed
  size_t lftBlocksSent = 0;
  size_t vlSetsSent = 0;  // SLtoVLMappingTable and VLArbitrationTable Sets
  size_t smps = 0;
  mad::Duration convergence{};                // event received -> last changed block acknowledged
  mad::Duration rereadTime{}, routingTime{};  // of a targeted update: re-reading the switches, routing
  bool ok = true;
};

}  // namespace ibsm::daemon
