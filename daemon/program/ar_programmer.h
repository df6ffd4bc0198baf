// Adaptive routing on the switches (issue 5, item 5): probes each switch once for AdaptiveRoutingInfo and, on
// the switches that support it, writes the engine's AR groups (ARGroupTable) and per-LID group numbers
// (ARLinearForwardingTable), then turns AR on. Runs after the Programmer, which has already written the plain
// LFTs: those stay the fallback of every switch.
//
// Probe: one Get of AdaptiveRoutingInfo per switch lifetime (cached by GUID; a switch that leaves the fabric
// is forgotten, so one that comes back - possibly rebooted - is probed again), as ONE short attempt
// (ArOptions::probeTimeout, no retry). A timeout, a transport drop (status 110: what ibsim answers), a MAD
// status or GroupCap 0 marks the switch AR-incapable; it then costs nothing more.
//
// Programming, per capable switch, in NVIDIA's order: group table blocks first, then ARLFT blocks, then
// AdaptiveRoutingInfo.enable. Only blocks that differ from what the switch is known to hold are sent (the SM
// never reads them back, so a block is known only once a Set of it succeeded). The enable Set is repeated
// when the switch's plain LFT changed since AR was last enabled, because with no_fallback = 0 a plain LFT Set
// turns AR off on the switch.
//
// Safety policy (a switch is never left half-programmed with AR on):
//  - the switch's GroupCap is lower than the number of groups routing made for it, or a group holds a port
//  the
//    switch does not have: the switch stays on plain LFTs (AR turned off if it was on), AR003;
//  - a group or ARLFT block is rejected (MAD status) or not answered: the remaining AR blocks of that switch
//  are
//    not sent, AR is turned off on it (plain LFTs, which the Programmer keeps current, take over), the failed
//    blocks are marked unknown and the failure is reported (AR002 per SMP, AR003 per switch). The next run
//    tries again; after ArOptions::maxFailures runs in a row that failed, the switch is parked on plain LFTs
//    until forget() / forgetTables();
//  - routing without AR groups (RoutingTables::ar empty) turns AR off where this SM turned it on.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "daemon/program/block_cache.h"
#include "daemon/program/phase_runner.h"
#include "daemon/program/programmer.h"  // PhaseStats and SwitchTableCache for the users of both
#include "fabric/topology.h"
#include "mad/ar.h"
#include "mad/mad_engine.h"
#include "routing/routing_tables.h"

namespace ibsm::daemon {

struct ArOptions {
  mad::Duration probeTimeout = std::chrono::milliseconds(20);  // the one attempt of the probe
  uint32_t ageingTimeUs = 30;                                  // ar_mgr.conf's AGEING_TIME default
  mad::ArLidState mode = mad::ArLidState::kBounded;            // AR_MODE bounded | free
  unsigned maxFailures = 2;  // consecutive failed runs before a switch is parked on plain LFTs
};

enum class ArCapability : uint8_t { kUnknown, kCapable, kIncapable };
const char* toString(ArCapability c);

struct ArReport {
  std::vector<PhaseStats> phases;     // "ar-probe", "ar-groups", "ar-lft", "ar-enable"
  size_t probed = 0;                  // probes sent in this run
  size_t capable = 0, incapable = 0;  // switches of this topology, after the probe
  size_t groupBlocksSent = 0, groupBlocksSkipped = 0;
  size_t lftBlocksSent = 0, lftBlocksSkipped = 0;
  size_t enableSets = 0, disableSets = 0;  // AdaptiveRoutingInfo Sets that succeeded
  size_t enabled = 0;                      // switches with AR on after this run
  std::vector<fabric::Guid> fellBack;      // capable switches left on plain LFTs in this run
  std::vector<std::string> errors;         // AR002: SMPs that failed or were rejected
  std::vector<std::string> warnings;       // AR001 probe results, AR003 fallbacks
  size_t smps() const;
};

class ArProgrammer {
 public:
  ArProgrammer(mad::MadEngine& engine, const mad::Clock& clock, ArOptions options = {});
  // topo: the snapshot the tables were computed for (Node::route is used to reach each switch).
  ArReport program(const fabric::Topology& topo, const routing::RoutingTables& tables);

  ArCapability capability(fabric::Guid sw) const;
  bool enabled(fabric::Guid sw) const;  // AR on, as far as this SM knows
  // The switch is new (rebooted, replaced): probe and program it from scratch next time.
  void forget(fabric::Guid sw) {
    switches_.forget(sw);
    recount();
  }
  // Forget what the switches hold (with SubnetManager::forgetSwitchTables, which rewrites every plain LFT
  // block and so turns AR off): every AR block is sent and AR enabled again; capabilities are kept.
  void forgetTables();
  void setOptions(ArOptions options) { options_ = options; }
  // AdaptiveRoutingInfo probes sent over this SM's life: at most one per switch lifetime.
  uint64_t probesSent() const { return probesSent_; }
  // Switches known to have that capability (kept up to date: the status refresh asks after every wake-up).
  size_t count(ArCapability c) const { return counts_[static_cast<size_t>(c)]; }
  const ArOptions& options() const { return options_; }

 private:
  struct SwitchState {
    ArCapability capability = ArCapability::kUnknown;
    mad::ArInfo info;  // as probed, then as last written
    KnownBlocks<mad::ArGroupBlock> groups;
    KnownBlocks<mad::ArLftBlock> lft;
    bool enabled = false;
    bool enableUnknown = false;  // an enable/disable Set was not acknowledged
    routing::LftRow plainLft;    // tables.lft[n] when AR was last enabled
    unsigned failures = 0;
    bool parked = false;
  };
  struct Plan;  // what one capable switch should hold after this run
  void recount();

  // The steps of program(), in order.
  void probe(PhaseRunner& phase, const fabric::Topology& topo, ArReport& report, size_t& noAnswer);
  std::vector<Plan> plan(const fabric::Topology& topo, const routing::RoutingTables& tables,
                         ArReport& report);
  void sendGroups(PhaseRunner& phase, const fabric::Topology& topo, std::vector<Plan>& plans,
                  ArReport& report);
  void sendLft(PhaseRunner& phase, const fabric::Topology& topo, std::vector<Plan>& plans, ArReport& report);
  void sendEnable(PhaseRunner& phase, const fabric::Topology& topo, const routing::RoutingTables& tables,
                  Plan& p, ArReport& report);

  mad::MadEngine& engine_;
  const mad::Clock& clock_;
  ArOptions options_;
  SwitchCache<SwitchState> switches_;
  uint64_t probesSent_ = 0;
  std::array<size_t, 3> counts_{};  // by ArCapability
};

}  // namespace ibsm::daemon
