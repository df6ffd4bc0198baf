// A minimal parallel loop for the routing code (engines and checker split work by switch or by destination).
// Determinism is the caller's contract: fn writes only state owned by index i or by its worker slot, and
// per-worker partial results are merged in worker order, so the outcome never depends on scheduling or the
// thread count.
#pragma once

#include <cstddef>
#include <functional>

namespace ibsm::routing {

// How many workers parallelFor will use for `count` items and `threads` requested (at least 1).
unsigned workerCount(size_t count, unsigned threads);

// Calls fn(worker, i) for every i in [0, count), worker in [0, workerCount(count, threads)); inline when one
// worker suffices. Items are handed out dynamically, so which worker runs an item is not deterministic.
void parallelFor(size_t count, unsigned threads, const std::function<void(unsigned worker, size_t i)>& fn);

// For a thread that works off an event loop (a rebalance, dumps): lowers its CPU priority (nice 10; Linux
// sets it per thread, and the threads it starts inherit it), so that an event, and the fabric's answers to
// its MADs, are served at once rather than after a share of the cores. Best effort: a failure is ignored.
void lowerThreadPriority();

}  // namespace ibsm::routing
