// Programs the fabric from a routing result: endport LIDs (PortInfo), switch LinearFDBTop (SwitchInfo), LFT
// blocks (only those whose content differs from what the switch is known to hold); link states INIT ->
// ARMED before the switches, ARMED -> ACTIVE once they are programmed. Everything goes by directed route,
// many SMPs in flight; SMPs and time are counted per phase.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "daemon/program/block_cache.h"
#include "daemon/program/phase_runner.h"
#include "daemon/state/discovery_result.h"
#include "mad/mad_engine.h"
#include "mad/smp.h"
#include "routing/lid_assignment.h"
#include "routing/routing_tables.h"

namespace ibsm::daemon {

// What each switch's LFT holds as far as this SM knows (by switch GUID); blocks never written or read are
// unknown and always sent. The blocks are not copied: the switch holds the blocks below writtenTop of the
// row `written` (routing tables' rows, fabric/rows.h, shared with the tables that were written or read back
// in full), except the blocks in `changed`, which a run that did not complete set since (nullopt: a Set that
// failed, the block is unknown).
struct SwitchLftState {
  std::shared_ptr<const routing::LftRow> written;
  uint16_t writtenTop = 0;
  std::unordered_map<uint32_t, std::optional<mad::LftBlock>> changed;
  uint16_t linearFdbTop = 0;
  bool topKnown = false;
  // True when block b is known to hold `want`: no Set needed.
  bool holds(size_t b, const mad::LftBlock& want) const;
  // From here on the switch holds `row` up to `top` in full.
  void hold(std::shared_ptr<const routing::LftRow> row, uint16_t top);
};
// Block b of a row as a Set of it carries it: entries past the row's end are kNoPort.
mad::LftBlock lftBlock(const routing::LftRow& row, size_t b);
// The LFT blocks a switch with this LinearFDBTop has (a freshly booted switch, top 0, has one).
size_t lftBlocks(uint16_t top);

class SwitchTableCache : public SwitchCache<SwitchLftState> {
 public:
  using Entry = SwitchLftState;
};

struct ProgramOptions {
  uint8_t subnetTimeout = 18;   // 4.096 us * 2^18 ~ 1 s, as OpenSM's default
  uint8_t switchLifeTime = 18;  // SwitchInfo LifeTime (packet lifetime in the switch)
  bool activate = true;         // bring ports to ARMED and ACTIVE
  // Ask every CA port that supports it to re-register (PortInfo ClientReregister): set on the first run after
  // this SM became master, so hosts join their multicast groups and subscriptions again with the new SM.
  bool clientReregister = false;
  uint64_t gidPrefix = 0xfe80000000000000ULL;  // subnet prefix written to every endport's PortInfo
  // M_Key protection: M_Key, MKeyProtectBits and MKeyLeasePeriod written into the PortInfo of every CA port
  // and switch port 0 that does not hold them yet. nullopt: protection off, the fields are left as they are.
  // (The SMPs carry the key through the MadEngine, not through these options.)
  std::optional<mad::MkeyInfo> mkey;
  // Runs after the endports' LIDs and SM LID are set and the new links armed, before the switches are
  // programmed (a new master reads the LFTs back there: the hosts find the new SM, and its SA, first; a
  // first sweep waits there for the routes computed meanwhile). It may change the tables given to program()
  // and appends the phases it ran; false ends the run there (nothing is written to the switches).
  std::function<bool(std::vector<PhaseStats>& phases)> beforeSwitches;
};

struct ProgramReport {
  std::vector<PhaseStats> phases;
  size_t lidsSet = 0;  // endports whose PortInfo was written
  size_t lftBlocksSent = 0;
  size_t lftBlocksSkipped = 0;  // unchanged blocks not sent
  size_t portsArmed = 0, portsActivated = 0;
  size_t armedWithLid = 0;  // of portsArmed: CA ports armed by the Set of their LID (phase "lids")
  size_t mkeysSet = 0;      // management ports whose M_Key fields were written
  // Ports whose PortInfo Set was acknowledged without keeping the M_Key (an SMA without M_Key support, such
  // as ibsim's): counted once per port; such ports are not protected and are not asked again.
  size_t mkeyIgnored = 0;
  std::vector<std::string> errors;  // SMPs that failed or were rejected
  size_t smps() const;
};

class Programmer {
 public:
  Programmer(mad::MadEngine& engine, const mad::Clock& clock) : engine_(engine), clock_(clock) {}
  // Updates `fabric` to what the switches and ports hold afterwards (attributes, PortInfo and SwitchInfo
  // blocks), so a later targeted run sends only what changed since.
  ProgramReport program(DiscoveryResult& fabric, const routing::LidAssignment& lids,
                        const routing::RoutingTables& tables, SwitchTableCache& cache,
                        const ProgramOptions& options);
  // Partition enforcement (IBA 10.9.3): sets PartitionEnforcementInbound and Outbound in the PortInfo of
  // these switch external ports (by switch GUID and port; the ones facing CA ports whose P_Keys the switch
  // holds) where `fabric`'s PortInfo block does not have them yet, and keeps the blocks up to date. Errors
  // (PKEY004) are added to `errors`.
  PhaseStats enforcePartitions(DiscoveryResult& fabric,
                               const std::set<std::pair<fabric::Guid, uint8_t>>& ports,
                               std::vector<std::string>& errors);

 private:
  mad::MadEngine& engine_;
  const mad::Clock& clock_;
  std::unordered_set<fabric::Guid> mkeyIgnored_;  // port GUIDs whose SMA does not keep the M_Key
  // What the last run that ran every phase without an error left: the topology it published (a later
  // fabric built on it shares the rows nothing changed since) and what it wrote into the endports. A run
  // that asks the same of them (no re-registration) sends nothing in phases 1 and 2 to a node whose row it
  // shares, and does not look at it there: an event on a large fabric costs what changed.
  struct Left {
    fabric::TopologyPtr topology;
    routing::LidAssignment lids;
    uint16_t smLid = 0;
    uint64_t gidPrefix = 0;
    std::optional<mad::MkeyInfo> mkey;
    bool activate = false;
  };
  std::optional<Left> left_;
};

}  // namespace ibsm::daemon
