#include "mad/sa.h"

#include <infiniband/mad.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "mad/fields.h"

namespace ibsm::mad {

namespace {
using fields::get;
using fields::get64;
using fields::set;
using fields::set64;

// Big-endian helpers for the fields libibmad has no table for.
void put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
void put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}
void put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (56 - 8 * i));
}
uint16_t take16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] << 8 | p[1]);
}
uint32_t take32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) << 24 | static_cast<uint32_t>(p[1]) << 16 |
         static_cast<uint32_t>(p[2]) << 8 | p[3];
}
uint64_t take64(const uint8_t* p) {
  return static_cast<uint64_t>(take32(p)) << 32 | take32(p + 4);
}

// Component-mask field widths (bits), in mask-bit order, from the record layouts of IBA 15.2.5.
constexpr uint16_t kPortInfoWidths[] = {64, 64, 16, 16, 32, 16, 16, 8, 8, 8, 8, 4, 4, 4, 4, 2,
                                        3,  3,  4,  4,  4,  4,  4,  4, 4, 8, 8, 4, 4, 8, 4, 4,
                                        1,  3,  4,  16, 16, 16, 5,  3, 2, 6, 4, 4, 8, 8};
constexpr auto withPrefix(std::initializer_list<uint16_t> head, std::span<const uint16_t> tail) {
  std::array<uint16_t, 64> out{};
  size_t n = 0;
  for (uint16_t w : head) out[n++] = w;
  for (uint16_t w : tail) out[n++] = w;
  return std::pair{out, n};
}
constexpr uint16_t kNodeRecordWidths[] = {16, 16, 8, 8, 8, 8, 64, 64, 64, 16, 16, 32, 8, 24, 512};
constexpr auto kPirWidths = withPrefix({16, 8, 8}, kPortInfoWidths);
constexpr uint16_t kLinkRecordWidths[] = {16, 8, 8, 16};
constexpr uint16_t kSwitchInfoRecordWidths[] = {16, 16, 16, 16, 16, 16, 8, 8, 8, 8,
                                                16, 1,  3,  1,  1,  1,  1, 1, 1, 16};
constexpr uint16_t kLftRecordWidths[] = {16, 16};
constexpr uint16_t kMftRecordWidths[] = {16, 4, 3, 9, 32};
constexpr uint16_t kGuidInfoRecordWidths[] = {16, 8, 8, 32, 64, 64, 64, 64, 64, 64, 64, 64};
constexpr uint16_t kSmInfoRecordWidths[] = {16, 16, 64, 64, 32, 4, 4};
constexpr uint16_t kPathRecordWidths[] = {32, 32, 128, 128, 16, 16, 1, 3, 20, 8, 8, 1,
                                          7,  16, 12,  4,   2,  6,  2, 6, 2,  6, 8};
constexpr uint16_t kServiceRecordWidths[] = {64, 128, 16, 16, 32, 128, 512, 8,  8,  8,  8,  8,  8,
                                             8,  8,   8,  8,  8,  8,   8,   8,  8,  8,  16, 16, 16,
                                             16, 16,  16, 16, 16, 32,  32,  32, 32, 64, 64};
constexpr uint16_t kInformInfoRecordWidths[] = {128, 16, 48};
constexpr uint16_t kPkeyTableRecordWidths[] = {16, 16, 8, 24, 512};

bool bitsEqual(const uint8_t* a, const uint8_t* b, size_t bitOff, size_t bits) {
  for (size_t i = bitOff; i < bitOff + bits; ++i) {
    uint8_t m = static_cast<uint8_t>(0x80 >> (i % 8));
    if ((a[i / 8] & m) != (b[i / 8] & m)) return false;
  }
  return true;
}
}  // namespace

SaHeader decodeSaHeader(const MadPacket& mad) {
  const uint8_t* b = mad.bytes.data();
  return SaHeader{get64(b, IB_SA_MKEY_F), static_cast<uint16_t>(get(b, IB_SA_ATTROFFS_F)),
                  get64(b, IB_SA_COMPMASK_F)};
}

