#include "daemon/program/programmer.h"

#include <infiniband/mad.h>

#include <algorithm>
#include <functional>

#include "mad/smp.h"

namespace ibsm::daemon {

using fabric::NodeIndex;
using fabric::PortState;
using mad::MadResult;

namespace {
// onOk gets the acknowledged response.
using Sender = std::function<void(NodeIndex, mad::MadPacket, std::function<void(const MadResult&)>)>;
constexpr size_t kLftBlock = 64;
constexpr uint8_t kLinkUp = 5;
constexpr uint32_t kClientReregSupported = 1u
                                           << 25;  // PortInfo CapabilityMask.IsClientReregistrationSupported
}  // namespace

size_t ProgramReport::smps() const {
  size_t n = 0;
  for (const auto& p : phases) n += p.smps;
  return n;
}

ProgramReport Programmer::program(DiscoveryResult& dr, const routing::LidAssignment& lids,
                                  const routing::RoutingTables& tables, SwitchTableCache& cache,
                                  const ProgramOptions& opt) {
  const fabric::TopologyPtr keep = dr.topology;  // dr.topology is replaced at the end
  const fabric::Topology& topo = *keep;
  ProgramReport report;
  // What the ports and switches hold once this run's Sets are acknowledged; becomes dr's topology at the end,
  // so the next (targeted) run starts from the truth instead of the states of the first discovery.
  std::vector<std::vector<fabric::PortAttrs>> attrs(topo.size());
  std::vector<std::vector<bool>> portChanged(topo.size());
  std::vector<bool> switchChanged(topo.size(), false);
  for (NodeIndex i = 0; i < topo.size(); ++i) {
    for (const auto& p : topo.node(i).ports) attrs[i].push_back(p.attrs);
    portChanged[i].assign(attrs[i].size(), false);
  }
  const uint16_t smLid = topo.smNode() == fabric::kNoNode ? 0 : lids.base(topo.smNode(), topo.smPort()).value;

  // Runs one phase: `issue` submits SMPs through `send`; each completion may record an error.
  auto phase = [&](const char* name, const std::function<void(const Sender&)>& issue) {
    PhaseStats st;
    st.name = name;
    mad::TimePoint t0 = clock_.now();
    size_t sent0 = engine_.counters().sent;
    // Sets that got no answer after all of the engine's retries go once more in a second pass, after the
    // phase's other Sets: MAD loss comes in bursts, and a Set lost now would otherwise wait for the next
    // sweep.
    std::vector<std::tuple<NodeIndex, mad::MadPacket, std::function<void(const MadResult&)>>> again;
    std::function<void(NodeIndex, mad::MadPacket, std::function<void(const MadResult&)>, bool)> submit =
        [&](NodeIndex n, mad::MadPacket smp, std::function<void(const MadResult&)> onOk, bool secondPass) {
          auto h = mad::parseHeader(smp);
          const bool portInfo = h && h->attrId == mad::kAttrPortInfo;
          mad::MadPacket copy = secondPass ? mad::MadPacket{} : smp;
          engine_.submit(std::move(smp), [&, n, h, portInfo, secondPass, copy = std::move(copy),
                                          onOk = std::move(onOk)](const MadResult& r) mutable {
            // A PortState Set whose first attempt was applied but whose response was lost is refused on the
            // retry (the port already has that state: status 0x1C, invalid attribute value). Only timeouts
            // are retried, so a 0x1C after an earlier attempt means that attempt took effect; the next sweep
            // reads the port and corrects it should that be wrong.
            bool appliedEarlier =
                r.ok() && (r.attempts > 1 || secondPass) && r.header.status == 0x1C && portInfo;
            if (r.ok() && (r.header.status == 0 || appliedEarlier)) {
              if (onOk) onOk(r);
              return;
            }
            if (!r.ok() && !secondPass) {
              again.emplace_back(n, std::move(copy), std::move(onOk));
              return;
            }
            const fabric::Node& node = topo.node(n);
            ++st.errors;
            report.errors.push_back(
                std::string("PROG001 ") + name + ": Set of attribute " + std::to_string(h ? h->attrId : 0) +
                " mod " + std::to_string(h ? h->attrMod : 0) + " on " + fabric::toString(node.guid) + " (" +
                node.description + ")" +
                (r.ok() ? ": MAD status " + std::to_string(r.header.status) : ": no answer") + " (attempt " +
                std::to_string(r.attempts) + (secondPass ? ", second pass" : "") + ")");
          });
        };
    Sender send = [&](NodeIndex n, mad::MadPacket smp, std::function<void(const MadResult&)> onOk) {
      submit(n, std::move(smp), std::move(onOk), false);
    };
    issue(send);
    engine_.runUntilIdle();
    if (!again.empty()) {
      st.secondPass = again.size();
      for (auto& [n, smp, onOk] : std::exchange(again, {})) submit(n, std::move(smp), std::move(onOk), true);
      engine_.runUntilIdle();
    }
    st.smps = engine_.counters().sent - sent0;
    st.elapsed = clock_.now() - t0;
    report.phases.push_back(st);
  };

  auto neighbourMin = [&](NodeIndex n, unsigned p, auto field) -> uint8_t {
    const fabric::Port& port = topo.node(n).ports[p];
    uint8_t mine = field(port.attrs);
    if (!port.connected()) return mine;
    uint8_t theirs = field(topo.node(port.peerNode).ports[port.peerPort.value].attrs);
    return theirs ? std::min(mine, theirs) : mine;
  };
  auto mtu = [&](NodeIndex n, unsigned p) {
    return neighbourMin(n, p, [](const fabric::PortAttrs& a) { return a.mtuCap; });
  };
  auto vls = [&](NodeIndex n, unsigned p) {
    return neighbourMin(n, p, [](const fabric::PortAttrs& a) { return a.vlCap; });
  };
  // PortInfo blocks as this run leaves them: each Set starts from the previous one, so a later state change
  // carries the LID written earlier.
  std::vector<std::vector<RawAttr>> raw = dr.portInfo;
  // Called when a PortInfo Set is acknowledged: the port now holds what was sent.
  auto portSetDone = [&](NodeIndex n, unsigned p, const mad::PortInfoSet& set, const RawAttr& sent) {
    fabric::PortAttrs& a = attrs[n][p];
    if (set.lid) a.lid = fabric::Lid{*set.lid};
    if (set.lmc) a.lmc = *set.lmc;
    if (set.smLid) a.smLid = fabric::Lid{*set.smLid};
    if (set.gidPrefix) a.gidPrefix = *set.gidPrefix;
    if (set.state) a.state = static_cast<PortState>(*set.state);
    if (set.neighborMtu) a.neighborMtu = *set.neighborMtu;
    if (set.operVls) a.operVls = *set.operVls;
    portChanged[n][p] = true;
    RawAttr& held = dr.portInfo[n][p];
    held = sent;
    // On a Set the state fields are commands; what is kept is the state the port is now in.
    mad_set_field(held.data(), 0, IB_PORT_STATE_F, static_cast<uint32_t>(a.state));
    mad_set_field(held.data(), 0, IB_PORT_PHYS_STATE_F, a.physState);
  };
  // Sends a PortInfo Set built on what the port holds; onOk runs once it is acknowledged.
  auto setPort = [&](const Sender& send, NodeIndex n, unsigned p, const mad::PortInfoSet& set,
                     std::function<void(const MadResult&)> onOk) {
    mad::applyPortInfoSet(set, raw[n][p].data());
    const fabric::Node& node = topo.node(n);
    const fabric::DrPath& route = !node.isSwitch() && p < node.ports.size() && node.ports[p].route.count
                                      ? node.ports[p].route
                                      : node.route;
    mad::MadPacket smp = mad::makeDirectedSmp(mad::kSet, mad::kAttrPortInfo, p, route);
    std::copy(raw[n][p].begin(), raw[n][p].end(), mad::smpData(smp));
    mad_set_field(raw[n][p].data(), 0, IB_PORT_CLIENT_REREG_F, 0);  // a command, not kept by the port
    send(n, std::move(smp), [&, n, p, set, sent = raw[n][p], onOk = std::move(onOk)](const MadResult& r) {
      portSetDone(n, p, set, sent);
      onOk(r);
    });
  };

  // Phase 1: endport LIDs, LMC, SM LID, subnet timeout (and MTU/VLs of CA ports), skipped when already right.
  phase("lids", [&](const auto& send) {
    for (NodeIndex n = 0; n < topo.size(); ++n) {
      const fabric::Node& node = topo.node(n);
      unsigned first = node.isSwitch() ? 0 : 1, last = node.isSwitch() ? 0 : node.numPorts;
      for (unsigned p = first; p <= last; ++p) {
        const fabric::Port& port = node.ports[p];
        routing::LidRange range = lids.range(n, fabric::PortNum{static_cast<uint8_t>(p)});
        if (range.base.value == 0 || !port.attrs.valid) continue;
        if (!node.isSwitch() && port.attrs.physState != kLinkUp) continue;
        const bool rereg =
            opt.clientReregister && !node.isSwitch() && (port.attrs.capMask & kClientReregSupported);
        // M_Key fields: compared with what the port reported (read with our key, so a protected port shows
        // its real key), skipped on ports whose SMA is known to drop them.
        const bool writeMkey = opt.mkey && !mkeyIgnored_.count(port.guid) &&
                               mad::decodePortInfoMkeyInfo(raw[n][p].data()) != *opt.mkey;
        if (port.attrs.lid == range.base && port.attrs.lmc == range.lmc && port.attrs.smLid.value == smLid &&
            port.attrs.gidPrefix == opt.gidPrefix && !rereg && !writeMkey)
          continue;
        mad::PortInfoSet set;
        if (writeMkey) set.mkey = opt.mkey;
        if (rereg) set.clientReregister = true;
        set.lid = range.base.value;
        set.lmc = range.lmc;
        set.smLid = smLid;
        set.gidPrefix = opt.gidPrefix;
        set.subnetTimeout = opt.subnetTimeout;
        if (!node.isSwitch()) {
          set.neighborMtu = mtu(n, p);
          set.operVls = vls(n, p);
        }
        const fabric::Guid guid = port.guid;
        setPort(send, n, p, set, [&, guid, writeMkey](const MadResult& r) {
          ++report.lidsSet;
          if (!writeMkey) return;
          // The GetResp shows what the port holds now; an SMA without M_Key support answers with its old
          // value.
          if (mad::decodePortInfoMkey(mad::smpData(r.response)) == opt.mkey->key) {
            ++report.mkeysSet;
          } else if (mkeyIgnored_.insert(guid).second) {
            ++report.mkeyIgnored;
          }
        });
      }
    }
  });

  // Phase 2: SwitchInfo LinearFDBTop, then LFT blocks that differ from what the switch holds.
  phase("switches", [&](const auto& send) {
    const uint16_t top = lids.maxLid().value;
    for (NodeIndex n : topo.switches()) {
      const fabric::Node& node = topo.node(n);
      SwitchTableCache::Entry& held = cache[node.guid];
      if (!held.topKnown) {
        held.linearFdbTop = node.sw.linearFdbTop;
        held.topKnown = true;  // discovery just read it
      }
      if (held.linearFdbTop != top || node.sw.lifeTime != opt.switchLifeTime) {
        mad::MadPacket smp = mad::makeDirectedSmp(mad::kSet, mad::kAttrSwitchInfo, 0, node.route);
        uint8_t* d = mad::smpData(smp);
        std::copy(dr.switchInfo[n].begin(), dr.switchInfo[n].end(), d);
        mad_set_field(d, 0, IB_SW_LINEAR_FDB_TOP_F, top);
        mad_set_field(d, 0, IB_SW_LIFE_TIME_F, opt.switchLifeTime);
        mad_set_field(d, 0, IB_SW_STATE_CHANGE_F, 1);  // write-1-to-clear PortStateChange
        RawAttr sent;
        std::copy_n(d, sent.size(), sent.begin());
        mad_set_field(sent.data(), 0, IB_SW_STATE_CHANGE_F, 0);
        send(n, std::move(smp), [&, n, top, sent](const MadResult&) {
          held.linearFdbTop = top;
          dr.switchInfo[n] = sent;
          switchChanged[n] = true;
        });
      }
      const std::vector<uint8_t>& want = tables.lft[n];
      size_t blocks = (static_cast<size_t>(top) + kLftBlock) / kLftBlock;
      if (held.lft.size() < blocks * kLftBlock) {
        held.lft.resize(blocks * kLftBlock, routing::kNoPort);
        held.blockKnown.resize(blocks, false);
      }
      for (size_t b = 0; b < blocks; ++b) {
        uint8_t block[kLftBlock];
        for (size_t i = 0; i < kLftBlock; ++i) {
          size_t lid = b * kLftBlock + i;
          block[i] = lid < want.size() ? want[lid] : routing::kNoPort;
        }
        if (held.blockKnown[b] && std::equal(block, block + kLftBlock, held.lft.begin() + b * kLftBlock)) {
          ++report.lftBlocksSkipped;
          continue;
        }
        mad::MadPacket smp =
            mad::makeDirectedSmp(mad::kSet, mad::kAttrLft, static_cast<uint32_t>(b), node.route);
        mad_set_array(mad::smpData(smp), 0, IB_LINEAR_FORW_TBL_F, block);
        std::vector<uint8_t> copy(block, block + kLftBlock);
        send(n, std::move(smp), [&report, &held, b, copy = std::move(copy)](const MadResult&) {
          std::copy(copy.begin(), copy.end(), held.lft.begin() + b * kLftBlock);
          held.blockKnown[b] = true;
          ++report.lftBlocksSent;
        });
      }
    }
  });
  if (opt.activate) {
    // Phases 3 and 4: every linked port in INIT goes to ARMED; once both ends are armed, ARMED goes to
    // ACTIVE. Switch port 0 has no link state of its own; a port already in the target state is left alone (a
    // Set of the current state is rejected).
    auto linkedPorts = [&](const std::function<void(NodeIndex, unsigned)>& f) {
      for (NodeIndex n = 0; n < topo.size(); ++n)
        for (unsigned p = 1; p <= topo.node(n).numPorts; ++p) {
          const fabric::Port& port = topo.node(n).ports[p];
          if (port.connected() && port.attrs.valid && port.attrs.physState == kLinkUp) f(n, p);
        }
    };
    phase("arm", [&](const auto& send) {
      linkedPorts([&](NodeIndex n, unsigned p) {
        if (attrs[n][p].state != PortState::kInit) return;
        mad::PortInfoSet set;
        set.state = static_cast<uint8_t>(PortState::kArmed);
        set.neighborMtu = mtu(n, p);
        set.operVls = vls(n, p);
        setPort(send, n, p, set, [&report](const MadResult&) { ++report.portsArmed; });
      });
    });
    phase("activate", [&](const auto& send) {
      linkedPorts([&](NodeIndex n, unsigned p) {
        if (attrs[n][p].state != PortState::kArmed) return;
        mad::PortInfoSet set;
        set.state = static_cast<uint8_t>(PortState::kActive);
        setPort(send, n, p, set, [&report](const MadResult&) { ++report.portsActivated; });
      });
    });
  }

  fabric::Topology::AttrPatch patch;
  for (NodeIndex n = 0; n < topo.size(); ++n) {
    for (unsigned p = 0; p < attrs[n].size(); ++p)
      if (portChanged[n][p])
        patch.ports.emplace_back(n, fabric::PortNum{static_cast<uint8_t>(p)}, attrs[n][p]);
    if (switchChanged[n]) patch.switches.emplace_back(n, mad::decodeSwitchInfo(dr.switchInfo[n].data()));
  }
  if (!patch.empty()) dr.topology = topo.withAttrs(patch);
  return report;
}

}  // namespace ibsm::daemon
