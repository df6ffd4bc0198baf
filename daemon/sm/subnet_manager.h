// The SM's core cycle, independent of how it is driven (--once or the event loop). SubnetManager only
// coordinates; the work is its parts':
//   - sweeps: discovery (Discoverer) -> HA decision (HaCoordinator) -> LIDs (LidManager) -> routing (the
//     engine chain) -> programming (P_Key, LFT, AR, MFT programmers); it publishes the snapshot readers use;
//   - targeted updates: traps (TrapHandler) and light sweeps queue switches (UpdateQueue), re-read as one
//     batch with flapping ports held down (FlapDamping);
//   - dispatch of the MADs nobody waits for: SA (to the SA when master, else HaCoordinator answers Busy),
//     traps, SMInfo (HaCoordinator);
//   - retries of a sweep that left the subnet not up, and the events it reports (setEventHandler).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/program/ar_programmer.h"
#include "daemon/program/mcast_programmer.h"
#include "daemon/program/pkey_programmer.h"
#include "daemon/program/programmer.h"
#include "daemon/program/vl_programmer.h"
#include "daemon/sa/mcast_groups.h"
#include "daemon/sm/discoverer.h"
#include "daemon/sm/flap_damping.h"
#include "daemon/sm/ha_coordinator.h"
#include "daemon/sm/lid_manager.h"
#include "daemon/sm/route_planner.h"
#include "daemon/sm/sm_state_machine.h"
#include "daemon/sm/trap_handler.h"
#include "daemon/sm/update_queue.h"
#include "daemon/state/subnet_snapshot.h"
#include "daemon/state/topology_event.h"
#include "daemon/state/wall_clock.h"
#include "mad/mad_engine.h"
#include "mad/notice.h"
#include "routing/engine.h"

namespace ibsm::daemon {

struct SmOptions {
  std::vector<std::string> engines{"ftree", "dfly", "dor|dfsp", "updn", "minhop"};
  routing::Options routing;
  RebalancePolicy rebalance;  // after a repair (routing.rebalance*)
  uint8_t lmc = 0;
  std::string guid2lidPath;  // empty: no persistence
  uint8_t priority = 0;
  uint64_t smKey = 0;
  fabric::Guid portGuid;  // our port, if known before the first sweep (SMInfo answers)
  mad::Duration pollInterval = std::chrono::milliseconds(200);  // standby: polls of the master's SMInfo
  unsigned pollRetries = 3;  // standby: failed polls in a row before it takes over
  ProgramOptions program;
  ArOptions ar;  // adaptive routing on the switches (used when routing.computeAr)
  // VL layer: routing.vlLayers caps the VLs engines may use (further capped by what the links offer);
  // vl.weights are the VL arbitration weights programmed when more than one VL is used.
  VlProgramOptions vl;
  mad::Duration lightSweepInterval = std::chrono::seconds(10);   // 0 = no light sweeps
  mad::Duration trapBatchDelay = std::chrono::milliseconds(5);   // traps arriving within this are one event
  mad::Duration holdDown = std::chrono::milliseconds(2000);      // flap damping: first hold-down of a port
  mad::Duration maxHoldDown = std::chrono::milliseconds(60000);  // doubling stops here
  bool ipoibBroadcast = true;  // create the IPoIB broadcast group of every IPoIB partition
  // The partitions (config and run time); none: every endport a full member of the default partition.
  std::vector<fabric::Partition> partitions;
  // Link loads and the rebalancing run after a repair, on a thread off the event loop (the daemon; not
  // --once, which exits at SUBNET UP).
  bool backgroundRouting = false;
};

struct SweepReport {
  DiscoveryStats discovery;
  size_t lidsChanged = 0;
  std::string engine;
  std::vector<std::string> fallbacks;
  std::string routes;                 // how they were made: "from scratch", "repair of 12 LID(s)", ...
  std::optional<size_t> routesMoved;  // known without comparing the tables (a repair)
  mad::Duration routingTime{};
  ProgramReport program;
  // A new master (start, takeover, handover) reads the LFTs back and adopts the valid held routes
  // (routing/adopt.h): blocks read, entries kept where a fresh run differs, invalid entries replaced.
  struct Readback {
    size_t blocks = 0, failed = 0, kept = 0, replaced = 0;
    std::string note;  // why nothing was adopted, if so
  };
  std::optional<Readback> readback;
  PkeyReport pkeys;  // its phase is program.phases' first
  ArReport ar;
  VlReport vl;
  McastReport mcast;
  mad::Duration total{};
  std::vector<std::string> warnings;
  bool subnetUp = false;  // every step succeeded: all LIDs set, all switches programmed, links activated
};

class SubnetManager {
 public:
  // clock runs every timer; wallClock stamps the events (TopologyEvent::when).
  SubnetManager(mad::MadEngine& engine, const mad::Clock& clock, const WallClock& wallClock,
                SmOptions options);
  // One full cycle (heavy sweep). An Error when discovery fails, no engine can route, or LIDs run out.
  fabric::Result<SweepReport> sweep(const std::string& cause = "start");
  // Targeted cycle: re-reads the given switches, re-routes and programs what changed; falls back to a heavy
  // sweep when the targeted re-discovery cannot be trusted.
  fabric::Result<SweepReport> update(const std::vector<fabric::Guid>& switches, const std::string& cause,
                                     mad::TimePoint eventTime);
  // Reads SwitchInfo of every switch; the ones with PortStateChange set are queued for a targeted update.
  void lightSweep();
  // Called by the event loop whenever it wakes: handles received MADs, runs due updates and light sweeps.
  void tick();
  // Installed as the engine's unsolicited handler: SA MADs, traps, SMInfo Get and Set.
  void onUnsolicited(const mad::MadPacket& mad, const mad::MadHeader& header);
  // How long until a batched update is due (none waiting: nothing), for the event loop's wait.
  std::optional<mad::Duration> untilUpdateDue() const { return updates_.untilDue(); }
  // Queues switches for a targeted update (control socket "resweep", tests).
  void queueUpdate(const std::vector<fabric::Guid>& switches, const std::string& cause) {
    updates_.queue(switches, cause);
  }
  // Subnet Administration: class 0x03 MADs go to sa; every accepted (non-duplicate) trap to notice.
  void setSaHandlers(std::function<void(const mad::MadPacket&)> sa,
                     std::function<void(const mad::Notice&)> notice) {
    saHandler_ = std::move(sa);
    traps_.setNoticeHandler(std::move(notice));
  }

