#include "mad/ar.h"

#include <cassert>
#include <string>

namespace ibsm::mad {

uint32_t getVendorField(const uint8_t* d, VendorField f) {
  assert(f.width >= 1 && f.width <= 32 && f.lsb + f.width <= 32 && f.byteOffset % 4 == 0);
  const uint8_t* w = d + f.byteOffset;
  uint32_t word = uint32_t{w[0]} << 24 | uint32_t{w[1]} << 16 | uint32_t{w[2]} << 8 | uint32_t{w[3]};
  uint32_t mask = f.width == 32 ? UINT32_MAX : (1u << f.width) - 1;
  return word >> f.lsb & mask;
}

void setVendorField(uint8_t* d, VendorField f, uint32_t value) {
  assert(f.width >= 1 && f.width <= 32 && f.lsb + f.width <= 32 && f.byteOffset % 4 == 0);
  uint8_t* w = d + f.byteOffset;
  uint32_t word = uint32_t{w[0]} << 24 | uint32_t{w[1]} << 16 | uint32_t{w[2]} << 8 | uint32_t{w[3]};
  uint32_t mask = (f.width == 32 ? UINT32_MAX : (1u << f.width) - 1) << f.lsb;
  word = (word & ~mask) | (value << f.lsb & mask);
  w[0] = static_cast<uint8_t>(word >> 24);
  w[1] = static_cast<uint8_t>(word >> 16);
  w[2] = static_cast<uint8_t>(word >> 8);
  w[3] = static_cast<uint8_t>(word);
}

namespace {

// AdaptiveRoutingInfo, as ibis' adaptive_routing_info ("0x0.0 - 0x0.0" = word 0, bit 0). In bytes: byte 0
// holds no_fallback..dyn_cap_calc_sup (bits 24-30), byte 1 direction_num_sup, byte 2 group_table_copy_sup /
// sub_grps_active, byte 3 the enable/feature bits (OpenSM's enable_features); bytes 4-7 OpenSM's group_info.
namespace arinfo {
constexpr VendorField kEnable{0, 0, 1};
constexpr VendorField kIsArnSup{0, 1, 1};
constexpr VendorField kIsFrnSup{0, 2, 1};
constexpr VendorField kIsFrSup{0, 3, 1};
constexpr VendorField kFrEnabled{0, 4, 1};
constexpr VendorField kRnXmitEnabled{0, 5, 1};
constexpr VendorField kSubGrpsActive{0, 8, 4};
constexpr VendorField kGroupTableCopySup{0, 12, 4};
constexpr VendorField kDirectionNumSup{0, 16, 8};
constexpr VendorField kNoFallback{0, 24, 1};
constexpr VendorField kIs4Mode{0, 25, 1};
constexpr VendorField kGlbGroups{0, 26, 1};
constexpr VendorField kBySlCap{0, 27, 1};
constexpr VendorField kBySlEn{0, 28, 1};
constexpr VendorField kByTranspCap{0, 29, 1};
constexpr VendorField kDynCapCalcSup{0, 30, 1};
constexpr VendorField kGroupCap{4, 0, 12};
constexpr VendorField kGroupTop{4, 12, 12};
constexpr VendorField kGroupTableCap{4, 24, 4};
constexpr VendorField kStringWidthCap{4, 28, 4};
constexpr VendorField kArVersionCap{8, 0, 4};
constexpr VendorField kRnVersionCap{8, 4, 4};
constexpr VendorField kSubGrpsSupported{8, 8, 8};
constexpr VendorField kEnableBySlMask{8, 16, 16};
constexpr VendorField kByTransportDisable{12, 0, 8};
constexpr VendorField kAgeingTime{16, 0, 32};
}  // namespace arinfo

// ARLinearForwardingTable entry i is the word at 4 * i (OpenSM: state_table, legacy_port, group_number).
namespace arlft {
constexpr VendorField group(unsigned i) {
  return {static_cast<uint16_t>(4 * i), 0, 12};
}
constexpr VendorField defaultPort(unsigned i) {
  return {static_cast<uint16_t>(4 * i), 16, 8};
}
constexpr VendorField table(unsigned i) {
  return {static_cast<uint16_t>(4 * i), 24, 4};
}
constexpr VendorField lidState(unsigned i) {
  return {static_cast<uint16_t>(4 * i), 30, 2};
}
}  // namespace arlft

// ARGroupTable: slot s is 32 bytes at 32 * s, a 256-bit big-endian mask; port p is bit p % 32 of the word
// that holds bits [32 * (p / 32), +32), which is the (7 - p / 32)-th word of the slot.
constexpr VendorField groupPortBit(unsigned slot, unsigned port) {
  return {static_cast<uint16_t>(32 * slot + 4 * (7 - port / 32)), static_cast<uint8_t>(port % 32), 1};
}

}  // namespace

fabric::Result<ArInfo> decodeArInfo(const uint8_t* d) {
  using namespace arinfo;
  ArInfo a;
  a.enabled = getVendorField(d, kEnable);
  a.arnSupported = getVendorField(d, kIsArnSup);
  a.frnSupported = getVendorField(d, kIsFrnSup);
  a.frSupported = getVendorField(d, kIsFrSup);
  a.frEnabled = getVendorField(d, kFrEnabled);
  a.rnXmitEnabled = getVendorField(d, kRnXmitEnabled);
  a.subGroupsActive = static_cast<uint8_t>(getVendorField(d, kSubGrpsActive));
  a.groupTableCopySupported = static_cast<uint8_t>(getVendorField(d, kGroupTableCopySup));
  a.directionsSupported = static_cast<uint8_t>(getVendorField(d, kDirectionNumSup));
  a.noFallback = getVendorField(d, kNoFallback);
  a.is4Mode = getVendorField(d, kIs4Mode);
  a.globalGroups = getVendorField(d, kGlbGroups);
  a.bySlCap = getVendorField(d, kBySlCap);
  a.bySlEnabled = getVendorField(d, kBySlEn);
  a.byTransportCap = getVendorField(d, kByTranspCap);
  a.dynamicCapCalc = getVendorField(d, kDynCapCalcSup);
  a.groupCap = static_cast<uint16_t>(getVendorField(d, kGroupCap));
  a.groupTop = static_cast<uint16_t>(getVendorField(d, kGroupTop));
  a.groupTableCap = static_cast<uint8_t>(getVendorField(d, kGroupTableCap));
  a.stringWidthCap = static_cast<uint8_t>(getVendorField(d, kStringWidthCap));
  a.arVersionCap = static_cast<uint8_t>(getVendorField(d, kArVersionCap));
  a.rnVersionCap = static_cast<uint8_t>(getVendorField(d, kRnVersionCap));
  a.subGroupsSupported = static_cast<uint8_t>(getVendorField(d, kSubGrpsSupported));
  a.enableBySlMask = static_cast<uint16_t>(getVendorField(d, kEnableBySlMask));
  a.byTransportDisable = static_cast<uint8_t>(getVendorField(d, kByTransportDisable));
  a.ageingTimeUs = getVendorField(d, kAgeingTime);
  if (a.groupCap != 0 && a.groupTop >= a.groupCap)
    return fabric::makeError("AdaptiveRoutingInfo: group_top " + std::to_string(a.groupTop) +
                             " past group_cap " + std::to_string(a.groupCap));
  return a;
}

void encodeArInfo(const ArInfo& a, uint8_t* d) {
  using namespace arinfo;
  setVendorField(d, kEnable, a.enabled);
  setVendorField(d, kIsArnSup, a.arnSupported);
  setVendorField(d, kIsFrnSup, a.frnSupported);
  setVendorField(d, kIsFrSup, a.frSupported);
  setVendorField(d, kFrEnabled, a.frEnabled);
  setVendorField(d, kRnXmitEnabled, a.rnXmitEnabled);
  setVendorField(d, kSubGrpsActive, a.subGroupsActive);
  setVendorField(d, kGroupTableCopySup, a.groupTableCopySupported);
  setVendorField(d, kDirectionNumSup, a.directionsSupported);
  setVendorField(d, kNoFallback, a.noFallback);
  setVendorField(d, kIs4Mode, a.is4Mode);
  setVendorField(d, kGlbGroups, a.globalGroups);
  setVendorField(d, kBySlCap, a.bySlCap);
  setVendorField(d, kBySlEn, a.bySlEnabled);
  setVendorField(d, kByTranspCap, a.byTransportCap);
  setVendorField(d, kDynCapCalcSup, a.dynamicCapCalc);
  setVendorField(d, kGroupCap, a.groupCap);
  setVendorField(d, kGroupTop, a.groupTop);
  setVendorField(d, kGroupTableCap, a.groupTableCap);
  setVendorField(d, kStringWidthCap, a.stringWidthCap);
  setVendorField(d, kArVersionCap, a.arVersionCap);
  setVendorField(d, kRnVersionCap, a.rnVersionCap);
  setVendorField(d, kSubGrpsSupported, a.subGroupsSupported);
  setVendorField(d, kEnableBySlMask, a.enableBySlMask);
  setVendorField(d, kByTransportDisable, a.byTransportDisable);
  setVendorField(d, kAgeingTime, a.ageingTimeUs);
}

ArGroupBlock decodeArGroupBlock(const uint8_t* d) {
  ArGroupBlock b;
  for (unsigned s = 0; s < kArGroupsPerBlock; ++s)
    for (unsigned p = 0; p < 256; ++p) b.groups[s][p] = getVendorField(d, groupPortBit(s, p));
  return b;
}

void encodeArGroupBlock(const ArGroupBlock& b, uint8_t* d) {
  for (unsigned s = 0; s < kArGroupsPerBlock; ++s)
    for (unsigned p = 0; p < 256; ++p) setVendorField(d, groupPortBit(s, p), b.groups[s][p]);
}

uint32_t arGroupTableAttrMod(uint32_t block) {
  assert(block <= kArGroupBlockMax);
  return block;
}

fabric::Result<ArLftBlock> decodeArLftBlock(const uint8_t* d) {
  ArLftBlock b;
  for (unsigned i = 0; i < kArLftEntriesPerBlock; ++i) {
    uint32_t state = getVendorField(d, arlft::lidState(i));
    if (state > static_cast<uint32_t>(ArLidState::kStatic))
      return fabric::makeError("ARLinearForwardingTable: reserved LID state 3 in entry " + std::to_string(i));
    b[i].state = static_cast<ArLidState>(state);
    b[i].group = static_cast<uint16_t>(getVendorField(d, arlft::group(i)));
    b[i].defaultPort = static_cast<uint8_t>(getVendorField(d, arlft::defaultPort(i)));
    b[i].table = static_cast<uint8_t>(getVendorField(d, arlft::table(i)));
  }
  return b;
}

void encodeArLftBlock(const ArLftBlock& b, uint8_t* d) {
  for (unsigned i = 0; i < kArLftEntriesPerBlock; ++i) {
    setVendorField(d, arlft::group(i), b[i].group);
    setVendorField(d, arlft::defaultPort(i), b[i].defaultPort);
    setVendorField(d, arlft::table(i), b[i].table);
    setVendorField(d, arlft::lidState(i), static_cast<uint32_t>(b[i].state));
  }
}

uint32_t arLftAttrMod(uint32_t block) {
  assert(block <= kArLftBlockMax);
  return block;
}

}  // namespace ibsm::mad
