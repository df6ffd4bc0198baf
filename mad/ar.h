// Codecs of NVIDIA/Mellanox's vendor-specific adaptive-routing SMP attributes: AdaptiveRoutingInfo (0xFF20),
// ARGroupTable (0xFF21) and ARLinearForwardingTable (0xFF22). libibmad has no field tables for them, so every
// field goes through one bit-field helper (VendorField below) and the offset tables in ar.cc.
//
// Sources of the layouts (public, checked against each other):
//  - NVIDIA's ibis "packets_layouts.h" (generated from the adb register files): adaptive_routing_info,
//    ib_portgroup_block_element / ib_ar_group_table, ib_ar_lft_block_element_sx /
//    ib_ar_linear_forwarding_table_sx;
//  - NVIDIA's OpenSM iba/ib_types.h: ib_ar_info_t (enable_features, group_info, ...), ib_ar_lft_entry_t
//    (state_table, legacy_port, group_number; IB_AR_LFT_BLOCK_SIZE = 16), ib_ar_group_table_t.
// Both agree on every field used here. What is NOT verified is listed at each codec (attribute modifiers, the
// block size of 0xFF22 on newer switches, the port-bit numbering of group masks).
#pragma once

#include <array>
#include <bitset>
#include <cstdint>

#include "fabric/result.h"

namespace ibsm::mad {

// One field of a vendor attribute, addressed the way NVIDIA's adb layouts do: the big-endian 32-bit word that
// starts at byteOffset (a multiple of 4 from the start of the attribute data), bits [lsb, lsb + width) of it,
// bit 0 being the least significant. E.g. SwitchInfo's LinearFDBTop would be {4, 0, 16}.
struct VendorField {
  uint16_t byteOffset;
  uint8_t lsb;
  uint8_t width;  // 1..32
};
uint32_t getVendorField(const uint8_t* data, VendorField field);
void setVendorField(uint8_t* data, VendorField field, uint32_t value);  // value is cut to width bits

// --- AdaptiveRoutingInfo (0xFF20), 20 bytes used of the 64-byte SMP data. Attribute modifier 0 (current
// values; ibis' "get_cap" variant, thought to be modifier bit 31, is not used). Capability fields are
// read-only; the SM writes enable, group_top, sub_grps_active, by_sl_en/mask, by_transport_disable, ageing.
struct ArInfo {
  bool enabled = false;  // "e": AR is on; while on, the ARLFT supersedes the plain LFT
  bool arnSupported = false, frnSupported = false, frSupported = false, frEnabled = false,
       rnXmitEnabled = false;
  uint8_t subGroupsActive = 0;  // ARSubGroups per ARGroup in use (0: one mask per group, see ARGroupTable)
  uint8_t groupTableCopySupported = 0;
  uint8_t directionsSupported = 0;
  bool noFallback = false;  // 0: a plain LFT Set turns AR off; 1: a plain LFT Set is refused
  bool is4Mode = false, globalGroups = false, bySlCap = false, bySlEnabled = false, byTransportCap = false,
       dynamicCapCalc = false;
  uint16_t groupCap = 0;  // ARGroups per group table; 0: AR not supported (12 bits)
  uint16_t groupTop = 0;  // highest enabled group number (12 bits)
  uint8_t groupTableCap = 0, stringWidthCap = 0;
  uint8_t arVersionCap = 0, rnVersionCap = 0, subGroupsSupported = 0;
  uint16_t enableBySlMask = 0;     // SLs AR applies to when bySlEnabled
  uint8_t byTransportDisable = 0;  // bit 0 UD, 1 RC, 2 UC, 3 DC
  uint32_t ageingTimeUs = 0;       // flowlet ageing, microseconds
  bool operator==(const ArInfo&) const = default;
};
// Fails when group_top lies past group_cap (a corrupt or foreign attribute).
fabric::Result<ArInfo> decodeArInfo(const uint8_t* data);
void encodeArInfo(const ArInfo& info, uint8_t* data);

// --- ARGroupTable (0xFF21): a 64-byte block holds two 256-bit port masks (ibis: ib_portgroup_block_element
// Group[2], each SubGroup_3..SubGroup_0 as four big-endian 64-bit words), so group g lives in block g / 2,
// slot g % 2, with subGroupsActive = 0. Port p is bit p of the 256-bit big-endian mask (port 0 in the last
// byte's lowest bit). Unverified: NVIDIA's SM carries a firmware work-around "__AR_PORT_GROUP_BIT0_PORT1",
// which suggests some firmware numbers bit 0 as port 1; and the attribute modifier, taken here as the block
// number in bits [11:0] with group table 0 and pLFT 0 in the upper bits.
inline constexpr unsigned kArGroupsPerBlock = 2;
using ArPortMask = std::bitset<256>;  // same representation as routing::PortMask
struct ArGroupBlock {
  std::array<ArPortMask, kArGroupsPerBlock> groups;
  bool operator==(const ArGroupBlock&) const = default;
};
ArGroupBlock decodeArGroupBlock(const uint8_t* data);
void encodeArGroupBlock(const ArGroupBlock& block, uint8_t* data);
uint32_t arGroupTableAttrMod(uint32_t block);
inline constexpr uint32_t kArGroupBlockMax = 0xFFF;

// --- ARLinearForwardingTable (0xFF22): per LID {GroupNumber (12 bits; the port for a static LID),
// DefaultPort (the static/legacy port), TableNumber (4 bits), LidState (2 bits)} in a 4-byte entry, 16
// entries per 64-byte block (OpenSM's IB_AR_LFT_BLOCK_SIZE, ibis' ib_ar_lft_block_element_sx), block b
// covering LIDs 16b..16b+15. Unverified: ibis names the 16-entry layout "SX" and knows a second ("NoSX")
// ARLFT layout whose definition is not public; 32 entries per 64-byte block cannot carry all four fields, so
// this codec uses the 16-entry layout, the only one both public sources define. Attribute modifier: block in
// bits [15:0], pLFT 0.
inline constexpr unsigned kArLftEntriesPerBlock = 16;
inline constexpr uint32_t kArLftBlockMax = 0xFFFF;
enum class ArLidState : uint8_t { kBounded = 0, kFree = 1, kStatic = 2 };
struct ArLftEntry {
  uint16_t group = 0;
  uint8_t defaultPort = 0xFF;
  uint8_t table = 0;
  ArLidState state = ArLidState::kStatic;
  bool operator==(const ArLftEntry&) const = default;
};
using ArLftBlock = std::array<ArLftEntry, kArLftEntriesPerBlock>;
// Fails on the reserved LidState 3.
fabric::Result<ArLftBlock> decodeArLftBlock(const uint8_t* data);
void encodeArLftBlock(const ArLftBlock& block, uint8_t* data);
uint32_t arLftAttrMod(uint32_t block);

}  // namespace ibsm::mad