void encodeSaHeader(const SaHeader& h, MadPacket& mad) {
  uint8_t* b = mad.bytes.data();
  set64(b, IB_SA_MKEY_F, h.smKey);
  set(b, IB_SA_ATTROFFS_F, h.attrOffset);
  set64(b, IB_SA_COMPMASK_F, h.compMask);
}

RmppHeader decodeRmpp(const MadPacket& mad) {
  const uint8_t* b = mad.bytes.data();
  RmppHeader h;
  h.version = static_cast<uint8_t>(get(b, IB_SA_RMPP_VERS_F));
  h.type = static_cast<uint8_t>(get(b, IB_SA_RMPP_TYPE_F));
  h.respTime = static_cast<uint8_t>(get(b, IB_SA_RMPP_RESP_F));
  h.flags = static_cast<uint8_t>(get(b, IB_SA_RMPP_FLAGS_F));
  h.status = static_cast<uint8_t>(get(b, IB_SA_RMPP_STATUS_F));
  h.segNum = get(b, IB_SA_RMPP_SEGNUM_F);
  h.lenOrWindow = get(b, IB_SA_RMPP_LEN_F);
  return h;
}

void encodeRmpp(const RmppHeader& h, MadPacket& mad) {
  uint8_t* b = mad.bytes.data();
  set(b, IB_SA_RMPP_VERS_F, h.version);
  set(b, IB_SA_RMPP_TYPE_F, h.type);
  set(b, IB_SA_RMPP_RESP_F, h.respTime);
  set(b, IB_SA_RMPP_FLAGS_F, h.flags);
  set(b, IB_SA_RMPP_STATUS_F, h.status);
  set(b, IB_SA_RMPP_SEGNUM_F, h.segNum);
  set(b, IB_SA_RMPP_LEN_F, h.lenOrWindow);
}

MadPacket makeSaMad(uint8_t method, uint16_t attrId, uint32_t attrMod) {
  MadPacket mad;
  uint8_t* b = mad.bytes.data();
  set(b, IB_MAD_BASEVER_F, 1);
  set(b, IB_MAD_MGMTCLASS_F, kClassSubnAdm);
  set(b, IB_MAD_CLASSVER_F, kSaClassVersion);
  set(b, IB_MAD_METHOD_F, method & 0x7f);
  set(b, IB_MAD_RESPONSE_F, (method & kResponseBit) ? 1 : 0);
  set(b, IB_MAD_ATTRID_F, attrId);
  set(b, IB_MAD_ATTRMOD_F, attrMod);
  return mad;
}

MadPacket makeSaResponse(const MadPacket& req, uint8_t method, uint16_t status) {
  MadPacket r = req;
  uint8_t* b = r.bytes.data();
  set(b, IB_MAD_METHOD_F, method & 0x7f);
  set(b, IB_MAD_RESPONSE_F, 1);
  set(b, IB_MAD_STATUS_F, status);
  std::fill(b + 24, b + 36, 0);  // RMPP header: none unless the answer is segmented
  r.size = kMadSize;
  r.status = 0;
  return r;
}

void setPortInfoRecordExtras(uint8_t* pi, uint8_t localPort, uint64_t gidPrefix) {
  set(pi, IB_PORT_LOCAL_PORT_F, localPort);
  set64(pi, IB_PORT_GID_PREFIX_F, gidPrefix);
}

