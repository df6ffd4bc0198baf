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
  std::vector<std::vector<uint32_t>> read(topo.size());  // blocks read, kept for incomplete switches
  out.phase = runPhase(engine, clock, "read lfts", PhaseOptions{}, [&](PhaseRunner& phase) {
    for (fabric::NodeIndex n : topo.switches()) {
      const fabric::Node& node = topo.node(n);
      const uint16_t top = node.sw.linearFdbTop;
      SwitchTableCache::Entry& held = cache[node.guid];
      held.linearFdbTop = top;
      held.topKnown = true;
      held.hold(nullptr, 0);  // what is read replaces what was known
      const size_t blocks = lftBlocks(top);
      rows[n].resize(blocks * mad::kLftBlockLids, routing::kNoPort);
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
              for (size_t i = 0; i < block.size(); ++i) rows[n][b * mad::kLftBlockLids + i] = block[i];
              read[n].push_back(static_cast<uint32_t>(b));
              ++out.blocks;
            },
            mad::RequestOptions{}, false);
      }
    }
  });
  for (fabric::NodeIndex n : topo.switches()) {
    SwitchTableCache::Entry& held = cache[topo.node(n).guid];
    if (incomplete[n]) {
      // Unknown entries are not adopted; the blocks read are known all the same.
      ++out.switchesIncomplete;
      for (uint32_t b : read[n]) held.changed[b] = lftBlock(rows[n], b);
      continue;
    }
    out.held[n] = std::move(rows[n]);
    held.hold(out.held.row(n), held.linearFdbTop);
  }
  return out;
}

}  // namespace ibsm::daemon
