// P_Key tables of the managed ports (IBA 10.9, 14.2.5.7), from the partitions resolved against the topology
// (fabric::PartitionMap): every CA port and switch port 0 holds the P_Keys of its partitions, with the
// full-member bit as configured; the switch port facing a CA port holds the same keys when the switch has
// PartitionEnforcementCap, so that the switch can enforce the partitions (the Programmer sets the
// enforcement bits in that port's PortInfo).
//
// What a port holds is learnt once: the table of a CA port or switch port 0 is read the first time the port
// is seen (it may hold keys another SM wrote), unless the port's PortInfo shows that no SM has set it up
// since its reset (no LID, no SM LID, no IsPKeyNVRAM): then it holds only the default key at index 0 (IBA
// C10-123), which saves 24,948 Gets on the 11,664-host Clos at first start; the table of a switch port facing
// a CA is written whole, without a read, the first time it needs a key other than the default one. After that
// the programmer trusts what it wrote: each run computes the table a port should hold and sends only the
// blocks that differ. Keys stay at their index: a key that goes is cleared in place, a new one takes the
// first free entry (the default partition entry 0 when free), so adding a partition and removing it again
// restores the tables exactly. Without partitions beyond the default one the switch external ports are never
// touched: their tables filter nothing then, and reading them would cost two SMPs per switch port at SUBNET
// UP (21,168 on the 12-ary 3-tree). A port that leaves the topology is forgotten, so a replugged one is read
// again. What the ports hold is published as an immutable PkeyTables (the SA's P_KeyTableRecords).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "daemon/program/phase_runner.h"
#include "daemon/program/programmer.h"  // for the users that expect it
#include "daemon/state/subnet_snapshot.h"
#include "fabric/partition.h"
#include "fabric/topology.h"
#include "mad/mad_engine.h"

namespace ibsm::daemon {

struct PkeyReport {
  PhaseStats phase{"pkey"};
  size_t portsRead = 0;     // tables read this run (ports not known before)
  size_t portsAtReset = 0;  // tables not known before, taken as their reset content (not read)
  size_t blocksSet = 0;     // blocks written
  size_t portsChanged = 0;  // ports with at least one block written
  // PKEY001 read failed, PKEY002 write failed, PKEY003 no free entry
  std::vector<std::string> warnings;
};

// The table a port should hold: `held` (its current entries, resized to `size`) with every key whose 15-bit
// P_Key is not in `want` cleared, the membership bit of kept keys set as in `want`, and the missing keys of
// `want` in the first free entries (the default partition's in entry 0 when that is free). `overflow` counts
// the keys that found no free entry.
std::vector<uint16_t> placeKeys(const std::vector<uint16_t>& held, std::span<const uint16_t> want,
                                size_t size, size_t* overflow = nullptr);

class PkeyProgrammer {
 public:
  PkeyProgrammer(mad::MadEngine& engine, const mad::Clock& clock) : engine_(engine), clock_(clock) {}
  PkeyReport program(const fabric::Topology& topo, const fabric::PartitionMap& partitions);
  std::shared_ptr<const PkeyTables> tables() const { return tables_; }
  void forgetTables() {
    tables_ = std::make_shared<const PkeyTables>();
    facing_.clear();
  }
  // The switch external ports (switch GUID, port) that hold the P_Keys of the CA port they face: partition
  // enforcement goes on there (Programmer::enforcePartitions).
  const std::set<std::pair<fabric::Guid, uint8_t>>& facingPorts() const { return facing_; }

 private:
  mad::MadEngine& engine_;
  const mad::Clock& clock_;
  std::shared_ptr<const PkeyTables> tables_ = std::make_shared<const PkeyTables>();
  std::set<std::pair<fabric::Guid, uint8_t>> facing_;
};

}  // namespace ibsm::daemon
