#include "daemon/program/pkey_programmer.h"

#include <algorithm>
#include <set>

#include "mad/smp.h"

namespace ibsm::daemon {

using fabric::NodeIndex;

namespace {

constexpr uint16_t kLimitedDefaultPkey = 0x7FFF;

struct ManagedPort {
  NodeIndex node;
  uint8_t port;
  size_t blocks;
  const fabric::DrPath* route;
};

// The ports whose P_Key table ibsm keeps: see the header. A CA port is reached by its own directed route (an
// SMA answers with the table of the port the SMP came in through); one without a known route is left out.
std::vector<ManagedPort> managedPorts(const fabric::Topology& topo) {
  std::vector<ManagedPort> out;
  auto blocks = [](size_t entries) {
    return (entries + mad::kPkeyBlockEntries - 1) / mad::kPkeyBlockEntries;
  };
  for (NodeIndex i = 0; i < topo.size(); ++i) {
    const fabric::Node& n = topo.node(i);
    if (n.isSwitch()) {
      if (n.partitionCap) out.push_back({i, 0, blocks(n.partitionCap), &n.route});
      continue;
    }
    if (!n.partitionCap) continue;
    for (unsigned p = 1; p < n.ports.size(); ++p) {
      const fabric::Port& port = n.ports[p];
      bool local = i == topo.smNode() && p == topo.smPort().value;
      if (port.connected() && (port.route.count || local))
        out.push_back({i, static_cast<uint8_t>(p), blocks(n.partitionCap), &port.route});
    }
  }
  return out;
}

}  // namespace

std::optional<size_t> defaultPkeySlot(const std::vector<uint16_t>& table) {
  if (std::find(table.begin(), table.end(), mad::kDefaultPkey) != table.end()) return std::nullopt;
  if (table.empty()) return 0;
  if (table[0] == 0 || table[0] == kLimitedDefaultPkey) return 0;
  auto free = std::find(table.begin(), table.end(), uint16_t{0});
  return static_cast<size_t>(free - table.begin());
}

PkeyReport PkeyProgrammer::program(const fabric::Topology& topo) {
  PkeyReport report;
  PhaseRunner phase(engine_, clock_, "pkey");
  const std::vector<ManagedPort> managed = managedPorts(topo);

  // Keep what is known of ports still managed; the others are forgotten.
  auto next = std::make_shared<PkeyTables>();
  std::vector<const ManagedPort*> unknown;
  for (const ManagedPort& m : managed) {
    auto key = std::make_pair(topo.node(m.node).guid, m.port);
    if (const auto* held = tables_->find(key.first, key.second))
      next->ports.emplace(key, *held);
    else
      unknown.push_back(&m);
  }
  bool changed = next->ports.size() != tables_->ports.size();

  auto describe = [&](const ManagedPort& m) {
    const fabric::Node& n = topo.node(m.node);
    return fabric::toString(n.guid) + " (" + n.description + ") port " + std::to_string(m.port);
  };
  auto attrMod = [&](const ManagedPort& m, size_t block) {
    return mad::pkeyAttrMod(topo.node(m.node).isSwitch() ? m.port : 0, static_cast<uint16_t>(block));
  };

  // Read the tables of the ports not known yet, every block.
  std::map<const ManagedPort*, std::vector<uint16_t>> read;
  std::set<const ManagedPort*> failed;
  for (const ManagedPort* m : unknown) {
    read[m].assign(m->blocks * mad::kPkeyBlockEntries, 0);
    for (size_t b = 0; b < m->blocks; ++b) {
      mad::MadPacket smp = mad::makeDirectedSmp(mad::kGet, mad::kAttrPKeyTable, attrMod(*m, b), *m->route);
      phase.submit(std::move(smp), [&, m, b](const SmpAnswer& a) {
        if (!a.ok) {
          if (failed.insert(m).second)
            report.warnings.push_back("PKEY001 cannot read the P_Key table of " + describe(*m) + a.failure());
          return;
        }
        mad::PkeyBlock got = mad::decodePkeyBlock(mad::smpData(a.result.response));
        std::copy(got.begin(), got.end(), read[m].begin() + static_cast<long>(b * mad::kPkeyBlockEntries));
      });
    }
  }
  phase.wait();

  // Write the default P_Key where it is missing: one block per port.
  for (auto& [m, table] : read) {
    if (failed.count(m)) continue;
    ++report.portsRead;
    auto slot = defaultPkeySlot(table);
    if (!slot) continue;
    if (*slot >= table.size()) {
      report.warnings.push_back("PKEY003 no free entry for the default P_Key in the table of " +
                                describe(*m));
      continue;
    }
    const size_t b = *slot / mad::kPkeyBlockEntries;
    mad::PkeyBlock block;
    std::copy_n(table.begin() + static_cast<long>(b * mad::kPkeyBlockEntries), mad::kPkeyBlockEntries,
                block.begin());
    block[*slot % mad::kPkeyBlockEntries] = mad::kDefaultPkey;
    mad::MadPacket smp = mad::makeDirectedSmp(mad::kSet, mad::kAttrPKeyTable, attrMod(*m, b), *m->route);
    mad::encodePkeyBlock(block, mad::smpData(smp));
    phase.submit(std::move(smp), [&, m = m, b](const SmpAnswer& a) {
      if (!a.ok) {
        // What the port holds is unknown now: read again next time.
        failed.insert(m);
        report.warnings.push_back("PKEY002 cannot write the default P_Key to " + describe(*m) + a.failure());
        return;
      }
      ++report.blocksSet;
      // The SMA answers with the block it holds now.
      mad::PkeyBlock held = mad::decodePkeyBlock(mad::smpData(a.result.response));
      std::copy(held.begin(), held.end(), read[m].begin() + static_cast<long>(b * mad::kPkeyBlockEntries));
    });
  }
  report.phase = phase.finish();

  for (auto& [m, table] : read) {
    if (failed.count(m)) continue;
    next->ports[{topo.node(m->node).guid, m->port}] = std::move(table);
    changed = true;
  }
  if (changed) tables_ = std::move(next);
  return report;
}

}  // namespace ibsm::daemon
