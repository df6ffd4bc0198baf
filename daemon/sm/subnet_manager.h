// The SM's core cycle, independent of how it is driven (--once or the event loop): heavy sweep, LID
// assignment with the persistent map, routing through the engine chain, programming of what changed. It also
// answers SMInfo queries sent to this SM. Holds the current snapshot for readers (control socket, SA).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "daemon/program/ar_programmer.h"
#include "daemon/program/mcast_programmer.h"
#include "daemon/program/pkey_programmer.h"
#include "daemon/program/programmer.h"
#include "daemon/sa/mcast_groups.h"
#include "daemon/sm/discoverer.h"
#include "daemon/sm/flap_damping.h"
#include "daemon/sm/lid_manager.h"
#include "daemon/sm/sm_state_machine.h"
#include "daemon/sm/trap_handler.h"
#include "daemon/sm/update_queue.h"
#include "daemon/state/subnet_snapshot.h"
#include "daemon/state/topology_event.h"
#include "mad/mad_engine.h"
#include "mad/notice.h"
#include "routing/engine.h"

namespace ibsm::daemon {

struct SmOptions {
  std::vector<std::string> engines{"ftree", "updn", "minhop"};
  routing::Options routing;
  uint8_t lmc = 0;
  std::string guid2lidPath;  // empty: no persistence
  uint8_t priority = 0;
  uint64_t smKey = 0;
  fabric::Guid portGuid;  // our port, if known before the first sweep (SMInfo answers)
  mad::Duration pollInterval = std::chrono::milliseconds(1000);  // standby: polls of the master's SMInfo
  unsigned pollRetries = 3;  // standby: failed polls in a row before it takes over
  ProgramOptions program;
  ArOptions ar;  // adaptive routing on the switches (used when routing.computeAr)
  mad::Duration lightSweepInterval = std::chrono::seconds(10);   // 0 = no light sweeps
  mad::Duration trapBatchDelay = std::chrono::milliseconds(20);  // traps arriving within this are one event
  mad::Duration holdDown = std::chrono::milliseconds(2000);      // flap damping: first hold-down of a port
  mad::Duration maxHoldDown = std::chrono::milliseconds(60000);  // doubling stops here
  bool ipoibBroadcast = true;  // create IPoIB's broadcast group of the default partition at start
  // Wall-clock time of the events (TopologyEvent::when); every timer uses the mad::Clock instead.
  std::function<std::chrono::system_clock::time_point()> wallClock = [] {
    return std::chrono::system_clock::now();
  };
};

struct SweepReport {
  DiscoveryStats discovery;
  size_t lidsChanged = 0;
  std::string engine;
  std::vector<std::string> fallbacks;
  mad::Duration routingTime{};
  ProgramReport program;
  ArReport ar;
  McastReport mcast;
  mad::Duration total{};
  std::vector<std::string> warnings;
  bool subnetUp = false;  // every step succeeded: all LIDs set, all switches programmed, links activated
};

class SubnetManager {
 public:
  SubnetManager(mad::MadEngine& engine, const mad::Clock& clock, SmOptions options);
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
  // Answers SMInfo Get and traps (TrapRepress, then a batched targeted update); installed as the engine's
  // unsolicited handler.
  void onUnsolicited(const mad::MadPacket& mad, const mad::MadHeader& header);
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

  SmState state() const { return sm_.state(); }
  const SmStateMachine& smStateMachine() const { return sm_; }
  std::shared_ptr<const SubnetSnapshot> snapshot() const { return snapshot_; }
  uint64_t sweeps() const { return sweeps_; }
  // Called after every sweep or targeted update with what happened (the daemon logs it, tests look at it).
  void setEventHandler(std::function<void(const TopologyEvent&)> handler) { onEvent_ = std::move(handler); }
  using TrapCounters = TrapHandler::Counters;
  const TrapCounters& trapCounters() const { return traps_.counters(); }
  uint64_t saBusyReplies() const { return saNotMaster_; }
  // SMInfo ActCount, the heartbeat a standby may watch: SMPs sent so far (as OpenSM reports it).
  uint32_t actCount() const { return static_cast<uint32_t>(engine_.counters().sent); }
  const ArProgrammer& arProgrammer() const { return arProgrammer_; }
  // Multicast groups (the SA's MCMemberRecord requests change them; tick() re-programs the MFTs after a
  // change).
  McastGroups& mcastGroups() { return mcastGroups_; }
  const McastReport& lastMcastReport() const { return lastMcast_; }
  const SmOptions& options() const { return options_; }
  // A config reload: the next sweep uses these (guid2lidPath should stay as it was).
  void setOptions(SmOptions options);
  // Forget what the switches are believed to hold, so the next sweep writes every LFT block again.
  void forgetSwitchTables() {
    cache_.clear();
    arProgrammer_.forgetTables();
    pkeyProgrammer_.forgetTables();
  }

