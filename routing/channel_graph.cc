#include "routing/channel_graph.h"

#include <algorithm>

namespace ibsm::routing {

void uniqueEdges(std::vector<uint64_t>& edges) {
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
}

std::vector<uint32_t> findChannelCycle(size_t channels, const std::vector<uint64_t>& edges) {
  // CSR: edges are sorted by source, so each channel's successors are one contiguous run.
  std::vector<uint32_t> begin(channels + 1, 0);
  for (uint64_t e : edges) ++begin[(e >> 32) + 1];
  for (size_t c = 0; c < channels; ++c) begin[c + 1] += begin[c];
  // Iterative DFS: colour 0 new, 1 on the stack, 2 done; each frame remembers its next edge.
  std::vector<uint8_t> colour(channels, 0);
  struct Frame {
    uint32_t channel;
    uint32_t next;
  };
  std::vector<Frame> stack;
  for (uint32_t root = 0; root < channels; ++root) {
    if (colour[root] || begin[root] == begin[root + 1]) continue;
    colour[root] = 1;
    stack.push_back({root, begin[root]});
    while (!stack.empty()) {
      Frame& f = stack.back();
      if (f.next == begin[f.channel + 1]) {
        colour[f.channel] = 2;
        stack.pop_back();
        continue;
      }
      uint32_t c = static_cast<uint32_t>(edges[f.next++] & 0xFFFFFFFFu);
      if (colour[c] == 2) continue;
      if (colour[c] == 1) {
        std::vector<uint32_t> cycle;
        auto it = std::find_if(stack.begin(), stack.end(), [&](const Frame& fr) { return fr.channel == c; });
        for (; it != stack.end(); ++it) cycle.push_back(it->channel);
        return cycle;
      }
      colour[c] = 1;
      stack.push_back({c, begin[c]});
    }
  }
  return {};
}

}  // namespace ibsm::routing