  SmState state() const { return ha_.state(); }
  // ibsmctl handover: see HaCoordinator::planHandover.
  fabric::Result<fabric::Guid> planHandover(std::optional<fabric::Guid> to) { return ha_.planHandover(to); }
  uint8_t priority() const { return ha_.priority(); }  // as SMInfo shows it
  const SmStateMachine& smStateMachine() const { return ha_.machine(); }
  std::shared_ptr<const SubnetSnapshot> snapshot() const { return snapshot_; }
  uint64_t sweeps() const { return sweeps_; }
  // Light sweeps run so far (tick(), every sweep.interval_s while master) and the wall time of the last one,
  // the targeted update it started included: what the service's metrics observe.
  struct LightSweeps {
    uint64_t count = 0;
    mad::Duration last{};
  };
  const LightSweeps& lightSweeps() const { return lightSweeps_; }
  // Called after every sweep or targeted update with what happened (the daemon logs it, tests look at it).
  void setEventHandler(std::function<void(const TopologyEvent&)> handler) { onEvent_ = std::move(handler); }
  // Called when a heavy sweep changes the SM state, before it routes or programs anything (a takeover's
  // sweep lasts seconds on a large fabric; `ibsmctl status` shows MASTER from its start).
  void setStateHandler(std::function<void()> handler) { onState_ = std::move(handler); }
  using TrapCounters = TrapHandler::Counters;
  const TrapCounters& trapCounters() const { return traps_.counters(); }
  uint64_t saBusyReplies() const { return ha_.saBusyReplies(); }
  // SMInfo ActCount, the heartbeat a standby may watch: SMPs sent so far (as OpenSM reports it).
  uint32_t actCount() const { return static_cast<uint32_t>(engine_.counters().sent); }
  const ArProgrammer& arProgrammer() const { return arProgrammer_; }
  // Multicast groups (the SA's MCMemberRecord requests change them; tick() re-programs the MFTs after a
  // change).
  McastGroups& mcastGroups() { return mcastGroups_; }
  const SmOptions& options() const { return options_; }
  // A config reload: the next sweep uses these (guid2lidPath should stay as it was).
  void setOptions(SmOptions options);
  // New partitions (a config reload or a run-time change): the P_Key tables are re-programmed at once, only
  // the blocks that change, and a new snapshot is published; the routes stay. The caller has checked them
  // (fabric::checkPartitions). Nothing is sent while not master or before the first sweep.
  PkeyReport setPartitions(std::vector<fabric::Partition> partitions);
  // Links routed around as if they were down (the health policy's isolations), as (node GUID, port) of both
  // ends; the ports stay up. When the set changes and the SM is master with a fabric, the routes are repaired
  // at once (no re-discovery) and the new snapshot published; every later sweep keeps them out too.
  fabric::Result<SweepReport> setIsolatedPorts(std::vector<std::pair<fabric::Guid, uint8_t>> ports,
                                               const std::string& cause);
  const std::vector<std::pair<fabric::Guid, uint8_t>>& isolatedPorts() const { return isolated_; }
  // Ports flap damping holds down now, with the end of each hold-down.
  std::vector<std::pair<std::pair<fabric::Guid, uint8_t>, mad::TimePoint>> heldDownPorts() const;
  // Forget what the switches are believed to hold, so the next sweep writes every LFT block again.
  void forgetSwitchTables() {
    cache_.clear();
    arProgrammer_.forgetTables();
    pkeyProgrammer_.forgetTables();
    vlProgrammer_.forget();
  }

