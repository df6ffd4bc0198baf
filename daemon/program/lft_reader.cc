#include "daemon/program/lft_reader.h"

#include <vector>

#include "mad/smp.h"

namespace ibsm::daemon {

LftReadback readLfts(mad::MadEngine& engine, const mad::Clock& clock, const fabric::Topology& topo,
                     SwitchTableCache& cache) {
  LftReadback out;
  out.held.resize(topo.size());
  std::vector<routing::LftRow> rows(topo.size());
  std::vector<bool> incomplete(topo.size(), false);
  out.phase = runPhase(engine, clock, "read lfts", PhaseOptions{}, [&](PhaseRunner& phase) {
    for (fabric::NodeIndex n : topo.switches()) {
      const fabric::Node& node = topo.node(n);
      const uint16_t top = node.sw.linearFdbTop;
      SwitchTableCache::Entry& held = cache[node.guid];
      held.linearFdbTop = top;
      held.topKnown = true;
      // The blocks up to LinearFDBTop: a freshly booted switch (top 0) has one.
      const size_t blocks = (static_cast<size_t>(top) + mad::kLftBlockLids) / mad::kLftBlockLids;
      rows[n].resize(blocks * mad::kLftBlockLids, routing::kNoPort);
      held.lft.grow(blocks);
      for (size_t b = 0; b < blocks; ++b) {
        phase.submit(
            mad::makeDirectedSmp(mad::kGet, mad::kAttrLft, static_cast<uint32_t>(b), topo.route(n)),
            [&, n, b](const SmpAnswer& a) {
              if (!a.ok || a.result.header.attrId != mad::kAttrLft || a.result.header.attrMod != b) {
                ++out.failed;
                incomplete[n] = true;
                return;
              }
              const mad::LftBlock block = mad::decodeLftBlock(mad::smpData(a.result.response));
              cache[topo.node(n).guid].lft.store(b, block);
              for (size_t i = 0; i < block.size(); ++i) rows[n][b * mad::kLftBlockLids + i] = block[i];
              ++out.blocks;
            },
            mad::RequestOptions{}, false);
      }
    }
  });
  for (fabric::NodeIndex n : topo.switches()) {
    if (incomplete[n]) {
      ++out.switchesIncomplete;
      continue;  // unknown entries are not adopted; the blocks read are in the cache all the same
    }
    out.held[n] = std::move(rows[n]);
  }
  return out;
}

}  // namespace ibsm::daemon
