// ibsmd --discover-only on generated fabrics in ibsim must find exactly what libibnetdisc (ibnetdiscover)
// finds: the same GUIDs, the same links port for port, and what the generator built.
#include <gtest/gtest.h>

#include "tests/ibsim/ibsim_fabric.h"
#include "tools/fabric_gen/compare.h"

namespace ibsm::testing {
namespace {

struct Case {
  const char* name;
  const char* generator;
  const char* simHost;  // where ibsmd attaches ("" = first node, a switch)
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.generator;
}

class DiscoveryTest : public ::testing::TestWithParam<Case> {};

TEST_P(DiscoveryTest, MatchesIbnetdiscoverAndGenerator) {
  const Case& c = GetParam();
  std::string generated;
  auto sim = startFabric(c.generator, &generated);
  RunOptions opt;
  opt.simHost = c.simHost;
  RunResult ours = sim->run({binPath("ibsmd"), "--discover-only", "--topology-out", "found.topo"}, opt);
  ASSERT_EQ(ours.exitCode, 0) << ours.err;
  EXPECT_NE(ours.out.find("discovered"), std::string::npos) << ours.out;
  EXPECT_EQ(ours.err.find("warning"), std::string::npos) << ours.err;
  RunResult theirs = sim->run({"ibnetdiscover"}, opt);
  ASSERT_EQ(theirs.exitCode, 0) << theirs.err;

  auto found = parseOrFail(readFile(sim->dir() + "/found.topo"), "found.topo");
  auto reference = parseOrFail(theirs.out, "ibnetdiscover");
  auto built = parseOrFail(generated, "generated");
  ASSERT_TRUE(found && reference && built);
  EXPECT_EQ(tools::diffTopologies(*reference, *found), "");
  EXPECT_EQ(tools::diffTopologies(*built, *found), "");
  EXPECT_EQ(found->size(), built->size());
}

INSTANTIATE_TEST_SUITE_P(
    Fabrics, DiscoveryTest,
    ::testing::Values(
        Case{"kary4x3", "--kary-ntree 4,3", ""}, Case{"kary12x3", "--kary-ntree 12,3", ""},
        Case{"fatTree2ParallelFromHost",
             "--fat-tree 2 --radix 36 --leaves 6 --spines 3 --parallel 3 --hosts-per-leaf 8",
             "H-0000000000100000"},
        Case{"mesh", "--mesh 30 --degree 4 --hosts-per-switch 2 --seed 7", ""},
        Case{"torus", "--torus 4,4,3 --hosts-per-switch 1", ""},
        Case{"twoPortHcas", "--fat-tree 2 --radix 16 --hca-ports 2", "H-0000000000100000"},
        Case{"radix64Switches", "--fat-tree 2 --radix 64 --leaves 4 --spines 2 --hosts-per-leaf 8", ""},
        Case{"degradedTree", "--kary-ntree 4,3 --remove-links 6 --remove-switches 2 --seed 3", ""}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace ibsm::testing
