#include "mad/perf.h"

#include <gtest/gtest.h>
#include <infiniband/mad.h>

#include "mad/smp.h"

namespace ibsm::mad {
namespace {

// The layouts checked against libibmad's own field tables (what perfquery decodes), byte by byte where the
// IBA fixes them: PortSelect is byte 1 of the data, SymbolErrorCounter bytes 4-5, PortXmitData bytes 24-27.
TEST(Perf, PortCountersLayout) {
  PortCounters pc;
  pc.portSelect = 7;
  pc.errors[static_cast<size_t>(PerfCounter::kSymbolError)] = 0x1234;
  pc.errors[static_cast<size_t>(PerfCounter::kLinkDowned)] = 3;
  pc.errors[static_cast<size_t>(PerfCounter::kExcessiveBufferOverrun)] = 0x5;
  pc.data[static_cast<size_t>(PerfData::kXmitData)] = 0xA1B2C3D4;
  std::array<uint8_t, 192> d{};
  encodePortCounters(pc, d.data());
  EXPECT_EQ(d[1], 7);
  EXPECT_EQ(d[4], 0x12);
  EXPECT_EQ(d[5], 0x34);
  EXPECT_EQ(d[7], 3);  // LinkDownedCounter
  EXPECT_EQ(d[24], 0xA1);
  EXPECT_EQ(d[27], 0xD4);
  EXPECT_EQ(mad_get_field(d.data(), 0, IB_PC_ERR_EXCESS_OVR_F), 5u);
  PortCounters back = decodePortCounters(d.data());
  EXPECT_EQ(back.portSelect, 7);
  EXPECT_EQ(back.errors, pc.errors);
  EXPECT_EQ(back.data, pc.data);
}

TEST(Perf, EncodeSaturatesAtTheCounterWidth) {
  PortCounters pc;
  pc.errors[static_cast<size_t>(PerfCounter::kLinkDowned)] = 1000;  // an 8-bit counter
  pc.errors[static_cast<size_t>(PerfCounter::kSymbolError)] = 1u << 20;
  std::array<uint8_t, 192> d{};
  encodePortCounters(pc, d.data());
  PortCounters back = decodePortCounters(d.data());
  EXPECT_EQ(back.errors[static_cast<size_t>(PerfCounter::kLinkDowned)], 0xFFu);
  EXPECT_EQ(back.errors[static_cast<size_t>(PerfCounter::kSymbolError)], 0xFFFFu);
  EXPECT_EQ(perfCounterMax(PerfCounter::kLocalLinkIntegrityErrors), 0xFu);
}

TEST(Perf, PortCountersExtendedLayout) {
  PortCountersExtended pc;
  pc.portSelect = 3;
  pc.data[static_cast<size_t>(PerfData::kRcvPkts)] = 0x0102030405060708ull;
  std::array<uint8_t, 192> d{};
  encodePortCountersExtended(pc, d.data());
  EXPECT_EQ(d[1], 3);
  EXPECT_EQ(d[32], 0x01);  // PortRcvPkts: bytes 32-39
  EXPECT_EQ(d[39], 0x08);
  EXPECT_EQ(decodePortCountersExtended(d.data()).data, pc.data);
}

TEST(Perf, RequestsAreLidRoutedGmpsToQp1) {
  MadPacket get = makePortCountersRequest(17, 5);
  auto h = parseHeader(get);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->mgmtClass, kClassPerf);
  EXPECT_EQ(h->classVersion, 1);
  EXPECT_EQ(h->method, kGet);
  EXPECT_EQ(h->attrId, kAttrPortCounters);
  EXPECT_EQ(get.addr.lid, 17);
  EXPECT_EQ(get.addr.qpn, 1u);
  EXPECT_EQ(get.addr.qkey, 0x80010000u);
  EXPECT_EQ(decodePortCounters(perfData(get)).portSelect, 5);

  MadPacket clear = makePortCountersRequest(17, 5, true, counterSelectBit(PerfCounter::kSymbolError), true);
  EXPECT_EQ(parseHeader(clear)->method, kSet);
  EXPECT_EQ(mad_get_field(perfData(clear), 0, IB_PC_COUNTER_SELECT_F), 1u);
  EXPECT_EQ(mad_get_field(perfData(clear), 0, IB_PC_COUNTER_SELECT2_F), 1u);

  MadPacket ext = makePortCountersExtendedRequest(9, 2);
  EXPECT_EQ(parseHeader(ext)->attrId, kAttrPortCountersExtended);
  EXPECT_EQ(decodePortCountersExtended(perfData(ext)).portSelect, 2);
}

TEST(Perf, ClassPortInfoCapabilities) {
  std::array<uint8_t, 192> d{};
  encodePerfClassPortInfo({1, 1, kPmAllPortSelect | kPmExtendedWidth}, d.data());
  PerfClassPortInfo i = decodePerfClassPortInfo(d.data());
  EXPECT_EQ(i.capMask, kPmAllPortSelect | kPmExtendedWidth);
  EXPECT_TRUE(i.extended());
  EXPECT_FALSE((PerfClassPortInfo{1, 1, kPmAllPortSelect}.extended()));
  EXPECT_TRUE((PerfClassPortInfo{1, 1, kPmExtendedWidthNoIetf}.extended()));
}

TEST(Perf, CounterNamesAndSelectBits) {
  EXPECT_STREQ(perfCounterName(PerfCounter::kSymbolError), "symbol_error");
  EXPECT_STREQ(perfCounterName(PerfCounter::kPortXmitWait), "port_xmit_wait");
  EXPECT_STREQ(perfDataName(PerfData::kXmitData), "transmit_data");
  EXPECT_EQ(counterSelectBit(PerfCounter::kVl15Dropped), 1u << 11);
  EXPECT_EQ(counterSelectBit(PerfCounter::kPortXmitWait), 0u);
  EXPECT_EQ(counterSelectBit(PerfData::kRcvPkts), 1u << 15);
}

}  // namespace
}  // namespace ibsm::mad
