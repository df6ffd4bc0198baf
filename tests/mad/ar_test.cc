#include "mad/ar.h"

#include <gtest/gtest.h>

#include <random>

namespace ibsm::mad {
namespace {

TEST(VendorField, BigEndianWordsWithBitZeroAsLsb) {
  uint8_t d[8] = {};
  setVendorField(d, {0, 0, 1}, 1);
  EXPECT_EQ(d[3], 0x01);
  setVendorField(d, {0, 24, 1}, 1);
  EXPECT_EQ(d[0], 0x01);
  setVendorField(d, {4, 12, 12}, 0xABC);  // bits 12..23 of the word at byte 4
  EXPECT_EQ(d[5], 0xAB);
  EXPECT_EQ(d[6], 0xC0);
  EXPECT_EQ(getVendorField(d, {4, 12, 12}), 0xABCu);
  setVendorField(d, {4, 0, 12}, 0xFFFFF);  // cut to 12 bits, neighbours untouched
  EXPECT_EQ(d[6], 0xCF);
  EXPECT_EQ(d[7], 0xFF);
  EXPECT_EQ(getVendorField(d, {4, 12, 12}), 0xABCu);
  setVendorField(d, {4, 0, 32}, 0x01020304);
  EXPECT_EQ(d[4], 0x01);
  EXPECT_EQ(d[7], 0x04);
  EXPECT_EQ(getVendorField(d, {4, 0, 32}), 0x01020304u);
}

TEST(ArInfo, LayoutMatchesOpenSmBytes) {
  // OpenSM's ib_ar_info_t: byte 0 capability bits (bit 0 no_fallback), byte 3 enable_features (bit 0 enable,
  // bit 1 ARN supported), bytes 4-7 group_info (cap bits 0-11, top 12-23), bytes 16-19 ageing time.
  uint8_t d[64] = {};
  ArInfo a;
  a.enabled = true;
  a.arnSupported = true;
  a.noFallback = true;
  a.groupCap = 0x123;
  a.groupTop = 0x045;
  a.groupTableCap = 2;
  a.enableBySlMask = 0x8001;
  a.ageingTimeUs = 30;
  encodeArInfo(a, d);
  EXPECT_EQ(d[0], 0x01);
  EXPECT_EQ(d[3], 0x03);
  EXPECT_EQ(d[4], 0x02);
  EXPECT_EQ(d[5], 0x04);
  EXPECT_EQ(d[6], 0x51);
  EXPECT_EQ(d[7], 0x23);
  EXPECT_EQ(d[8], 0x80);
  EXPECT_EQ(d[9], 0x01);
  EXPECT_EQ(d[19], 30);
  EXPECT_EQ(d[16] | d[17] | d[18], 0);
}

TEST(ArInfo, RoundTripsEveryField) {
  ArInfo a;
  a.enabled = true;
  a.arnSupported = a.frnSupported = a.frSupported = a.frEnabled = a.rnXmitEnabled = true;
  a.subGroupsActive = 3;
  a.groupTableCopySupported = 9;
  a.directionsSupported = 200;
  a.noFallback = a.is4Mode = a.globalGroups = a.bySlCap = a.bySlEnabled = a.byTransportCap =
      a.dynamicCapCalc = true;
  a.groupCap = 4095;
  a.groupTop = 4094;
  a.groupTableCap = 15;
  a.stringWidthCap = 14;
  a.arVersionCap = 2;
  a.rnVersionCap = 13;
  a.subGroupsSupported = 250;
  a.enableBySlMask = 0xBEEF;
  a.byTransportDisable = 0x0A;
  a.ageingTimeUs = 0xDEADBEEF;
  uint8_t d[64] = {};
  encodeArInfo(a, d);
  auto back = decodeArInfo(d);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, a);