std::vector<MadPacket> rmppSegments(const MadPacket& header, std::span<const uint8_t> payload) {
  size_t count = std::max<size_t>(1, (payload.size() + kSaDataSize - 1) / kSaDataSize);
  std::vector<MadPacket> out;
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    MadPacket seg = header;
    std::fill(seg.bytes.begin() + kSaHeaderSize, seg.bytes.end(), 0);
    size_t off = i * kSaDataSize;
    size_t n = off < payload.size() ? std::min(kSaDataSize, payload.size() - off) : 0;
    if (n) std::memcpy(saData(seg), payload.data() + off, n);
    RmppHeader r;
    r.version = 1;
    r.type = kRmppData;
    r.flags = kRmppActive | (i == 0 ? kRmppFirst : 0) | (i + 1 == count ? kRmppLast : 0);
    r.segNum = static_cast<uint32_t>(i + 1);
    // PayloadLength: the first segment carries the total, the last the bytes it holds (IBA 13.6.2.3), both
    // counting the SA header (20 bytes) of every segment.
    if (i == 0)
      r.lenOrWindow = static_cast<uint32_t>(payload.size() + count * 20);
    else if (i + 1 == count)
      r.lenOrWindow = static_cast<uint32_t>(n + 20);
    encodeRmpp(r, seg);
    // The last segment is as long as what it carries (OpenSM sends header + records, too): a receiver without
    // RMPP (umad2sim) counts records by the MAD's length, and would take the zero padding for records with
    // MGID :: (osmtest -f m: "MCG MGIDs are the same"). The kernel pads a short MAD to 256 bytes on the wire.
    seg.size = i + 1 == count ? kSaHeaderSize + n : kMadSize;
    out.push_back(seg);
  }
  return out;
}

std::span<const uint16_t> recordFieldWidths(uint16_t attrId) {
  switch (attrId) {
    case kSaAttrNodeRecord:
      return kNodeRecordWidths;
    case kSaAttrPortInfoRecord:
      return {kPirWidths.first.data(), kPirWidths.second};
    case kSaAttrLinkRecord:
      return kLinkRecordWidths;
    case kSaAttrSwitchInfoRecord:
      return kSwitchInfoRecordWidths;
    case kSaAttrLftRecord:
      return kLftRecordWidths;
    case kSaAttrMftRecord:
      return kMftRecordWidths;
    case kSaAttrGuidInfoRecord:
      return kGuidInfoRecordWidths;
    case kSaAttrSmInfoRecord:
      return kSmInfoRecordWidths;
    case kSaAttrPathRecord:
      return kPathRecordWidths;
    case kSaAttrServiceRecord:
      return kServiceRecordWidths;
    case kSaAttrInformInfoRecord:
      return kInformInfoRecordWidths;
    case kSaAttrPkeyTableRecord:
      return kPkeyTableRecordWidths;
    default:
      return {};
  }
}

size_t recordSize(uint16_t attrId) {
  switch (attrId) {
    case kSaAttrNodeRecord:
      return kNodeRecordSize;
    case kSaAttrPortInfoRecord:
      return kPortInfoRecordSize;
    case kSaAttrLinkRecord:
      return kLinkRecordSize;
    case kSaAttrSwitchInfoRecord:
      return kSwitchInfoRecordSize;
    case kSaAttrLftRecord:
      return kLftRecordSize;
    case kSaAttrMftRecord:
      return kMftRecordSize;
    case kSaAttrGuidInfoRecord:
      return kGuidInfoRecordSize;
    case kSaAttrSmInfoRecord:
      return kSmInfoRecordSize;
    case kSaAttrPathRecord:
      return kPathRecordSize;
    case kSaAttrServiceRecord:
      return kServiceRecordSize;
    case kSaAttrInformInfoRecord:
      return kInformInfoRecordSize;
    case kSaAttrPkeyTableRecord:
      return kPkeyTableRecordSize;
    case kSaAttrInformInfo:
      return kInformInfoSize;
    case kSaAttrClassPortInfo:
      return kClassPortInfoSize;
    default:
      return 0;
  }
}

bool recordMatches(uint16_t attrId, uint64_t mask, const uint8_t* query, const uint8_t* candidate) {
  auto widths = recordFieldWidths(attrId);
  size_t off = 0;
  for (size_t i = 0; i < widths.size() && i < 64; off += widths[i], ++i)
    if ((mask >> i & 1) && !bitsEqual(query, candidate, off, widths[i])) return false;
  return true;
}