 private:
  fabric::Result<SweepReport> heavySweep(const std::string& cause);
  fabric::Result<SweepReport> apply(DiscoveryResult found, SweepReport report, bool stabilize);
  void logEvent(TopologyEvent event);
  // SwitchInfo of `switches` through their routes in the last topology: the ones with PortStateChange set
  // are added to `changed` (and the bit cleared); the ones that did not answer are returned. With
  // yieldToTraps, a trap that comes in stops the asking after the SMPs in flight (its update goes first);
  // `asked` tells how many of `switches` were asked.
  std::vector<fabric::Guid> askPortStateChange(const std::vector<fabric::Guid>& switches,
                                               const mad::RequestOptions& attempts,
                                               std::vector<fabric::Guid>& changed, bool yieldToTraps = false,
                                               size_t* asked = nullptr);
  // topo with the isolated links down (topo itself when none is isolated).
  fabric::TopologyPtr routingView(const fabric::TopologyPtr& topo) const;
  void programMulticast(const fabric::Topology& topo);
  // First run of a master term: a snapshot of the fresh run for the SA, published before anything is written;
  // then (between the endports' LIDs and the switches) the LFTs read back into the block cache and the valid
  // held routes adopted.
  void publishEarly(fabric::TopologyPtr routeTopo, const routing::LidAssignment& lids,
                    const routing::RoutingTables& tables);
  PhaseStats adoptHeldRoutes(const DiscoveryResult& found, const fabric::Topology& routeTopo,
                             const routing::LidAssignment& lids, routing::RoutingTables& tables,
                             SweepReport& report);
  // STANDBY: the fabric as last read, kept warm for a takeover without discovery.
  void refreshStandbyModel();
  void prepareTakeover();  // RoutePlanner::prepare for standbyModel_
  void programRebalance(RoutePlanner::Rebalance rebalance);
  // Resolves the partitions on topo, programs the P_Key tables and keeps the broadcast groups in step.
  PkeyReport programPartitions(const fabric::Topology& topo);
  void resolvePartitions(const fabric::Topology& topo);  // the first part of that

  mad::MadEngine& engine_;
  const mad::Clock& clock_;
  const WallClock& wallClock_;
  SmOptions options_;
  Discoverer discoverer_;
  Programmer programmer_;
  ArProgrammer arProgrammer_;
  McastGroups mcastGroups_;
  McastProgrammer mcastProgrammer_;
  PkeyProgrammer pkeyProgrammer_;
  VlProgrammer vlProgrammer_;
  RoutePlanner planner_;
  std::shared_ptr<const fabric::PartitionMap> partitionMap_;
  std::shared_ptr<const std::vector<fabric::Partition>> partitionDefs_;
  McastReport lastMcast_;
  uint64_t mcastVersion_ = 0;    // mcastGroups_.version() the MFTs were last written for
  uint32_t reregisteredAt_ = 0;  // masterTerms() at the last ClientReregister run
  SwitchTableCache cache_;
  std::optional<mad::MkeyInfo> mkey_;  // options_.program.mkey as given at construction
  std::shared_ptr<const SubnetSnapshot> snapshot_;
  HaCoordinator ha_;
  UpdateQueue updates_;
  FlapDamping flaps_;
  std::vector<std::pair<fabric::Guid, uint8_t>> isolated_;  // sorted
  TrapHandler traps_;
  LidManager lids_;
  uint64_t sweeps_ = 0;
  LightSweeps lightSweeps_;
  std::optional<DiscoveryResult> last_;  // what the last sweep found (the base of targeted updates)
  // STANDBY: the fabric as its last complete read-only discovery found it, and when. A takeover or handover
  // within kStandbyModelLifetimes sweep intervals of it starts from it instead of discovering again.
  static constexpr int kStandbyModelLifetimes = 3;
  std::optional<DiscoveryResult> standbyModel_;
  mad::TimePoint standbyModelAt_{};
  uint32_t readBackTerm_ = 0;  // masterTerms() whose first run read the LFTs back
  mad::TimePoint nextLightSweep_{};
  std::function<void(const TopologyEvent&)> onEvent_;
  std::function<void()> onState_;
  std::function<void(const mad::MadPacket&)> saHandler_;
  std::optional<mad::TimePoint> retryAt_;  // a heavy sweep again: the last one left the subnet not up
  mad::Duration retryDelay_ =
      std::chrono::seconds(1);  // until the next retry after that one (doubles to 30 s)
};

}  // namespace ibsm::daemon
