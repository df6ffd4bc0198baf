#include "daemon/program/pkey_programmer.h"

#include <algorithm>
#include <set>

#include "mad/smp.h"

namespace ibsm::daemon {

using fabric::NodeIndex;
using fabric::PortNum;

namespace {

struct ManagedPort {
  NodeIndex node;
  uint8_t port;
  size_t blocks;
  const fabric::DrPath* route;
  std::span<const uint16_t> want;
  bool facing = false;   // a switch external port facing a CA: written whole the first time, never read
  bool atReset = false;  // holds its reset table (see atReset): known without reading it
};

constexpr uint32_t kPkeyNvram = 1u << 8;  // PortInfo CapabilityMask.IsPKeyNVRAM

// IBA C10-123: a P_Key table not kept in non-volatile storage acts as if it held only the default P_Key, at
// index 0, until a partition manager sets it up. A port that no SM has given a LID or an SM LID since its
// reset (as its PortInfo from the sweep shows) has not been set up, so its table is known without reading.
// The one case this misses: an SM that wrote P_Keys and stopped before its LIDs (OpenSM and ibsm both write
// P_Keys first); the keys it left are overwritten where this SM's table differs in their block, and the
// port is read again once it has been away from the topology.
bool atReset(const fabric::PortAttrs& a) {
  return a.valid && !(a.capMask & kPkeyNvram) && a.lid.value == 0 && a.smLid.value == 0;
}

size_t blocksOf(size_t entries) {
  return (entries + mad::kPkeyBlockEntries - 1) / mad::kPkeyBlockEntries;
}

// The ports whose P_Key table ibsm keeps: see the header. A CA port is reached by its own directed route (an
// SMA answers with the table of the port the SMP came in through); one without a known route is left out.
std::vector<ManagedPort> managedPorts(const fabric::Topology& topo, const fabric::PartitionMap& parts,
                                      const PkeyTables& known) {
  std::vector<ManagedPort> out;
  for (NodeIndex i = 0; i < topo.size(); ++i) {
    const fabric::Node& n = topo.node(i);
    if (n.isSwitch()) {
      if (n.partitionCap)
        out.push_back({i, 0, blocksOf(n.partitionCap), &topo.route(i), parts.keys(i, PortNum{0}), false,
                       atReset(n.ports[0].attrs)});
      continue;
    }
    if (!n.partitionCap) continue;
    for (unsigned p = 1; p < n.ports.size(); ++p) {
      const fabric::Port& port = n.ports[p];
      bool local = i == topo.smNode() && p == topo.smPort().value;
      const fabric::DrPath& route = topo.portRoute(i, fabric::PortNum{static_cast<uint8_t>(p)});
      if (!port.connected() || !(route.count || local)) continue;
      auto want = parts.keys(i, PortNum{static_cast<uint8_t>(p)});
      out.push_back(
          {i, static_cast<uint8_t>(p), blocksOf(n.partitionCap), &route, want, false, atReset(port.attrs)});
      // The switch port facing it, for partition enforcement: once it needs more than the default key, or
      // when it was written before (it must follow the CA port back).
      const fabric::Node& peer = topo.node(port.peerNode);
      if (!peer.isSwitch() || !peer.sw.partitionEnforcementCap) continue;
      bool onlyDefault = want.size() == 1 && want[0] == mad::kDefaultPkey;
      if (onlyDefault && !known.find(peer.guid, port.peerPort.value)) continue;
      out.push_back({port.peerNode, port.peerPort.value, blocksOf(peer.sw.partitionEnforcementCap),
                     &topo.route(port.peerNode), want, true});
    }
  }
  return out;
}

}  // namespace

std::vector<uint16_t> placeKeys(const std::vector<uint16_t>& held, std::span<const uint16_t> want,
                                size_t size, size_t* overflow) {
  std::vector<uint16_t> table = held;
  table.resize(size, 0);
  std::vector<bool> placed(want.size(), false);
  for (uint16_t& e : table) {
    if ((e & 0x7FFF) == 0) {
      e = 0;
      continue;
    }
    auto w = std::find_if(want.begin(), want.end(), [&](uint16_t k) { return (k & 0x7FFF) == (e & 0x7FFF); });
    size_t wi = static_cast<size_t>(w - want.begin());
    if (w == want.end() || placed[wi]) {
      e = 0;  // not wanted, or a second entry of a key already kept
      continue;
    }
    e = *w;
    placed[wi] = true;
  }
  size_t missing = 0;
  for (size_t wi = 0; wi < want.size(); ++wi) {
    if (placed[wi]) continue;
    size_t slot = table.size();
    if ((want[wi] & 0x7FFF) == fabric::kDefaultPartitionKey && !table.empty() && table[0] == 0) slot = 0;
    if (slot == table.size())
      slot = static_cast<size_t>(std::find(table.begin(), table.end(), uint16_t{0}) - table.begin());
    if (slot == table.size()) {
      ++missing;
      continue;
    }
    table[slot] = want[wi];
  }
  if (overflow) *overflow = missing;
  return table;
}

PkeyReport PkeyProgrammer::program(const fabric::Topology& topo, const fabric::PartitionMap& partitions) {
  PkeyReport report;
  PhaseRunner phase(engine_, clock_, "pkey", PhaseOptions{.secondPass = true});
  const std::vector<ManagedPort> managed = managedPorts(topo, partitions, *tables_);

  // Keep what is known of ports still managed; the others are forgotten.
  auto next = std::make_shared<PkeyTables>();
  std::vector<const ManagedPort*> unknown;
  for (const ManagedPort& m : managed) {
    auto key = std::make_pair(topo.node(m.node).guid, m.port);
    if (const auto* held = tables_->find(key.first, key.second))
      next->ports.emplace(key, *held);
    else if (!m.facing)
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

  // Read the tables of the CA ports and switch ports 0 not known yet, every block (those at their reset
  // table need no read).
  std::map<const ManagedPort*, std::vector<uint16_t>> held;
  std::set<const ManagedPort*> failed;
  for (const ManagedPort* m : unknown) {
    held[m].assign(m->blocks * mad::kPkeyBlockEntries, 0);
    if (m->atReset) {
      held[m][0] = mad::kDefaultPkey;
      ++report.portsAtReset;
      continue;
    }
    for (size_t b = 0; b < m->blocks; ++b) {
      mad::MadPacket smp = mad::makeDirectedSmp(mad::kGet, mad::kAttrPKeyTable, attrMod(*m, b), *m->route);
      phase.submit(std::move(smp), [&, m, b](const SmpAnswer& a) {
        if (!a.ok) {
          if (failed.insert(m).second)
            report.warnings.push_back("PKEY001 cannot read the P_Key table of " + describe(*m) + a.failure());
          return;
        }
        mad::PkeyBlock got = mad::decodePkeyBlock(mad::smpData(a.result.response));
        std::copy(got.begin(), got.end(), held[m].begin() + static_cast<long>(b * mad::kPkeyBlockEntries));
      });
    }
  }
  phase.wait();
  for (const ManagedPort* m : unknown)
    if (!failed.count(m) && !m->atReset) ++report.portsRead;

  // Each port's table as it should be; Sets of the blocks that differ (every block of a facing switch port
  // seen for the first time: what it holds is not known).
  std::map<const ManagedPort*, std::vector<uint16_t>> result;
  for (const ManagedPort& m : managed) {
    if (failed.count(&m)) continue;
    const auto key = std::make_pair(topo.node(m.node).guid, m.port);
    const std::vector<uint16_t>* now = nullptr;
    if (auto it = held.find(&m); it != held.end())
      now = &it->second;
    else if (auto jt = next->ports.find(key); jt != next->ports.end())
      now = &jt->second;
    const size_t size = m.blocks * mad::kPkeyBlockEntries;
    size_t overflow = 0;
    std::vector<uint16_t> want = placeKeys(now ? *now : std::vector<uint16_t>{}, m.want, size, &overflow);
    if (overflow)
      report.warnings.push_back("PKEY003 no free entry for " + std::to_string(overflow) +
                                " P_Key(s) in the table of " + describe(m));
    std::vector<uint16_t>& out = result[&m];
    out = now ? *now : std::vector<uint16_t>(size, 0);
    out.resize(size, 0);
    bool wrote = false;
    for (size_t b = 0; b < m.blocks; ++b) {
      auto from = want.begin() + static_cast<long>(b * mad::kPkeyBlockEntries);
      if (now && std::equal(from, from + mad::kPkeyBlockEntries,
                            out.begin() + static_cast<long>(b * mad::kPkeyBlockEntries)))
        continue;
      mad::PkeyBlock block;
      std::copy_n(from, mad::kPkeyBlockEntries, block.begin());
      mad::MadPacket smp = mad::makeDirectedSmp(mad::kSet, mad::kAttrPKeyTable, attrMod(m, b), *m.route);
      mad::encodePkeyBlock(block, mad::smpData(smp));
      wrote = true;
      phase.submit(std::move(smp), [&, mp = &m, b](const SmpAnswer& a) {
        if (!a.ok) {
          // What the port holds is unknown now: read (or write whole) again next time.
          if (failed.insert(mp).second)
            report.warnings.push_back("PKEY002 cannot write the P_Key table of " + describe(*mp) +
                                      a.failure());
          return;
        }
        ++report.blocksSet;
        // The SMA answers with the block it holds now.
        mad::PkeyBlock now = mad::decodePkeyBlock(mad::smpData(a.result.response));
        std::copy(now.begin(), now.end(), result[mp].begin() + static_cast<long>(b * mad::kPkeyBlockEntries));
      });
    }
    if (wrote) ++report.portsChanged;
  }
  report.phase = phase.finish();

  for (auto& [m, table] : result) {
    const auto key = std::make_pair(topo.node(m->node).guid, m->port);
    if (failed.count(m)) {
      changed = changed || next->ports.erase(key);
      continue;
    }
    auto it = next->ports.find(key);
    if (it != next->ports.end() && it->second == table) continue;
    next->ports[key] = std::move(table);
    changed = true;
  }
  if (changed) tables_ = std::move(next);
  facing_.clear();
  for (const ManagedPort& m : managed)
    if (m.facing && tables_->find(topo.node(m.node).guid, m.port))
      facing_.emplace(topo.node(m.node).guid, m.port);
  return report;
}

}  // namespace ibsm::daemon