void encodeNodeRecord(uint16_t lid, const NodeInfo& info, const std::string& desc, uint8_t* rec) {
  std::memset(rec, 0, kNodeRecordSize);
  set(rec, IB_SA_NR_LID_F, lid);
  encodeNodeInfo(info, rec + 4);
  encodeNodeDescription(desc, rec + 44);
}

NodeRecordView decodeNodeRecord(const uint8_t* rec) {
  NodeRecordView v{static_cast<uint16_t>(get(rec, IB_SA_NR_LID_F)), {}, decodeNodeDescription(rec + 44)};
  v.info.type = static_cast<fabric::NodeType>(get(rec, IB_SA_NR_TYPE_F));
  v.info.numPorts = static_cast<uint8_t>(get(rec, IB_SA_NR_NPORTS_F));
  v.info.systemGuid = fabric::Guid{get64(rec, IB_SA_NR_SYSTEM_GUID_F)};
  v.info.nodeGuid = fabric::Guid{get64(rec, IB_SA_NR_GUID_F)};
  v.info.portGuid = fabric::Guid{get64(rec, IB_SA_NR_PORT_GUID_F)};
  v.info.partitionCap = static_cast<uint16_t>(get(rec, IB_SA_NR_PARTITION_CAP_F));
  v.info.deviceId = static_cast<uint16_t>(get(rec, IB_SA_NR_DEVID_F));
  v.info.revision = get(rec, IB_SA_NR_REVISION_F);
  v.info.localPort = static_cast<uint8_t>(get(rec, IB_SA_NR_LOCAL_PORT_F));
  v.info.vendorId = get(rec, IB_SA_NR_VENDORID_F);
  return v;
}

uint32_t portInfoCapMask(const uint8_t* pi) {
  return get(pi, IB_PORT_CAPMASK_F);
}

void encodePortInfoRecord(uint16_t lid, uint8_t port, const uint8_t* portInfo, uint8_t* rec) {
  std::memset(rec, 0, kPortInfoRecordSize);
  put16(rec, lid);
  rec[2] = port;
  std::memcpy(rec + 4, portInfo, 64);
}

void encodeLinkRecord(const LinkRecord& r, uint8_t* rec) {
  std::memset(rec, 0, kLinkRecordSize);
  put16(rec, r.fromLid);
  rec[2] = r.fromPort;
  rec[3] = r.toPort;
  put16(rec + 4, r.toLid);
}

LinkRecord decodeLinkRecord(const uint8_t* rec) {
  return LinkRecord{take16(rec), rec[2], rec[3], take16(rec + 4)};
}

void encodeSwitchInfoRecord(uint16_t lid, const uint8_t* switchInfo, uint8_t* rec) {
  std::memset(rec, 0, kSwitchInfoRecordSize);
  put16(rec, lid);
  std::memcpy(rec + 4, switchInfo, kSwitchInfoRecordSize - 4);
}

void encodeLftRecord(uint16_t lid, uint16_t block, const uint8_t* ports64, uint8_t* rec) {
  std::memset(rec, 0, kLftRecordSize);
  put16(rec, lid);
  put16(rec + 2, block);
  std::memcpy(rec + 4, ports64, 64);
}

void encodeMftRecord(uint16_t lid, uint32_t attrMod, const MftBlock& block, uint8_t* rec) {
  std::memset(rec, 0, kMftRecordSize);
  put16(rec, lid);
  put16(rec + 2, static_cast<uint16_t>((attrMod >> 28) << 12 | (attrMod & 0x1FF)));
  encodeMftBlock(block, rec + 8);
}

void encodeGuidInfoRecord(uint16_t lid, uint8_t block, const std::vector<uint64_t>& guids, uint8_t* rec) {
  std::memset(rec, 0, kGuidInfoRecordSize);
  set(rec, IB_SA_GIR_LID_F, lid);
  set(rec, IB_SA_GIR_BLOCKNUM_F, block);
  for (size_t i = 0; i < guids.size() && i < 8; ++i) put64(rec + 8 + 8 * i, guids[i]);
}

