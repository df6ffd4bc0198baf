// A channel dependency graph over dense channel ids (for the VL-aware check: channel = directed
// switch-to-switch link x VL), given as a list of dependencies, with one-cycle search.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ibsm::routing {

// A dependency "from -> to", packed as (from << 32) | to.
inline uint64_t channelEdge(uint32_t from, uint32_t to) {
  return (uint64_t{from} << 32) | to;
}

// Sorts and de-duplicates edges in place.
void uniqueEdges(std::vector<uint64_t>& edges);

// One cycle of the graph (channels in order, each depending on the next, the last on the first), or empty
// when it is acyclic. edges must be sorted and unique (uniqueEdges); channel ids below `channels`.
std::vector<uint32_t> findChannelCycle(size_t channels, const std::vector<uint64_t>& edges);

}  // namespace ibsm::routing
