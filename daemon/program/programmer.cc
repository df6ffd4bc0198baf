#include "daemon/program/programmer.h"

#include <algorithm>
#include <functional>
#include <map>

#include "mad/smp.h"

namespace ibsm::daemon {

using fabric::NodeIndex;
using fabric::PortState;
using mad::MadResult;

size_t lftBlocks(uint16_t top) {
  return (static_cast<size_t>(top) + mad::kLftBlockLids) / mad::kLftBlockLids;
}

mad::LftBlock lftBlock(const routing::LftRow& row, size_t b) {
  mad::LftBlock block;
  for (size_t i = 0; i < mad::kLftBlockLids; ++i) {
    const size_t lid = b * mad::kLftBlockLids + i;
    block[i] = lid < row.size() ? row[lid] : routing::kNoPort;
  }
  return block;
}

bool SwitchLftState::holds(size_t b, const mad::LftBlock& want) const {
  if (auto it = changed.find(static_cast<uint32_t>(b)); it != changed.end())
    return it->second && *it->second == want;
  return written && b < lftBlocks(writtenTop) && lftBlock(*written, b) == want;
}

void SwitchLftState::hold(std::shared_ptr<const routing::LftRow> row, uint16_t top) {
  written = std::move(row);
  writtenTop = top;
  changed.clear();
}

namespace {
constexpr uint8_t kLinkUp = 5;
constexpr uint32_t kClientReregSupported = 1u
                                           << 25;  // PortInfo CapabilityMask.IsClientReregistrationSupported

// The LID of the SM's own port (0 when the topology has no SM node).
uint16_t smLidOf(const fabric::Topology& topo, const routing::LidAssignment& lids) {
  return topo.smNode() == fabric::kNoNode ? 0 : lids.base(topo.smNode(), topo.smPort()).value;
}

// One run of Programmer::program. Keeps what the ports and switches hold once this run's Sets are
// acknowledged; that becomes dr's topology at the end, so the next (targeted) run starts from the truth
// instead of the states of the first discovery.
class ProgramRun {
 public:
  ProgramRun(mad::MadEngine& engine, const mad::Clock& clock, DiscoveryResult& dr,
             const routing::LidAssignment& lids, const routing::RoutingTables& tables,
             SwitchTableCache& cache, const ProgramOptions& opt,
             std::unordered_set<fabric::Guid>& mkeyIgnored, const fabric::Topology* settled);
  ProgramReport run();
  bool finished() const { return finished_; }  // every phase ran (beforeSwitches did not end the run)

 private:
  using OnOk = std::function<void(const MadResult&)>;
  void phase(const char* name, const std::function<void(PhaseRunner&)>& issue);
  // Submits a Set; onOk gets the acknowledged response, a failure becomes a PROG001 error.
  void send(PhaseRunner& phase, NodeIndex n, mad::MadPacket smp, OnOk onOk);
  void failed(NodeIndex n, const SmpAnswer& a);
  const char* phaseName_ = "";  // of the phase running
  uint8_t mtu(NodeIndex n, unsigned p) const;
  uint8_t vls(NodeIndex n, unsigned p) const;
  // Sends a PortInfo Set built on what the port holds; onOk runs once it is acknowledged.
  void setPort(PhaseRunner& phase, NodeIndex n, unsigned p, const mad::PortInfoSet& set, OnOk onOk);
  void portSetDone(NodeIndex n, unsigned p, const mad::PortInfoSet& set, const RawAttr& sent);
  void setLid(PhaseRunner& phase, NodeIndex n, unsigned p);
  void setSwitchInfo(PhaseRunner& phase, NodeIndex n, SwitchTableCache::Entry& held, uint16_t top);
  void setLftBlocks(PhaseRunner& phase, NodeIndex n, SwitchTableCache::Entry& held, uint16_t top);
  void linkedPorts(const std::function<void(NodeIndex, unsigned)>& f) const;
  // Whether node n's row is one a clean earlier run left (see Programmer::Left): its endports hold their
  // LIDs and its linked ports are past ARMED, so phases 1 and 2 have nothing to send it.
  bool settled(NodeIndex n) const {
    return settled_ && n < settled_->size() && topo_.nodes().sameRow(n, settled_->nodes(), n);
  }
  void publish();

