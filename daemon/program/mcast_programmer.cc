#include "daemon/program/mcast_programmer.h"

#include <algorithm>
#include <set>

namespace ibsm::daemon {

using fabric::NodeIndex;

McastReport McastProgrammer::program(const fabric::Topology& topo,
                                     const std::vector<routing::McastGroupRoute>& groups) {
  McastReport report;
  report.groups = groups.size();
  PhaseRunner phase(engine_, clock_, "mft", PhaseOptions{.secondPass = true});

  // What every switch should hold: attribute modifier -> block.
  MftPlan plan = planMfts(topo, groups);
  report.unreachableMembers = plan.unreachableMembers;
  report.warnings = std::move(plan.warnings);
  auto& want = plan.blocks;
  const uint32_t topBlock = plan.topBlock;

  // Switches that left the fabric are forgotten: one that comes back (maybe rebooted) is written from
  // scratch.
  held_.retain([&](fabric::Guid guid) {
    auto n = topo.findNode(guid);
    return n && topo.node(*n).isSwitch();
  });
  for (NodeIndex n : topo.switches()) {
    const fabric::Node& node = topo.node(n);
    const bool fresh = !held_.find(node.guid);
    auto& held = held_[node.guid];
    static const std::map<uint32_t, mad::MftBlock> kNone;
    const auto w = want.find(n);
    const auto& mine = w == want.end() ? kNone : w->second;
    // Most switches of a large fabric are in no tree and hold cleared blocks: nothing to look at.
    if (!fresh && mine.empty() &&
        std::all_of(held.begin(), held.end(), [](const auto& kv) { return kv.second == mad::MftBlock{}; })) {
      report.blocksSkipped += held.size();
      continue;
    }
    // Blocks to look at: wanted ones, ones the switch holds, and on a new switch all up to the top in use.
    std::set<uint32_t> mods;
    for (const auto& [mod, b] : mine) mods.insert(mod);
    for (const auto& [mod, b] : held) mods.insert(mod);
    if (fresh && !groups.empty())
      for (uint32_t b = 0; b <= topBlock && (b + 1) * mad::kMftBlockMlids <= node.sw.multicastFdbCap; ++b)
        for (uint32_t pos = 0; pos * mad::kMftPositionPorts <= node.numPorts; ++pos)
          mods.insert(mad::mftAttrMod(b, pos));
    for (uint32_t mod : mods) {
      auto w = mine.find(mod);
      const mad::MftBlock block = w == mine.end() ? mad::MftBlock{} : w->second;
      auto h = held.find(mod);
      if (h != held.end() && h->second == block) {
        ++report.blocksSkipped;
        continue;
      }
      if (h == held.end() && !fresh && block == mad::MftBlock{}) continue;  // never written, nothing to clear
      mad::MadPacket smp = mad::makeDirectedSmp(mad::kSet, mad::kAttrMft, mod, topo.route(n));
      mad::encodeMftBlock(block, mad::smpData(smp));
      held.erase(mod);  // unknown until acknowledged
      std::string what = "MCAST002 Set of MFT block " + std::to_string(mod & 0x1FF) + " position " +
                         std::to_string(mod >> 28) + " on " + fabric::toString(node.guid) + " (" +
                         node.description + ")";
      phase.submit(std::move(smp), [&, guid = node.guid, mod, block, what](const SmpAnswer& a) {
        if (!a.ok) {
          report.errors.push_back(what + a.failure());
          return;
        }
        held_[guid][mod] = block;
        ++report.blocksSent;
      });
    }
  }
  report.phase = phase.finish();
  return report;
}

}  // namespace ibsm::daemon
