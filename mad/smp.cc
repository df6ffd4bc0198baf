#include "mad/smp.h"

#include <infiniband/mad.h>

#include <cstring>

#include "mad/fields.h"

namespace ibsm::mad {

namespace {
using fields::get;
using fields::get64;
using fields::set;
using fields::set64;

MadPacket makeSmp(uint8_t mgmtClass, uint8_t method, uint16_t attrId, uint32_t attrMod, uint64_t mkey) {
  MadPacket mad;
  uint8_t* b = mad.bytes.data();
  set(b, IB_MAD_BASEVER_F, 1);
  set(b, IB_MAD_MGMTCLASS_F, mgmtClass);
  set(b, IB_MAD_CLASSVER_F, 1);
  set(b, IB_MAD_METHOD_F, method);
  set(b, IB_MAD_ATTRID_F, attrId);
  set(b, IB_MAD_ATTRMOD_F, attrMod);
  set64(b, IB_MAD_MKEY_F, mkey);
  return mad;
}
}  // namespace

fabric::Result<MadHeader> parseHeader(const MadPacket& mad) {
  if (mad.size < kMadHeaderSize)
    return fabric::makeError("short MAD (" + std::to_string(mad.size) + " bytes)");
  const uint8_t* b = mad.bytes.data();
  MadHeader h;
  h.baseVersion = static_cast<uint8_t>(get(b, IB_MAD_BASEVER_F));
  if (h.baseVersion != 1) return fabric::makeError("bad MAD base version " + std::to_string(h.baseVersion));
  h.mgmtClass = static_cast<uint8_t>(get(b, IB_MAD_MGMTCLASS_F));
  h.classVersion = static_cast<uint8_t>(get(b, IB_MAD_CLASSVER_F));
  // IB_MAD_METHOD_F is the 7-bit method; the response flag is a separate field.
  h.method = static_cast<uint8_t>(get(b, IB_MAD_METHOD_F) | (get(b, IB_MAD_RESPONSE_F) ? kResponseBit : 0));
  if (h.mgmtClass == kClassSmiDirected) {
    h.status = static_cast<uint16_t>(get(b, IB_DRSMP_STATUS_F));
    h.direction = get(b, IB_DRSMP_DIRECTION_F);
    h.hopPointer = static_cast<uint8_t>(get(b, IB_DRSMP_HOPPTR_F));
    h.hopCount = static_cast<uint8_t>(get(b, IB_DRSMP_HOPCNT_F));
  } else {
    h.status = static_cast<uint16_t>(get(b, IB_MAD_STATUS_F));
  }
  h.tid = get64(b, IB_MAD_TRID_F);
  h.attrId = static_cast<uint16_t>(get(b, IB_MAD_ATTRID_F));
  h.attrMod = get(b, IB_MAD_ATTRMOD_F);
  return h;
}

MadPacket makeDirectedSmp(uint8_t method, uint16_t attrId, uint32_t attrMod, const fabric::DrPath& path,
                          uint64_t mkey) {
  MadPacket mad = makeSmp(kClassSmiDirected, method, attrId, attrMod, mkey);
  uint8_t* b = mad.bytes.data();
  set(b, IB_DRSMP_HOPCNT_F, path.count);
  set(b, IB_DRSMP_HOPPTR_F, 0);
  set(b, IB_DRSMP_DRSLID_F, 0xFFFF);
  set(b, IB_DRSMP_DRDLID_F, 0xFFFF);
  mad_set_array(b, 0, IB_DRSMP_PATH_F, const_cast<uint8_t*>(path.hops.data()));
  mad.addr = MadAddress{0xFFFF, 0, 0, 0, 0};
  return mad;
}

MadPacket makeLidRoutedSmp(uint8_t method, uint16_t attrId, uint32_t attrMod, uint16_t dlid, uint64_t mkey) {
  MadPacket mad = makeSmp(kClassSmiLid, method, attrId, attrMod, mkey);
  mad.addr = MadAddress{dlid, 0, 0, 0, 0};
  return mad;
}

MadPacket makeResponse(const MadPacket& request, uint16_t status) {
  MadPacket r = request;
  uint8_t* b = r.bytes.data();
  mad_set_field(b, 0, IB_MAD_METHOD_F, kGetResp & 0x7f);
  mad_set_field(b, 0, IB_MAD_RESPONSE_F, 1);
  if (b[1] == kClassSmiDirected) {
    mad_set_field(b, 0, IB_DRSMP_DIRECTION_F, 1);
    mad_set_field(b, 0, IB_DRSMP_STATUS_F, status);
  } else {
    mad_set_field(b, 0, IB_MAD_STATUS_F, status);
  }
  return r;
}

void setTid(MadPacket& mad, uint64_t tid) {
  set64(mad.bytes.data(), IB_MAD_TRID_F, tid);
}
uint64_t getTid(const MadPacket& mad) {
  return get64(mad.bytes.data(), IB_MAD_TRID_F);
}
uint8_t* smpData(MadPacket& mad) {
  return mad.bytes.data() + kSmpDataOffset;
}
const uint8_t* smpData(const MadPacket& mad) {
  return mad.bytes.data() + kSmpDataOffset;
}

fabric::Result<NodeInfo> decodeNodeInfo(const uint8_t* d) {
  NodeInfo n;
  uint32_t type = get(d, IB_NODE_TYPE_F);
  if (type < 1 || type > 3) return fabric::makeError("NodeInfo: bad node type " + std::to_string(type));
  n.type = static_cast<fabric::NodeType>(type);
  n.numPorts = static_cast<uint8_t>(get(d, IB_NODE_NPORTS_F));
  if (n.numPorts == 0 || n.numPorts == 255)
    return fabric::makeError("NodeInfo: bad NumPorts " + std::to_string(n.numPorts));
  n.systemGuid = fabric::Guid{get64(d, IB_NODE_SYSTEM_GUID_F)};
  n.nodeGuid = fabric::Guid{get64(d, IB_NODE_GUID_F)};
  n.portGuid = fabric::Guid{get64(d, IB_NODE_PORT_GUID_F)};
  if (n.nodeGuid.value == 0) return fabric::makeError("NodeInfo: zero node GUID");
  n.partitionCap = static_cast<uint16_t>(get(d, IB_NODE_PARTITION_CAP_F));
  n.deviceId = static_cast<uint16_t>(get(d, IB_NODE_DEVID_F));
  n.revision = get(d, IB_NODE_REVISION_F);
  n.vendorId = get(d, IB_NODE_VENDORID_F);
  n.localPort = static_cast<uint8_t>(get(d, IB_NODE_LOCAL_PORT_F));
  if (n.type != fabric::NodeType::kSwitch && (n.localPort == 0 || n.localPort > n.numPorts))
    return fabric::makeError("NodeInfo: LocalPortNum " + std::to_string(n.localPort) + " out of range");
  if (n.type == fabric::NodeType::kSwitch && n.localPort > n.numPorts)
    return fabric::makeError("NodeInfo: LocalPortNum " + std::to_string(n.localPort) + " out of range");
  return n;
}

void encodeNodeInfo(const NodeInfo& n, uint8_t* d) {
  set(d, IB_NODE_BASE_VERS_F, 1);
  set(d, IB_NODE_CLASS_VERS_F, 1);
  set(d, IB_NODE_TYPE_F, static_cast<uint32_t>(n.type));
  set(d, IB_NODE_NPORTS_F, n.numPorts);
  set64(d, IB_NODE_SYSTEM_GUID_F, n.systemGuid.value);
  set64(d, IB_NODE_GUID_F, n.nodeGuid.value);
  set64(d, IB_NODE_PORT_GUID_F, n.portGuid.value);
  set(d, IB_NODE_PARTITION_CAP_F, n.partitionCap);
  set(d, IB_NODE_DEVID_F, n.deviceId);
  set(d, IB_NODE_REVISION_F, n.revision);
  set(d, IB_NODE_LOCAL_PORT_F, n.localPort);
  set(d, IB_NODE_VENDORID_F, n.vendorId);
}

std::string decodeNodeDescription(const uint8_t* d) {
  char buf[kSmpDataSize];
  mad_decode_field(const_cast<uint8_t*>(d), IB_NODE_DESC_F, buf);
  std::string s(buf, strnlen(buf, sizeof buf));
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
  return s;
}

void encodeNodeDescription(const std::string& desc, uint8_t* d) {
  char buf[kSmpDataSize] = {};
  std::memcpy(buf, desc.data(), std::min(desc.size(), sizeof buf));
  mad_encode_field(d, IB_NODE_DESC_F, buf);
}

fabric::PortAttrs decodePortInfo(const uint8_t* d) {
  fabric::PortAttrs a;
  a.lid = fabric::Lid{static_cast<uint16_t>(get(d, IB_PORT_LID_F))};
  a.smLid = fabric::Lid{static_cast<uint16_t>(get(d, IB_PORT_SMLID_F))};
  a.lmc = static_cast<uint8_t>(get(d, IB_PORT_LMC_F));
  uint32_t state = get(d, IB_PORT_STATE_F);
  a.state = state >= 1 && state <= 4 ? static_cast<fabric::PortState>(state) : fabric::PortState::kDown;
  a.physState = static_cast<uint8_t>(get(d, IB_PORT_PHYS_STATE_F));
  a.widthEnabled = static_cast<uint8_t>(get(d, IB_PORT_LINK_WIDTH_ENABLED_F));
  a.widthSupported = static_cast<uint8_t>(get(d, IB_PORT_LINK_WIDTH_SUPPORTED_F));
  a.widthActive = static_cast<uint8_t>(get(d, IB_PORT_LINK_WIDTH_ACTIVE_F));
  a.speedEnabled = static_cast<uint8_t>(get(d, IB_PORT_LINK_SPEED_ENABLED_F));
  a.speedSupported = static_cast<uint8_t>(get(d, IB_PORT_LINK_SPEED_SUPPORTED_F));
  a.speedActive = static_cast<uint8_t>(get(d, IB_PORT_LINK_SPEED_ACTIVE_F));
  a.capMask = get(d, IB_PORT_CAPMASK_F);
  a.gidPrefix = mad_get_field64(const_cast<uint8_t*>(d), 0, IB_PORT_GID_PREFIX_F);
  // Extended speeds are valid only when CapabilityMask.IsExtendedSpeedsSupported (bit 14) is set.
  if (a.capMask & (1u << 14)) {
    a.speedExtActive = static_cast<uint8_t>(get(d, IB_PORT_LINK_SPEED_EXT_ACTIVE_F));
    a.speedExtSupported = static_cast<uint8_t>(get(d, IB_PORT_LINK_SPEED_EXT_SUPPORTED_F));
  }
  a.mtuCap = static_cast<uint8_t>(get(d, IB_PORT_MTU_CAP_F));
  a.neighborMtu = static_cast<uint8_t>(get(d, IB_PORT_NEIGHBOR_MTU_F));
  a.vlCap = static_cast<uint8_t>(get(d, IB_PORT_VL_CAP_F));
  a.operVls = static_cast<uint8_t>(get(d, IB_PORT_OPER_VLS_F));
  a.valid = true;
  return a;
}

uint8_t decodePortInfoLocalPort(const uint8_t* d) {
  return static_cast<uint8_t>(get(d, IB_PORT_LOCAL_PORT_F));
}
uint64_t decodePortInfoMkey(const uint8_t* d) {
  return get64(d, IB_PORT_MKEY_F);
}

MkeyInfo decodePortInfoMkeyInfo(const uint8_t* d) {
  return MkeyInfo{get64(d, IB_PORT_MKEY_F), static_cast<uint8_t>(get(d, IB_PORT_MKEY_PROT_BITS_F)),
                  static_cast<uint16_t>(get(d, IB_PORT_MKEY_LEASE_F))};
}

void setPortInfoMkey(uint8_t* d, const MkeyInfo& m) {
  set64(d, IB_PORT_MKEY_F, m.key);
  set(d, IB_PORT_MKEY_PROT_BITS_F, m.protectBits);
  set(d, IB_PORT_MKEY_LEASE_F, m.leasePeriod);
}

uint64_t getMadMkey(const MadPacket& mad) {
  return get64(mad.bytes.data(), IB_MAD_MKEY_F);
}
void setMadMkey(MadPacket& mad, uint64_t mkey) {
  set64(mad.bytes.data(), IB_MAD_MKEY_F, mkey);
}

void encodePortInfo(const fabric::PortAttrs& a, uint8_t* d) {
  set(d, IB_PORT_LID_F, a.lid.value);
  set(d, IB_PORT_SMLID_F, a.smLid.value);
  set(d, IB_PORT_LMC_F, a.lmc);
  set(d, IB_PORT_STATE_F, static_cast<uint32_t>(a.state));
  set(d, IB_PORT_PHYS_STATE_F, a.physState);
  set(d, IB_PORT_LINK_WIDTH_ENABLED_F, a.widthEnabled);
  set(d, IB_PORT_LINK_WIDTH_SUPPORTED_F, a.widthSupported);
  set(d, IB_PORT_LINK_WIDTH_ACTIVE_F, a.widthActive);
  set(d, IB_PORT_LINK_SPEED_ENABLED_F, a.speedEnabled);
  set(d, IB_PORT_LINK_SPEED_SUPPORTED_F, a.speedSupported);
  set(d, IB_PORT_LINK_SPEED_ACTIVE_F, a.speedActive);
  set(d, IB_PORT_CAPMASK_F, a.capMask);
  mad_set_field64(d, 0, IB_PORT_GID_PREFIX_F, a.gidPrefix);
  if (a.capMask & (1u << 14)) {
    set(d, IB_PORT_LINK_SPEED_EXT_ACTIVE_F, a.speedExtActive);
    set(d, IB_PORT_LINK_SPEED_EXT_SUPPORTED_F, a.speedExtSupported);
  }
  set(d, IB_PORT_MTU_CAP_F, a.mtuCap);
  set(d, IB_PORT_NEIGHBOR_MTU_F, a.neighborMtu);
  set(d, IB_PORT_VL_CAP_F, a.vlCap);
  set(d, IB_PORT_OPER_VLS_F, a.operVls);
}

void applyPortInfoSet(const PortInfoSet& s, uint8_t* d) {
  if (s.lid) set(d, IB_PORT_LID_F, *s.lid);
  if (s.smLid) set(d, IB_PORT_SMLID_F, *s.smLid);
  if (s.gidPrefix) mad_set_field64(d, 0, IB_PORT_GID_PREFIX_F, *s.gidPrefix);
  if (s.lmc) set(d, IB_PORT_LMC_F, *s.lmc);
  // State fields are commands on a Set: 0 means "no change". Speed/width enables are written back as read.
  set(d, IB_PORT_STATE_F, s.state.value_or(0));
  set(d, IB_PORT_PHYS_STATE_F, s.physState.value_or(0));
  if (s.neighborMtu) set(d, IB_PORT_NEIGHBOR_MTU_F, *s.neighborMtu);
  if (s.operVls) set(d, IB_PORT_OPER_VLS_F, *s.operVls);
  if (s.subnetTimeout) set(d, IB_PORT_SUBN_TIMEOUT_F, *s.subnetTimeout);
  if (s.hoqLife) set(d, IB_PORT_HOQ_LIFE_F, *s.hoqLife);
  if (s.clientReregister) set(d, IB_PORT_CLIENT_REREG_F, *s.clientReregister);
  if (s.mkey) setPortInfoMkey(d, *s.mkey);
  if (s.partitionEnforce) {
    set(d, IB_PORT_PART_EN_INB_F, *s.partitionEnforce);
    set(d, IB_PORT_PART_EN_OUTB_F, *s.partitionEnforce);
  }
  // LinkSpeedActive / LinkWidthActive are read-only; a Set with speed enable 0 means "no change".
}

bool portInfoPartitionEnforced(const uint8_t* d) {
  return get(d, IB_PORT_PART_EN_INB_F) && get(d, IB_PORT_PART_EN_OUTB_F);
}

void setPortInfoState(uint8_t* d, fabric::PortState state, uint8_t physState) {
  set(d, IB_PORT_STATE_F, static_cast<uint32_t>(state));
  set(d, IB_PORT_PHYS_STATE_F, physState);
}

void clearPortInfoClientReregister(uint8_t* d) {
  set(d, IB_PORT_CLIENT_REREG_F, 0);
}

fabric::SwitchAttrs decodeSwitchInfo(const uint8_t* d) {
  fabric::SwitchAttrs s;
  s.linearFdbCap = static_cast<uint16_t>(get(d, IB_SW_LINEAR_FDB_CAP_F));
  s.linearFdbTop = static_cast<uint16_t>(get(d, IB_SW_LINEAR_FDB_TOP_F));
  s.multicastFdbCap = static_cast<uint16_t>(get(d, IB_SW_MCAST_FDB_CAP_F));
  s.partitionEnforcementCap = static_cast<uint16_t>(get(d, IB_SW_PARTITION_ENFORCE_CAP_F));
  s.lifeTime = static_cast<uint8_t>(get(d, IB_SW_LIFE_TIME_F));
  s.portStateChange = get(d, IB_SW_STATE_CHANGE_F);
  s.enhancedPort0 = get(d, IB_SW_ENHANCED_PORT0_F);
  s.optimizedSlToVl = get(d, IB_SW_OPT_SLTOVL_MAPPING_F) & 1;
  return s;
}

void encodeSwitchInfo(const fabric::SwitchAttrs& s, uint8_t* d) {
  set(d, IB_SW_LINEAR_FDB_CAP_F, s.linearFdbCap);
  set(d, IB_SW_LINEAR_FDB_TOP_F, s.linearFdbTop);
  set(d, IB_SW_MCAST_FDB_CAP_F, s.multicastFdbCap);
  set(d, IB_SW_PARTITION_ENFORCE_CAP_F, s.partitionEnforcementCap);
  set(d, IB_SW_LIFE_TIME_F, s.lifeTime);
  set(d, IB_SW_STATE_CHANGE_F, s.portStateChange);
  set(d, IB_SW_ENHANCED_PORT0_F, s.enhancedPort0);
  set(d, IB_SW_OPT_SLTOVL_MAPPING_F, s.optimizedSlToVl ? 1 : 0);
}

void applySwitchInfoSet(const SwitchInfoSet& s, uint8_t* d) {
  if (s.linearFdbTop) set(d, IB_SW_LINEAR_FDB_TOP_F, *s.linearFdbTop);
  if (s.lifeTime) set(d, IB_SW_LIFE_TIME_F, *s.lifeTime);
  if (s.portStateChange) set(d, IB_SW_STATE_CHANGE_F, *s.portStateChange);
}

LftBlock decodeLftBlock(const uint8_t* d) {
  LftBlock b{};
  mad_get_array(const_cast<uint8_t*>(d), 0, IB_LINEAR_FORW_TBL_F, b.data());
  return b;
}

void encodeLftBlock(const LftBlock& b, uint8_t* d) {
  mad_set_array(d, 0, IB_LINEAR_FORW_TBL_F, const_cast<uint8_t*>(b.data()));
}

SmInfo decodeSmInfo(const uint8_t* d) {
  SmInfo s;
  s.guid = fabric::Guid{get64(d, IB_SMINFO_GUID_F)};
  s.smKey = get64(d, IB_SMINFO_KEY_F);
  s.actCount = get(d, IB_SMINFO_ACT_F);
  s.priority = static_cast<uint8_t>(get(d, IB_SMINFO_PRIO_F));
  s.state = static_cast<uint8_t>(get(d, IB_SMINFO_STATE_F));
  return s;
}

void encodeSmInfo(const SmInfo& s, uint8_t* d) {
  set64(d, IB_SMINFO_GUID_F, s.guid.value);
  set64(d, IB_SMINFO_KEY_F, s.smKey);
  set(d, IB_SMINFO_ACT_F, s.actCount);
  set(d, IB_SMINFO_PRIO_F, s.priority);
  set(d, IB_SMINFO_STATE_F, s.state);
}

// Entries are big-endian 16-bit masks; libibmad has the block only as one opaque array field.
MftBlock decodeMftBlock(const uint8_t* d) {
  MftBlock b{};
  for (unsigned i = 0; i < kMftBlockMlids; ++i) b[i] = static_cast<uint16_t>(d[2 * i] << 8 | d[2 * i + 1]);
  return b;
}

void encodeMftBlock(const MftBlock& b, uint8_t* d) {
  for (unsigned i = 0; i < kMftBlockMlids; ++i) {
    d[2 * i] = static_cast<uint8_t>(b[i] >> 8);
    d[2 * i + 1] = static_cast<uint8_t>(b[i]);
  }
}

PkeyBlock decodePkeyBlock(const uint8_t* d) {
  PkeyBlock b{};
  for (unsigned i = 0; i < kPkeyBlockEntries; ++i) b[i] = static_cast<uint16_t>(d[2 * i] << 8 | d[2 * i + 1]);
  return b;
}

void encodePkeyBlock(const PkeyBlock& b, uint8_t* d) {
  for (unsigned i = 0; i < kPkeyBlockEntries; ++i) {
    d[2 * i] = static_cast<uint8_t>(b[i] >> 8);
    d[2 * i + 1] = static_cast<uint8_t>(b[i]);
  }
}

}  // namespace ibsm::mad