  // Each flag on its own decodes to itself only (no field overlaps another).
  for (int f = 0; f < 6; ++f) {
    ArInfo one;
    one.groupCap = 16;
    bool* flags[] = {&one.enabled,     &one.arnSupported, &one.frnSupported,
                     &one.frSupported, &one.frEnabled,    &one.rnXmitEnabled};
    *flags[f] = true;
    uint8_t e[64] = {};
    encodeArInfo(one, e);
    auto got = decodeArInfo(e);
    ASSERT_TRUE(got);
    EXPECT_EQ(*got, one) << "flag " << f;
  }
}

TEST(ArInfo, RejectsGroupTopPastCap) {
  uint8_t d[64] = {};
  ArInfo a;
  a.groupCap = 8;
  a.groupTop = 8;
  encodeArInfo(a, d);
  EXPECT_FALSE(decodeArInfo(d));
  a.groupTop = 7;
  encodeArInfo(a, d);
  EXPECT_TRUE(decodeArInfo(d));
  ArInfo none;  // group_cap 0: no AR, any top is ignored
  encodeArInfo(none, d);
  auto n = decodeArInfo(d);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->groupCap, 0);
}

TEST(ArGroupTable, TwoMasksPerBlockPortBitsBigEndian) {
  ArGroupBlock b;
  b.groups[0].set(1);
  b.groups[0].set(8);
  b.groups[1].set(255);
  b.groups[1].set(33);
  uint8_t d[64] = {};
  encodeArGroupBlock(b, d);
  EXPECT_EQ(d[31], 0x02);  // port 1: lowest byte of the first mask
  EXPECT_EQ(d[30], 0x01);  // port 8
  EXPECT_EQ(d[32], 0x80);  // port 255: top bit of the second mask
  EXPECT_EQ(d[59], 0x02);  // port 33: byte 63 - 4
  int set = 0;
  for (uint8_t x : d) set += __builtin_popcount(x);
  EXPECT_EQ(set, 4);
  EXPECT_EQ(decodeArGroupBlock(d), b);
}

TEST(ArGroupTable, RandomMasksRoundTrip) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 50; ++i) {
    ArGroupBlock b;
    for (auto& g : b.groups)
      for (unsigned p = 0; p < 256; ++p) g[p] = rng() & 1;
    uint8_t d[64] = {};
    encodeArGroupBlock(b, d);
    EXPECT_EQ(decodeArGroupBlock(d), b);
  }
  EXPECT_EQ(arGroupTableAttrMod(17), 17u);
}

TEST(ArLft, EntryLayoutMatchesOpenSm) {
  // OpenSM's ib_ar_lft_entry_t: state_table (LID state in bits 7-6, table in 3-0), legacy_port, group_number.
  ArLftBlock b;
  b[0] = ArLftEntry{7, 7, 0, ArLidState::kStatic};
  b[1] = ArLftEntry{0xABC, 3, 5, ArLidState::kBounded};
  b[15] = ArLftEntry{1, 0xFF, 0, ArLidState::kFree};
  uint8_t d[64] = {};
  encodeArLftBlock(b, d);
  EXPECT_EQ(d[0], 0x80);
  EXPECT_EQ(d[1], 7);
  EXPECT_EQ(d[2], 0x00);
  EXPECT_EQ(d[3], 7);
  EXPECT_EQ(d[4], 0x05);
  EXPECT_EQ(d[5], 3);
  EXPECT_EQ(d[6], 0x0A);
  EXPECT_EQ(d[7], 0xBC);
  EXPECT_EQ(d[60], 0x40);
  EXPECT_EQ(d[61], 0xFF);
  auto back = decodeArLftBlock(d);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, b);
}

TEST(ArLft, RoundTripAndReservedState) {
  std::mt19937 rng(3);
  ArLftBlock b;
  for (auto& e : b) {
    e.group = static_cast<uint16_t>(rng() & 0xFFF);
    e.defaultPort = static_cast<uint8_t>(rng());
    e.table = static_cast<uint8_t>(rng() & 0xF);
    e.state = static_cast<ArLidState>(rng() % 3);
  }
  uint8_t d[64] = {};
  encodeArLftBlock(b, d);
  auto back = decodeArLftBlock(d);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, b);
  d[8] |= 0xC0;  // entry 2: LidState 3 (reserved)
  EXPECT_FALSE(decodeArLftBlock(d));
  EXPECT_EQ(arLftAttrMod(300), 300u);
}

}  // namespace
}  // namespace ibsm::mad
