// The SM state machine of IBA 14.4 (NOTACTIVE, DISCOVERING, STANDBY, MASTER) as pure logic: it is told what
// the other SMs on the subnet answered to SMInfo queries and Sets and what time it is, and says what to do
// (program the fabric, stand by and poll the master, hand over to a better SM). No I/O: HaCoordinator sends
// the MADs. An SM is better than another with a higher priority, on a tie with the lower port GUID.
// With a non-zero SM_Key, an SMInfo whose SM_Key differs from ours is not trusted: it never makes us yield.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "fabric/topology.h"
#include "mad/clock.h"
#include "mad/smp.h"

namespace ibsm::daemon {

enum class SmState : uint8_t { kNotActive = 0, kDiscovering = 1, kStandby = 2, kMaster = 3 };
const char* toString(SmState s);

// SMInfo Set attribute modifiers (IBA 14.2.5.13).
enum class SmControl : uint32_t {
  kHandover = 1,
  kAcknowledge = 2,
  kDisable = 3,
  kStandby = 4,
  kDiscover = 5
};

// Whether an SM (priority pa, port GUID ga) is better than another: a higher priority, on a tie the lower
// GUID.
bool better(uint8_t pa, fabric::Guid ga, uint8_t pb, fabric::Guid gb);

// Another SM, as its last SMInfo answer described it.
struct RemoteSm {
  fabric::Guid guid;  // port GUID
  uint16_t lid = 0;
  fabric::DrPath route;  // directed route to its port
  uint8_t priority = 0;
  SmState state = SmState::kNotActive;
  uint32_t actCount = 0;
  bool answered = false;  // the last query got an answer
  bool keyOk = true;      // its SM_Key matched ours (always true when ours is zero)
  mad::TimePoint lastSeen{};
};

struct SmStateOptions {
  uint8_t priority = 0;
  uint64_t smKey = 0;
  mad::Duration pollInterval = std::chrono::milliseconds(200);
  unsigned pollRetries = 3;
};

class SmStateMachine {
 public:
  explicit SmStateMachine(SmStateOptions options) : options_(options) {}

  void setSelf(fabric::Guid guid) { self_ = guid; }
  void setOptions(SmStateOptions options) { options_ = options; }
  SmState state() const { return state_; }
  uint32_t masterTerms() const { return masterTerms_; }  // times this SM became MASTER

  // A heavy sweep starts (from NOTACTIVE only after a DISCOVER Set).
  void startDiscovery();
  // The answer of one SM to our SMInfo Get (nullopt: no answer). Untrusted: a wrong SM_Key is counted and the
  // SM kept as not trusted. Returns the record.
  const RemoteSm& noteRemote(fabric::Guid guid, uint16_t lid, const fabric::DrPath& route,
                             const std::optional<mad::SmInfo>& info, mad::TimePoint now);
  // Forget SMs not found by the last discovery.
  void keepOnly(const std::vector<fabric::Guid>& present);

  // The outcome of discovery (state DISCOVERING) or of a master's check of the other SMs.
  struct Decision {
    SmState state = SmState::kMaster;
    std::optional<fabric::Guid> master;      // STANDBY: the SM to poll
    std::optional<fabric::Guid> handoverTo;  // MASTER: a better SM to hand over to
  };
  Decision decide(mad::TimePoint now);

  // STANDBY: whether a poll of the master is due; the poll's outcome (nullopt: no answer). Returns true when
  // pollRetries polls in a row failed (no answer, not MASTER any more, or a wrong SM_Key): take over.
  bool pollDue(mad::TimePoint now) const {
    return state_ == SmState::kStandby && master_ && now >= nextPoll_;
  }
  void pollSent(mad::TimePoint now) { nextPoll_ = now + options_.pollInterval; }
  bool pollResult(const std::optional<mad::SmInfo>& info, mad::TimePoint now);
  std::optional<fabric::Guid> master() const { return master_; }
  unsigned failedPolls() const { return failedPolls_; }

  // MASTER: we sent HANDOVER to `to` (it answered); an ACKNOWLEDGE from it makes us STANDBY. A handover not
  // acknowledged within pollInterval * pollRetries is forgotten (the next check may try again).
  void handoverSent(fabric::Guid to, mad::TimePoint now);
  std::optional<fabric::Guid> handoverPending(mad::TimePoint now) const;

  // An SMInfo Set from another SM. Returns what the caller must do besides answering with our SMInfo.
  enum class SetOutcome {
    kIgnored,       // not legal in our state: answered, nothing changes
    kBadKey,        // wrong SM_Key: counted, nothing changes
    kBecomeMaster,  // HANDOVER taken: send ACKNOWLEDGE to the sender, then sweep as MASTER
    kAcknowledge,   // HANDOVER while MASTER already: just send ACKNOWLEDGE
    kNowStandby,    // ACKNOWLEDGE of our handover, or STANDBY: poll `master()`
    kDisabled,      // DISABLE: NOTACTIVE, stop sweeping and polling
    kDiscover,      // DISCOVER: sweep
  };
  SetOutcome onSet(uint32_t control, const mad::SmInfo& from, mad::TimePoint now);

  const std::vector<RemoteSm>& remotes() const { return remotes_; }
  const RemoteSm* findRemote(fabric::Guid guid) const;
  uint64_t badKeys() const { return badKeys_; }
  // A takeover from a master we were standing by for (or a handover): the fabric's LIDs are to be kept.
  bool tookOver() const { return tookOver_; }

 private:
  void becomeMaster();
  void becomeStandby(fabric::Guid master, mad::TimePoint now);
  bool trusted(const mad::SmInfo& info) const { return options_.smKey == 0 || info.smKey == options_.smKey; }

  SmStateOptions options_;
  fabric::Guid self_;
  SmState state_ = SmState::kDiscovering;
  uint32_t masterTerms_ = 0;
  std::vector<RemoteSm> remotes_;
  std::optional<fabric::Guid> master_;
  mad::TimePoint nextPoll_{};
  unsigned failedPolls_ = 0;
  bool wasStandby_ = false;   // DISCOVERING after STANDBY (takeover)
  bool forceMaster_ = false;  // DISCOVERING after a HANDOVER
  bool tookOver_ = false;
  std::optional<fabric::Guid> handoverTo_;
  mad::TimePoint handoverSince_{};
  uint64_t badKeys_ = 0;
};

}  // namespace ibsm::daemon
