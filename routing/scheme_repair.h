// What the repairs inside an engine's own scheme share (routing/dfly_repair.h, routing/dor_repair.h): the
// switches matched by GUID (none may come or go), every LID leaving the fabric where it did, the links lost
// and born, the old tables on the new node numbers (LFT rows shared until written), writes that count the
// entries that moved, link loads kept route by route (a broken source's old route off, its new one on), and
// per destination whose routes took a lost link the broken switches: those whose entry took it and every
// switch whose route runs into one (the upstream closure). AR groups are both engines' kind: the parallel
// links to the LFT port's neighbour; the detours dfly's groups also offer (RoutingTables::arStretch) rest on
// the routes to their LID, so a repaired LID's groups all go back to that kind. An engine's repair derives
// from it and chooses the broken switches' new entries and SLs (repairDestination).
//
// Internal to routing/: the repairs' entry points are in their own headers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "routing/repair.h"
#include "routing/switch_graph.h"

namespace ibsm::routing {

class SchemeRepair {
 public:
  // name: the engine, the prefix of every reason and note ("dfly").
  SchemeRepair(std::string name, const Topology& oldTopo, const RoutingTables& old, const Topology& topo,
               RepairResult& out);
  virtual ~SchemeRepair() = default;

  // Why the change cannot be repaired here (a switch came or went, a LID is new or moved); empty when it can.
  // Also finds the links lost and born.
  std::string prepare(const LidAssignment& oldLids, const LidAssignment& lids);
  bool linksCameUp() const { return born_ > 0; }
  bool linksWentDown() const { return !dead_.empty(); }
  // `fresh` (the engine's tables from scratch on the new topology) as the result: what moved, the loads.
  void takeFresh(RoutingTables fresh, const LidAssignment& lids, std::string note);
  // The old tables on the new node numbers, with their loads. The engine's own fields are its to copy.
  void copyTables(const PortLoads& oldLoads);
  // Repairs every destination whose routes took a lost link; the first reason to decline, or empty.
  std::string run(uint32_t arGroupCap);

 protected:
  // Chooses new entries for lid_ (towards dest_) of the broken switches b_ (seeds_ the ones whose entry took
  // a lost link), and the SLs of those with CAs; the first reason to decline, or empty.
  virtual std::string repairDestination() = 0;

  // Leaves the entry of broken switch s for lid_ without an AR group (its way is a detour, whose parallel
  // links are no shortest ways).
  void keepStatic(SwitchIndex s) { static_[s] = serial_; }
  uint8_t entry(SwitchIndex s, uint16_t lid) const;
  void setEntry(SwitchIndex s, uint16_t lid, uint8_t port);
  void setSl(SwitchIndex s, uint16_t lid, uint8_t sl);
  // The CA ports of switch s (new topology).
  const uint8_t* caBegin(SwitchIndex s) const { return caPorts_.data() + caBase_[s]; }
  const uint8_t* caEnd(SwitchIndex s) const { return caPorts_.data() + caBase_[s + 1]; }
  uint32_t hosts(SwitchIndex s) const { return caBase_[s + 1] - caBase_[s]; }

  const std::string name_;
  const Topology& oldTopo_;
  const RoutingTables& old_;
  const Topology& topo_;
  RepairResult& out_;
  SwitchGraph og_, g_;
  std::vector<SwitchIndex> newOfOld_, oldOfNew_;
  std::vector<LidExit> exit_, oldExit_;
  std::vector<uint32_t> dead_;  // old arcs that are gone
  size_t born_ = 0;             // new arcs
  size_t maxHops_;              // a route longer than this is a loop
  // Per destination: serial_ counts them, inB_[s] == serial_ marks the broken switches.
  uint32_t serial_ = 0;
  uint16_t lid_ = 0;
  LidExit dest_;
  std::vector<SwitchIndex> seed_, b_;
  std::vector<uint32_t> inB_;

 private:
  void repairOne();
  // Adds (new tables) or takes off (old tables; old switch index) w on every egress port of the route from
  // a switch to `lid`.
  void bookOld(SwitchIndex os, uint16_t lid, uint64_t w);
  void bookNew(SwitchIndex s, uint16_t lid, uint64_t w);
  void dropDestination(uint16_t lid);
  void updateGroup(SwitchIndex s);
  // Whether the AR group of s for lid_ has a member towards another switch than its LFT port's.
  bool offersElsewhere(SwitchIndex s) const;
  void dropArMember(fabric::NodeIndex n, uint8_t port);
  void setGroup(SwitchIndex s, uint16_t lid, const PortMask& mask);

  std::vector<uint32_t> caBase_;  // CSR of caPorts_ per new switch
  std::vector<uint8_t> caPorts_;
  std::vector<uint32_t> oldHosts_;
  std::vector<uint32_t> static_;  // static_[s] == serial_: keepStatic(s)
  uint32_t arCap_ = 0;
};

}  // namespace ibsm::routing
