#include "daemon/sm/update_queue.h"

namespace ibsm::daemon {

void UpdateQueue::queueAt(const std::vector<fabric::Guid>& switches, const std::string& cause,
                          mad::TimePoint at) {
  if (switches.empty()) return;
  for (fabric::Guid g : switches) switches_.insert(g);
  if (cause_.empty()) cause_ = cause;
  if (!since_ || at < *since_) since_ = at;
}

std::optional<UpdateQueue::Batch> UpdateQueue::takeDue() {
  if (!since_ || clock_.now() < *since_ + batchDelay_) return std::nullopt;
  return take();
}

std::optional<UpdateQueue::Batch> UpdateQueue::take() {
  if (!waiting()) return std::nullopt;
  Batch b{std::vector<fabric::Guid>(switches_.begin(), switches_.end()), cause_, *since_};
  switches_.clear();
  cause_.clear();
  since_.reset();
  return b;
}

}  // namespace ibsm::daemon
