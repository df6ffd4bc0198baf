#include "routing/pattern_checker.h"

#include <gtest/gtest.h>

#include "routing/engine.h"
#include "tests/routing/fabric_sketch.h"
#include "tests/routing/generated_fabrics.h"

namespace ibsm::routing {
namespace {

using fabric::TopologyPtr;
using testing::FabricSketch;

//   h0 --(3)        (1)---(1)        (3)-- h2
//   h1 --(4) left                right (4)-- h3
// One link between the two switches; hosts named so that natural order is h0, h1, h2, h3.
struct TwoLeaves {
  TopologyPtr topo;
  NodeIndex left, right, h[4];
  LidAssignment lids;
  RoutingTables tables;
};
TwoLeaves makeTwoLeaves() {
  FabricSketch f;
  TwoLeaves t;
  t.left = f.addSwitch("left", 4);
  t.right = f.addSwitch("right", 4);
  for (int i = 0; i < 4; ++i) t.h[i] = f.addCa("h" + std::to_string(i) + " HCA-1");
  f.link(t.left, 1, t.right, 1);
  f.link(t.h[0], 1, t.left, 3);
  f.link(t.h[1], 1, t.left, 4);
  f.link(t.h[2], 1, t.right, 3);
  f.link(t.h[3], 1, t.right, 4);
  t.topo = f.build();
  t.lids = testing::assignOrDie(*t.topo, 0);
  auto r = makeEngine("minhop")->compute(*t.topo, t.lids, Options{});
  EXPECT_TRUE(r.ok());
  t.tables = std::move(*r);
  return t;
}

PatternReport run(const TwoLeaves& t, Pattern p, std::vector<Rank> ranks = {}, unsigned threads = 1) {
  PatternOptions o;
  o.pattern = p;
  o.threads = threads;
  return checkPattern(*t.topo, t.lids, t.tables, std::move(ranks), o);
}

TEST(PatternChecker, ShiftsOverOneLinkCountFlowsPerDirection) {
  const TwoLeaves t = makeTwoLeaves();
  const PatternReport r = run(t, Pattern::kShift);
  // Shift 1: h1->h2 left to right, h3->h0 right to left: one flow per direction. Shift 2: h0->h2 and h1->h3
  // share left->right (and h2->h0, h3->h1 the other way): each gets half. Shift 3 is shift 1 mirrored.
  EXPECT_EQ(r.ranks, 4u);
  EXPECT_EQ(r.shifts, 3u);
  EXPECT_EQ(r.flows, 12u);
  EXPECT_EQ(r.unrouted, 0u);
  EXPECT_EQ(r.maxCongestion, 2u);
  EXPECT_NEAR(r.meanBandwidth, 10.0 / 12.0, 1e-9);
  EXPECT_EQ(r.congestionFreeShifts, 2u);
  ASSERT_EQ(r.shiftsByCongestion.size(), 3u);
  EXPECT_EQ(r.shiftsByCongestion[1], 2u);
  EXPECT_EQ(r.shiftsByCongestion[2], 1u);
  EXPECT_EQ(r.worstShift, 2u);
  EXPECT_NEAR(r.worstBandwidth, 0.5, 1e-9);
  EXPECT_EQ(r.worstCongestion, 2u);
  ASSERT_TRUE(r.hasWorstLink);
  EXPECT_EQ(r.worstLink.fromDesc, "left");  // h0->h2 is the shift's first flow over a link
  EXPECT_EQ(r.worstLink.toDesc, "right");
  const std::string text = formatPatternText(r);
  EXPECT_NE(text.find("mean flow bandwidth: 0.833"), std::string::npos) << text;
  EXPECT_NE(text.find("congestion-free shifts: 2 of 3"), std::string::npos) << text;
  EXPECT_NE(text.find("worst shift: 2"), std::string::npos) << text;
  const std::string json = formatPatternJson(r);
  EXPECT_NE(json.find("\"maxCongestion\":2"), std::string::npos) << json;
  EXPECT_NE(json.find("\"shiftsByCongestion\":{\"1\":2,\"2\":1}"), std::string::npos) << json;
}

TEST(PatternChecker, RingIsShiftsOneAndMinusOneAndAll2AllEveryPairAtOnce) {
  const TwoLeaves t = makeTwoLeaves();
  const PatternReport ring = run(t, Pattern::kRing);
  EXPECT_EQ(ring.shifts, 2u);
  EXPECT_EQ(ring.maxCongestion, 1u);
  EXPECT_DOUBLE_EQ(ring.meanBandwidth, 1.0);
  EXPECT_EQ(ring.congestionFreeShifts, 2u);
  // All pairs: four flows each way over the link get a quarter, the four inside a switch all of it.
  const PatternReport all = run(t, Pattern::kAll2All);
  EXPECT_EQ(all.shifts, 1u);
  EXPECT_EQ(all.flows, 12u);
  EXPECT_EQ(all.maxCongestion, 4u);
  EXPECT_NEAR(all.meanBandwidth, 0.5, 1e-9);
  EXPECT_EQ(all.congestionFreeShifts, 0u);
  EXPECT_TRUE(all.hasWorstLink);
}

TEST(PatternChecker, RankFileSetsTheOrder) {
  const TwoLeaves t = makeTwoLeaves();
  // h0, h2, h1, h3: shift 1 sends h0->h2 and h1->h3 over left->right together.
  const std::string guid = fabric::toString(t.topo->node(t.h[3]).ports[1].guid);
  auto ranks = parseRanks(*t.topo, t.lids, "# job 42\nh0\n  h2 HCA-1 \n\nh1\n" + guid + "\n", "job.ranks");
  ASSERT_TRUE(ranks.ok()) << ranks.error().message;
  ASSERT_EQ(ranks->size(), 4u);
  EXPECT_EQ((*ranks)[1].node, t.h[2]);
  EXPECT_EQ((*ranks)[3].node, t.h[3]);
  PatternReport r = run(t, Pattern::kRing, *ranks);
  EXPECT_TRUE(r.ranksFromFile);
  EXPECT_EQ(r.maxCongestion, 2u);
  EXPECT_EQ(r.congestionFreeShifts, 0u);

  auto bad = parseRanks(*t.topo, t.lids, "h0\nh9\n", "job.ranks");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("job.ranks:2: no CA 'h9'"), std::string::npos) << bad.error().message;
  auto twice = parseRanks(*t.topo, t.lids, "h0\nh1\nh0 HCA-1\n", "job.ranks");
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.error().message.find("job.ranks:3: 'h0 HCA-1' is already rank 0"), std::string::npos)
      << twice.error().message;
  EXPECT_FALSE(parseRanks(*t.topo, t.lids, "left\n", "job.ranks").ok());  // a switch is no rank
  EXPECT_FALSE(parseRanks(*t.topo, t.lids, "# nothing\n", "job.ranks").ok());
}

