// A MAD as it crosses the transport: 256 bytes plus the address it came from / goes to, and constants.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace ibsm::mad {

inline constexpr size_t kMadSize = 256;
inline constexpr size_t kMadHeaderSize = 24;
inline constexpr size_t kSmpDataOffset = 64;
inline constexpr size_t kSmpDataSize = 64;

enum MgmtClass : uint8_t {
  kClassSmiLid = 0x01,
  kClassSubnAdm = 0x03,
  kClassPerf = 0x04,
  kClassSmiDirected = 0x81,
};

enum Method : uint8_t {
  kGet = 0x01,
  kSet = 0x02,
  kSend = 0x03,
  kTrap = 0x05,
  kReport = 0x06,
  kTrapRepress = 0x07,
  kGetTable = 0x12,
  kGetResp = 0x81,
  kReportResp = 0x86,
  kGetTableResp = 0x92,
  kResponseBit = 0x80,
};

enum AttrId : uint16_t {
  kAttrClassPortInfo = 0x0001,
  kAttrNotice = 0x0002,
  kAttrNodeDescription = 0x0010,
  kAttrNodeInfo = 0x0011,
  kAttrSwitchInfo = 0x0012,
  kAttrGuidInfo = 0x0014,
  kAttrPortInfo = 0x0015,
  kAttrPKeyTable = 0x0016,
  kAttrSlToVl = 0x0017,
  kAttrVlArb = 0x0018,
  kAttrLft = 0x0019,
  kAttrMft = 0x001B,
  kAttrSmInfo = 0x0020,
  kAttrArInfo = 0xFF20,
  kAttrArGroupTable = 0xFF21,
  kAttrArLft = 0xFF22,
};

// The General Services Interface (QP1) and its well-known Q_Key, for GMPs (SA, PerfMgt).
inline constexpr uint32_t kGsiQp = 1;
inline constexpr uint32_t kGsiQkey = 0x80010000;

// Where a MAD goes or came from (host byte order). Directed-route SMPs go to the permissive LID 0xFFFF.
struct MadAddress {
  uint16_t lid = 0xFFFF;
  uint32_t qpn = 0;
  uint32_t qkey = 0;
  uint8_t sl = 0;
  uint16_t pkeyIndex = 0;
};

struct MadPacket {
  std::array<uint8_t, kMadSize> bytes{};
  size_t size = kMadSize;  // bytes received (a short MAD is dropped by the engine)
  MadAddress addr;
  int status = 0;  // transport status: 0 ok, 110 (ETIMEDOUT) when the transport gave up on a send
};

}  // namespace ibsm::mad
