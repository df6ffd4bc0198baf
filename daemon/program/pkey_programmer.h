// P_Key tables of the managed ports (IBA 10.9, 14.2.5.7). ibsm has one partition, the default one: every port
// must hold its full-member P_Key 0xFFFF (PathRecords, the IPoIB broadcast group and SA traffic use it). The
// programmer reads the P_KeyTable of every endport it does not know yet — CA ports and switch port 0
// (NodeInfo. PartitionCap entries) — and writes one block only where 0xFFFF is missing: into entry 0 when it
// is unused (0x0000) or the limited member 0x7FFF, else into the first unused entry. A port that leaves the
// topology is forgotten, so a replugged one is read again. What the ports hold is published as an immutable
// PkeyTables (the SA's PKeyTableRecords). Switch external ports are left alone: ibsm turns on no partition
// enforcement, so their tables filter nothing, and reading them would cost two SMPs per switch port at SUBNET
// UP (21,168 on the 12-ary 3-tree, a third more than the rest of the first sweep). Their P_KeyTableRecords
// are not answered.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "daemon/program/phase_runner.h"
#include "daemon/program/programmer.h"  // for the users that expect it
#include "daemon/state/subnet_snapshot.h"
#include "fabric/topology.h"
#include "mad/mad_engine.h"

namespace ibsm::daemon {

struct PkeyReport {
  PhaseStats phase{"pkey"};
  size_t portsRead = 0;               // tables read this run (ports not known before)
  size_t blocksSet = 0;               // blocks written (0xFFFF was missing)
  std::vector<std::string> warnings;  // PKEY001 read failed, PKEY002 write failed, PKEY003 no free entry
};

// The entry of a table (all its blocks) where the default P_Key must be written: nullopt when the table holds
// it already, table.size() when no entry can take it.
std::optional<size_t> defaultPkeySlot(const std::vector<uint16_t>& table);

class PkeyProgrammer {
 public:
  PkeyProgrammer(mad::MadEngine& engine, const mad::Clock& clock) : engine_(engine), clock_(clock) {}
  PkeyReport program(const fabric::Topology& topo);
  std::shared_ptr<const PkeyTables> tables() const { return tables_; }
  void forgetTables() { tables_ = std::make_shared<const PkeyTables>(); }

 private:
  mad::MadEngine& engine_;
  const mad::Clock& clock_;
  std::shared_ptr<const PkeyTables> tables_ = std::make_shared<const PkeyTables>();
};

}  // namespace ibsm::daemon
