// Targeted updates waiting to run: the switches to re-read, what caused the first request, and when it came.
// Traps and light sweeps arriving within the batch delay of the first request become one update, so a link
// flap reported by both of its switches costs one re-discovery.
#pragma once

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fabric/ids.h"
#include "mad/clock.h"

namespace ibsm::daemon {

class UpdateQueue {
 public:
  UpdateQueue(const mad::Clock& clock, mad::Duration batchDelay) : clock_(clock), batchDelay_(batchDelay) {}
  void setBatchDelay(mad::Duration delay) { batchDelay_ = delay; }

  // Adds switches (nothing when empty); the cause of the batch is the first one given.
  void queue(const std::vector<fabric::Guid>& switches, const std::string& cause) {
    queueAt(switches, cause, clock_.now());
  }
  // The same with the time the batch counts from (a hold-down that ends later); the earliest time wins.
  void queueAt(const std::vector<fabric::Guid>& switches, const std::string& cause, mad::TimePoint at);

  struct Batch {
    std::vector<fabric::Guid> switches;
    std::string cause;
    mad::TimePoint since;  // the first request of the batch
  };
  // The batch once its delay has passed (and the queue empty again), else nothing.
  std::optional<Batch> takeDue();
  // Whether a request has come and waits out its batch delay (not a later one queued for the future).
  bool waiting() const { return since_ && *since_ <= clock_.now(); }
  // Time until the batch is due (zero when it is), or nothing when no request waits.
  std::optional<mad::Duration> untilDue() const {
    if (!since_) return std::nullopt;
    return std::max(mad::Duration::zero(), *since_ + batchDelay_ - clock_.now());
  }
  // The waiting batch now, without waiting out the delay, else nothing.
  std::optional<Batch> take();

 private:
  const mad::Clock& clock_;
  mad::Duration batchDelay_;
  std::set<fabric::Guid> switches_;
  std::string cause_;
  std::optional<mad::TimePoint> since_;
};

}  // namespace ibsm::daemon
