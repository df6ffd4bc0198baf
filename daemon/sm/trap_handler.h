// Traps from the fabric: each is answered with a TrapRepress, validated (untrusted input: malformed ones are
// counted and dropped), de-duplicated (the same trap about the same LID and port within the window counts
// once) and counted. An accepted trap goes to the notice handler (the SA's InformInfo subscribers) and says
// which switches to re-read: the switch it is about, or the switches next to the CA it is about, or every
// switch for a LID nobody holds. Trap 256 (Bad M_Key) is a security event, not a topology change: counted
// only. Trap 144 with IsSM names the port of an SM that appeared.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "daemon/state/subnet_snapshot.h"
#include "mad/mad_engine.h"
#include "mad/notice.h"

namespace ibsm::daemon {

class TrapHandler {
 public:
  struct Counters {
    uint64_t received = 0, malformed = 0, duplicates = 0;
    uint64_t badMkey = 0;  // Trap 256: a port was sent an SMP with a wrong M_Key (by someone else, or by us)
    // Decoded traps (duplicates included) by trap number, for the metrics. The number comes from the wire:
    // past kMaxTrapNumbers distinct ones, new numbers are counted in otherNumbers.
    std::map<uint16_t, uint64_t> byNumber;
    uint64_t otherNumbers = 0;
  };
  static constexpr size_t kMaxTrapNumbers = 32;
  // What an accepted trap asks of the SM.
  struct Outcome {
    std::vector<fabric::Guid> switches;  // to re-read in a targeted update (empty: nothing)
    std::string cause;
    std::optional<fabric::Guid> smPort;  // Trap 144 with IsSM: the port of an SM to look at
  };

  TrapHandler(mad::MadEngine& engine, const mad::Clock& clock, mad::Duration duplicateWindow)
      : engine_(engine), clock_(clock), window_(duplicateWindow) {}
  void setDuplicateWindow(mad::Duration window) { window_ = window; }
  void setNoticeHandler(std::function<void(const mad::Notice&)> handler) { onNotice_ = std::move(handler); }

  // A SubnTrap(Notice) MAD; snap is the subnet as last programmed (nullptr: none yet, the coming sweep sees
  // everything, so the trap asks for nothing).
  Outcome onTrap(const mad::MadPacket& trap, const SubnetSnapshot* snap);
  const Counters& counters() const { return counters_; }

 private:
  bool duplicate(const mad::Notice& notice);
  static std::vector<fabric::Guid> switchesConcerned(const SubnetSnapshot& snap, fabric::Lid lid);

  mad::MadEngine& engine_;
  const mad::Clock& clock_;
  mad::Duration window_;
  std::function<void(const mad::Notice&)> onNotice_;
  Counters counters_;
  // Recent traps, for de-duplication: (trap, LID, port) -> last arrival.
  std::map<std::tuple<uint16_t, uint16_t, uint8_t>, mad::TimePoint> recent_;
};

}  // namespace ibsm::daemon
