// Adaptive-routing group builder shared by every engine. An engine reports, per (switch, LID), the set of
// equal-cost legal egress ports (with the static LFT port as default member); the builder de-duplicates
// identical sets into group numbers for that switch and applies the per-switch group cap.
//
// Determinism: group numbers and the cap do not depend on the order in which LIDs are reported. Groups are
// numbered in order of the lowest LID that uses them; once `cap` groups exist, every LID whose set has no
// group yet gets ArTable::kNoGroup (static routing only) and ArTable::capped is set. Sets of fewer than two
// ports need no group and get kNoGroup without counting against the cap.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "fabric/ids.h"
#include "routing/routing_tables.h"

namespace ibsm::routing {

// Builds the ArTable of one switch.
class ArGroupBuilder {
 public:
  static constexpr uint32_t kNoSet = UINT32_MAX;

  // lidCount: size of the switch's LFT (max LID + 1); cap: most groups this switch may hold (values above
  // 0xFFFF, which the 16-bit group numbers cannot express next to kNoGroup, are clamped).
  ArGroupBuilder(size_t lidCount, uint32_t cap);

  // Reports the equal-cost set of `lid`. defaultPort (the LFT entry) is added to the set; kNoPort means the
  // LID is unreachable and gets no group. Reporting a LID again replaces its set.
  void set(fabric::Lid lid, PortMask ports, uint8_t defaultPort);

  // For engines that report the same set for many LIDs (e.g. all LIDs behind one leaf switch): intern a set
  // once and assign its id to each LID. The set must already contain the LID's default port. Sets of size < 2
  // return kNoSet, which assign() accepts and which means "no group".
  uint32_t intern(const PortMask& ports);
  void assign(fabric::Lid lid, uint32_t setId);

  // Distinct sets of size >= 2 seen so far (before the cap).
  size_t distinctSets() const { return sets_.size(); }

  ArTable build() const;

 private:
  uint32_t cap_;
  size_t lidCount_;
  std::vector<uint32_t> lidSet_;  // LID -> interned set id, kNoSet when none; allocated on first assign
  std::vector<PortMask> sets_;    // set id -> ports
  std::unordered_map<PortMask, uint32_t> index_;
  // One-entry cache: engines tend to report the same set for runs of consecutive LIDs.
  PortMask lastMask_;
  uint32_t lastId_ = kNoSet;
};

}  // namespace ibsm::routing
