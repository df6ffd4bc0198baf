// LID management: every sweep assigns LIDs with the persistent guid2lid map (so ports keep their LIDs across
// restarts) and saves the map, when it changed, before anything is programmed (if the SM dies half-way, the
// next start hands out the same LIDs). Taking over from another master, the LIDs the fabric holds win over
// the file, so a takeover changes no LID.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "fabric/topology.h"
#include "routing/lid_assignment.h"

namespace ibsm::daemon {

class LidManager {
 public:
  // One version of the map file: inode (an atomic write makes a new one), size and modification time.
  struct FileStamp {
    uint64_t inode;
    int64_t size, sec, nsec;
    bool operator==(const FileStamp&) const = default;
  };

  // guid2lidPath empty: no persistence.
  LidManager(std::string guid2lidPath, uint8_t lmc) : path_(std::move(guid2lidPath)), lmc_(lmc) {}
  void setOptions(std::string guid2lidPath, uint8_t lmc) {
    if (guid2lidPath != path_) stamp_.reset();
    path_ = std::move(guid2lidPath);
    lmc_ = lmc;
  }

  // LIDs for a discovered topology; keepHeld: the LIDs the ports hold now win (a takeover). The result's
  // warnings include a damaged map file (kept aside) and a failed save (STATE002). Fails only when the LID
  // space is exhausted.
  fabric::Result<routing::LidAssignResult> assign(const fabric::Topology& topo, bool keepHeld);

 private:
  static void adoptHeld(const fabric::Topology& topo, routing::Guid2Lid& map);

  std::string path_;
  uint8_t lmc_;
  routing::Guid2Lid map_;           // the file's content as last read or written
  std::optional<FileStamp> stamp_;  // of the file as last read or written; none: read it
};

}  // namespace ibsm::daemon