 private:
  fabric::Result<SweepReport> heavySweep(const std::string& cause);
  fabric::Result<SweepReport> apply(DiscoveryResult found, SweepReport report, bool stabilize);
  void logEvent(TopologyEvent event);
  void programMulticast(const fabric::Topology& topo);
  static SmStateOptions smStateOptions(const SmOptions& o) {
    return {o.priority, o.smKey, o.pollInterval, o.pollRetries};
  }
  // High availability (sm_ha.cc): SMInfo of the other SMs, polls, handover.
  mad::SmInfo ownSmInfo() const;
  mad::MadPacket smInfoRequest(uint8_t method, uint32_t attrMod, const fabric::DrPath& route) const;
  SmStateMachine::Decision discoverSms(const fabric::Topology& topo);
  void querySms(const std::vector<std::tuple<fabric::Guid, uint16_t, fabric::DrPath>>& sms);
  void checkRemoteSms(const std::string& why);
  void pollMaster();
  void sendSmInfoSet(fabric::Guid to, SmControl control);
  void onSmInfoSet(const mad::MadPacket& mad, const mad::MadHeader& header);
  void noteSmInfoRequester(const mad::MadPacket& mad, const mad::MadHeader& header);
  void announceTo(const fabric::Topology& topo, fabric::Guid master);  // Trap 144 to the master
  void noteSmPort(fabric::Guid port);                                  // Trap 144 with IsSM: an SM appeared
  std::optional<std::tuple<fabric::Guid, uint16_t, fabric::DrPath>> locateSm(fabric::Guid portGuid) const;
  void stateEvent(const std::string& cause, SmState before);
  bool haTick();  // true: the caller returns (not master, or a sweep ran)

  mad::MadEngine& engine_;
  const mad::Clock& clock_;
  SmOptions options_;
  Discoverer discoverer_;
  Programmer programmer_;
  ArProgrammer arProgrammer_;
  McastGroups mcastGroups_;
  McastProgrammer mcastProgrammer_;
  PkeyProgrammer pkeyProgrammer_;
  McastReport lastMcast_;
  uint64_t mcastVersion_ = 0;    // mcastGroups_.version() the MFTs were last written for
  uint32_t reregisteredAt_ = 0;  // sm_.masterTerms() at the last ClientReregister run
  SwitchTableCache cache_;
  std::optional<mad::MkeyInfo> mkey_;  // options_.program.mkey as given at construction
  std::shared_ptr<const SubnetSnapshot> snapshot_;
  SmStateMachine sm_;
  fabric::Guid portGuid_;
  fabric::TopologyPtr seen_;           // the last discovered topology, master or not (to find other SMs)
  bool takeover_ = false;              // standby: the master is lost
  bool sweepWanted_ = false;           // a HANDOVER or DISCOVER came: sweep as master
  std::optional<fabric::Guid> ackTo_;  // send ACKNOWLEDGE to this SM
  std::set<fabric::Guid> learn_;       // SMs that queried us: look at them
  std::map<fabric::Guid, mad::TimePoint> learnedAt_;
  uint64_t sweeps_ = 0;
  std::optional<DiscoveryResult> last_;  // what the last sweep found (the base of targeted updates)
  UpdateQueue updates_;
  mad::TimePoint nextLightSweep_{};
  FlapDamping flaps_;
  TrapHandler traps_;
  LidManager lids_;
  std::function<void(const TopologyEvent&)> onEvent_;
  std::function<void(const mad::MadPacket&)> saHandler_;
  uint64_t smSets_ = 0;                    // SMInfo Sets received
  uint64_t saNotMaster_ = 0;               // SA requests answered Busy because we are not the master
  std::optional<mad::TimePoint> retryAt_;  // a heavy sweep again: the last one left the subnet not up
  mad::Duration retryDelay_ =
      std::chrono::seconds(1);  // until the next retry after that one (doubles to 30 s)
};

}  // namespace ibsm::daemon
