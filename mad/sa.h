// Subnet Administration (class 0x03) MAD layout and record codecs (IBA 15.2). Fields libibmad has tables for
// (SA header, RMPP header, NodeRecord, PathRecord endpoints, ServiceRecord, ClassPortInfo, Notice) go through
// mad_get_field/mad_set_field; the rest is written here from the spec's byte layouts. Records are handled as
// their wire bytes: component-mask matching compares the masked bit ranges of a query record with a candidate
// (IBA 15.2.5.x: a record matches when every masked field is equal), driven by a per-record field table.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "fabric/ids.h"
#include "fabric/result.h"
#include "fabric/topology.h"
#include "mad/mad_packet.h"
#include "mad/notice.h"
#include "mad/smp.h"

namespace ibsm::mad {

inline constexpr size_t kSaHeaderSize = 56;  // common MAD header 24 + RMPP 12 + SM_Key 8 + offset 4 + mask 8
inline constexpr size_t kSaDataSize = kMadSize - kSaHeaderSize;  // 200
inline constexpr uint8_t kSaClassVersion = 2;
inline constexpr uint64_t kDefaultGidPrefix = 0xfe80000000000000ULL;

enum SaMethod : uint8_t {
  kSaGetMulti = 0x14,
  kSaGetTraceTable = 0x13,
  kSaDelete = 0x15,
  kSaGetMultiResp = 0x94,
  kSaDeleteResp = 0x95,
};

enum SaAttr : uint16_t {
  kSaAttrClassPortInfo = 0x01,
  kSaAttrNotice = 0x02,
  kSaAttrInformInfo = 0x03,
  kSaAttrNodeRecord = 0x11,
  kSaAttrPortInfoRecord = 0x12,
  kSaAttrSwitchInfoRecord = 0x14,
  kSaAttrLftRecord = 0x15,
  kSaAttrMftRecord = 0x17,
  kSaAttrSmInfoRecord = 0x18,
  kSaAttrLinkRecord = 0x20,
  kSaAttrGuidInfoRecord = 0x30,
  kSaAttrServiceRecord = 0x31,
  kSaAttrPkeyTableRecord = 0x33,
  kSaAttrPathRecord = 0x35,
  kSaAttrMcMemberRecord = 0x38,
  kSaAttrMultiPathRecord = 0x3A,
  kSaAttrInformInfoRecord = 0xF3,
};

// MAD status (IBA 13.4.7.1 bits 2-4 class independent, 15.2.1.3 bits 8-15 SA specific).
enum SaStatus : uint16_t {
  kStatusOk = 0,
  kStatusBadVersion = 0x0004,
  kStatusMethodUnsupported = 0x0008,
  kStatusMethodAttrUnsupported = 0x000C,
  kStatusInvalidField = 0x001C,
  kStatusNoResources = 0x0100,
  kStatusReqInvalid = 0x0200,
  kStatusNoRecords = 0x0300,
  kStatusTooManyRecords = 0x0400,
  kStatusInvalidGid = 0x0500,
  kStatusInsufficientComponents = 0x0600,
  kStatusDenied = 0x0700,
};

struct SaHeader {
  uint64_t smKey = 0;
  uint16_t attrOffset = 0;  // in 8-byte words
  uint64_t compMask = 0;
};
SaHeader decodeSaHeader(const MadPacket& mad);
void encodeSaHeader(const SaHeader& h, MadPacket& mad);

enum RmppType : uint8_t { kRmppNone = 0, kRmppData = 1, kRmppAck = 2, kRmppStop = 3, kRmppAbort = 4 };
enum RmppFlag : uint8_t { kRmppActive = 1, kRmppFirst = 2, kRmppLast = 4 };

struct RmppHeader {
  uint8_t version = 0, type = 0, respTime = 0, flags = 0, status = 0;
  uint32_t segNum = 0;
  uint32_t lenOrWindow =
      0;  // DATA: payload length (first: total, last: in this segment); ACK: new window last
  bool active() const { return flags & kRmppActive; }
};
RmppHeader decodeRmpp(const MadPacket& mad);
void encodeRmpp(const RmppHeader& h, MadPacket& mad);

// A new SA MAD (class 0x03, version 2) with the given method/attribute and a zeroed SA header.
MadPacket makeSaMad(uint8_t method, uint16_t attrId, uint32_t attrMod = 0);
// The response to an SA request: same TID, attribute and address, the given method and status, no RMPP.
MadPacket makeSaResponse(const MadPacket& request, uint8_t method, uint16_t status);
inline uint8_t* saData(MadPacket& m) {
  return m.bytes.data() + kSaHeaderSize;
}
inline const uint8_t* saData(const MadPacket& m) {
  return m.bytes.data() + kSaHeaderSize;
}

// Splits a response payload (records laid out at recordStride bytes each) into RMPP DATA segments of 200
// bytes, copying the common and SA headers from header. A payload of 0 bytes gives one segment.
std::vector<MadPacket> rmppSegments(const MadPacket& header, std::span<const uint8_t> payload);

// Link rates: the data rate of a port's active link in tenths of Gb/s (4x QDR = 400), the rate enum of IBA
// table 205 for the largest enum rate not above a data rate, and an enum's data rate (0 when undefined).
unsigned rateTenthsGbps(const fabric::PortAttrs& attrs);
uint8_t rateEnum(unsigned tenths);
unsigned enumTenths(uint8_t rateEnum);

// --- Records ---------------------------------------------------------------------------------------------
// Sizes on the wire; the AttributeOffset of a table is the size rounded up to 8 bytes (IBA 15.2.5.x).
inline constexpr size_t kNodeRecordSize = 108;
inline constexpr size_t kPortInfoRecordSize = 68;
inline constexpr size_t kLinkRecordSize = 8;
inline constexpr size_t kSwitchInfoRecordSize = 4 + 17;
inline constexpr size_t kLftRecordSize = 68;
inline constexpr size_t kMftRecordSize = 72;  // LID, Position/BlockNum, reserved 4, 32 port masks
inline constexpr size_t kGuidInfoRecordSize = 72;
inline constexpr size_t kSmInfoRecordSize = 4 + 21;
inline constexpr size_t kPathRecordSize = 64;
inline constexpr size_t kServiceRecordSize = 176;
inline constexpr size_t kPkeyTableRecordSize = 72;
inline constexpr size_t kInformInfoSize = 36;
inline constexpr size_t kInformInfoRecordSize =
    80;  // SubscriberGID 16, Enum 2, reserved 6, InformInfo 36, pad
inline constexpr size_t kNoticeSize = 80;
inline constexpr size_t kClassPortInfoSize = 72;
constexpr size_t recordStride(size_t size) {
  return (size + 7) / 8 * 8;
}

// Bit widths of the record's fields in component-mask order (bit i of the mask = field i).
std::span<const uint16_t> recordFieldWidths(uint16_t attrId);
size_t recordSize(uint16_t attrId);  // 0 for an attribute without records
// True when every field selected by mask is equal in query and candidate (both recordSize(attrId) bytes).
bool recordMatches(uint16_t attrId, uint64_t mask, const uint8_t* query, const uint8_t* candidate);

// NodeRecord: LID, NodeInfo, NodeDescription.
void encodeNodeRecord(uint16_t lid, const NodeInfo& info, const std::string& desc, uint8_t* rec);
struct NodeRecordView {
  uint16_t lid;
  NodeInfo info;
  std::string description;
};
NodeRecordView decodeNodeRecord(const uint8_t* rec);

// PortInfoRecord: EndportLID, PortNum, PortInfo (64 bytes, as mad/smp.h encodes it).
// PortInfo fields the SA fills in that the topology does not keep: LocalPortNum, GidPrefix.
void setPortInfoRecordExtras(uint8_t* portInfo, uint8_t localPort, uint64_t gidPrefix);
uint32_t portInfoCapMask(const uint8_t* portInfo);
void encodePortInfoRecord(uint16_t lid, uint8_t port, const uint8_t* portInfo, uint8_t* rec);

struct LinkRecord {
  uint16_t fromLid = 0;
  uint8_t fromPort = 0, toPort = 0;
  uint16_t toLid = 0;
  bool operator==(const LinkRecord&) const = default;
};
void encodeLinkRecord(const LinkRecord& r, uint8_t* rec);
LinkRecord decodeLinkRecord(const uint8_t* rec);

void encodeSwitchInfoRecord(uint16_t lid, const uint8_t* switchInfo, uint8_t* rec);
void encodeLftRecord(uint16_t lid, uint16_t block, const uint8_t* ports64, uint8_t* rec);
// MulticastForwardingTableRecord (IBA 15.2.5.8): `attrMod` as the MFT SMP's (mftAttrMod: position, block).
void encodeMftRecord(uint16_t lid, uint32_t attrMod, const MftBlock& block, uint8_t* rec);
void encodeGuidInfoRecord(uint16_t lid, uint8_t block, const std::vector<uint64_t>& guids, uint8_t* rec);
void encodeSmInfoRecord(uint16_t lid, const SmInfo& info, uint8_t* rec);
SmInfo decodeSmInfoRecord(const uint8_t* rec, uint16_t* lid);

struct Gid {
  uint64_t prefix = 0, guid = 0;
  bool operator==(const Gid&) const = default;
  auto operator<=>(const Gid&) const = default;
};
// A GID as 16 wire bytes (big-endian prefix, then GUID).
void putGid(uint8_t* p, const Gid& g);
Gid takeGid(const uint8_t* p);

struct PathRecord {
  uint64_t serviceId = 0;
  Gid dgid, sgid;
  uint16_t dlid = 0, slid = 0;
  bool rawTraffic = false;
  uint32_t flowLabel = 0;
  uint8_t hopLimit = 0, tclass = 0;
  bool reversible = true;
  uint8_t numbPath = 0;
  uint16_t pkey = 0xFFFF;
  uint16_t qosClass = 0;
  uint8_t sl = 0;
  uint8_t mtuSelector = 2, mtu = 0;    // selector 0 >, 1 <, 2 exactly, 3 largest available
  uint8_t rateSelector = 2, rate = 0;  // rate enum: 2 = 2.5 Gb/s, 3 = 10, 6 = 20, 4 = 30, 7 = 40, ...
  uint8_t pltSelector = 2, packetLifeTime = 0;
  uint8_t preference = 0;
};
void encodePathRecord(const PathRecord& r, uint8_t* rec);
PathRecord decodePathRecord(const uint8_t* rec);
// PathRecord component mask bits (IBA 15.2.5.16).
enum PathMask : uint64_t {
  kPrServiceId = 3ULL << 0,
  kPrDgid = 1ULL << 2,
  kPrSgid = 1ULL << 3,
  kPrDlid = 1ULL << 4,
  kPrSlid = 1ULL << 5,
  kPrNumbPath = 1ULL << 12,
  kPrPkey = 1ULL << 13,
  kPrSl = 1ULL << 15,
  kPrMtuSelector = 1ULL << 16,
  kPrMtu = 1ULL << 17,
  kPrRateSelector = 1ULL << 18,
  kPrRate = 1ULL << 19,
  kPrPltSelector = 1ULL << 20,
  kPrPlt = 1ULL << 21,
};

// MultiPathRecord (IBA 15.2.5.20) request: the fixed part, then SGIDCount + DGIDCount GIDs.
struct MultiPathRequest {
  PathRecord base;  // fields of the fixed part that PathRecord also has
  uint8_t numbPath = 0, sgidCount = 0, dgidCount = 0;
  std::vector<Gid> sgids, dgids;
};
fabric::Result<MultiPathRequest> decodeMultiPathRecord(const uint8_t* rec, size_t len);

struct ServiceRecord {
  uint64_t id = 0;
  Gid gid;
  uint16_t pkey = 0;
  uint32_t lease = 0;  // seconds; 0xFFFFFFFF = infinite
  std::array<uint8_t, 16> key{};
  std::array<uint8_t, 64> name{};
  std::array<uint8_t, 64> data{};  // Data8[16], Data16[8], Data32[4], Data64[2] as wire bytes
};
void encodeServiceRecord(const ServiceRecord& r, uint8_t* rec);
ServiceRecord decodeServiceRecord(const uint8_t* rec);

// P_KeyTableRecord (IBA 15.2.5.11): LID (for a switch, of port 0), BlockNum, PortNum (the switch port; for a
// CA the port the LID belongs to), one P_KeyTable block. Component mask: LID 0, BlockNum 1, PortNum 2.
struct PkeyTableRecord {
  uint16_t lid = 0, block = 0;
  uint8_t port = 0;
  PkeyBlock pkeys{};
};
enum PkeyTableMask : uint64_t { kPktrLid = 1ULL << 0, kPktrBlock = 1ULL << 1, kPktrPort = 1ULL << 2 };
void encodePkeyTableRecord(const PkeyTableRecord& r, uint8_t* rec);
PkeyTableRecord decodePkeyTableRecord(const uint8_t* rec);

struct InformInfo {
  Gid gid;
  uint16_t lidBegin = 0, lidEnd = 0;
  bool isGeneric = true, subscribe = true;
  uint16_t type = 0xFFFF;
  uint16_t trapNumber = 0xFFFF;  // generic: trap number (0xFFFF = all); else device id
  uint32_t qpn = 0;
  uint8_t respTimeValue = 0;
  uint32_t producerType = 0xFFFFFF;  // generic: producer type; else vendor id
};
void encodeInformInfo(const InformInfo& i, uint8_t* rec);
InformInfo decodeInformInfo(const uint8_t* rec);
void encodeInformInfoRecord(const Gid& subscriber, uint16_t enumeration, const InformInfo& i, uint8_t* rec);

// A generic Notice for a Report(Notice) to a subscriber (IBA 14.2.5.1). Trap 64/65: GID in/out of service
// (data details: 6 reserved bytes, then the GID); trap 128: link state change (data details: LID).
void encodeNotice(const Notice& n, const Gid* gid, uint8_t* rec);

struct ClassPortInfo {
  uint16_t capMask = 0;
  uint8_t respTimeValue = 0;
  uint16_t trapLid = 0;
};
void encodeClassPortInfo(const ClassPortInfo& c, uint8_t* rec);

}  // namespace ibsm::mad