  mad::MadEngine& engine_;
  const mad::Clock& clock_;
  DiscoveryResult& dr_;
  const fabric::TopologyPtr keep_;  // dr_.topology is replaced at the end
  const fabric::Topology& topo_;
  const routing::LidAssignment& lids_;
  const routing::RoutingTables& tables_;
  SwitchTableCache& cache_;
  const ProgramOptions& opt_;
  std::unordered_set<fabric::Guid>& mkeyIgnored_;
  const fabric::Topology* settled_;
  bool finished_ = false;
  ProgramReport report_;
  // What the Sets of this run changed, per (node, port), over the topology's attributes and dr's PortInfo
  // blocks (not a copy of every port per run: an event touches a few).
  using PortKey = std::pair<NodeIndex, unsigned>;
  std::map<PortKey, fabric::PortAttrs> attrs_;
  const fabric::PortAttrs& attrs(NodeIndex n, unsigned p) const {
    auto it = attrs_.find({n, p});
    return it != attrs_.end() ? it->second : topo_.node(n).ports[p].attrs;
  }
  std::vector<bool> switchChanged_;
  // Switches whose LFT blocks were compared (and sent where they differ) in this run: the ones with no failed
  // block hold their row in full afterwards, the others the blocks whose Set was acknowledged.
  struct ComparedRow {
    NodeIndex node;
    SwitchTableCache::Entry* held;
    std::shared_ptr<const routing::LftRow> row;
    uint16_t top;
  };
  std::vector<ComparedRow> lftRows_;
  std::vector<bool> lftFailed_;
  std::vector<std::pair<NodeIndex, uint32_t>> lftFailedBlocks_;
  void settleLftBlocks();
  // PortInfo blocks as this run leaves them: each Set starts from the previous one, so a later state change
  // carries the LID written earlier.
  std::map<PortKey, RawAttr> raw_;
  RawAttr& raw(NodeIndex n, unsigned p) {
    return raw_.try_emplace({n, p}, std::as_const(dr_.portInfo)[n][p]).first->second;
  }
  const RawAttr& rawOf(NodeIndex n, unsigned p) const {
    auto it = raw_.find({n, p});
    return it != raw_.end() ? it->second : std::as_const(dr_.portInfo)[n][p];
  }
  uint16_t smLid_ = 0;
};

ProgramRun::ProgramRun(mad::MadEngine& engine, const mad::Clock& clock, DiscoveryResult& dr,
                       const routing::LidAssignment& lids, const routing::RoutingTables& tables,
                       SwitchTableCache& cache, const ProgramOptions& opt,
                       std::unordered_set<fabric::Guid>& mkeyIgnored, const fabric::Topology* settled)
    : engine_(engine),
      clock_(clock),
      dr_(dr),
      keep_(dr.topology),
      topo_(*keep_),
      lids_(lids),
      tables_(tables),
      cache_(cache),
      opt_(opt),
      mkeyIgnored_(mkeyIgnored),
      settled_(settled),
      switchChanged_(topo_.size(), false),
      lftFailed_(topo_.size(), false) {
  smLid_ = smLidOf(topo_, lids);
}

void ProgramRun::phase(const char* name, const std::function<void(PhaseRunner&)>& issue) {
  phaseName_ = name;
  report_.phases.push_back(runPhase(engine_, clock_, name, PhaseOptions{.secondPass = true}, issue));
}

void ProgramRun::send(PhaseRunner& phase, NodeIndex n, mad::MadPacket smp, OnOk onOk) {
  phase.submit(std::move(smp), [this, n, onOk = std::move(onOk)](const SmpAnswer& a) {
    if (!a.ok) return failed(n, a);
    if (onOk) onOk(a.result);
  });
}

void ProgramRun::failed(NodeIndex n, const SmpAnswer& a) {
  if (a.attrId == mad::kAttrLft) {
    lftFailed_[n] = true;
    lftFailedBlocks_.emplace_back(n, a.attrMod);
  }
  const fabric::Node& node = topo_.node(n);
  report_.errors.push_back("PROG001 " + std::string(phaseName_) + ": Set of attribute " +
                           std::to_string(a.attrId) + " mod " + std::to_string(a.attrMod) + " on " +
                           fabric::toString(node.guid) + " (" + node.description + ")" + a.failure() +
                           " (attempt " + std::to_string(a.result.attempts) +
                           (a.secondPass ? ", second pass" : "") + ")");
}

uint8_t ProgramRun::mtu(NodeIndex n, unsigned p) const {
  const fabric::Port& port = topo_.node(n).ports[p];
  uint8_t mine = port.attrs.mtuCap;
  if (!port.connected()) return mine;
  uint8_t theirs = topo_.node(port.peerNode).ports[port.peerPort.value].attrs.mtuCap;
  return theirs ? std::min(mine, theirs) : mine;
}

uint8_t ProgramRun::vls(NodeIndex n, unsigned p) const {
  const fabric::Port& port = topo_.node(n).ports[p];
  uint8_t mine = port.attrs.vlCap;
  if (!port.connected()) return mine;
  uint8_t theirs = topo_.node(port.peerNode).ports[port.peerPort.value].attrs.vlCap;
  return theirs ? std::min(mine, theirs) : mine;
}

// Called when a PortInfo Set is acknowledged: the port now holds what was sent.
void ProgramRun::portSetDone(NodeIndex n, unsigned p, const mad::PortInfoSet& set, const RawAttr& sent) {
  fabric::PortAttrs& a = attrs_.try_emplace({n, p}, topo_.node(n).ports[p].attrs).first->second;
  if (set.lid) a.lid = fabric::Lid{*set.lid};
  if (set.lmc) a.lmc = *set.lmc;
  if (set.smLid) a.smLid = fabric::Lid{*set.smLid};
  if (set.gidPrefix) a.gidPrefix = *set.gidPrefix;
  if (set.state) a.state = static_cast<PortState>(*set.state);
  if (set.neighborMtu) a.neighborMtu = *set.neighborMtu;
  if (set.operVls) a.operVls = *set.operVls;
  RawAttr& held = dr_.portInfo[n][p];
  held = sent;
  // On a Set the state fields are commands; what is kept is the state the port is now in.
  mad::setPortInfoState(held.data(), a.state, a.physState);
}

void ProgramRun::setPort(PhaseRunner& phase, NodeIndex n, unsigned p, const mad::PortInfoSet& set,
                         OnOk onOk) {
  RawAttr& block = raw(n, p);
  mad::applyPortInfoSet(set, block.data());
  mad::MadPacket smp = mad::makeDirectedSmp(mad::kSet, mad::kAttrPortInfo, p,
                                            topo_.routeVia(n, fabric::PortNum{static_cast<uint8_t>(p)}));
  std::copy(block.begin(), block.end(), mad::smpData(smp));
  mad::clearPortInfoClientReregister(block.data());  // a command, not kept by the port
  send(phase, n, std::move(smp), [this, n, p, set, sent = block, onOk = std::move(onOk)](const MadResult& r) {
    portSetDone(n, p, set, sent);
    onOk(r);
  });
}

// Phase 1, one endport: LID, LMC, SM LID, subnet timeout (and MTU/VLs of CA ports), skipped when already
// right. A CA port in INIT is armed by the same Set (IBA 14.2.5.6: a PortInfo Set applies its LID and its
// PortState together; ARMED lets no data packet out, so arming before the LFTs are written is safe), which
// saves the arm phase one SMP per host; it goes ACTIVE with the rest once its switch port is armed too.
void ProgramRun::setLid(PhaseRunner& phase, NodeIndex n, unsigned p) {
  const fabric::Node& node = topo_.node(n);
  const fabric::Port& port = node.ports[p];
  routing::LidRange range = lids_.range(n, fabric::PortNum{static_cast<uint8_t>(p)});
  if (range.base.value == 0 || !port.attrs.valid) return;
  if (!node.isSwitch() && port.attrs.physState != kLinkUp) return;
  const bool rereg =
      opt_.clientReregister && !node.isSwitch() && (port.attrs.capMask & kClientReregSupported);
  // M_Key fields: compared with what the port reported (read with our key, so a protected port shows its real
  // key), skipped on ports whose SMA is known to drop them.
  const bool writeMkey = opt_.mkey && !mkeyIgnored_.count(port.guid) &&
                         mad::decodePortInfoMkeyInfo(rawOf(n, p).data()) != *opt_.mkey;
  if (port.attrs.lid == range.base && port.attrs.lmc == range.lmc && port.attrs.smLid.value == smLid_ &&
      port.attrs.gidPrefix == opt_.gidPrefix && !rereg && !writeMkey)
    return;
  mad::PortInfoSet set;
  if (writeMkey) set.mkey = opt_.mkey;
  if (rereg) set.clientReregister = true;
  const bool arm =
      opt_.activate && !node.isSwitch() && port.connected() && port.attrs.state == PortState::kInit;
  if (arm) set.state = static_cast<uint8_t>(PortState::kArmed);
  set.lid = range.base.value;
  set.lmc = range.lmc;
  set.smLid = smLid_;
  set.gidPrefix = opt_.gidPrefix;
  set.subnetTimeout = opt_.subnetTimeout;
  if (!node.isSwitch()) {
    set.neighborMtu = mtu(n, p);
    set.operVls = vls(n, p);
  }
  const fabric::Guid guid = port.guid;
  setPort(phase, n, p, set, [this, guid, writeMkey, arm](const MadResult& r) {
    ++report_.lidsSet;
    if (arm) {
      ++report_.portsArmed;
      ++report_.armedWithLid;
    }
    if (!writeMkey) return;
    // The GetResp shows what the port holds now; an SMA without M_Key support answers with its old value.
    if (mad::decodePortInfoMkey(mad::smpData(r.response)) == opt_.mkey->key) {
      ++report_.mkeysSet;
    } else if (mkeyIgnored_.insert(guid).second) {
      ++report_.mkeyIgnored;
    }
  });
}

// Phase 3, one switch: SwitchInfo LinearFDBTop and LifeTime when they differ.
void ProgramRun::setSwitchInfo(PhaseRunner& phase, NodeIndex n, SwitchTableCache::Entry& held, uint16_t top) {
  const fabric::Node& node = topo_.node(n);
  if (!held.topKnown) {
    held.linearFdbTop = node.sw.linearFdbTop;
    held.topKnown = true;  // discovery just read it
  }
  if (held.linearFdbTop == top && node.sw.lifeTime == opt_.switchLifeTime) return;
  mad::MadPacket smp = mad::makeDirectedSmp(mad::kSet, mad::kAttrSwitchInfo, 0, topo_.route(n));
  uint8_t* d = mad::smpData(smp);
  const RawAttr& read = std::as_const(dr_.switchInfo)[n];
  std::copy(read.begin(), read.end(), d);
  // PortStateChange is write-1-to-clear: cleared on the switch, 0 in what it holds afterwards.
  mad::applySwitchInfoSet({top, opt_.switchLifeTime, true}, d);
  RawAttr sent;
  std::copy_n(d, sent.size(), sent.begin());
  mad::applySwitchInfoSet({std::nullopt, std::nullopt, false}, sent.data());
  send(phase, n, std::move(smp), [this, &held, n, top, sent](const MadResult&) {
    held.linearFdbTop = top;
    dr_.switchInfo[n] = sent;
    switchChanged_[n] = true;
  });
}

namespace {
// Whether the switch is known to hold block b of `want` already; if not, `block` is that block.
bool blockHeld(const SwitchLftState& held, const routing::LftRow& want, size_t b, mad::LftBlock& block) {
  // A row derived from the one held (a repair, a rebalance) shares the blocks it did not change.
  const routing::LftRow* was = held.written.get();
  const size_t end = (b + 1) * mad::kLftBlockLids;
  if (was && b < lftBlocks(held.writtenTop) && want.sameBlock(b, *was) && end <= want.size() &&
      end <= was->size() && (held.changed.empty() || !held.changed.count(static_cast<uint32_t>(b))))
    return true;
  block = lftBlock(want, b);
  return held.holds(b, block);
}
}  // namespace

// Phase 3, one switch: the LFT blocks up to LinearFDBTop that differ from what the switch holds.
void ProgramRun::setLftBlocks(PhaseRunner& phase, NodeIndex n, SwitchTableCache::Entry& held, uint16_t top) {
  static const auto kEmptyRow = std::make_shared<const routing::LftRow>();
  const fabric::DrPath& route = topo_.route(n);
  static_assert(routing::LftRow::kBlock == mad::kLftBlockLids);
  const size_t blocks = lftBlocks(top);
  // The row the switch holds in full already (a repair or a rebalance shares the rows it did not change,
  // and within a row the blocks it did not change).
  std::shared_ptr<const routing::LftRow> row = tables_.lft.row(n);
  if (!row) row = kEmptyRow;
  if (held.written == row && held.writtenTop == top && held.changed.empty()) {
    report_.lftBlocksSkipped += blocks;
    return;
  }
  lftRows_.push_back({n, &held, row, top});
  const routing::LftRow& want = *row;
  for (size_t b = 0; b < blocks; ++b) {
    mad::LftBlock block;
    if (blockHeld(held, want, b, block)) {
      ++report_.lftBlocksSkipped;
      continue;
    }
    mad::MadPacket smp = mad::makeDirectedSmp(mad::kSet, mad::kAttrLft, static_cast<uint32_t>(b), route);
    mad::encodeLftBlock(block, mad::smpData(smp));
    // The most numerous SMP: its completion captures little enough to need no allocation.
    phase.submit(std::move(smp), [this, n](const SmpAnswer& a) {
      if (!a.ok) return failed(n, a);
      ++report_.lftBlocksSent;
    });
  }
}

// After the LFT phase: a switch whose Sets all went through holds its row in full; on one with a failed Set,
// the blocks sent and acknowledged are known, the failed ones unknown (the Set may or may not have taken).
void ProgramRun::settleLftBlocks() {
  std::sort(lftFailedBlocks_.begin(), lftFailedBlocks_.end());
  for (ComparedRow& r : lftRows_) {
    if (!lftFailed_[r.node]) {
      r.held->hold(std::move(r.row), r.top);
      continue;
    }
    for (size_t b = 0; b < lftBlocks(r.top); ++b) {
      mad::LftBlock block;
      if (blockHeld(*r.held, *r.row, b, block)) continue;  // not sent
      const bool failed = std::binary_search(lftFailedBlocks_.begin(), lftFailedBlocks_.end(),
                                             std::pair{r.node, static_cast<uint32_t>(b)});
      r.held->changed[static_cast<uint32_t>(b)] = failed ? std::nullopt : std::optional(block);
    }
  }
}

// Switch port 0 has no link state of its own. Settled rows have none below ACTIVE.
void ProgramRun::linkedPorts(const std::function<void(NodeIndex, unsigned)>& f) const {
  for (NodeIndex n = 0; n < topo_.size(); ++n) {
    if (settled(n)) continue;
    for (unsigned p = 1; p <= topo_.node(n).numPorts; ++p) {
      const fabric::Port& port = topo_.node(n).ports[p];
      if (port.connected() && port.attrs.valid && port.attrs.physState == kLinkUp) f(n, p);
    }
  }
}

// What the ports and switches hold now becomes dr's topology.
void ProgramRun::publish() {
  fabric::Topology::AttrPatch patch;
  for (const auto& [at, a] : attrs_)
    patch.ports.emplace_back(at.first, fabric::PortNum{static_cast<uint8_t>(at.second)}, a);
  for (NodeIndex n = 0; n < topo_.size(); ++n) {
    if (switchChanged_[n])
      patch.switches.emplace_back(n, mad::decodeSwitchInfo(std::as_const(dr_.switchInfo)[n].data()));
  }
  if (!patch.empty()) dr_.topology = topo_.withAttrs(patch);
}

ProgramReport ProgramRun::run() {
  // Phase 1: endport LIDs.
  phase("lids", [&](PhaseRunner& phase) {
    for (NodeIndex n = 0; n < topo_.size(); ++n) {
      if (settled(n)) continue;
      const fabric::Node& node = topo_.node(n);
      unsigned first = node.isSwitch() ? 0 : 1, last = node.isSwitch() ? 0 : node.numPorts;
      for (unsigned p = first; p <= last; ++p) setLid(phase, n, p);
    }
  });
  // Phase 2: every linked port in INIT goes to ARMED (no data moves on an ARMED link, so this need not wait
  // for the routes); an update on a running fabric finds none. A port already in the target state is left
  // alone (a Set of the current state is rejected). The ports not ACTIVE yet, found in one pass.
  std::vector<std::pair<NodeIndex, unsigned>> notActive;
  if (opt_.activate) {
    linkedPorts([&](NodeIndex n, unsigned p) {
      const PortState s = attrs(n, p).state;
      if (s == PortState::kInit || s == PortState::kArmed) notActive.emplace_back(n, p);
    });
    phase("arm", [&](PhaseRunner& phase) {
      for (auto [n, p] : notActive) {
        if (attrs(n, p).state != PortState::kInit) continue;
        mad::PortInfoSet set;
        set.state = static_cast<uint8_t>(PortState::kArmed);
        set.neighborMtu = mtu(n, p);
        set.operVls = vls(n, p);
        setPort(phase, n, p, set, [this](const MadResult&) { ++report_.portsArmed; });
      }
    });
  }
  if (opt_.beforeSwitches && !opt_.beforeSwitches(report_.phases)) {
    publish();
    return std::move(report_);
  }
  // Phase 3: SwitchInfo LinearFDBTop, then LFT blocks that differ from what the switch holds.
  phase("switches", [&](PhaseRunner& phase) {
    const uint16_t top = lids_.maxLid().value;
    for (NodeIndex n : topo_.switches()) {
      SwitchTableCache::Entry& held = cache_[topo_.node(n).guid];
      setSwitchInfo(phase, n, held, top);
      setLftBlocks(phase, n, held, top);
    }
  });
  settleLftBlocks();
  // Phase 4: once both ends are armed and the switches programmed, ARMED goes to ACTIVE.
  if (opt_.activate) {
    phase("activate", [&](PhaseRunner& phase) {
      for (auto [n, p] : notActive) {
        if (attrs(n, p).state != PortState::kArmed) continue;
        mad::PortInfoSet set;
        set.state = static_cast<uint8_t>(PortState::kActive);
        setPort(phase, n, p, set, [this](const MadResult&) { ++report_.portsActivated; });
      }
    });
  }
  finished_ = true;
  publish();
  return std::move(report_);
}

}  // namespace

size_t ProgramReport::smps() const {
  size_t n = 0;
  for (const auto& p : phases) n += p.smps;
  return n;
}

PhaseStats Programmer::enforcePartitions(DiscoveryResult& dr,
                                         const std::set<std::pair<fabric::Guid, uint8_t>>& ports,
                                         std::vector<std::string>& errors) {
  PhaseRunner phase(engine_, clock_, "enforce", PhaseOptions{.secondPass = true});
  const fabric::Topology& topo = *dr.topology;
  for (const auto& [guid, port] : ports) {
    auto n = topo.findNode(guid);
    if (!n || !topo.node(*n).isSwitch() || port == 0 || port >= topo.node(*n).ports.size()) continue;
    const auto& blocks = std::as_const(dr.portInfo);
    if (*n >= blocks.size() || port >= blocks[*n].size()) continue;
    const RawAttr& held = blocks[*n][port];
    if (mad::portInfoPartitionEnforced(held.data())) continue;
    RawAttr sent = held;
    mad::PortInfoSet set;
    set.partitionEnforce = true;
    mad::applyPortInfoSet(set, sent.data());  // PortState and PhysState: no change
    mad::MadPacket smp = mad::makeDirectedSmp(mad::kSet, mad::kAttrPortInfo, port, topo.route(*n));
    std::copy(sent.begin(), sent.end(), mad::smpData(smp));
    const NodeIndex node = *n;
    const uint8_t p = port;
    phase.submit(std::move(smp), [&, node, p](const SmpAnswer& a) {
      if (!a.ok) {
        const fabric::Node& sw = topo.node(node);
        errors.push_back("PKEY004 cannot turn on partition enforcement on " + fabric::toString(sw.guid) +
                         " (" + sw.description + ") port " + std::to_string(p) + a.failure());
        return;
      }
      mad::PortInfoSet on;
      on.partitionEnforce = true;
      RawAttr& h = dr.portInfo[node][p];
      const fabric::PortAttrs attrs = topo.node(node).ports[p].attrs;
      mad::applyPortInfoSet(on, h.data());
      mad::setPortInfoState(h.data(), attrs.state, attrs.physState);  // the block keeps the port's states
    });
  }
  return phase.finish();
}

ProgramReport Programmer::program(DiscoveryResult& dr, const routing::LidAssignment& lids,
                                  const routing::RoutingTables& tables, SwitchTableCache& cache,
                                  const ProgramOptions& opt) {
  // Rows the last run left are settled when this run asks the same of the endports.
  const uint16_t smLid = smLidOf(*dr.topology, lids);
  const bool same = left_ && !opt.clientReregister && left_->activate == opt.activate &&
                    left_->gidPrefix == opt.gidPrefix && left_->mkey == opt.mkey && left_->smLid == smLid &&
                    left_->lids == lids;
  ProgramRun run(engine_, clock_, dr, lids, tables, cache, opt, mkeyIgnored_,
                 same ? left_->topology.get() : nullptr);
  ProgramReport report = run.run();
  if (run.finished() && report.errors.empty())
    left_ = Left{dr.topology, lids, smLid, opt.gidPrefix, opt.mkey, opt.activate};
  else
    left_.reset();
  return report;
}

}  // namespace ibsm::daemon