void encodeSmInfoRecord(uint16_t lid, const SmInfo& info, uint8_t* rec) {
  std::memset(rec, 0, kSmInfoRecordSize);
  put16(rec, lid);
  encodeSmInfo(info, rec + 4);
}

SmInfo decodeSmInfoRecord(const uint8_t* rec, uint16_t* lid) {
  if (lid) *lid = take16(rec);
  return decodeSmInfo(rec + 4);
}

void encodePathRecord(const PathRecord& r, uint8_t* rec) {
  std::memset(rec, 0, kPathRecordSize);
  put64(rec, r.serviceId);
  putGid(rec + 8, r.dgid);
  putGid(rec + 24, r.sgid);
  set(rec, IB_SA_PR_DLID_F, r.dlid);
  set(rec, IB_SA_PR_SLID_F, r.slid);
  put32(rec + 44, (r.rawTraffic ? 1u << 31 : 0) | (r.flowLabel & 0xFFFFF) << 8 | r.hopLimit);
  rec[48] = r.tclass;
  rec[49] = static_cast<uint8_t>((r.reversible ? 0x80 : 0) | (r.numbPath & 0x7F));
  put16(rec + 50, r.pkey);
  put16(rec + 52, static_cast<uint16_t>((r.qosClass & 0xFFF) << 4 | (r.sl & 0xF)));
  rec[54] = static_cast<uint8_t>(r.mtuSelector << 6 | (r.mtu & 0x3F));
  rec[55] = static_cast<uint8_t>(r.rateSelector << 6 | (r.rate & 0x3F));
  rec[56] = static_cast<uint8_t>(r.pltSelector << 6 | (r.packetLifeTime & 0x3F));
  rec[57] = r.preference;
}

PathRecord decodePathRecord(const uint8_t* rec) {
  PathRecord r;
  r.serviceId = take64(rec);
  r.dgid = takeGid(rec + 8);
  r.sgid = takeGid(rec + 24);
  r.dlid = static_cast<uint16_t>(get(rec, IB_SA_PR_DLID_F));
  r.slid = static_cast<uint16_t>(get(rec, IB_SA_PR_SLID_F));
  uint32_t w = take32(rec + 44);
  r.rawTraffic = w >> 31;
  r.flowLabel = (w >> 8) & 0xFFFFF;
  r.hopLimit = static_cast<uint8_t>(w);
  r.tclass = rec[48];
  r.reversible = rec[49] & 0x80;
  r.numbPath = rec[49] & 0x7F;
  r.pkey = take16(rec + 50);
  r.qosClass = take16(rec + 52) >> 4;
  r.sl = rec[53] & 0xF;
  r.mtuSelector = rec[54] >> 6;
  r.mtu = rec[54] & 0x3F;
  r.rateSelector = rec[55] >> 6;
  r.rate = rec[55] & 0x3F;
  r.pltSelector = rec[56] >> 6;
  r.packetLifeTime = rec[56] & 0x3F;
  r.preference = rec[57];
  return r;
}

