// Reads the LFTs the switches hold (SubnGet LinearForwardingTable, every block up to each switch's
// LinearFDBTop as discovery read it, many in flight through the MadEngine's window). A new master (a
// takeover, a handover, a restart) starts with an empty block cache and would otherwise write every block
// again; what this reads seeds the cache, and the tables read back can be adopted where they are valid
// (routing/adopt.h), so a new master writes only what must change. An answer that fails or does not decode
// is counted and its block left unknown (it is written if the tables differ there, as before).
#pragma once

#include <cstddef>

#include "daemon/program/phase_runner.h"
#include "daemon/program/programmer.h"
#include "fabric/topology.h"
#include "mad/mad_engine.h"
#include "routing/routing_tables.h"

namespace ibsm::daemon {

struct LftReadback {
  routing::Rows<routing::LftRow> held;  // [node]: the blocks read, empty for non-switches or unread switches
  size_t blocks = 0;                    // blocks read
  size_t failed = 0;                    // blocks that got no (valid) answer: left unknown
  size_t switchesIncomplete = 0;        // switches with a failed block: their row is left empty
  PhaseStats phase;
};

// Reads every switch of topo; the blocks read go into cache (each switch's LinearFDBTop as well).
LftReadback readLfts(mad::MadEngine& engine, const mad::Clock& clock, const fabric::Topology& topo,
                     SwitchTableCache& cache);

}  // namespace ibsm::daemon
