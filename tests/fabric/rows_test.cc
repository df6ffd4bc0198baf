// Rows: copies share rows; a write makes only that row the writer's own; readers of the other version see it
// unchanged.
#include "fabric/rows.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace ibsm::fabric {
namespace {

using Row = std::vector<uint8_t>;

TEST(Rows, ACopySharesEveryRowUntilOneIsWritten) {
  Rows<Row> a;
  a.resize(3);
  a[0] = {1, 2};
  a[1] = {3};
  const Rows<Row>& ca = a;
  EXPECT_TRUE(ca[2].empty());  // read without writing: an empty row
  Rows<Row> b = a;
  for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(b.sameRow(i, a, i)) << i;
  b[1][0] = 9;
  EXPECT_EQ(ca[1], Row{3});  // the other version keeps its row
  EXPECT_EQ(std::as_const(b)[1], Row{9});
  EXPECT_FALSE(b.sameRow(1, a, 1));
  EXPECT_TRUE(b.sameRow(0, a, 0));
  EXPECT_FALSE(a == b);
  b[1][0] = 3;
  EXPECT_TRUE(a == b);  // equal by value, though no longer the same row
}

TEST(Rows, AssignSharesOneRowAndShareTakesAnotherVersionsRow) {
  Rows<Row> a;
  a.assign(4, Row(5, 0xFF));
  Rows<Row> b;
  b.resize(2);
  b.share(1, a, 3);
  EXPECT_TRUE(b.sameRow(1, a, 3));
  b[1][4] = 1;
  EXPECT_EQ(std::as_const(a)[3], Row(5, 0xFF));
  a[0][0] = 7;  // rows assigned together are cloned apart on their first write
  EXPECT_EQ(std::as_const(a)[1][0], 0xFF);
  EXPECT_TRUE(a == (std::vector<Row>{{7, 0xFF, 0xFF, 0xFF, 0xFF}, Row(5, 0xFF), Row(5, 0xFF), Row(5, 0xFF)}));
  size_t n = 0;
  for (const Row& r : a) n += r.size();
  EXPECT_EQ(n, 20u);
}

TEST(Blocks, EqualBlocksAreSharedAndClonedApartOnAWrite) {
  Blocks<uint16_t, 4> a;
  a.assign(14, 7);
  for (size_t i = 0; i < 14; ++i) a[i] = i < 4 || i >= 8 ? 1 : 2;  // blocks 1111 2222 1111 11..
  Blocks<uint16_t, 4> before = a;
  a.shareEqualBlocks();
  EXPECT_TRUE(a == before);
  EXPECT_TRUE(a.sameBlock(0, before));  // block 0 is kept, block 2 now shares it
  EXPECT_FALSE(a.sameBlock(2, before));
  EXPECT_TRUE(a.sameBlock(1, before) && a.sameBlock(3, before));
  Blocks<uint16_t, 4> copy = a;
  a[9] = 5;  // written: block 2 is cloned, block 0 keeps its entries
  EXPECT_EQ(a[0], 1);
  EXPECT_EQ(a[1], 1);
  EXPECT_EQ(a[9], 5);
  EXPECT_EQ(copy[9], 1);
  a.resize(16, 3);  // the last block, half used, is its own
  EXPECT_EQ(a[13], 1);
  EXPECT_EQ(a[14], 3);
  EXPECT_EQ(a[15], 3);
}

}  // namespace
}  // namespace ibsm::fabric
