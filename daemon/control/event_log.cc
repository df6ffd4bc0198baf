#include "daemon/control/event_log.h"

#include <algorithm>

namespace ibsm::daemon {

uint64_t EventLog::add(std::string kind, std::string message,
                       std::vector<std::pair<std::string, std::string>> fields) {
  std::lock_guard<std::mutex> lock(mutex_);
  Event e;
  e.seq = nextSeq_++;
  e.time = clock_.now();
  e.kind = std::move(kind);
  e.message = std::move(message);
  e.fields = std::move(fields);
  events_.push_back(std::move(e));
  while (events_.size() > capacity_) events_.pop_front();
  return events_.back().seq;
}

std::vector<Event> EventLog::recent(size_t limit, uint64_t afterSeq, const std::string& kind) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Event> out;
  for (auto it = events_.rbegin(); it != events_.rend() && out.size() < limit; ++it) {
    if (it->seq <= afterSeq) break;
    if (!kind.empty() && it->kind != kind) continue;
    out.push_back(*it);
  }
  std::reverse(out.begin(), out.end());
  return out;
}

uint64_t EventLog::lastSeq() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return nextSeq_ - 1;
}

}  // namespace ibsm::daemon
