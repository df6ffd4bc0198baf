#include "mad/perf.h"

#include <infiniband/mad.h>

#include <algorithm>

#include "mad/fields.h"

namespace ibsm::mad {

namespace {
using fields::get;
using fields::get64;
using fields::set;
using fields::set64;

struct CounterField {
  const char* name;
  MAD_FIELDS field;
  uint64_t max;
  uint16_t select;  // CounterSelect bit; 0: CounterSelect2 (PortXmitWait)
};
// In PerfCounter order.
constexpr CounterField kCounters[kPerfCounters] = {
    {"symbol_error", IB_PC_ERR_SYM_F, 0xFFFF, 1u << 0},
    {"link_error_recovery", IB_PC_LINK_RECOVERS_F, 0xFF, 1u << 1},
    {"link_downed", IB_PC_LINK_DOWNED_F, 0xFF, 1u << 2},
    {"port_rcv_errors", IB_PC_ERR_RCV_F, 0xFFFF, 1u << 3},
    {"port_rcv_remote_physical_errors", IB_PC_ERR_PHYSRCV_F, 0xFFFF, 1u << 4},
    {"port_rcv_switch_relay_errors", IB_PC_ERR_SWITCH_REL_F, 0xFFFF, 1u << 5},
    {"port_xmit_discards", IB_PC_XMT_DISCARDS_F, 0xFFFF, 1u << 6},
    {"port_xmit_constraint_errors", IB_PC_ERR_XMTCONSTR_F, 0xFF, 1u << 7},
    {"port_rcv_constraint_errors", IB_PC_ERR_RCVCONSTR_F, 0xFF, 1u << 8},
    {"local_link_integrity_errors", IB_PC_ERR_LOCALINTEG_F, 0xF, 1u << 9},
    {"excessive_buffer_overrun_errors", IB_PC_ERR_EXCESS_OVR_F, 0xF, 1u << 10},
    {"vl15_dropped", IB_PC_VL15_DROPPED_F, 0xFFFF, 1u << 11},
    {"port_xmit_wait", IB_PC_XMT_WAIT_F, 0xFFFFFFFF, 0},
};
struct DataField {
  const char* name;
  MAD_FIELDS field, extField;
  uint16_t select;
};
constexpr DataField kData[kPerfDataCounters] = {
    {"transmit_data", IB_PC_XMT_BYTES_F, IB_PC_EXT_XMT_BYTES_F, 1u << 12},
    {"receive_data", IB_PC_RCV_BYTES_F, IB_PC_EXT_RCV_BYTES_F, 1u << 13},
    {"transmit_packets", IB_PC_XMT_PKTS_F, IB_PC_EXT_XMT_PKTS_F, 1u << 14},
    {"receive_packets", IB_PC_RCV_PKTS_F, IB_PC_EXT_RCV_PKTS_F, 1u << 15},
};
}  // namespace

MadPacket makePerfGmp(uint8_t method, uint16_t attrId, uint16_t dlid) {
  MadPacket mad;
  uint8_t* b = mad.bytes.data();
  set(b, IB_MAD_BASEVER_F, 1);
  set(b, IB_MAD_MGMTCLASS_F, kClassPerf);
  set(b, IB_MAD_CLASSVER_F, 1);
  set(b, IB_MAD_METHOD_F, method);
  set(b, IB_MAD_ATTRID_F, attrId);
  mad.addr = MadAddress{dlid, kGsiQp, kGsiQkey, 0, 0};
  return mad;
}

const char* perfCounterName(PerfCounter c) {
  return kCounters[static_cast<size_t>(c)].name;
}
uint64_t perfCounterMax(PerfCounter c) {
  return kCounters[static_cast<size_t>(c)].max;
}
const char* perfDataName(PerfData d) {
  return kData[static_cast<size_t>(d)].name;
}
uint16_t counterSelectBit(PerfCounter c) {
  return kCounters[static_cast<size_t>(c)].select;
}
uint16_t counterSelectBit(PerfData d) {
  return kData[static_cast<size_t>(d)].select;
}

PortCounters decodePortCounters(const uint8_t* d) {
  PortCounters pc;
  pc.portSelect = static_cast<uint8_t>(get(d, IB_PC_PORT_SELECT_F));
  for (size_t i = 0; i < kPerfCounters; ++i) pc.errors[i] = get(d, kCounters[i].field);
  for (size_t i = 0; i < kPerfDataCounters; ++i) pc.data[i] = get(d, kData[i].field);
  return pc;
}

void encodePortCounters(const PortCounters& pc, uint8_t* d) {
  set(d, IB_PC_PORT_SELECT_F, pc.portSelect);
  for (size_t i = 0; i < kPerfCounters; ++i)
    set(d, kCounters[i].field, static_cast<uint32_t>(std::min(pc.errors[i], kCounters[i].max)));
  for (size_t i = 0; i < kPerfDataCounters; ++i)
    set(d, kData[i].field, static_cast<uint32_t>(std::min<uint64_t>(pc.data[i], 0xFFFFFFFF)));
}

MadPacket makePortCountersRequest(uint16_t dlid, uint8_t port, bool clear, uint16_t counterSelect,
                                  bool clearXmitWait) {
  MadPacket mad = makePerfGmp(clear ? kSet : kGet, kAttrPortCounters, dlid);
  uint8_t* d = perfData(mad);
  set(d, IB_PC_PORT_SELECT_F, port);
  if (clear) {
    set(d, IB_PC_COUNTER_SELECT_F, counterSelect);
    set(d, IB_PC_COUNTER_SELECT2_F, clearXmitWait ? 1 : 0);
  }
  return mad;
}

PortCountersExtended decodePortCountersExtended(const uint8_t* d) {
  PortCountersExtended pc;
  pc.portSelect = static_cast<uint8_t>(get(d, IB_PC_EXT_PORT_SELECT_F));
  for (size_t i = 0; i < kPerfDataCounters; ++i) pc.data[i] = get64(d, kData[i].extField);
  return pc;
}

void encodePortCountersExtended(const PortCountersExtended& pc, uint8_t* d) {
  set(d, IB_PC_EXT_PORT_SELECT_F, pc.portSelect);
  for (size_t i = 0; i < kPerfDataCounters; ++i) set64(d, kData[i].extField, pc.data[i]);
}

MadPacket makePortCountersExtendedRequest(uint16_t dlid, uint8_t port) {
  MadPacket mad = makePerfGmp(kGet, kAttrPortCountersExtended, dlid);
  set(perfData(mad), IB_PC_EXT_PORT_SELECT_F, port);
  return mad;
}

PerfClassPortInfo decodePerfClassPortInfo(const uint8_t* d) {
  PerfClassPortInfo i;
  i.baseVersion = static_cast<uint8_t>(get(d, IB_CPI_BASEVER_F));
  i.classVersion = static_cast<uint8_t>(get(d, IB_CPI_CLASSVER_F));
  i.capMask = static_cast<uint16_t>(get(d, IB_CPI_CAPMASK_F));
  return i;
}

void encodePerfClassPortInfo(const PerfClassPortInfo& info, uint8_t* d) {
  set(d, IB_CPI_BASEVER_F, info.baseVersion);
  set(d, IB_CPI_CLASSVER_F, info.classVersion);
  set(d, IB_CPI_CAPMASK_F, info.capMask);
}

}  // namespace ibsm::mad
