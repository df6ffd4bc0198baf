// What the performance manager and the health policy (perf/) know about the ports, published after every
// counter sweep for readers on other threads (control socket: `ibsmctl health`; a metrics exporter).
// Immutable once published, like SubnetSnapshot.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fabric/ids.h"
#include "mad/perf.h"

namespace ibsm::daemon {

enum class PortHealthState : uint8_t { kOk, kWarning, kIsolated };
inline const char* toString(PortHealthState state) {
  return state == PortHealthState::kIsolated  ? "isolated"
         : state == PortHealthState::kWarning ? "warning"
                                              : "ok";
}

struct PortHealth {
  fabric::Guid node;
  uint8_t port = 0;
  bool isSwitch = false;
  uint16_t lid = 0;  // the LID the counters were read at (a switch's port-0 LID)
  std::string description;
  fabric::Guid peerNode;  // zero when the port has no peer any more
  uint8_t peerPort = 0;
  std::string peerDescription;
  PortHealthState state = PortHealthState::kOk;
  std::string reason;  // why warning/isolated: "symbol_error +3000/min (threshold 10/min)"
  // Running totals since ibsmd started reading the port (64-bit; the ports' own counters saturate).
  std::array<uint64_t, mad::kPerfCounters> errors{};
  std::array<uint64_t, mad::kPerfDataCounters> data{};  // data in bytes, packets
  // Increase over the last interval: errors per minute, data per second; absent before the second read.
  std::optional<std::array<double, mad::kPerfCounters>> errorRates;
  std::optional<std::array<double, mad::kPerfDataCounters>> dataRates;
  bool extended = false;                                       // data counters from PortCountersExtended
  std::optional<std::chrono::system_clock::time_point> since;  // in its state since (warning/isolated)
};

// A port flap damping holds down (the flap.* keys), reported with the health states.
struct HeldDownPort {
  fabric::Guid node;
  uint8_t port = 0;
  std::string description;
  double remainingS = 0;
};

struct HealthSnapshot {
  std::chrono::system_clock::time_point sweptAt;  // end of the last counter sweep
  uint64_t sweeps = 0;                            // counter sweeps completed
  size_t gmps = 0;                                // of the last sweep (requests sent, retries included)
  size_t failed = 0;                              // ports of the last sweep whose counters were not read
  double durationMs = 0;                          // of the last sweep
  bool clearing = false;                          // the last sweep cleared counters (master)
  std::string action;                             // health.action: "report" or "isolate"
  unsigned maxIsolated = 0;
  std::vector<PortHealth> ports;  // every port read so far
  std::vector<HeldDownPort> heldDown;
};

}  // namespace ibsm::daemon
