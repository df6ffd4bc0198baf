// Multicast forwarding on the switches: builds each group's spanning tree (routing/multicast.h) and writes
// the MulticastForwardingTable blocks (32 MLIDs x 16 ports each) that differ from what the switch is known to
// hold. A block is known once a Set of it was acknowledged; on a switch seen for the first time every block
// up to the highest one in use is written, so entries left by an earlier SM are cleared. Groups whose MLID is
// past a switch's MulticastFDBCap are skipped on that switch (MCAST001).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "daemon/program/block_cache.h"
#include "daemon/program/phase_runner.h"
#include "daemon/program/programmer.h"  // for the users that expect it
#include "daemon/state/mft_plan.h"
#include "mad/mad_engine.h"
#include "mad/smp.h"
#include "routing/multicast.h"

namespace ibsm::daemon {

struct McastReport {
  PhaseStats phase{"mft"};
  size_t groups = 0;
  size_t blocksSent = 0, blocksSkipped = 0;
  size_t unreachableMembers = 0;
  std::vector<std::string> errors;    // MCAST002: Sets that failed
  std::vector<std::string> warnings;  // MCAST001
};

class McastProgrammer {
 public:
  McastProgrammer(mad::MadEngine& engine, const mad::Clock& clock) : engine_(engine), clock_(clock) {}
  McastReport program(const fabric::Topology& topo, const std::vector<routing::McastGroupRoute>& groups);
  void forget(fabric::Guid sw) { held_.forget(sw); }
  void forgetTables() { held_.clear(); }

 private:
  mad::MadEngine& engine_;
  const mad::Clock& clock_;
  // Per switch GUID: MFT blocks as acknowledged, by attribute modifier (position << 28 | block); a block
  // not in the map is unknown. Sparse: a switch holds only the few blocks its groups use.
  SwitchCache<std::map<uint32_t, mad::MftBlock>> held_;
};

}  // namespace ibsm::daemon
