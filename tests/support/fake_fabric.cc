#include "tests/support/fake_fabric.h"

#include <infiniband/mad.h>

#include <algorithm>
#include <cassert>
#include <cstring>

#include "mad/fields.h"
#include "mad/notice.h"
#include "mad/smp.h"
#include "mad/vl_tables.h"

namespace ibsm::mad {

namespace {

constexpr uint16_t kStatusInvalidField = 0x1C;     // "invalid value in an attribute field / modifier"
constexpr uint16_t kStatusUnsupportedAttr = 0x0C;  // attribute not supported by this node type
constexpr int kTransportDrop = 110;                // umad2sim's status for a MAD nobody handles
constexpr uint8_t kLinkUp = 5, kPolling = 2;
constexpr unsigned kLidHopLimit = 16;
constexpr size_t kLftBlock = 64;
// ibsim's P_Key table sizes, used where the topology does not say: NodeInfo.PartitionCap of a CA and of a
// switch, SwitchInfo.PartitionEnforcementCap.
constexpr uint16_t kCaPartitionCap = 64, kSwitchPartitionCap = 8, kSwitchPartitionEnforcementCap = 64;

using fields::get;
using fields::get64;
using fields::set;
using fields::set64;

uint8_t state(const uint8_t* pi) {
  return static_cast<uint8_t>(get(pi, IB_PORT_STATE_F));
}
uint8_t physState(const uint8_t* pi) {
  return static_cast<uint8_t>(get(pi, IB_PORT_PHYS_STATE_F));
}

}  // namespace

FakeFabric::FakeFabric(fabric::TopologyPtr topology, FakeFabricOptions options)
    : topo_(std::move(topology)), options_(options) {
  assert(topo_);
  const fabric::Topology& t = *topo_;
  nodes_.resize(t.size());
  for (NodeIndex n = 0; n < t.size(); ++n) {
    const fabric::Node& node = t.node(n);
    NodeState& st = nodes_[n];
    st.portInfo.resize(node.numPorts + 1u);
    // P_Key tables as ibsim boots them: every entry unused but entry 0, the default P_Key.
    st.pkeys.resize(node.numPorts + 1u);
    for (unsigned p = node.isSwitch() ? 0 : 1; p <= node.numPorts; ++p) {
      st.pkeys[p].assign(pkeyTableSize(n, p), 0);
      if (!st.pkeys[p].empty()) st.pkeys[p][0] = kDefaultPkey;
    }
    for (unsigned p = 0; p <= node.numPorts; ++p) {
      const fabric::Port& port = node.ports[p];
      fabric::PortAttrs a = port.attrs;
      if (!a.valid) {
        // ibsim's defaults: 4x SDR, MTU 2048, VL0-7.
        a.widthEnabled = a.widthSupported = a.widthActive = 2;
        a.speedEnabled = a.speedSupported = a.speedActive = 1;
        a.mtuCap = 4;
        a.vlCap = 4;
      }
      if (!node.isSwitch()) a.capMask |= 1u << 25;  // IsClientReregistrationSupported, as HCAs report
      if (options_.pkeyNvram) a.capMask |= 1u << 8;
      if (options_.boot || !a.valid) {
        a.lid = fabric::Lid{0};
        a.smLid = fabric::Lid{0};
        a.lmc = 0;
        if (node.isSwitch() && p == 0) {
          a.state = fabric::PortState::kActive;  // the switch's own management port has no link of its own
          a.physState = kLinkUp;
        } else if (port.connected()) {
          a.state = fabric::PortState::kInit;
          a.physState = kLinkUp;
        } else {
          a.state = fabric::PortState::kDown;
          a.physState = kPolling;
        }
      }
      encodePortInfo(a, st.portInfo[p].data());
      set(st.portInfo[p].data(), IB_PORT_LOCAL_PORT_F, p);
    }
    if (node.isSwitch()) {
      fabric::SwitchAttrs s = node.sw;
      if (s.linearFdbCap == 0) s.linearFdbCap = options_.linearFdbCap;
      if (s.multicastFdbCap == 0) s.multicastFdbCap = 1024;
      if (s.partitionEnforcementCap == 0) s.partitionEnforcementCap = kSwitchPartitionEnforcementCap;
      if (options_.optimizedSlToVl) s.optimizedSlToVl = true;
      if (options_.boot) {
        s.linearFdbTop = 0;
        s.lifeTime = 0;
        s.portStateChange = false;
      }
      encodeSwitchInfo(s, st.switchInfo.data());
    }
  }
  if (options_.smPort) {
    smNode_ = options_.smPort->first;
    smPort_ = options_.smPort->second.value;
  } else if (t.smNode() != fabric::kNoNode) {
    smNode_ = t.smNode();
    smPort_ = t.smPort().value;
  } else {
    for (NodeIndex n : t.cas()) {
      for (unsigned p = 1; p <= t.node(n).numPorts && smNode_ == fabric::kNoNode; ++p)
        if (t.node(n).ports[p].connected()) {
          smNode_ = n;
          smPort_ = static_cast<uint8_t>(p);
        }
      if (smNode_ != fabric::kNoNode) break;
    }
    if (smNode_ == fabric::kNoNode && !t.switches().empty()) {
      smNode_ = t.switches().front();
      smPort_ = 0;
    }
  }
  assert(smNode_ != fabric::kNoNode && smNode_ < t.size());
  if (t.node(smNode_).isSwitch()) smPort_ = 0;
}

// ---------------------------------------------------------------------------------------------------------
// Paths

bool FakeFabric::linkUpAt(NodeIndex node, unsigned port) const {
  const fabric::Node& n = topo_->node(node);
  if (port == 0 || port > n.numPorts || !n.ports[port].connected()) return false;
  const fabric::Port& p = n.ports[port];
  return physState(nodes_[node].portInfo[port].data()) == kLinkUp &&
         physState(nodes_[p.peerNode].portInfo[p.peerPort.value].data()) == kLinkUp;
}

bool FakeFabric::activeAt(NodeIndex node, unsigned port) const {
  if (!linkUpAt(node, port)) return false;
  const fabric::Port& p = topo_->node(node).ports[port];
  constexpr uint8_t kActive = static_cast<uint8_t>(fabric::PortState::kActive);
  return state(nodes_[node].portInfo[port].data()) == kActive &&
         state(nodes_[p.peerNode].portInfo[p.peerPort.value].data()) == kActive;
}

uint16_t FakeFabric::portLid(NodeIndex node, unsigned port) const {
  return static_cast<uint16_t>(get(nodes_[node].portInfo[port].data(), IB_PORT_LID_F));
}

bool FakeFabric::ownsLid(NodeIndex node, unsigned port, uint16_t lid) const {
  const uint8_t* pi = nodes_[node].portInfo[port].data();
  uint32_t base = get(pi, IB_PORT_LID_F), lmc = get(pi, IB_PORT_LMC_F);
  return base != 0 && lid >= base && lid < base + (1u << lmc);
}

std::optional<FakeFabric::Endpoint> FakeFabric::walkDirected(const uint8_t* path, unsigned hops) const {
  NodeIndex cur = smNode_;
  uint8_t arrival = smPort_;
  for (unsigned i = 1; i <= hops; ++i) {
    const fabric::Node& node = topo_->node(cur);
    uint8_t out = path[i];
    // A directed-route SMP never passes through a CA; the SM's own CA sends it out of the SM's port only.
    if (!node.isSwitch() && (i > 1 || out != smPort_)) return std::nullopt;
    if (!linkUpAt(cur, out)) return std::nullopt;
    const fabric::Port& p = node.ports[out];
    cur = p.peerNode;
    arrival = p.peerPort.value;
  }
  return Endpoint{cur, arrival};
}

std::optional<FakeFabric::Endpoint> FakeFabric::routeByLid(Endpoint from, uint16_t dlid) const {
  if (dlid == 0 || dlid > fabric::kMaxUnicastLid) return std::nullopt;
  NodeIndex cur = from.node;
  uint8_t arrival = from.port;
  const fabric::Node* node = &topo_->node(cur);
  if (!node->isSwitch()) {
    if (ownsLid(cur, from.port, dlid)) return from;
    if (!activeAt(cur, from.port)) return std::nullopt;
    const fabric::Port& p = node->ports[from.port];
    cur = p.peerNode;
    arrival = p.peerPort.value;
  }
  for (unsigned hop = 0; hop <= kLidHopLimit; ++hop) {
    node = &topo_->node(cur);
    if (!node->isSwitch()) {
      if (ownsLid(cur, arrival, dlid)) return Endpoint{cur, arrival};
      return std::nullopt;  // a CA does not forward
    }
    if (ownsLid(cur, 0, dlid)) return Endpoint{cur, arrival};
    const NodeState& st = nodes_[cur];
    if (dlid > get(st.switchInfo.data(), IB_SW_LINEAR_FDB_TOP_F)) return std::nullopt;
    uint8_t out = dlid < st.lft.size() ? st.lft[dlid] : 0xFF;
    if (out == 0) return Endpoint{cur, arrival};
    if (out > node->numPorts || !activeAt(cur, out)) return std::nullopt;
    const fabric::Port& p = node->ports[out];
    cur = p.peerNode;
    arrival = p.peerPort.value;
  }
  return std::nullopt;  // hop limit
}

// ---------------------------------------------------------------------------------------------------------
// The SMA side

std::vector<MadPacket> FakeFabric::handle(const MadPacket& request) {
  auto h = parseHeader(request);
  if (!h || h->isResponse() || request.size < kMadSize) {
    ++lost_;
    return {};
  }
  ++receivedTotal_;
  ++received_[h->attrId];
  if (h->method == kSet) ++receivedSets_[h->attrId];
  if (dropRate_ > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < dropRate_) {
    ++droppedByRate_;
    ++lost_;
    return {};
  }
  std::optional<Endpoint> target;
  std::optional<uint16_t> replyLid;  // LID-routed: the answer goes back to the requester's LID
  const uint8_t* b = request.bytes.data();
  if (h->mgmtClass == kClassSmiDirected) {
    // Only fully directed SMPs (permissive DrSLID/DrDLID), sent outwards.
    if (h->direction || get(b, IB_DRSMP_DRSLID_F) != 0xFFFF || get(b, IB_DRSMP_DRDLID_F) != 0xFFFF ||
        h->hopCount > fabric::DrPath::kMaxHops) {
      ++lost_;
      return {};
    }
    uint8_t path[64];
    mad_get_array(const_cast<uint8_t*>(b), 0, IB_DRSMP_PATH_F, path);
    target = walkDirected(path, h->hopCount);
  } else if (h->mgmtClass == kClassSmiLid) {
    uint16_t smLid = portLid(smNode_, smPort_);
    if (smLid != 0) {
      target = routeByLid(Endpoint{smNode_, smPort_}, request.addr.lid);
      replyLid = smLid;
    }
  }
  if (!target || losing_.contains({target->node, target->port, h->attrId})) {
    ++lost_;
    return {};
  }
  bool hideKey = false;
  if (options_.enforceMkey && !mkeyCheck(*target, *h, getMadMkey(request), hideKey)) {
    ++lost_;  // discarded: the SM sees a timeout
    return {};
  }
  Answer a = dispatch(*target, h->method, h->attrId, h->attrMod, smpData(request));
  if (hideKey && h->attrId == kAttrPortInfo) set64(a.data.data(), IB_PORT_MKEY_F, 0);
  if (a.kind != Answer::kLost)
    log_.push_back({target->node, h->attrId, h->method, h->attrMod,
                    static_cast<uint16_t>(a.kind == Answer::kDrop ? kTransportDrop : a.status)});
  if (a.kind == Answer::kLost || (replyLid && !routeByLid(Endpoint{target->node, target->port}, *replyLid))) {
    ++lost_;
    return {};
  }
  if (a.kind == Answer::kDrop) {
    MadPacket dropped = request;
    dropped.status = kTransportDrop;
    return {dropped};
  }
  MadPacket r = makeResponse(request, a.status);
  std::copy(a.data.begin(), a.data.end(), smpData(r));
  if (h->method == kSet && h->attrId == kAttrPortInfo && target->node == smNode_) refreshLocalPort();
  return {r};
}

FakeFabric::Answer FakeFabric::dispatch(Endpoint at, uint8_t method, uint16_t attrId, uint32_t attrMod,
                                        const uint8_t* data) {
  const fabric::Node& node = topo_->node(at.node);
  NodeState& st = nodes_[at.node];
  Answer a;
  a.kind = Answer::kReply;
  // ibsim treats every method other than Set as a Get; the handlers below do the same.
  switch (attrId) {
    case kAttrNodeInfo: {
      if (st.garbageNodeInfo) return a;  // all zeros: node type 0, NumPorts 0
      NodeInfo ni;
      ni.type = node.type;
      ni.numPorts = node.numPorts;
      ni.nodeGuid = node.guid;
      ni.systemGuid = node.systemGuid.value ? node.systemGuid : node.guid;
      if (node.isSwitch())
        ni.portGuid = node.ports[0].guid.value ? node.ports[0].guid : node.guid;
      else
        ni.portGuid = node.ports[at.port].guid.value ? node.ports[at.port].guid
                                                     : fabric::Guid{node.guid.value + at.port};
      ni.partitionCap = pkeyTableSize(at.node, node.isSwitch() ? 0 : at.port);
      ni.deviceId = node.deviceId;
      ni.revision = node.revision;
      ni.vendorId = node.vendorId;
      ni.localPort = at.port;
      encodeNodeInfo(ni, a.data.data());
      return a;
    }
    case kAttrNodeDescription:
      encodeNodeDescription(node.description, a.data.data());
      return a;
    case kAttrPortInfo:
      return portInfo(at, method, attrMod, data);
    case kAttrSwitchInfo:
      if (!node.isSwitch()) break;
      return switchInfo(at.node, method, data);
    case kAttrLft:
      if (!node.isSwitch()) break;
      return linearFdb(at.node, method, attrMod, data);
    case kAttrMft:
      if (!node.isSwitch()) break;
      return multicastFdb(at.node, method, attrMod, data);
    case kAttrPKeyTable:
      return pkeyTable(at, method, attrMod, data);
    case kAttrSlToVl:
    case kAttrVlArb:
      return vlTable(at, method, attrId, attrMod, data);
    case kAttrArInfo:
    case kAttrArGroupTable:
    case kAttrArLft:
      if (!node.isSwitch()) {
        a.kind = Answer::kDrop;
        return a;
      }
      return adaptiveRouting(at.node, method, attrId, attrMod, data);
    default:
      a.kind = Answer::kDrop;  // no SMA handler in ibsim: umad2sim answers with status 110
      return a;
  }
  a.status = kStatusUnsupportedAttr;
  return a;
}

FakeFabric::Answer FakeFabric::portInfo(Endpoint at, uint8_t method, uint32_t attrMod, const uint8_t* req) {
  const fabric::Node& node = topo_->node(at.node);
  NodeState& st = nodes_[at.node];
  Answer a;
  a.kind = Answer::kReply;
  unsigned port = attrMod;
  if (!node.isSwitch() && port == 0) port = at.port;  // a CA's port 0 means "the port the SMP came in on"
  if (port > node.numPorts || (!node.isSwitch() && port == 0)) {
    a.status = kStatusInvalidField;
    return a;
  }
  uint8_t* pi = st.portInfo[port].data();
  if (method == kSet) {
    if (!node.isSwitch() && port != at.port) {
      a.status = kStatusInvalidField;  // ibsim: a CA port is set only through itself
    } else {
      // Kept fields (ibsim keeps LID, MasterSMLID, LMC, HOQLife, OperVLs, ...); a switch's external ports
      // have no LID of their own.
      if (!node.isSwitch() || port == 0) {
        set(pi, IB_PORT_LID_F, get(req, IB_PORT_LID_F));
        set(pi, IB_PORT_SMLID_F, get(req, IB_PORT_SMLID_F));
        mad_set_field64(pi, 0, IB_PORT_GID_PREFIX_F,
                        mad_get_field64(const_cast<uint8_t*>(req), 0, IB_PORT_GID_PREFIX_F));
        set(pi, IB_PORT_LMC_F, get(req, IB_PORT_LMC_F));
        set(pi, IB_PORT_SUBN_TIMEOUT_F, get(req, IB_PORT_SUBN_TIMEOUT_F));
        if (options_.enforceMkey) setPortInfoMkey(pi, decodePortInfoMkeyInfo(req));  // ibsim drops these
      }
      if (!node.isSwitch() || port != 0) {
        if (uint32_t v = get(req, IB_PORT_OPER_VLS_F)) set(pi, IB_PORT_OPER_VLS_F, v);
        if (uint32_t v = get(req, IB_PORT_NEIGHBOR_MTU_F)) set(pi, IB_PORT_NEIGHBOR_MTU_F, v);
        set(pi, IB_PORT_HOQ_LIFE_F, get(req, IB_PORT_HOQ_LIFE_F));
      }
      if (options_.keepPartitionEnforcement && node.isSwitch() && port != 0) {
        set(pi, IB_PORT_PART_EN_INB_F, get(req, IB_PORT_PART_EN_INB_F));
        set(pi, IB_PORT_PART_EN_OUTB_F, get(req, IB_PORT_PART_EN_OUTB_F));
      }
      if (!node.isSwitch() && get(req, IB_PORT_CLIENT_REREG_F)) ++reregistrations_;
      uint8_t want = static_cast<uint8_t>(get(req, IB_PORT_STATE_F));
      // The LID is written even when the state change is refused, as in ibsim.
      if (want != 0 && !setPortState(at.node, port, want)) a.status = kStatusInvalidField;
    }
  }
  std::copy(pi, pi + kSmpDataSize, a.data.begin());
  set(a.data.data(), IB_PORT_LOCAL_PORT_F, at.port);
  return a;
}

bool FakeFabric::setPortState(NodeIndex node, unsigned port, uint8_t want) {
  const fabric::Node& n = topo_->node(node);
  uint8_t* pi = nodes_[node].portInfo[port].data();
  constexpr uint8_t kDown = 1, kInit = 2, kArmed = 3, kActive = 4;
  uint8_t cur = state(pi);
  if (n.isSwitch() && port == 0) return want <= kDown;  // port 0 has no link state to change
  if (want == cur) return false;                        // ibsim refuses a Set of the current state
  if (!linkUpAt(node, port)) return false;
  const fabric::Port& p = n.ports[port];
  uint8_t peer = state(nodes_[p.peerNode].portInfo[p.peerPort.value].data());
  switch (want) {
    case kDown:
      // The link retrains: both ends come back in INIT.
      setLinkState(node, port, kInit, kLinkUp);
      portStateChanged(node);
      portStateChanged(p.peerNode);
      return true;
    case kArmed:
      if (cur != kInit) return false;
      set(pi, IB_PORT_STATE_F, kArmed);
      return true;
    case kActive:
      if (cur != kArmed || (peer != kArmed && peer != kActive)) return false;  // both ends ARMED first
      set(pi, IB_PORT_STATE_F, kActive);
      return true;
    default:
      return false;  // INIT is not a state the SM can ask for
  }
}

FakeFabric::Answer FakeFabric::switchInfo(NodeIndex sw, uint8_t method, const uint8_t* req) {
  uint8_t* si = nodes_[sw].switchInfo.data();
  Answer a;
  a.kind = Answer::kReply;
  if (method == kSet) {
    uint32_t top = get(req, IB_SW_LINEAR_FDB_TOP_F);
    if (top >= get(si, IB_SW_LINEAR_FDB_CAP_F)) {
      a.status = kStatusInvalidField;
    } else {
      set(si, IB_SW_LINEAR_FDB_TOP_F, top);
      set(si, IB_SW_LIFE_TIME_F, get(req, IB_SW_LIFE_TIME_F));
      if (get(req, IB_SW_STATE_CHANGE_F)) set(si, IB_SW_STATE_CHANGE_F, 0);  // write 1 to clear
    }
  }
  std::copy(si, si + kSmpDataSize, a.data.begin());
  return a;
}

size_t FakeFabric::switchLftCap(NodeIndex sw) const {
  return get(nodes_[sw].switchInfo.data(), IB_SW_LINEAR_FDB_CAP_F);
}

FakeFabric::Answer FakeFabric::linearFdb(NodeIndex sw, uint8_t method, uint32_t block, const uint8_t* req) {
  NodeState& st = nodes_[sw];
  Answer a;
  a.kind = Answer::kReply;
  size_t first = static_cast<size_t>(block) * kLftBlock;
  if (first >= switchLftCap(sw)) {
    a.status = kStatusInvalidField;
    return a;
  }
  if (method == kSet) {
    if (st.arMode == FakeArMode::kImplemented && st.ar.enabled && st.ar.noFallback) {
      a.status = kStatusInvalidField;  // no_fallback = 1: the plain LFT may not change under AR
    } else {
      uint8_t entries[kLftBlock];
      mad_get_array(const_cast<uint8_t*>(req), 0, IB_LINEAR_FORW_TBL_F, entries);
      if (st.lft.size() < first + kLftBlock) st.lft.resize(first + kLftBlock, 0xFF);
      std::copy(entries, entries + kLftBlock, st.lft.begin() + static_cast<ptrdiff_t>(first));
      if (st.arMode == FakeArMode::kImplemented) st.ar.enabled = false;  // no_fallback = 0: AR goes off
    }
  }
  uint8_t out[kLftBlock];
  for (size_t i = 0; i < kLftBlock; ++i) out[i] = first + i < st.lft.size() ? st.lft[first + i] : 0xFF;
  mad_set_array(a.data.data(), 0, IB_LINEAR_FORW_TBL_F, out);
  return a;
}

FakeFabric::Answer FakeFabric::multicastFdb(NodeIndex sw, uint8_t method, uint32_t attrMod,
                                            const uint8_t* req) {
  NodeState& st = nodes_[sw];
  Answer a;
  a.kind = Answer::kReply;
  uint32_t block = attrMod & 0x1FF, position = attrMod >> 28;
  if ((block + 1) * kMftBlockMlids > switchAttrs(sw).multicastFdbCap ||
      position * kMftPositionPorts > topo_->node(sw).numPorts || (attrMod & 0x0FFFFE00)) {
    a.status = kStatusInvalidField;
    return a;
  }
  if (method == kSet) st.mft[attrMod] = decodeMftBlock(req);
  auto it = st.mft.find(attrMod);
  encodeMftBlock(it == st.mft.end() ? MftBlock{} : it->second, a.data.data());
  return a;
}

uint16_t FakeFabric::pkeyTableSize(NodeIndex node, unsigned port) const {
  const fabric::Node& n = topo_->node(node);
  if (n.isSwitch() && port > 0)
    return n.sw.partitionEnforcementCap ? n.sw.partitionEnforcementCap : kSwitchPartitionEnforcementCap;
  if (n.partitionCap) return n.partitionCap;
  return n.isSwitch() ? kSwitchPartitionCap : kCaPartitionCap;
}

// As ibsim: on a switch the port is in bits 16-31 of the modifier, a CA answers for the port the SMP came in
// through; a block past the table is refused.
FakeFabric::Answer FakeFabric::pkeyTable(Endpoint at, uint8_t method, uint32_t attrMod, const uint8_t* req) {
  const fabric::Node& node = topo_->node(at.node);
  Answer a;
  a.kind = Answer::kReply;
  const unsigned port = node.isSwitch() ? attrMod >> 16 : at.port, block = attrMod & 0xFFFF;
  if (port > node.numPorts || block * kPkeyBlockEntries >= nodes_[at.node].pkeys[port].size()) {
    a.status = kStatusInvalidField;
    return a;
  }
  std::vector<uint16_t>& table = nodes_[at.node].pkeys[port];
  const size_t first = block * kPkeyBlockEntries,
               n = std::min<size_t>(kPkeyBlockEntries, table.size() - first);
  if (method == kSet) {
    PkeyBlock in = decodePkeyBlock(req);
    std::copy_n(in.begin(), n, table.begin() + static_cast<long>(first));
  }
  PkeyBlock out{};
  std::copy_n(table.begin() + static_cast<long>(first), n, out.begin());
  encodePkeyBlock(out, a.data.data());
  return a;
}

// As ibsim's do_sl2vl/do_vlarb: a switch's SLtoVLMappingTable is addressed by (input port << 8 | output
// port), its VLArbitrationTable by (block << 16 | port); a CA answers for the port the SMP came in on. With
// FakeFabricOptions::optimizedSlToVl a Set with modifier bit 17 writes every input port's table (bit 16:
// every output port's); a Get answers for the ports named.
FakeFabric::Answer FakeFabric::vlTable(Endpoint at, uint8_t method, uint16_t attrId, uint32_t attrMod,
                                       const uint8_t* req) {
  const fabric::Node& node = topo_->node(at.node);
  NodeState& st = nodes_[at.node];
  Answer a;
  a.kind = Answer::kReply;
  if (attrId == kAttrSlToVl) {
    unsigned in = node.isSwitch() ? (attrMod >> 8) & 0xFF : 0,
             out = node.isSwitch() ? attrMod & 0xFF : at.port;
    if (in > node.numPorts || out > node.numPorts) {
      a.status = kStatusInvalidField;
      return a;
    }
    const bool allIn = options_.optimizedSlToVl && (attrMod & kSlToVlAllInputs),
               allOut = options_.optimizedSlToVl && (attrMod & kSlToVlAllOutputs);
    if (method == kSet)
      for (unsigned i = allIn ? 0 : in; i <= (allIn ? node.numPorts : in); ++i)
        for (unsigned o = allOut ? 0 : out; o <= (allOut ? node.numPorts : out); ++o)
          std::copy_n(req, 8, st.slToVl[{i, o}].begin());
    auto t = slToVl(at.node, in, out);
    std::copy(t.begin(), t.end(), a.data.begin());
    return a;
  }
  unsigned block = attrMod >> 16, port = node.isSwitch() ? attrMod & 0xFF : at.port;
  if (block < 1 || block > 4 || port > node.numPorts) {
    a.status = kStatusInvalidField;
    return a;
  }
  if (method == kSet) std::copy_n(req, 64, st.vlArb[{port, block}].begin());
  auto t = vlArb(at.node, port, block);
  std::copy(t.begin(), t.end(), a.data.begin());
  return a;
}

std::array<uint8_t, 8> FakeFabric::slToVl(NodeIndex node, unsigned in, unsigned out) const {
  const auto& m = nodes_[node].slToVl;
  if (auto it = m.find({in, out}); it != m.end()) return it->second;
  return {0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF};
}

std::array<uint8_t, 64> FakeFabric::vlArb(NodeIndex node, unsigned port, unsigned block) const {
  const auto& m = nodes_[node].vlArb;
  if (auto it = m.find({port, block}); it != m.end()) return it->second;
  return {};
}

std::vector<uint16_t> FakeFabric::pkeys(NodeIndex node, PortNum port) const {
  return nodes_[node].pkeys.at(port.value);
}

bool FakeFabric::partitionEnforced(NodeIndex sw, PortNum port) const {
  return portInfoPartitionEnforced(nodes_[sw].portInfo.at(port.value).data());
}

void FakeFabric::setPkeys(NodeIndex node, PortNum port, const std::vector<uint16_t>& entries) {
  std::vector<uint16_t>& table = nodes_[node].pkeys.at(port.value);
  std::fill(table.begin(), table.end(), 0);
  std::copy_n(entries.begin(), std::min(entries.size(), table.size()), table.begin());
}

std::vector<unsigned> FakeFabric::mftPorts(NodeIndex sw, uint16_t mlid) const {
  std::vector<unsigned> ports;
  if (mlid < 0xC000) return ports;
  uint32_t index = mlid - 0xC000u;
  for (uint32_t pos = 0; pos * kMftPositionPorts <= topo_->node(sw).numPorts; ++pos) {
    auto it = nodes_[sw].mft.find(mftAttrMod(index / kMftBlockMlids, pos));
    if (it == nodes_[sw].mft.end()) continue;
    for (unsigned i = 0; i < kMftPositionPorts; ++i)
      if (it->second[index % kMftBlockMlids] >> i & 1) ports.push_back(pos * kMftPositionPorts + i);
  }
  return ports;
}

FakeFabric::Answer FakeFabric::adaptiveRouting(NodeIndex sw, uint8_t method, uint16_t attrId,
                                               uint32_t attrMod, const uint8_t* req) {
  NodeState& st = nodes_[sw];
  Answer a;
  if (st.arMode == FakeArMode::kDrop) {
    a.kind = Answer::kDrop;
    return a;
  }
  if (st.arMode == FakeArMode::kSilent) return a;  // lost
  a.kind = Answer::kReply;
  const bool isSet = method == kSet;
  if (isSet && st.rejected.count({attrId, attrMod})) {
    a.status = kStatusInvalidField;
  } else if (attrId == kAttrArInfo) {
    if (isSet) {
      auto want = decodeArInfo(req);
      if (!want || want->groupTop >= st.ar.groupCap) {
        a.status = kStatusInvalidField;
      } else {
        // Only the configuration fields are writable; capabilities stay as the switch reports them.
        st.ar.enabled = want->enabled;
        st.ar.groupTop = want->groupTop;
        st.ar.subGroupsActive = want->subGroupsActive;
        st.ar.bySlEnabled = want->bySlEnabled;
        st.ar.enableBySlMask = want->enableBySlMask;
        st.ar.byTransportDisable = want->byTransportDisable;
        st.ar.ageingTimeUs = want->ageingTimeUs;
        st.ar.frEnabled = want->frEnabled;
        st.ar.rnXmitEnabled = want->rnXmitEnabled;
        st.ar.noFallback = want->noFallback;
      }
    }
    encodeArInfo(st.ar, a.data.data());
  } else if (attrId == kAttrArGroupTable) {
    size_t first = static_cast<size_t>(attrMod) * kArGroupsPerBlock;
    if (attrMod > kArGroupBlockMax || first >= st.ar.groupCap) {
      a.status = kStatusInvalidField;
      return a;
    }
    if (st.arGroups.size() < first + kArGroupsPerBlock) st.arGroups.resize(first + kArGroupsPerBlock);
    if (isSet) {
      ArGroupBlock b = decodeArGroupBlock(req);
      for (unsigned s = 0; s < kArGroupsPerBlock; ++s) st.arGroups[first + s] = b.groups[s];
    }
    ArGroupBlock out;
    for (unsigned s = 0; s < kArGroupsPerBlock; ++s) out.groups[s] = st.arGroups[first + s];
    encodeArGroupBlock(out, a.data.data());
  } else {
    size_t first = static_cast<size_t>(attrMod) * kArLftEntriesPerBlock;
    if (attrMod > kArLftBlockMax || first >= switchLftCap(sw)) {
      a.status = kStatusInvalidField;
      return a;
    }
    if (st.arLft.size() < first + kArLftEntriesPerBlock) st.arLft.resize(first + kArLftEntriesPerBlock);
    if (isSet) {
      auto b = decodeArLftBlock(req);
      bool ok = b.ok();
      for (unsigned i = 0; ok && i < kArLftEntriesPerBlock; ++i)
        if ((*b)[i].state != ArLidState::kStatic && (*b)[i].group >= st.ar.groupCap) ok = false;
      if (!ok)
        a.status = kStatusInvalidField;
      else
        std::copy(b->begin(), b->end(), st.arLft.begin() + static_cast<ptrdiff_t>(first));
    }
    ArLftBlock out;
    std::copy_n(st.arLft.begin() + static_cast<ptrdiff_t>(first), kArLftEntriesPerBlock, out.begin());
    encodeArLftBlock(out, a.data.data());
  }
  return a;
}

// ---------------------------------------------------------------------------------------------------------
// Controls

void FakeFabric::setLinkState(NodeIndex node, unsigned port, uint8_t st, uint8_t phys) {
  const fabric::Port& p = topo_->node(node).ports[port];
  for (auto [n, q] : {std::pair<NodeIndex, unsigned>{node, port}, {p.peerNode, p.peerPort.value}}) {
    uint8_t* pi = nodes_[n].portInfo[q].data();
    set(pi, IB_PORT_STATE_F, st);
    set(pi, IB_PORT_PHYS_STATE_F, phys);
  }
}

void FakeFabric::portStateChanged(NodeIndex node) {
  if (topo_->node(node).isSwitch()) set(nodes_[node].switchInfo.data(), IB_SW_STATE_CHANGE_F, 1);
}

fabric::Result<void> FakeFabric::linkDown(NodeIndex node, PortNum port) {
  if (node >= topo_->size() || port.value == 0 || port.value > topo_->node(node).numPorts ||
      !topo_->node(node).ports[port.value].connected())
    return fabric::makeError("linkDown: no link at that port");
  if (physState(nodes_[node].portInfo[port.value].data()) != kLinkUp)
    return fabric::makeError("linkDown: link already down");
  const fabric::Port& p = topo_->node(node).ports[port.value];
  setLinkState(node, port.value, static_cast<uint8_t>(fabric::PortState::kDown), kPolling);
  for (NodeIndex n : {node, p.peerNode}) {
    portStateChanged(n);
    if (topo_->node(n).isSwitch()) sendTrap128(n);
  }
  refreshLocalPort();
  return {};
}

fabric::Result<void> FakeFabric::linkUp(NodeIndex node, PortNum port) {
  if (node >= topo_->size() || port.value == 0 || port.value > topo_->node(node).numPorts ||
      !topo_->node(node).ports[port.value].connected())
    return fabric::makeError("linkUp: no link at that port");
  if (physState(nodes_[node].portInfo[port.value].data()) == kLinkUp)
    return fabric::makeError("linkUp: link already up");
  const fabric::Port& p = topo_->node(node).ports[port.value];
  setLinkState(node, port.value, static_cast<uint8_t>(fabric::PortState::kInit), kLinkUp);
  for (NodeIndex n : {node, p.peerNode}) {
    portStateChanged(n);
    if (topo_->node(n).isSwitch()) sendTrap128(n);
  }
  refreshLocalPort();
  return {};
}

void FakeFabric::sendTrap128(NodeIndex sw) {
  const uint8_t* pi = nodes_[sw].portInfo[0].data();
  uint16_t lid = static_cast<uint16_t>(get(pi, IB_PORT_LID_F));
  uint16_t smLid = static_cast<uint16_t>(get(pi, IB_PORT_SMLID_F));
  if (lid == 0 || smLid == 0) return;  // ibsim sends Trap 128 only once the switch has both
  // Traps are LID-routed to the SM and never repeated: one that cannot get there is lost for good.
  auto to = routeByLid(Endpoint{sw, 0}, smLid);
  if (!to || to->node != smNode_) {
    ++trapsLost_;
    return;
  }
  MadPacket m = makeLidRoutedSmp(kTrap, kAttrNotice, 0, smLid);
  uint8_t* d = smpData(m);
  set(d, IB_NOTICE_IS_GENERIC_F, 1);
  set(d, IB_NOTICE_TYPE_F, 1);      // urgent
  set(d, IB_NOTICE_PRODUCER_F, 2);  // switch
  set(d, IB_NOTICE_TRAP_NUMBER_F, 128);
  set(d, IB_NOTICE_ISSUER_LID_F, lid);
  set(d, IB_NOTICE_DATA_LID_F, lid);
  setTid(m, 0);                          // as ibsim sends it
  m.addr = MadAddress{lid, 0, 0, 0, 0};  // where it came from, as umad reports a received MAD
  ++trapsSent_;
  deliver(std::move(m));
}

bool FakeFabric::mkeyCheck(Endpoint at, const MadHeader& h, uint64_t smpKey, bool& hideKey) {
  uint8_t* pi = nodes_[at.node].portInfo[mgmtPort(at)].data();
  uint64_t key = get64(pi, IB_PORT_MKEY_F);
  if (key == 0 || smpKey == key) return true;
  uint32_t protect = get(pi, IB_PORT_MKEY_PROT_BITS_F);
  if (h.method == kGet && protect <= 1) {
    hideKey = protect == 1;
    return true;
  }
  set(pi, IB_PORT_MKEY_VIOL_F, std::min<uint32_t>(get(pi, IB_PORT_MKEY_VIOL_F) + 1, 0xFFFF));
  ++mkeyViolations_;
  sendTrap256(at, h, smpKey);
  return false;
}

// Trap 256 (Bad M_Key), LID-routed to the port's SM LID: who asked (the SM port's LID: the SMPs come from
// there), with which method and attribute; lost when the port has no LID or SM LID yet, or no route.
void FakeFabric::sendTrap256(Endpoint at, const MadHeader& h, uint64_t smpKey) {
  unsigned p = mgmtPort(at);
  const uint8_t* pi = nodes_[at.node].portInfo[p].data();
  uint16_t lid = static_cast<uint16_t>(get(pi, IB_PORT_LID_F));
  uint16_t smLid = static_cast<uint16_t>(get(pi, IB_PORT_SMLID_F));
  auto to = lid && smLid ? routeByLid(Endpoint{at.node, static_cast<uint8_t>(p)}, smLid) : std::nullopt;
  if (!to || to->node != smNode_) {
    ++trapsLost_;
    return;
  }
  Notice n;
  n.generic = true;
  n.type = 2;  // security
  n.producerType = topo_->node(at.node).isSwitch() ? 2 : 1;
  n.trapNumber = 256;
  n.issuerLid = lid;
  n.lidAddr = portLid(smNode_, smPort_);
  MadPacket m = makeTrap(n, smLid);
  // DataDetails after LIDADDR (2 bytes at offset 10) and DRSLID: method, attribute id, modifier, M_Key.
  // libibmad has no field table for them.
  uint8_t* d = smpData(m);
  d[14] = h.method;
  d[16] = static_cast<uint8_t>(h.attrId >> 8);
  d[17] = static_cast<uint8_t>(h.attrId);
  for (int i = 0; i < 4; ++i) d[18 + i] = static_cast<uint8_t>(h.attrMod >> (24 - 8 * i));
  for (int i = 0; i < 8; ++i) d[22 + i] = static_cast<uint8_t>(smpKey >> (56 - 8 * i));
  m.addr = MadAddress{lid, 0, 0, 0, 0};
  ++trapsSent_;
  deliver(std::move(m));
}

void FakeFabric::setPortMkey(NodeIndex node, PortNum port, const MkeyInfo& mkey) {
  setPortInfoMkey(nodes_.at(node).portInfo.at(mgmtPort(Endpoint{node, port.value})).data(), mkey);
}

MkeyInfo FakeFabric::portMkey(NodeIndex node, PortNum port) const {
  return decodePortInfoMkeyInfo(nodes_.at(node).portInfo.at(mgmtPort(Endpoint{node, port.value})).data());
}

void FakeFabric::deliver(MadPacket trap) {
  if (port_)
    port_->inject(std::move(trap));
  else
    pendingTraps_.push_back(std::move(trap));
}

std::vector<MadPacket> FakeFabric::takeTraps() {
  std::vector<MadPacket> out;
  out.swap(pendingTraps_);
  return out;
}

void FakeFabric::attach(FakeMadPort& port) {
  port_ = &port;
  port.setResponder([this](const MadPacket& m) { return handle(m); });
  port.setLocalPort(localPort());
  for (auto& t : takeTraps()) port.inject(std::move(t));
}

void FakeFabric::refreshLocalPort() {
  if (port_) port_->setLocalPort(localPort());
}

LocalPortInfo FakeFabric::localPort() const {
  const fabric::Node& node = topo_->node(smNode_);
  const uint8_t* pi = nodes_[smNode_].portInfo[smPort_].data();
  LocalPortInfo l;
  l.caName = "fake0";
  l.portNum = smPort_;
  if (node.isSwitch())
    l.portGuid = node.ports[0].guid.value ? node.ports[0].guid : node.guid;
  else
    l.portGuid =
        node.ports[smPort_].guid.value ? node.ports[smPort_].guid : fabric::Guid{node.guid.value + smPort_};
  l.lid = static_cast<uint16_t>(get(pi, IB_PORT_LID_F));
  l.smLid = static_cast<uint16_t>(get(pi, IB_PORT_SMLID_F));
  l.lmc = static_cast<uint8_t>(get(pi, IB_PORT_LMC_F));
  l.state = state(pi);
  return l;
}

void FakeFabric::setDropRate(double rate, uint64_t seed) {
  dropRate_ = std::clamp(rate, 0.0, 1.0);
  rng_.seed(seed);
}

void FakeFabric::setGarbageNodeInfo(NodeIndex node, bool garbage) {
  nodes_.at(node).garbageNodeInfo = garbage;
}

void FakeFabric::loseEntering(NodeIndex node, PortNum in, uint16_t attrId, bool lose) {
  if (lose)
    losing_.insert({node, in.value, attrId});
  else
    losing_.erase({node, in.value, attrId});
}

void FakeFabric::setArMode(NodeIndex sw, FakeArMode mode, FakeArCaps caps) {
  assert(topo_->node(sw).isSwitch());
  NodeState& st = nodes_.at(sw);
  st.arMode = mode;
  st.ar = ArInfo{};
  st.ar.groupCap = std::min<uint16_t>(caps.groupCap, 0xFFF);
  st.ar.arnSupported = caps.arnSupported;
  st.ar.frnSupported = caps.frnSupported;
  st.ar.noFallback = caps.noFallback;
  st.ar.groupTableCap = 1;
  st.ar.subGroupsSupported = 1;
  st.ar.bySlCap = true;
  st.ar.byTransportCap = true;
  st.arGroups.clear();
  st.arLft.clear();
}

void FakeFabric::rejectArBlock(NodeIndex sw, uint16_t attrId, uint32_t block, bool reject) {
  if (reject)
    nodes_.at(sw).rejected.insert({attrId, block});
  else
    nodes_.at(sw).rejected.erase({attrId, block});
}

// ---------------------------------------------------------------------------------------------------------
// Inspection

uint64_t FakeFabric::received(uint16_t attrId) const {
  auto it = received_.find(attrId);
  return it == received_.end() ? 0 : it->second;
}

uint64_t FakeFabric::receivedSets(uint16_t attrId) const {
  auto it = receivedSets_.find(attrId);
  return it == receivedSets_.end() ? 0 : it->second;
}

fabric::PortAttrs FakeFabric::portAttrs(NodeIndex node, PortNum port) const {
  return decodePortInfo(nodes_.at(node).portInfo.at(port.value).data());
}

fabric::SwitchAttrs FakeFabric::switchAttrs(NodeIndex sw) const {
  return decodeSwitchInfo(nodes_.at(sw).switchInfo.data());
}

uint8_t FakeFabric::lftPort(NodeIndex sw, uint16_t lid) const {
  const auto& lft = nodes_.at(sw).lft;
  return lid < lft.size() ? lft[lid] : 0xFF;
}

std::vector<uint8_t> FakeFabric::lft(NodeIndex sw) const {
  size_t top = get(nodes_.at(sw).switchInfo.data(), IB_SW_LINEAR_FDB_TOP_F);
  std::vector<uint8_t> out(top + 1);
  for (size_t lid = 0; lid <= top; ++lid) out[lid] = lftPort(sw, static_cast<uint16_t>(lid));
  return out;
}

ArInfo FakeFabric::arInfo(NodeIndex sw) const {
  return nodes_.at(sw).ar;
}

ArPortMask FakeFabric::arGroup(NodeIndex sw, uint16_t group) const {
  const auto& g = nodes_.at(sw).arGroups;
  return group < g.size() ? g[group] : ArPortMask{};
}

ArLftEntry FakeFabric::arLft(NodeIndex sw, uint16_t lid) const {
  const auto& t = nodes_.at(sw).arLft;
  return lid < t.size() ? t[lid] : ArLftEntry{};
}

}  // namespace ibsm::mad
