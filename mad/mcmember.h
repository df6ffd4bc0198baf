// MCMemberRecord (SA attribute 0x0038, IBA 15.2.5.17): the record an end port sends to create, join, leave or
// look up a multicast group. Fields libibmad has (MGID, PortGID, Q_Key, MLID, MTU, TClass, P_Key, Rate, SL,
// FlowLabel, JoinState, ProxyJoin) go through its field table; the selectors, PacketLifeTime, HopLimit and
// Scope, which it lacks, are read from their bytes here.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mad/sa.h"  // Gid

namespace ibsm::mad {

inline constexpr size_t kMcMemberRecordSize = 52;

// Component mask bits (IBA table 194).
namespace mcm {
inline constexpr uint64_t kMgid = 1u << 0, kPortGid = 1u << 1, kQkey = 1u << 2, kMlid = 1u << 3,
                          kMtuSelector = 1u << 4, kMtu = 1u << 5, kTClass = 1u << 6, kPkey = 1u << 7,
                          kRateSelector = 1u << 8, kRate = 1u << 9, kLifeSelector = 1u << 10,
                          kLife = 1u << 11, kSl = 1u << 12, kFlowLabel = 1u << 13, kHopLimit = 1u << 14,
                          kScope = 1u << 15, kJoinState = 1u << 16, kProxyJoin = 1u << 17;
}  // namespace mcm

// JoinState bits.
inline constexpr uint8_t kJoinFull = 1, kJoinNon = 2, kJoinSendOnly = 4;

// Selector values of MTU, rate and packet lifetime (IBA 15.2.5.16).
enum class Selector : uint8_t { kGreater = 0, kLess = 1, kExactly = 2, kLargest = 3 };

struct McMemberRecord {
  Gid mgid{}, portGid{};
  uint32_t qkey = 0;
  uint16_t mlid = 0;
  uint8_t mtuSelector = 0, mtu = 0;  // MTU enum: 1=256 ... 5=4096
  uint8_t tclass = 0;
  uint16_t pkey = 0;
  uint8_t rateSelector = 0, rate = 0;  // rate enum: 2=2.5 Gb/s, 3=10, 6=20, 4=30, ...
  uint8_t lifeSelector = 0, packetLifeTime = 0;
  uint8_t sl = 0;
  uint32_t flowLabel = 0;
  uint8_t hopLimit = 0;
  uint8_t scope = 0;
  uint8_t joinState = 0;
  bool proxyJoin = false;
  bool operator==(const McMemberRecord&) const = default;
};

McMemberRecord decodeMcMemberRecord(const uint8_t* data);  // kMcMemberRecordSize bytes
void encodeMcMemberRecord(const McMemberRecord& record, uint8_t* data);

}  // namespace ibsm::mad
