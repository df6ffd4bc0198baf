// SMP construction and attribute codecs. All field access goes through libibmad's field tables
// (mad_get_field / mad_set_field), never hand-written shifts. Decoders validate what they read: a MAD from
// the fabric is untrusted input.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "fabric/result.h"
#include "fabric/topology.h"
#include "mad/mad_packet.h"

namespace ibsm::mad {

// Common MAD header fields.
struct MadHeader {
  uint8_t baseVersion = 0, mgmtClass = 0, classVersion = 0, method = 0;
  uint16_t status = 0;  // for directed-route SMPs the 15-bit status without the D bit
  bool direction = false;
  uint8_t hopPointer = 0, hopCount = 0;
  uint64_t tid = 0;
  uint16_t attrId = 0;
  uint32_t attrMod = 0;
  bool isResponse() const { return method & kResponseBit; }
};

// Parses and sanity-checks the header (size, base version 1); an Error says what is wrong.
fabric::Result<MadHeader> parseHeader(const MadPacket& mad);

// A directed-route SMP along path (hop count = path.count), DrSLID/DrDLID permissive.
MadPacket makeDirectedSmp(uint8_t method, uint16_t attrId, uint32_t attrMod, const fabric::DrPath& path,
                          uint64_t mkey = 0);
// A LID-routed SMP to dlid.
MadPacket makeLidRoutedSmp(uint8_t method, uint16_t attrId, uint32_t attrMod, uint16_t dlid,
                           uint64_t mkey = 0);
// Turns a request into its response: GetResp with the given status and, for directed-route SMPs, the
// direction bit set, as an SMA does.
MadPacket makeResponse(const MadPacket& request, uint16_t status = 0);
void setTid(MadPacket& mad, uint64_t tid);
uint64_t getTid(const MadPacket& mad);
uint8_t* smpData(MadPacket& mad);
const uint8_t* smpData(const MadPacket& mad);

struct NodeInfo {
  fabric::NodeType type = fabric::NodeType::kUnknown;
  uint8_t numPorts = 0;
  fabric::Guid systemGuid, nodeGuid, portGuid;
  uint16_t partitionCap = 0, deviceId = 0;
  uint32_t revision = 0, vendorId = 0;
  uint8_t localPort = 0;
};
fabric::Result<NodeInfo> decodeNodeInfo(const uint8_t* data);
void encodeNodeInfo(const NodeInfo& info, uint8_t* data);  // for fakes and tests

// NodeDescription: up to 64 bytes, NUL-padded; non-printable bytes become '?'.
std::string decodeNodeDescription(const uint8_t* data);
void encodeNodeDescription(const std::string& desc, uint8_t* data);

fabric::PortAttrs decodePortInfo(const uint8_t* data);
uint8_t decodePortInfoLocalPort(const uint8_t* data);
uint64_t decodePortInfoMkey(const uint8_t* data);
// The M_Key part of PortInfo (IBA 14.2.4): the key, MKeyProtectBits (0..3) and MKeyLeasePeriod (seconds,
// 0 = infinite). Meaningful on a CA port and on switch port 0 (a switch's external ports have none).
struct MkeyInfo {
  uint64_t key = 0;
  uint8_t protectBits = 0;
  uint16_t leasePeriod = 0;
  bool operator==(const MkeyInfo&) const = default;
};
MkeyInfo decodePortInfoMkeyInfo(const uint8_t* data);
void setPortInfoMkey(uint8_t* data, const MkeyInfo& mkey);
// The M_Key an SMP carries in its header; setMadMkey writes it.
uint64_t getMadMkey(const MadPacket& mad);
void setMadMkey(MadPacket& mad, uint64_t mkey);
void encodePortInfo(const fabric::PortAttrs& attrs, uint8_t* data);  // for fakes and tests

// Fields the SM writes with SubnSet(PortInfo), on top of the port's current PortInfo block.
struct PortInfoSet {
  std::optional<uint16_t> lid, smLid;
  std::optional<uint8_t> lmc, state, physState, neighborMtu, operVls, subnetTimeout, hoqLife;
  std::optional<bool> clientReregister;
  std::optional<uint64_t> gidPrefix;
  std::optional<MkeyInfo> mkey;
  std::optional<bool> partitionEnforce;  // PartitionEnforcementInbound and Outbound (switch external ports)
};
void applyPortInfoSet(const PortInfoSet& set, uint8_t* data);
// Both PartitionEnforcementInbound and Outbound are set.
bool portInfoPartitionEnforced(const uint8_t* data);
// PortState and PortPhysicalState are commands in a Set (0: no change); in the block the SM keeps of what a
// port holds they are the port's current states.
void setPortInfoState(uint8_t* data, fabric::PortState state, uint8_t physState);
// ClientReregister is a command as well, not kept by the port: cleared in the SM's copy once sent.
void clearPortInfoClientReregister(uint8_t* data);

fabric::SwitchAttrs decodeSwitchInfo(const uint8_t* data);
void encodeSwitchInfo(const fabric::SwitchAttrs& attrs, uint8_t* data);  // for fakes and tests

// Fields the SM writes with SubnSet(SwitchInfo), on top of the switch's current SwitchInfo block.
// PortStateChange is write-1-to-clear: true in a Set clears the switch's flag.
struct SwitchInfoSet {
  std::optional<uint16_t> linearFdbTop;
  std::optional<uint8_t> lifeTime;
  std::optional<bool> portStateChange;
};
void applySwitchInfoSet(const SwitchInfoSet& set, uint8_t* data);

// LinearForwardingTable (IBA 14.2.5.10): one block maps 64 LIDs (block b: LIDs 64b ... 64b + 63) to ports.
inline constexpr unsigned kLftBlockLids = 64;
using LftBlock = std::array<uint8_t, kLftBlockLids>;
LftBlock decodeLftBlock(const uint8_t* data);
void encodeLftBlock(const LftBlock& block, uint8_t* data);

// MulticastForwardingTable (IBA 14.2.5.12): one block holds 32 MLIDs (block b: MLIDs 0xC000 + 32b ...) for 16
// ports (position p: ports 16p ... 16p + 15), each entry a port bit mask, bit i = port 16p + i.
inline constexpr unsigned kMftBlockMlids = 32;
inline constexpr unsigned kMftPositionPorts = 16;
using MftBlock = std::array<uint16_t, kMftBlockMlids>;
inline uint32_t mftAttrMod(uint32_t block, uint32_t position) {
  return position << 28 | (block & 0x1FF);
}
MftBlock decodeMftBlock(const uint8_t* data);
void encodeMftBlock(const MftBlock& block, uint8_t* data);

// P_KeyTable (IBA 14.2.5.7): 32 P_Keys per block, big-endian; bit 15 of a P_Key is the full-member bit and
// 0x0000 an unused entry. The attribute modifier holds the block number, and on a switch the port in bits
// 16-31 (port 0 has NodeInfo.PartitionCap entries, the external ports SwitchInfo.PartitionEnforcementCap).
inline constexpr unsigned kPkeyBlockEntries = 32;
inline constexpr uint16_t kDefaultPkey = 0xFFFF;  // the default partition, full member
using PkeyBlock = std::array<uint16_t, kPkeyBlockEntries>;
inline uint32_t pkeyAttrMod(uint8_t port, uint16_t block) {
  return uint32_t{port} << 16 | block;
}
PkeyBlock decodePkeyBlock(const uint8_t* data);
void encodePkeyBlock(const PkeyBlock& block, uint8_t* data);

// SMInfo (IBA 14.2.5.13).
struct SmInfo {
  fabric::Guid guid;
  uint64_t smKey = 0;
  uint32_t actCount = 0;
  uint8_t priority = 0;
  uint8_t state = 0;  // 0 NotActive, 1 Discovering, 2 Standby, 3 Master
};
SmInfo decodeSmInfo(const uint8_t* data);
void encodeSmInfo(const SmInfo& info, uint8_t* data);

}  // namespace ibsm::mad
