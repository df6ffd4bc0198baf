// LID assignment: pure logic shared by the daemon and ibsm-route so both give a fabric the same LIDs.
// Policy, in order: a GUID's persistent (guid2lid) LID if still valid, aligned and unique; else the LID the
// port already holds if valid, aligned and unique; else the lowest free aligned range. CA ports get 2^LMC
// LIDs; switch port 0 gets one LID (2^LMC if the switch has enhanced port 0). Persistent entries of ports
// that are absent now stay reserved, so a host that comes back gets its old LID. Endports are handled
// switches first, then CA/router ports, each in port GUID order (ports without a GUID last), so the result
// does not depend on the order in which nodes were discovered or listed in a file. Only linked CA ports are
// endports.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "fabric/topology.h"

namespace ibsm::routing {

using fabric::Guid;
using fabric::Lid;
using fabric::NodeIndex;
using fabric::PortNum;
using fabric::Topology;

// One endport's LID range: base .. base + 2^lmc - 1.
struct LidRange {
  Lid base;
  uint8_t lmc = 0;
  uint16_t count() const { return static_cast<uint16_t>(1u << lmc); }
  bool operator==(const LidRange&) const = default;
};

// guid2lid: port GUID -> LID range (OpenSM's file: "0xGUID LID LID" per line).
using Guid2Lid = std::map<Guid, LidRange>;

struct LidOwner {
  NodeIndex node = fabric::kNoNode;
  PortNum port;
  bool operator==(const LidOwner&) const = default;
};

// The LIDs of every endport of one topology, and the reverse map.
class LidAssignment {
 public:
  LidAssignment() = default;
  explicit LidAssignment(const Topology& topo);  // empty: no endport has a LID yet
  // The LIDs the ports currently report in PortInfo (as discovered or read from a file).
  static LidAssignment fromTopology(const Topology& topo);

  // Gives an endport a range (Lid{0} base: no LID). Ranges never overlap: an endport holding one of the LIDs
  // loses its whole range. The range must be a valid unicast range (asserted).
  void set(NodeIndex node, PortNum port, LidRange range);
  // Base LID of an endport (switch port 0, CA port 1..n); Lid{0} when none.
  Lid base(NodeIndex node, PortNum port) const;
  LidRange range(NodeIndex node, PortNum port) const;
  // Which endport owns a LID (any LID of its range); node == kNoNode when unused.
  LidOwner owner(Lid lid) const;
  // Highest LID in use (0 when none).
  Lid maxLid() const { return Lid{static_cast<uint16_t>(owners_.empty() ? 0 : owners_.size() - 1)}; }
  uint8_t lmc() const { return lmc_; }
  void setLmc(uint8_t lmc) { lmc_ = lmc; }
  bool operator==(const LidAssignment&) const = default;

 private:
  uint8_t lmc_ = 0;
  std::vector<uint32_t> first_;   // node -> index into ranges_ of its port 0
  std::vector<LidRange> ranges_;  // (node, port) -> range, ports 0..numPorts of each node in a row
  std::vector<LidOwner> owners_;  // lid -> owner
};

struct LidAssignResult {
  LidAssignment lids;
  Guid2Lid guid2lid;                  // the persistent map to write back (old entries of absent ports kept)
  std::vector<std::string> warnings;  // e.g. "persistent LID 12 of 0x... clashes with ...; reassigned"
  size_t changed = 0;                 // endports whose LID differs from what they hold now
};

// Fails only when the LID space is exhausted.
fabric::Result<LidAssignResult> assignLids(const Topology& topo, const Guid2Lid& persistent, uint8_t lmc);

// guid2lid text format; parse errors name the line ("guid2lid:3: bad GUID 'xyz'"; fileName replaces
// "guid2lid"). Lines are "GUID FIRST LAST" (LIDs decimal or 0x-hex), '#' starts a comment; a range must be
// 2^LMC (LMC 0..7) aligned unicast LIDs and a GUID may appear once.
std::string formatGuid2Lid(const Guid2Lid& map);
fabric::Result<Guid2Lid> parseGuid2Lid(std::string_view text);
fabric::Result<Guid2Lid> parseGuid2Lid(std::string_view text, std::string_view fileName);

}  // namespace ibsm::routing
