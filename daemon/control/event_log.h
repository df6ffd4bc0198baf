// The daemon's event log: a bounded, thread-safe ring of what happened (each sweep with its cause, routes
// changed, LFT blocks written, SMPs and duration; config reloads; control requests that changed state; later
// traps), numbered by a sequence that never repeats so a client can ask for "everything after N".
// Written on the event loop thread, read by the control server's thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "daemon/state/wall_clock.h"

namespace ibsm::daemon {

struct Event {
  uint64_t seq = 0;  // 1, 2, ... in order of add()
  std::chrono::system_clock::time_point time;
  std::string kind;     // "sweep", "config", "control", "trap", ...
  std::string message;  // one line for people
  std::vector<std::pair<std::string, std::string>>
      fields;  // machine-readable details, e.g. {"cause","timer"}
};

class EventLog {
 public:
  // Events are stamped with clock.now(); the clock must outlive the log and be safe to read from any thread.
  explicit EventLog(const WallClock& clock, size_t capacity = 1000)
      : clock_(clock), capacity_(capacity ? capacity : 1) {}
  // Returns the new event's sequence number.
  uint64_t add(std::string kind, std::string message,
               std::vector<std::pair<std::string, std::string>> fields = {});
  // The newest `limit` events with seq > afterSeq (and of `kind` when not empty), oldest first.
  std::vector<Event> recent(size_t limit, uint64_t afterSeq = 0, const std::string& kind = {}) const;
  uint64_t lastSeq() const;
  size_t capacity() const { return capacity_; }

 private:
  const WallClock& clock_;
  size_t capacity_;
  mutable std::mutex mutex_;
  std::deque<Event> events_;
  uint64_t nextSeq_ = 1;
};

}  // namespace ibsm::daemon
