#include "routing/parallel.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace ibsm::routing {

unsigned workerCount(size_t count, unsigned threads) {
  size_t w = std::min<size_t>(std::max(threads, 1u), std::max<size_t>(count, 1));
  return static_cast<unsigned>(std::min<size_t>(w, 256));
}

void parallelFor(size_t count, unsigned threads, const std::function<void(unsigned, size_t)>& fn) {
  unsigned workers = workerCount(count, threads);
  if (workers <= 1) {
    for (size_t i = 0; i < count; ++i) fn(0, i);
    return;
  }
  std::atomic<size_t> next{0};
  auto run = [&](unsigned worker) {
    for (size_t i = next.fetch_add(1, std::memory_order_relaxed); i < count;
         i = next.fetch_add(1, std::memory_order_relaxed))
      fn(worker, i);
  };
  std::vector<std::thread> pool;
  pool.reserve(workers - 1);
  for (unsigned w = 1; w < workers; ++w) pool.emplace_back(run, w);
  run(0);
  for (auto& t : pool) t.join();
}

void lowerThreadPriority() {
  setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 10);
}

}  // namespace ibsm::routing
