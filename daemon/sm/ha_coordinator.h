// High availability (IBA 14.4): the MADs around SmStateMachine, which makes the decisions. It answers SMInfo
// Get and Set, asks the SMs found in discovery (and the ones that queried us, or announced themselves with a
// Trap 144) for their SMInfo, polls the master while STANDBY, hands over to a better SM and acknowledges a
// handover. Only the master is the SA: anyone else answers SA requests Busy. The sweeps the HA protocol asks
// for (takeover, handover, DISCOVER) are the caller's: tick() names them.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "daemon/sm/sm_state_machine.h"
#include "daemon/state/topology_event.h"
#include "fabric/topology.h"
#include "mad/mad_engine.h"

namespace ibsm::daemon {

class HaCoordinator {
 public:
  // self: our port GUID if known before the first discovery (SMInfo answers); events: SM state changes.
  HaCoordinator(mad::MadEngine& engine, const mad::Clock& clock, SmStateOptions options, fabric::Guid self,
                std::function<void(TopologyEvent)> events);
  // A new priority (a config reload) makes a master look at the other SMs at once: a standby now better
  // takes over within a poll (a planned handover by priority). The priority a planned handover dropped to 0
  // stays so until the configured one changes.
  void setOptions(SmStateOptions options) {
    handedOver_ = handedOver_ && options.priority == configuredPriority_;
    configuredPriority_ = options.priority;
    if (handedOver_) options.priority = 0;
    recheck_ = recheck_ || options.priority != options_.priority;
    options_ = options;
    sm_.setOptions(options);
  }
  SmState state() const { return sm_.state(); }
  uint8_t priority() const { return options_.priority; }
  const SmStateMachine& machine() const { return sm_; }

  // Our port as the topology shows it (it may differ from the one given at construction).
  void noteOwnPort(const fabric::Topology& topo);
  // The HA part of a heavy sweep: finds the other SMs in topo, asks them for their SMInfo and decides
  // whether we are MASTER (a STANDBY announces itself to its master).
  SmStateMachine::Decision discover(fabric::TopologyPtr topology);
  // MASTER: hand the subnet over to a better SM (SMInfo Set HANDOVER).
  void handOver(fabric::Guid to) { sendSmInfoSet(to, SmControl::kHandover); }
  // A planned handover (ibsmctl handover): the master hands over to `to` (default: the best standby that
  // answered) and drops its own priority to 0 until sm.priority is configured anew (a reload that changes it,
  // or a restart), so the new master does not hand the subnet back. Refused (the reason returned) when we are
  // not the master, no such standby answered, or it would not be better than us at priority 0. Returns the
  // target.
  fabric::Result<fabric::Guid> planHandover(std::optional<fabric::Guid> to);
  // An SMInfo Get or Set sent to us.
  void onSmInfo(const mad::MadPacket& mad, const mad::MadHeader& header);
  // An SA request while we are not the master: answered Busy (the client asks again, by then at the master
  // the SM LID of its port names); responses are ignored.
  void refuseSa(const mad::MadPacket& mad, const mad::MadHeader& header);
  uint64_t saBusyReplies() const { return saNotMaster_; }
  // The port of an SM that announced itself (Trap 144 with IsSM): the master looks at it.
  void smAppeared(fabric::Guid port);

  // What the HA protocol asks of the SM's tick: a sweep (with its cause), else whether we are the master
  // that carries on with its own work (multicast, light sweeps, targeted updates).
  struct Turn {
    std::optional<std::string> sweep;
    bool master = false;
  };
  // Sends a pending ACKNOWLEDGE, polls the master (STANDBY), checks the other SMs (MASTER: when an SM queried
  // us, and on light sweeps).
  Turn tick(bool lightSweepDue);
  // Asked during a standby's re-read of the fabric (seconds on a large one): polls the master when due, and
  // says whether the read should stop because the master is lost or the HA protocol wants a sweep.
  bool standbyReadInterrupted();

 private:
  using SmAt = std::tuple<fabric::Guid, uint16_t, fabric::DrPath>;  // port GUID, LID, directed route
  mad::SmInfo ownSmInfo() const;
  mad::MadPacket smInfoRequest(uint8_t method, uint32_t attrMod, const fabric::DrPath& route) const;
  std::optional<SmAt> locateSm(fabric::Guid portGuid) const;
  void querySms(const std::vector<SmAt>& sms);
  void checkRemoteSms(const std::string& why);
  void sendSmInfoSet(fabric::Guid to, SmControl control);
  void pollMaster();
  void answerGet(const mad::MadPacket& mad, const mad::MadHeader& header);
  void onSet(const mad::MadPacket& mad, const mad::MadHeader& header);
  void noteRequester(const mad::MadPacket& mad);
  void announceTo(const fabric::Topology& topo, fabric::Guid master);  // Trap 144 to the master
  void stateEvent(const std::string& cause, SmState before);

  mad::MadEngine& engine_;
  const mad::Clock& clock_;
  SmStateOptions options_;
  SmStateMachine sm_;
  fabric::Guid portGuid_;
  std::function<void(TopologyEvent)> events_;
  fabric::TopologyPtr seen_;           // the last discovered topology, master or not (to find other SMs)
  bool takeover_ = false;              // standby: the master is lost
  std::optional<fabric::Guid> lost_;   // that master: the takeover's discovery does not ask it again
  bool sweepWanted_ = false;           // a HANDOVER or DISCOVER came: sweep as master
  bool recheck_ = false;               // our priority changed: a master looks at the other SMs
  uint8_t configuredPriority_ = 0;     // sm.priority as configured
  bool handedOver_ = false;            // a planned handover dropped our priority to 0
  std::optional<fabric::Guid> ackTo_;  // send ACKNOWLEDGE to this SM
  std::set<fabric::Guid> learn_;       // SMs that queried us: look at them
  std::map<fabric::Guid, mad::TimePoint> learnedAt_;
  uint64_t smSets_ = 0;       // SMInfo Sets received
  uint64_t saNotMaster_ = 0;  // SA requests answered Busy because we are not the master
};

}  // namespace ibsm::daemon
