// The SM's core cycle, independent of how it is driven (--once or the event loop): heavy sweep, LID
// assignment with the persistent map, routing through the engine chain, programming of what changed. It also
// answers SMInfo queries sent to this SM. Holds the current snapshot for readers (control socket, SA).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "daemon/discoverer.h"
#include "daemon/programmer.h"
#include "mad/mad_engine.h"
#include "routing/engine.h"

namespace ibsm::daemon {

struct SmOptions {
  std::vector<std::string> engines{"ftree", "updn", "minhop"};
  routing::Options routing;
  uint8_t lmc = 0;
  std::string guid2lidPath;  // empty: no persistence
  uint8_t priority = 0;
  uint64_t smKey = 0;
  ProgramOptions program;
};

enum class SmState : uint8_t { kNotActive = 0, kDiscovering = 1, kStandby = 2, kMaster = 3 };
const char* toString(SmState s);

struct SweepReport {
  DiscoveryStats discovery;
  size_t lidsChanged = 0;
  std::string engine;
  std::vector<std::string> fallbacks;
  mad::Duration routingTime{};
  ProgramReport program;
  mad::Duration total{};
  std::vector<std::string> warnings;
  bool subnetUp = false;  // every step succeeded: all LIDs set, all switches programmed, links activated
};

// Everything a reader needs about the current state of the subnet, immutable once published.
struct SubnetSnapshot {
  fabric::TopologyPtr topology;
  routing::LidAssignment lids;
  routing::RoutingTables tables;
};

class SubnetManager {
 public:
  SubnetManager(mad::MadEngine& engine, const mad::Clock& clock, SmOptions options);
  // One full cycle. An Error when discovery fails, no engine can route, or LIDs run out.
  fabric::Result<SweepReport> sweep();
  // Answers SMInfo Get (and ignores what it does not handle yet); installed as the engine's unsolicited handler.
  void onUnsolicited(const mad::MadPacket& mad, const mad::MadHeader& header);

  SmState state() const { return state_; }
  std::shared_ptr<const SubnetSnapshot> snapshot() const { return snapshot_; }
  uint64_t sweeps() const { return sweeps_; }
  const SmOptions& options() const { return options_; }

 private:
  mad::MadEngine& engine_;
  const mad::Clock& clock_;
  SmOptions options_;
  Discoverer discoverer_;
  Programmer programmer_;
  SwitchTableCache cache_;
  std::shared_ptr<const SubnetSnapshot> snapshot_;
  SmState state_ = SmState::kDiscovering;
  fabric::Guid portGuid_;
  uint32_t actCount_ = 0;
  uint64_t sweeps_ = 0;
};

}  // namespace ibsm::daemon
