// Performance Management (class 0x04) GMPs and codecs: ClassPortInfo (the PMA's capabilities),
// PortCounters (IBA 16.1.3.5: 16- and 32-bit counters that saturate) and PortCountersExtended (64-bit data
// counters). Perf GMPs are LID-routed to QP1 of the port's node (a switch answers for all its ports at its
// port-0 LID; PortSelect picks the port). Field access through libibmad's tables.
#pragma once

#include <array>
#include <cstdint>

#include "fabric/result.h"
#include "mad/mad_packet.h"

namespace ibsm::mad {

inline constexpr uint16_t kAttrPortCounters = 0x0012;
inline constexpr uint16_t kAttrPortCountersExtended = 0x001D;

// ClassPortInfo.CapabilityMask bits of the PerfMgt class.
inline constexpr uint16_t kPmAllPortSelect = 0x0100;
inline constexpr uint16_t kPmExtendedWidth = 0x0200;        // PortCountersExtended, all counters
inline constexpr uint16_t kPmExtendedWidthNoIetf = 0x0400;  // PortCountersExtended, data counters only

// A PerfMgt request to QP1 of dlid (GSI Q_Key).
MadPacket makePerfGmp(uint8_t method, uint16_t attrId, uint16_t dlid);

// The PortCounters error counters, in a fixed order (the policy's thresholds and the exports use it).
enum class PerfCounter : uint8_t {
  kSymbolError,
  kLinkErrorRecovery,
  kLinkDowned,
  kPortRcvErrors,
  kPortRcvRemotePhysicalErrors,
  kPortRcvSwitchRelayErrors,
  kPortXmitDiscards,
  kPortXmitConstraintErrors,
  kPortRcvConstraintErrors,
  kLocalLinkIntegrityErrors,
  kExcessiveBufferOverrun,
  kVl15Dropped,
  kPortXmitWait,
};
inline constexpr size_t kPerfCounters = 13;
// "symbol_error", "link_error_recovery", ... (config keys and infiniband_exporter metric stems)
const char* perfCounterName(PerfCounter c);
// The largest value each counter holds (it saturates there).
uint64_t perfCounterMax(PerfCounter c);

// Data counters: PortCounters' 32-bit ones (XmitData/RcvData in 4-byte words) or PortCountersExtended's.
enum class PerfData : uint8_t { kXmitData, kRcvData, kXmitPkts, kRcvPkts };
inline constexpr size_t kPerfDataCounters = 4;
const char* perfDataName(PerfData d);  // "transmit_data", "receive_data", "transmit_packets", ...

struct PortCounters {
  uint8_t portSelect = 0;
  std::array<uint64_t, kPerfCounters> errors{};    // indexed by PerfCounter
  std::array<uint64_t, kPerfDataCounters> data{};  // indexed by PerfData (32-bit, saturating)
};
PortCounters decodePortCounters(const uint8_t* data);
void encodePortCounters(const PortCounters& pc, uint8_t* data);  // for fakes and tests
// PortCounters Get (or Set with counterSelect: the selected counters are reset) of one port.
MadPacket makePortCountersRequest(uint16_t dlid, uint8_t port, bool clear = false, uint16_t counterSelect = 0,
                                  bool clearXmitWait = false);
// CounterSelect bits: errors (PerfCounter order up to VL15Dropped as IBA lays them out) and data.
uint16_t counterSelectBit(PerfCounter c);  // 0 for PortXmitWait (it has CounterSelect2)
uint16_t counterSelectBit(PerfData d);

struct PortCountersExtended {
  uint8_t portSelect = 0;
  std::array<uint64_t, kPerfDataCounters> data{};  // indexed by PerfData
};
PortCountersExtended decodePortCountersExtended(const uint8_t* data);
void encodePortCountersExtended(const PortCountersExtended& pc, uint8_t* data);  // for fakes and tests
MadPacket makePortCountersExtendedRequest(uint16_t dlid, uint8_t port);

// The parts of ClassPortInfo the performance manager uses.
struct PerfClassPortInfo {
  uint8_t baseVersion = 0, classVersion = 0;
  uint16_t capMask = 0;
  bool extended() const { return capMask & (kPmExtendedWidth | kPmExtendedWidthNoIetf); }
};
PerfClassPortInfo decodePerfClassPortInfo(const uint8_t* data);
void encodePerfClassPortInfo(const PerfClassPortInfo& info, uint8_t* data);  // for fakes and tests

// Data of a perf GMP (after the 24-byte header and 40 reserved bytes).
inline uint8_t* perfData(MadPacket& mad) {
  return mad.bytes.data() + kSmpDataOffset;
}
inline const uint8_t* perfData(const MadPacket& mad) {
  return mad.bytes.data() + kSmpDataOffset;
}

}  // namespace ibsm::mad
