#include "routing/engine.h"

#include <gtest/gtest.h>

#include "tests/routing/fabric_sketch.h"

namespace ibsm::routing {
namespace {

TEST(EngineRegistry, KnowsTheBuiltInEngines) {
  EXPECT_EQ(engineNames(), (std::vector<std::string>{"minhop", "updn", "ftree", "dfsp", "dor", "dfly"}));
  for (const auto& n : engineNames()) {
    auto e = makeEngine(n);
    ASSERT_NE(e, nullptr) << n;
    EXPECT_EQ(e->name(), n);
  }
  EXPECT_EQ(makeEngine("lash"), nullptr);
  EXPECT_EQ(makeEngine(""), nullptr);
}

TEST(EngineRegistry, ParseChain) {
  auto c = parseChain("ftree, updn ,minhop");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(*c, (std::vector<std::string>{"ftree", "updn", "minhop"}));
  auto bad = parseChain("ftree,lash");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("unknown routing engine 'lash'"), std::string::npos);
  EXPECT_NE(bad.error().message.find("minhop"), std::string::npos);  // lists the known ones
  EXPECT_FALSE(parseChain("").ok());
  EXPECT_FALSE(parseChain("minhop,").ok());
  EXPECT_FALSE(parseChain("minhop,minhop").ok());
}

TEST(EngineChain, FallsBackInOrderAndCollectsReasons) {
  auto topo = testing::makeGrid(3, 3, 1, /*wrap=*/true);  // a torus: not a fat tree
  LidAssignment lids = testing::assignOrDie(*topo);
  auto r = computeChain({"ftree", "minhop"}, *topo, lids, {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->tables.engine, "minhop");
  ASSERT_EQ(r->fallbacks.size(), 1u);
  EXPECT_EQ(r->fallbacks[0].rfind("ftree: ", 0), 0u) << r->fallbacks[0];
  EXPECT_EQ(r->fallbacks[0].find("ftree: ftree:"), std::string::npos);

  auto direct = computeChain({"minhop"}, *topo, lids, {});
  ASSERT_TRUE(direct.ok());
  EXPECT_TRUE(direct->fallbacks.empty());
  EXPECT_EQ(direct->tables.lft, r->tables.lft);
}

TEST(EngineChain, FailsWhenNothingRoutesOrANameIsUnknown) {
  auto topo = testing::makeGrid(3, 3, 1, true);
  LidAssignment lids = testing::assignOrDie(*topo);
  EXPECT_FALSE(computeChain({}, *topo, lids, {}).ok());
  // Names are checked before anything runs.
  auto unknown = computeChain({"minhop", "nope"}, *topo, lids, {});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("unknown routing engine 'nope'"), std::string::npos);
  // ftree declines a torus; with nothing after it the chain fails and says why.
  auto none = computeChain({"ftree"}, *topo, lids, {});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("no routing engine could route the fabric: ftree: "), std::string::npos)
      << none.error().message;
}

}  // namespace
}  // namespace ibsm::routing
