// Dumps in OpenSM's formats, so that scripts written for OpenSM keep working, plus ibsm's AR-group dump. They
// are written into paths.dump_dir atomically (temp file + rename: a reader sees the old or the new file,
// never half of one), by a thread of their own so that formatting tens of MB for a large fabric never delays
// the event loop. A failure to write is logged (DUMP002) and never fatal; the previous file stays as it was.
//   guid2lid            copy of the persistent guid2lid map (skipped when it is the same file)
//   opensm-lfts.dump    every switch's LFT (routing/lft_dump.h; what dump_lfts/ibroute print)
//   opensm-subnet.lst   one line per port of every link, both ends, as OpenSM writes it
//   ibsm-ar-groups.dump adaptive-routing groups per switch
// All but opensm-lfts.dump are written after each sweep that changed them. opensm-lfts.dump grows with
// switches x LIDs (1.58 GB on an 11,664-host Clos), so with dumps.lfts: on_request (the default) it is
// written only when asked for (the control request `dump`, ibsmctl dump lfts); with on_change it follows the
// fabric like the others.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "daemon/control/control_protocol.h"
#include "daemon/log/log.h"
#include "daemon/state/subnet_snapshot.h"
#include "fabric/result.h"
#include "routing/lft_dump.h"

namespace ibsm::daemon {

inline constexpr const char* kLftDumpFile = "opensm-lfts.dump";
inline constexpr const char* kSubnetLstFile = "opensm-subnet.lst";
inline constexpr const char* kArDumpFile = "ibsm-ar-groups.dump";
inline constexpr const char* kGuid2LidFile = "guid2lid";

// opensm-subnet.lst: for every node (in OpenSM's order) and every linked port, one line
//   { CA Ports:01 SystemGUID:... NodeGUID:... PortGUID:... VenID:000000 DevID:0000 Rev:000000A1 {host-0
//   HCA-1}
//     LID:0002 PN:01 } { SW-SM Ports:04 ... LID:0001 PN:01 } PHY=4x LOG=ACT SPD=10
// "-SM" marks the node the SM runs on; LOG is the port state after the sweep (see effectivePortState).
std::string formatSubnetLst(const SubnetSnapshot& snap, bool portsActivated);
// The same, a node at a time (routing/lft_dump.h).
void formatSubnetLst(const SubnetSnapshot& snap, bool portsActivated, const routing::TextSink& sink);
// ibsm-ar-groups.dump: per switch a header, then one line per group with its ports and the LIDs that use it.
//   Switch 0x0000000000200000 'leaf-0' lid 1: 2 groups
//   group 0 ports 3,4 lids 3-4,7
std::string formatArDump(const SubnetSnapshot& snap);
void formatArDump(const SubnetSnapshot& snap, const routing::TextSink& sink);  // a switch at a time

struct DumpOptions {
  std::string dir;            // paths.dump_dir; empty: no dumps
  std::string guid2lidPath;   // paths.guid2lid, copied into dir (unless it is dir/guid2lid)
  bool lftsOnChange = false;  // dumps.lfts: on_change; false (on_request): opensm-lfts.dump only on request
  // The writer's thread yields the CPU to the event loop (routing::lowerThreadPriority); false where the
  // dumps are the last work (ibsmd --once).
  bool background = true;
};

class DumpWriter {
 public:
  DumpWriter(DumpOptions options, Logger& log);
  ~DumpWriter();  // writes what is pending, then stops
  DumpWriter(const DumpWriter&) = delete;
  DumpWriter& operator=(const DumpWriter&) = delete;

  // Queues the snapshot; a newer one replaces a queued one that has not been written yet.
  void submit(std::shared_ptr<const SubnetSnapshot> snapshot, bool portsActivated);
  // Take effect for the next submit or request (paths.dump_dir and dumps.lfts are reloadable).
  void setDir(std::string dir);
  void setLftsOnChange(bool onChange);
  // Writes opensm-lfts.dump of `snapshot` into the dump directory on the writer thread, whatever dumps.lfts
  // says and even when the last file written has the same content (the operator asked for a file of now),
  // then calls `done` on that thread with the file's path, or the reason it could not be written. Requests
  // queued together for one snapshot share one formatting.
  using LftDone = std::function<void(fabric::Result<std::string> path)>;
  void requestLfts(std::shared_ptr<const SubnetSnapshot> snapshot, LftDone done);
  // Blocks until everything submitted and requested so far is written (or failed).
  void flush();

  struct Stats {
    uint64_t rounds = 0;  // snapshots processed
    uint64_t filesWritten = 0;
    uint64_t filesUnchanged = 0;  // same content as last written: not rewritten
    uint64_t failures = 0;
    uint64_t lftRequests = 0;  // requestLfts calls answered
  };
  Stats stats() const;

 private:
  struct Job {
    std::shared_ptr<const SubnetSnapshot> snapshot;
    bool portsActivated = false;
    DumpOptions options;
  };
  struct LftRequest {
    std::shared_ptr<const SubnetSnapshot> snapshot;
    std::string dir;
    LftDone done;
  };
  void run();
  void writeAll(const Job& job);
  void writeRequests(std::vector<LftRequest> requests);
  // `produce` hands the file's text to its sink piece by piece. `force`: write even when the file holds what
  // was last written.
  fabric::Result<void> writeOne(const std::string& dir, const std::string& name,
                                const std::function<void(const routing::TextSink&)>& produce,
                                bool force = false);

  Logger& log_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  DumpOptions options_;
  std::optional<Job> pending_;
  std::vector<LftRequest> requests_;
  bool busy_ = false, stop_ = false;
  uint64_t submitted_ = 0, done_ = 0;
  Stats stats_;
  std::map<std::string, uint64_t>
      lastHash_;  // file path -> hash of what was last written (writer thread only)
  std::thread thread_;
};

// The control request `dump` ({"file": "lfts"}): asks `writer` for the LFT dump of `snapshot` (the one the
// control socket serves) and replies {"path": "<dump_dir>/opensm-lfts.dump"} once the file is written, from
// the writer thread; bad arguments, no snapshot yet (unavailable) and a failed write are replied at once or
// as errors. `reply` is called exactly once.
void handleDumpRequest(const Request& request, std::shared_ptr<const SubnetSnapshot> snapshot,
                       DumpWriter& writer, std::function<void(Json response)> reply);

}  // namespace ibsm::daemon