fabric::Result<MultiPathRequest> decodeMultiPathRecord(const uint8_t* rec, size_t len) {
  // Layout (IBA 15.2.5.20): RawTraffic/FlowLabel/HopLimit 0..3, TClass 4, Reversible/NumbPath 5, P_Key 6..7,
  // QoSClass/SL 8..9, MTU 10, Rate 11, PacketLifeTime 12, ServiceID bits 56-63 at 13, IndependenceSelector
  // 14, SGIDCount 15, DGIDCount 16, ServiceID bits 0-55 at 17..23, then the GIDs from byte 24 (libibmad's
  // IB_SA_MP_GID0_F, as OpenSM's osmtest sends them).
  constexpr size_t kGids = 24;
  if (len < kGids) return fabric::makeError("MultiPathRecord too short");
  MultiPathRequest m;
  m.base.tclass = rec[4];
  m.numbPath = rec[5] & 0x7F;
  m.base.pkey = take16(rec + 6);
  m.base.sl = rec[9] & 0xF;
  m.base.mtuSelector = rec[10] >> 6;
  m.base.mtu = rec[10] & 0x3F;
  m.base.rateSelector = rec[11] >> 6;
  m.base.rate = rec[11] & 0x3F;
  m.base.pltSelector = rec[12] >> 6;
  m.base.packetLifeTime = rec[12] & 0x3F;
  m.sgidCount = static_cast<uint8_t>(get(rec, IB_SA_MP_NSRC_F));
  m.dgidCount = static_cast<uint8_t>(get(rec, IB_SA_MP_NDEST_F));
  size_t need = kGids + 16 * (static_cast<size_t>(m.sgidCount) + m.dgidCount);
  if (need > len) return fabric::makeError("MultiPathRecord GID counts exceed the MAD");
  for (size_t i = 0; i < m.sgidCount; ++i) m.sgids.push_back(takeGid(rec + kGids + 16 * i));
  for (size_t i = 0; i < m.dgidCount; ++i) m.dgids.push_back(takeGid(rec + kGids + 16 * (m.sgidCount + i)));
  return m;
}

void encodeServiceRecord(const ServiceRecord& r, uint8_t* rec) {
  std::memset(rec, 0, kServiceRecordSize);
  put64(rec, r.id);
  putGid(rec + 8, r.gid);
  set(rec, IB_SA_SR_PKEY_F, r.pkey);
  set(rec, IB_SA_SR_LEASE_F, r.lease);
  std::memcpy(rec + 32, r.key.data(), 16);
  std::memcpy(rec + 48, r.name.data(), 64);
  std::memcpy(rec + 112, r.data.data(), 64);
}

ServiceRecord decodeServiceRecord(const uint8_t* rec) {
  ServiceRecord r;
  r.id = take64(rec);
  r.gid = takeGid(rec + 8);
  r.pkey = static_cast<uint16_t>(get(rec, IB_SA_SR_PKEY_F));
  r.lease = get(rec, IB_SA_SR_LEASE_F);
  std::memcpy(r.key.data(), rec + 32, 16);
  std::memcpy(r.name.data(), rec + 48, 64);
  std::memcpy(r.data.data(), rec + 112, 64);
  return r;
}

void encodePkeyTableRecord(const PkeyTableRecord& r, uint8_t* rec) {
  std::memset(rec, 0, kPkeyTableRecordSize);
  put16(rec, r.lid);
  put16(rec + 2, r.block);
  rec[4] = r.port;
  encodePkeyBlock(r.pkeys, rec + 8);
}

PkeyTableRecord decodePkeyTableRecord(const uint8_t* rec) {
  return PkeyTableRecord{take16(rec), take16(rec + 2), rec[4], decodePkeyBlock(rec + 8)};
}

void encodeInformInfo(const InformInfo& i, uint8_t* rec) {
  std::memset(rec, 0, kInformInfoSize);
  putGid(rec, i.gid);
  put16(rec + 16, i.lidBegin);
  put16(rec + 18, i.lidEnd);
  rec[22] = i.isGeneric;
  rec[23] = i.subscribe;
  put16(rec + 24, i.type);
  put16(rec + 26, i.trapNumber);
  put32(rec + 28, (i.qpn & 0xFFFFFF) << 8 | (i.respTimeValue & 0x1F));
  put32(rec + 32, i.producerType & 0xFFFFFF);
}

