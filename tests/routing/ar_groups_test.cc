// AR group builder: de-duplication, the static port as member, no group for single-port sets, the per-switch
// cap (deterministic, independent of reporting order), and the engines' use of it (cap honoured, groups
// legal).
#include "routing/ar_groups.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "routing/engine.h"
#include "tests/routing/fabric_sketch.h"
#include "tools/fabric_gen/generator.h"

namespace ibsm::routing {
namespace {

PortMask ports(std::initializer_list<unsigned> list) {
  PortMask m;
  for (unsigned p : list) m.set(p);
  return m;
}

Lid lid(unsigned v) {
  return Lid{static_cast<uint16_t>(v)};
}

TEST(ArGroupBuilder, IdenticalSetsShareAGroup) {
  ArGroupBuilder b(10, 2048);
  b.set(lid(1), ports({2, 3}), 2);
  b.set(lid(2), ports({3}), 2);  // the default port joins: {2, 3} again
  b.set(lid(3), ports({4, 5}), 4);
  b.set(lid(4), ports({2, 3}), 3);
  ArTable t = b.build();
  ASSERT_EQ(t.groups.size(), 2u);
  EXPECT_EQ(t.groups[0], ports({2, 3}));
  EXPECT_EQ(t.groups[1], ports({4, 5}));
  EXPECT_EQ(t.lidToGroup.size(), 10u);
  EXPECT_EQ(t.lidToGroup[1], 0);
  EXPECT_EQ(t.lidToGroup[2], 0);
  EXPECT_EQ(t.lidToGroup[3], 1);
  EXPECT_EQ(t.lidToGroup[4], 0);
  EXPECT_EQ(t.lidToGroup[5], ArTable::kNoGroup);  // never reported
  EXPECT_FALSE(t.capped);
}

TEST(ArGroupBuilder, SinglePortsAndUnreachableNeedNoGroup) {
  ArGroupBuilder b(8, 2048);
  b.set(lid(1), ports({}), 7);            // just the static port
  b.set(lid(2), ports({7}), 7);           // the same
  b.set(lid(3), ports({1, 2}), kNoPort);  // unreachable: no group whatever the set
  b.set(lid(4), ports({1, 2}), 1);
  b.set(lid(4), ports({}), 1);  // reported again: replaced
  ArTable t = b.build();
  EXPECT_TRUE(t.groups.empty());
  for (uint16_t g : t.lidToGroup) EXPECT_EQ(g, ArTable::kNoGroup);
  EXPECT_FALSE(t.capped);
  EXPECT_EQ(b.intern(ports({5})), ArGroupBuilder::kNoSet);
}

TEST(ArGroupBuilder, CapKeepsEarlierSetsAndMarksTheTable) {
  // Sets A={1,2} (LID 1), B={1,3} (LID 2), C={2,3} (LID 3), A again (LID 5), C again (LID 6).
  ArGroupBuilder b(8, 2);
  b.set(lid(1), ports({1, 2}), 1);
  b.set(lid(2), ports({1, 3}), 1);
  b.set(lid(3), ports({2, 3}), 2);
  b.set(lid(5), ports({1, 2}), 2);
  b.set(lid(6), ports({2, 3}), 3);
  ArTable t = b.build();
  ASSERT_EQ(t.groups.size(), 2u);
  EXPECT_TRUE(t.capped);
  EXPECT_EQ(t.lidToGroup[1], 0);
  EXPECT_EQ(t.lidToGroup[2], 1);
  EXPECT_EQ(t.lidToGroup[3], ArTable::kNoGroup);  // a new set past the cap: static routing only
  EXPECT_EQ(t.lidToGroup[5], 0);                  // an existing set past the cap keeps its group
  EXPECT_EQ(t.lidToGroup[6], ArTable::kNoGroup);
  // Cap 0: no groups at all, and the table says so.
  ArGroupBuilder none(4, 0);
  none.set(lid(1), ports({1, 2}), 1);
  ArTable n = none.build();
  EXPECT_TRUE(n.groups.empty());
  EXPECT_TRUE(n.capped);
  // A cap beyond what 16-bit group numbers hold is clamped, not wrapped.
  ArGroupBuilder big(4, 1u << 20);
  big.set(lid(1), ports({1, 2}), 1);
  EXPECT_EQ(big.build().lidToGroup[1], 0);
}

// Group numbers and the cap depend only on which LIDs have which sets, not on the order they are reported in.
TEST(ArGroupBuilder, OrderIndependent) {
  std::mt19937 rng(3);
  for (int iter = 0; iter < 50; ++iter) {
    const unsigned lids = 1 + rng() % 200, cap = rng() % 12;
    std::vector<std::pair<unsigned, PortMask>> reports;
    for (unsigned l = 1; l < lids; ++l) {
      if (rng() % 4 == 0) continue;
      auto port = [&] { return static_cast<unsigned>(1 + rng() % 4); };
      reports.push_back({l, ports({port(), port(), port()})});
    }
    auto buildIn = [&](const std::vector<std::pair<unsigned, PortMask>>& order) {
      ArGroupBuilder b(lids, cap);
      for (const auto& [l, m] : order) {
        unsigned first = 1;
        while (!m.test(first)) ++first;
        b.set(lid(l), m, static_cast<uint8_t>(first));  // a member as default: the set stays m
      }
      return b.build();
    };
    ArTable forward = buildIn(reports);
    auto shuffled = reports;
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    ArTable other = buildIn(shuffled);
    EXPECT_EQ(forward.groups, other.groups);
    EXPECT_EQ(forward.lidToGroup, other.lidToGroup);
    EXPECT_EQ(forward.capped, other.capped);
    EXPECT_LE(forward.groups.size(), cap);
    // Every LID with a group maps to exactly its set; distinct groups are distinct sets.
    for (const auto& [l, m] : reports) {
      uint16_t g = forward.lidToGroup[l];
      if (g != ArTable::kNoGroup) {
        EXPECT_EQ(forward.groups[g], m);
      } else if (m.count() >= 2) {
        EXPECT_TRUE(forward.capped);
      }
    }
    for (size_t i = 0; i < forward.groups.size(); ++i)
      for (size_t j = i + 1; j < forward.groups.size(); ++j) EXPECT_NE(forward.groups[i], forward.groups[j]);
  }
}

TEST(ArGroupBuilder, InternAndAssignMatchSet) {
  ArGroupBuilder a(6, 16), b(6, 16);
  a.set(lid(1), ports({1, 2}), 1);
  a.set(lid(2), ports({3, 4}), 3);
  a.set(lid(3), ports({1, 2}), 2);
  uint32_t x = b.intern(ports({1, 2})), y = b.intern(ports({3, 4}));
  EXPECT_EQ(b.intern(ports({1, 2})), x);
  EXPECT_EQ(b.distinctSets(), 2u);
  b.assign(lid(3), x);
  b.assign(lid(2), y);
  b.assign(lid(1), x);
  b.assign(lid(4), ArGroupBuilder::kNoSet);
  ArTable ta = a.build(), tb = b.build();
  EXPECT_EQ(ta.groups, tb.groups);
  EXPECT_EQ(ta.lidToGroup, tb.lidToGroup);
}

// The engines honour the cap per switch and stay deterministic; with cap 1 some switches are capped, with the
// default none on this small fabric.
TEST(ArGroups, EnginesHonourTheCap) {
  tools::FabricSpec spec;
  spec.shape = tools::Shape::kFatTree;
  spec.levels = 3;
  spec.radix = 8;
  spec.removeLinks = 6;  // different sets at different LIDs
  auto topo = tools::generateFabric(spec);
  ASSERT_TRUE(topo.ok()) << topo.error().message;
  auto lids = testing::assignOrDie(**topo);
  for (auto make : {makeFatTreeEngine, makeUpDownEngine}) {
    for (uint32_t cap : {1u, 3u, 2048u}) {
      Options opt;
      opt.arGroupCap = cap;
      auto r = make()->compute(**topo, lids, opt);
      ASSERT_TRUE(r.ok()) << r.error().message;
      bool anyCapped = false;
      for (NodeIndex sw : (*topo)->switches()) {
        const ArTable& t = r->ar[sw];
        EXPECT_LE(t.groups.size(), cap);
        EXPECT_EQ(t.lidToGroup.size(), r->lft[sw].size());
        anyCapped = anyCapped || t.capped;
        for (size_t l = 0; l < t.lidToGroup.size(); ++l) {
          if (t.lidToGroup[l] == ArTable::kNoGroup) continue;
          const PortMask& m = t.groups[t.lidToGroup[l]];
          EXPECT_GE(m.count(), 2u);
          EXPECT_TRUE(m.test(r->lft[sw][l])) << "static port is a member";
        }
      }
      if (cap == 1) {
        EXPECT_TRUE(anyCapped) << r->engine;
      } else if (cap == 2048) {
        EXPECT_FALSE(anyCapped) << r->engine;
      }
      auto again = make()->compute(**topo, lids, opt);
      ASSERT_TRUE(again.ok());
      for (NodeIndex sw : (*topo)->switches()) {
        EXPECT_EQ(again->ar[sw].groups, r->ar[sw].groups);
        EXPECT_EQ(again->ar[sw].lidToGroup, r->ar[sw].lidToGroup);
      }
    }
  }
}

}  // namespace
}  // namespace ibsm::routing
