// Linear forwarding tables as text: the writer produces OpenSM's opensm-lfts.dump format, the reader takes
// that format and what ibroute / dump_lfts.sh print for a real fabric, so tables read back from switches can
// be fed to the route checker next to the topology from ibnetdiscover.
//
// opensm-lfts.dump, one block per switch:
//   Unicast lids [0-12] of switch Lid 1 guid 0x0002c90200400ed0 ('sw1'):
//   0x0001 000 # Switch portguid 0x0002c90200400ed0: 'sw1'
//   0x0003 002 # Channel Adapter portguid 0x0002c903000b2241: 'host1 HCA-1'
//   12 lids dumped
// ibroute / dump_lfts:
//   Unicast lids [0x0-0xc] of switch Lid 1 guid 0x0002c90200400ed0 (sw1):
//     Lid  Out   Destination
//          Port     Info
//   0x0003 002 : (Channel Adapter portguid 0x0002c903000b2241: 'host1 HCA-1')
//   2 valid lids dumped
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "fabric/result.h"
#include "fabric/topology.h"
#include "routing/lid_assignment.h"
#include "routing/routing_tables.h"

namespace ibsm::routing {

// Every switch of the topology (node order), entries whose port is a real port (0..numPorts), destinations
// named from lids (endports without a LID as "unknown node and type").
std::string formatLftDump(const Topology& topo, const LidAssignment& lids, const RoutingTables& tables);
// Text handed over piece by piece, so that a large fabric's dump (switches x LIDs lines) is never in memory
// whole: the same dump, one switch at a time.
using TextSink = std::function<void(std::string_view)>;
void formatLftDump(const Topology& topo, const LidAssignment& lids, const RoutingTables& tables,
                   const TextSink& sink);

// Reads either format. Switches are matched by node GUID; the text after "LID PORT" is ignored, as are the
// column headers, "N lids dumped" lines, '#' comment lines and multicast blocks ("Multicast mlids ...").
// Switches missing from the text keep empty tables. Errors name the line ("lfts.dump:7: ..."): an entry
// before any header, a malformed LID or port, a LID past 0xBFFF, a switch GUID not in the topology or not a
// switch, a switch listed twice, any other text.
fabric::Result<RoutingTables> parseLftDump(std::string_view text, const Topology& topo,
                                           std::string_view fileName = "<input>");

}  // namespace ibsm::routing