InformInfo decodeInformInfo(const uint8_t* rec) {
  InformInfo i;
  i.gid = takeGid(rec);
  i.lidBegin = take16(rec + 16);
  i.lidEnd = take16(rec + 18);
  i.isGeneric = rec[22] & 1;
  i.subscribe = rec[23] & 1;
  i.type = take16(rec + 24);
  i.trapNumber = take16(rec + 26);
  uint32_t w = take32(rec + 28);
  i.qpn = w >> 8;
  i.respTimeValue = w & 0x1F;
  i.producerType = take32(rec + 32) & 0xFFFFFF;
  return i;
}

void encodeInformInfoRecord(const Gid& subscriber, uint16_t enumeration, const InformInfo& i, uint8_t* rec) {
  std::memset(rec, 0, kInformInfoRecordSize);
  putGid(rec, subscriber);
  put16(rec + 16, enumeration);
  encodeInformInfo(i, rec + 24);
}

void encodeNotice(const Notice& n, const Gid* gid, uint8_t* rec) {
  std::memset(rec, 0, kNoticeSize);
  set(rec, IB_NOTICE_IS_GENERIC_F, 1);
  set(rec, IB_NOTICE_TYPE_F, n.type);
  set(rec, IB_NOTICE_PRODUCER_F, n.producerType);
  set(rec, IB_NOTICE_TRAP_NUMBER_F, n.trapNumber);
  set(rec, IB_NOTICE_ISSUER_LID_F, n.issuerLid);
  // DataDetails start at byte 10 (54 bytes); for 64/65 they are 6 reserved bytes and the GID.
  if (gid)
    putGid(rec + 16, *gid);
  else
    set(rec, IB_NOTICE_DATA_LID_F, n.lidAddr);
}

void encodeClassPortInfo(const ClassPortInfo& c, uint8_t* rec) {
  std::memset(rec, 0, kClassPortInfoSize);
  set(rec, IB_CPI_BASEVER_F, 1);
  set(rec, IB_CPI_CLASSVER_F, kSaClassVersion);
  set(rec, IB_CPI_CAPMASK_F, c.capMask);
  set(rec, IB_CPI_RESP_TIME_VALUE_F, c.respTimeValue);
  set(rec, IB_CPI_TRAP_LID_F, c.trapLid);
}

unsigned rateTenthsGbps(const fabric::PortAttrs& a) {
  unsigned lanes = 0;
  switch (a.widthActive) {
    case 1:
      lanes = 1;
      break;
    case 2:
      lanes = 4;
      break;
    case 4:
      lanes = 8;
      break;
    case 8:
      lanes = 12;
      break;
    case 16:
      lanes = 2;
      break;
    default:
      lanes = 4;
  }
  unsigned lane = 25;  // SDR
  if (a.speedExtActive & 4)
    lane = 500;
  else if (a.speedExtActive & 2)
    lane = 250;
  else if (a.speedExtActive & 1)
    lane = 140;
  else if (a.speedActive & 4)
    lane = 100;
  else if (a.speedActive & 2)
    lane = 50;
  return lanes * lane;
}

namespace {
constexpr std::pair<unsigned, uint8_t> kRates[] = {
    {25, 2},    {50, 5},    {100, 3},   {140, 11},  {200, 6},   {250, 15},  {280, 19},
    {300, 4},   {400, 7},   {500, 20},  {560, 12},  {600, 8},   {800, 9},   {1000, 16},
    {1120, 13}, {1200, 10}, {1680, 14}, {2000, 17}, {3000, 18}, {4000, 21}, {6000, 22}};
}  // namespace

uint8_t rateEnum(unsigned tenths) {
  uint8_t best = 2;
  for (auto [t, e] : kRates)
    if (t <= tenths) best = e;
  return best;
}
unsigned enumTenths(uint8_t e) {
  for (auto [t, x] : kRates)
    if (x == e) return t;
  return 0;
}

void putGid(uint8_t* p, const Gid& g) {
  put64(p, g.prefix);
  put64(p + 8, g.guid);
}
Gid takeGid(const uint8_t* p) {
  return Gid{take64(p), take64(p + 8)};
}

}  // namespace ibsm::mad