TEST(PatternChecker, FlowsWithoutARouteAreCountedAndGetNothing) {
  TwoLeaves t = makeTwoLeaves();
  const Lid h2 = t.lids.base(t.h[2], PortNum{1});
  t.tables.lft[t.left][h2.value] = kNoPort;  // h0 and h1 no longer reach h2
  const PatternReport r = run(t, Pattern::kShift);
  EXPECT_EQ(r.unrouted, 2u);  // h1->h2 in shift 1, h0->h2 in shift 2
  EXPECT_NEAR(r.meanBandwidth, 9.0 / 12.0, 1e-9);
  EXPECT_NE(formatPatternText(r).find("2 NOT ROUTED"), std::string::npos);
}

TEST(PatternChecker, DefaultRanksAreHostsInNaturalNameOrder) {
  FabricSketch f;
  NodeIndex sw = f.addSwitch("sw", 8);
  NodeIndex h10 = f.addCa("host-10 HCA-1"), h2 = f.addCa("host-2 HCA-1"), h1 = f.addCa("host-1 HCA-1");
  f.link(h10, 1, sw, 1);
  f.link(h2, 1, sw, 2);
  f.link(h1, 1, sw, 3);
  TopologyPtr topo = f.build();
  const LidAssignment lids = testing::assignOrDie(*topo, 0);
  const std::vector<Rank> r = defaultRanks(*topo, lids);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].node, h1);
  EXPECT_EQ(r[1].node, h2);
  EXPECT_EQ(r[2].node, h10);
}

PatternReport shifts(const fabric::Topology& topo, const std::string& engine, unsigned threads = 2) {
  testing::Routed routed = testing::route(topo, engine, 4);
  EXPECT_TRUE(routed.tables.ok()) << (routed.tables.ok() ? "" : routed.tables.error().message);
  if (!routed.tables.ok()) return {};
  PatternOptions o;
  o.threads = threads;
  return checkPattern(topo, routed.lids, *routed.tables, {}, o);
}

// What the fabrics promise: a full fat tree routed by ftree and a hypercube routed by dor carry every shift
// of their hosts (in name order) without two flows on one link.
TEST(PatternChecker, FullFatTreesAndHypercubesAreCongestionFreeForEveryShift) {
  for (const auto& spec : {testing::karyNTree(4, 3), testing::fatTree(2, 8), testing::fatTree(3, 8)}) {
    auto topo = testing::generate(spec);
    ASSERT_TRUE(topo);
    const PatternReport r = shifts(*topo, "ftree");
    EXPECT_EQ(r.ranks, topo->cas().size());
    EXPECT_EQ(r.unrouted, 0u);
    EXPECT_EQ(r.maxCongestion, 1u) << formatPatternText(r);
    EXPECT_DOUBLE_EQ(r.meanBandwidth, 1.0);
    EXPECT_EQ(r.congestionFreeShifts, r.shifts);
  }
  for (unsigned d : {3u, 5u}) {
    auto topo = testing::generate(testing::hypercube(d, 1));
    ASSERT_TRUE(topo);
    const PatternReport r = shifts(*topo, "dor");
    EXPECT_EQ(r.maxCongestion, 1u) << "hypercube " << d << "\n" << formatPatternText(r);
    EXPECT_EQ(r.congestionFreeShifts, r.shifts);
  }
}

TEST(PatternChecker, TheResultDoesNotDependOnTheThreadCount) {
  auto topo = testing::generate(testing::dragonfly(3, 2));
  ASSERT_TRUE(topo);
  for (Pattern p : {Pattern::kShift, Pattern::kAll2All}) {
    testing::Routed routed = testing::route(*topo, "dfly", 2);
    ASSERT_TRUE(routed.tables.ok());
    PatternOptions one, three;
    one.pattern = three.pattern = p;
    three.threads = 3;
    const PatternReport a = checkPattern(*topo, routed.lids, *routed.tables, {}, one);
    const PatternReport b = checkPattern(*topo, routed.lids, *routed.tables, {}, three);
    EXPECT_EQ(formatPatternJson(a), formatPatternJson(b));
    EXPECT_GT(a.maxCongestion, 1u);  // minimal routes share a group pair's one global link
  }
}

}  // namespace
}  // namespace ibsm::routing
