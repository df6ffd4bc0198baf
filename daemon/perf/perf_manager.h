// The performance manager: every perfmgr.interval_s, PortCounters (and PortCountersExtended where the node's
// PMA says it has them) of every linked switch port and CA port, LID-routed GMPs through the SM's MadEngine.
// A sweep is spread out so it never delays the SM: at most maxInFlight GMPs of its own, none submitted while
// the engine has requests queued, and completions never submit (tick() does), so a heavy sweep's
// runUntilIdle() waits for a handful of GMPs at most.
//
// Per port it keeps 64-bit running totals. The ports' error counters saturate: the master reads them and
// clears the ones that are not zero (PortCounters Set with CounterSelect; an error that happens between the
// Get and the Set is lost); a standby only reads (a counter that went down was cleared by someone else: its
// value is the increase). Data counters come from PortCountersExtended (64-bit, never cleared) or, without
// it, from PortCounters' 32-bit ones, which the master clears past half their range.
#pragma once

#include <array>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "daemon/state/subnet_snapshot.h"
#include "mad/mad_engine.h"
#include "mad/perf.h"

namespace ibsm::daemon {

struct PerfOptions {
  mad::Duration interval = std::chrono::seconds(60);  // perfmgr.interval_s; 0: no counter sweeps
  unsigned maxInFlight = 8;
};

// One port's counters as the performance manager keeps them; stable index for the life of the manager.
struct PortRecord {
  fabric::Guid node;
  uint8_t port = 0;
  uint16_t lid = 0;
  bool isSwitch = false;
  bool extended = false;  // data from PortCountersExtended (decided at the first read)
  bool seen = false;      // errors read at least once: the raw values below are a baseline
  bool dataSeen = false;  // data counters read at least once
  std::array<uint64_t, mad::kPerfCounters> errors{};     // running totals
  std::array<uint64_t, mad::kPerfDataCounters> data{};   // running totals (bytes, packets)
  std::array<uint64_t, mad::kPerfCounters> rawErrors{};  // what the port holds after our last read / clear
  std::array<uint64_t, mad::kPerfCounters> found{};      // what the first read found: counts of unknown age
  std::array<uint64_t, mad::kPerfDataCounters> rawData{};
  // Increase in the last interval (between the last two reads) and its length; interval 0: not yet known.
  std::array<uint64_t, mad::kPerfCounters> lastErrors{};
  std::array<uint64_t, mad::kPerfDataCounters> lastData{};
  mad::Duration lastInterval{};
  mad::TimePoint readAt{};
  uint64_t sweep = 0;  // the counter sweep that read it last
};

class PerfManager {
 public:
  struct SweepStats {
    uint64_t number = 0;
    size_t ports = 0, gmps = 0, failed = 0, cleared = 0;
    mad::Duration elapsed{};
    bool clearing = false;
  };

  PerfManager(mad::MadEngine& engine, const mad::Clock& clock, PerfOptions options);
  PerfManager(const PerfManager&) = delete;
  PerfManager& operator=(const PerfManager&) = delete;
  void setOptions(PerfOptions options);

  // From the event loop, whenever it wakes: starts a sweep over snap when one is due (clear: we are master)
  // and keeps its GMPs flowing. Returns the stats of a sweep that finished in this call.
  std::optional<SweepStats> tick(const std::shared_ptr<const SubnetSnapshot>& snap, bool clear);
  // Starts a sweep at the next tick, whatever the interval (tests, benchmarks).
  void sweepNow() { next_ = {}; }
  bool sweeping() const { return active_; }
  const std::vector<PortRecord>& ports() const { return ports_; }
  const PortRecord* find(fabric::Guid node, uint8_t port) const;
  const SweepStats& lastSweep() const { return last_; }

 private:
  enum class Step : uint8_t { kClassPortInfo, kCounters, kClear, kExtended };
  struct Task {
    Step step;
    uint32_t record;  // kClassPortInfo: index into nodes_
    uint16_t select = 0;
    bool clearXmitWait = false;
  };
  struct NodeCaps {
    uint16_t lid = 0;
    std::optional<uint16_t> capMask;  // unknown until ClassPortInfo answered
    std::vector<uint32_t> records;    // ports to read after ClassPortInfo (this sweep)
  };

  void start(const SubnetSnapshot& snap, bool clear);
  void submit(const Task& task);
  void onClassPortInfo(fabric::Guid node, const mad::MadResult& r);
  void onCounters(uint32_t record, const mad::MadResult& r);
  void onClear(const Task& task, const mad::MadResult& r);
  void onExtended(uint32_t record, const mad::MadResult& r);
  uint32_t recordFor(fabric::Guid node, uint8_t port);

  mad::MadEngine& engine_;
  const mad::Clock& clock_;
  PerfOptions options_;
  std::vector<PortRecord> ports_;
  std::map<std::pair<fabric::Guid, uint8_t>, uint32_t> index_;
  std::unordered_map<fabric::Guid, NodeCaps> caps_;
  std::vector<fabric::Guid> cpiNodes_;  // kClassPortInfo tasks of this sweep index this
  std::deque<Task> queue_;
  unsigned inFlight_ = 0;
  bool active_ = false;
  bool clear_ = false;
  mad::TimePoint next_{};
  mad::TimePoint started_{};
  SweepStats current_, last_;
};

}  // namespace ibsm::daemon
