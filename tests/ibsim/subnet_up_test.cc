// SUBNET UP on ibsim, judged by the infiniband-diags tools only: after `ibsmd --once` every link is ACTIVE
// (iblinkinfo), every CA port has a unique LID (ibnetdiscover), dump_lfts walked from every CA to every LID
// finds no unreachable pair and no loop (our route checker on the tables read back from the switches), and
// ibtracert succeeds between sampled host pairs. Plus LID persistence across restarts and host removal, and
// sminfo against the running daemon.
#include <gtest/gtest.h>

#include <chrono>
#include <regex>
#include <set>

#include "routing/lft_dump.h"
#include "routing/route_checker.h"
#include "tests/ibsim/ibsim_fabric.h"

namespace ibsm::testing {
namespace {

using namespace std::chrono_literals;

// The host that runs the diags tools: attached away from the SM.
constexpr const char* kDiagHost = "H-0000000000100000";

struct FabricView {
  fabric::TopologyPtr topo;
  routing::LidAssignment lids;
};

FabricView discover(Ibsim& sim) {
  RunOptions o;
  o.simHost = kDiagHost;
  RunResult r = sim.run({"ibnetdiscover"}, o);
  EXPECT_EQ(r.exitCode, 0) << r.err;
  FabricView v;
  v.topo = parseOrFail(r.out, "ibnetdiscover");
  if (v.topo) v.lids = routing::LidAssignment::fromTopology(*v.topo);
  return v;
}

// Every CA port that has a link holds a LID no other port holds; returns port GUID -> LID.
std::map<uint64_t, uint16_t> checkUniqueLids(const fabric::Topology& topo) {
  std::map<uint64_t, uint16_t> byGuid;
  std::set<uint16_t> seen;
  for (const auto& n : topo.nodes()) {
    unsigned first = n.isSwitch() ? 0 : 1, last = n.isSwitch() ? 0 : n.numPorts;
    for (unsigned p = first; p <= last; ++p) {
      const auto& port = n.ports[p];
      if (!n.isSwitch() && !port.connected()) continue;
      EXPECT_TRUE(fabric::isUnicast(port.attrs.lid)) << n.description << " port " << p << " has no LID";
      EXPECT_TRUE(seen.insert(port.attrs.lid.value).second) << "duplicate LID " << port.attrs.lid.value;
      byGuid[port.guid.value] = port.attrs.lid.value;
    }
  }
  return byGuid;
}

void checkAllLinksActive(Ibsim& sim, size_t expectedLinks) {
  RunOptions o;
  o.simHost = kDiagHost;
  RunResult r = sim.run({"iblinkinfo", "--line"}, o);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  size_t links = 0, active = 0;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    size_t arrow = line.find("==>");
    if (line.find("==(") == std::string::npos || arrow == std::string::npos) continue;
    if (line.find("\"\"", arrow) != std::string::npos) continue;  // a port with nothing attached
    ++links;
    if (line.find("Active/") != std::string::npos)
      ++active;
    else
      ADD_FAILURE() << "not active: " << line;
  }
  EXPECT_EQ(active, links);
  EXPECT_EQ(links, 2 * expectedLinks);  // iblinkinfo lists each link from both ends
}

void checkRoutesFromSwitches(Ibsim& sim, const FabricView& v) {
  RunOptions o;
  o.simHost = kDiagHost;
  o.timeout = 300s;
  RunResult r = sim.run({"dump_lfts"}, o);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::string text = lftTables(r.out);
  auto tables = routing::parseLftDump(text, *v.topo, "dump_lfts");
  ASSERT_TRUE(tables.ok()) << tables.error().message;
  routing::CheckOptions co;
  co.checkAr = co.checkArCdg = false;
  routing::CheckReport rep = routing::checkRoutes(*v.topo, v.lids, *tables, co);
  EXPECT_GT(rep.pairs, 0u);
  EXPECT_EQ(rep.unreachable, 0u) << routing::formatReportText(rep);
  EXPECT_EQ(rep.loops, 0u);
  EXPECT_EQ(rep.reachable, rep.pairs);
}

void checkTracert(Ibsim& sim, const FabricView& v, size_t samples) {
  const auto& cas = v.topo->cas();
  ASSERT_GE(cas.size(), 2u);
  RunOptions o;
  o.simHost = kDiagHost;
  for (size_t i = 0; i < samples; ++i) {
    const auto& a = v.topo->node(cas[(i * 7919) % cas.size()]);
    const auto& b = v.topo->node(cas[(i * 104729 + cas.size() / 2) % cas.size()]);
    auto lidOf = [](const fabric::Node& n) {
      for (unsigned p = 1; p <= n.numPorts; ++p)
        if (n.ports[p].connected()) return n.ports[p].attrs.lid.value;
      return uint16_t{0};
    };
    if (&a == &b) continue;
    RunResult r = sim.run({"ibtracert", std::to_string(lidOf(a)), std::to_string(lidOf(b))}, o);
    EXPECT_EQ(r.exitCode, 0) << a.description << " -> " << b.description << "\n" << r.out << r.err;
    EXPECT_NE(r.out.find("To ca"), std::string::npos) << r.out;
  }
}

RunResult once(Ibsim& sim, const std::string& routing = "minhop") {
  RunOptions o;
  o.timeout = 300s;
  return sim.run({binPath("ibsmd"), "--once", "--routing", routing, "--state-dir", sim.dir() + "/state"}, o);
}

struct Case {
  const char* name;
  const char* generator;
  const char* routing;
};
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.generator << " --routing " << c.routing;
}

class SubnetUpTest : public ::testing::TestWithParam<Case> {};

TEST_P(SubnetUpTest, DiagsToolsSeeAWorkingSubnet) {
  auto sim = startFabric(GetParam().generator);
  RunResult r = once(*sim, GetParam().routing);
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("SUBNET UP"), std::string::npos) << r.out;
  FabricView v = discover(*sim);
  ASSERT_TRUE(v.topo);
  checkUniqueLids(*v.topo);
  checkAllLinksActive(*sim, v.topo->links().size());
  checkRoutesFromSwitches(*sim, v);
  checkTracert(*sim, v, 6);
}

INSTANTIATE_TEST_SUITE_P(
    Fabrics, SubnetUpTest,
    ::testing::Values(
        Case{"kary4x3", "--kary-ntree 4,3", "minhop"}, Case{"kary12x3", "--kary-ntree 12,3", "minhop"},
        Case{"fatTreeParallel",
             "--fat-tree 2 --radix 36 --leaves 6 --spines 3 --parallel 3 --hosts-per-leaf 8", "minhop"},
        Case{"mesh", "--mesh 30 --degree 4 --hosts-per-switch 2 --seed 7", "minhop"},
        Case{"torus", "--torus 4,4,3 --hosts-per-switch 1", "minhop"},
        Case{"twoPortHcas", "--fat-tree 2 --radix 16 --hca-ports 2", "minhop"},
        Case{"defaultChain", "--kary-ntree 4,3 --remove-links 4 --seed 5", "ftree,dfly,dor|dfsp,updn,minhop"},
        Case{"defaultChainMesh", "--mesh 30 --degree 4 --hosts-per-switch 2 --seed 7",
             "ftree,dfly,dor|dfsp,updn,minhop"}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

TEST(SubnetUp, LmcGivesAlignedRangesAndEveryLidIsRouted) {
  auto sim = startFabric("--kary-ntree 4,3");
  RunOptions o;
  o.timeout = 300s;
  RunResult r = sim->run(
      {binPath("ibsmd"), "--once", "--routing", "minhop", "--lmc", "2", "--state-dir", sim->dir() + "/state"},
      o);
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  FabricView v = discover(*sim);
  ASSERT_TRUE(v.topo);
  std::set<uint16_t> used;
  for (auto ca : v.topo->cas()) {
    const auto& port = v.topo->node(ca).ports[1];
    EXPECT_EQ(port.attrs.lmc, 2) << v.topo->node(ca).description;
    EXPECT_EQ(port.attrs.lid.value % 4, 0) << "range not aligned: " << port.attrs.lid.value;
    for (int i = 0; i < 4; ++i) EXPECT_TRUE(used.insert(port.attrs.lid.value + i).second);
  }
  RunOptions d;
  d.simHost = kDiagHost;
  RunResult lfts = sim->run({"dump_lfts"}, d);
  std::string text = lftTables(lfts.out);
  auto tables = routing::parseLftDump(text, *v.topo, "dump_lfts");
  ASSERT_TRUE(tables.ok()) << tables.error().message;
  routing::CheckOptions co;
  co.allLids = true;
  co.checkAr = co.checkArCdg = false;
  routing::CheckReport rep = routing::checkRoutes(*v.topo, v.lids, *tables, co);
  EXPECT_EQ(rep.unreachable, 0u) << routing::formatReportText(rep);
  EXPECT_GE(rep.destinations, 64u * 4);
}

// A degraded tree where hosts of a leaf that lost an up-link have no legal way to some switches (the level-1
// switch it lost): their ways there turn down-up, and the switches' own tables, read back, keep every route
// from a host, to every LID, switch LIDs included, deadlock-free (routing/turn_guard.h; before, this fabric
// read back with a CDG cycle) and reaching its LID.
TEST(SubnetUp, HostsReachEverySwitchOfADegradedTreeWithoutACycle) {
  auto sim = startFabric("--kary-ntree 4,3 --remove-links 6 --seed 1");
  RunResult r = once(*sim, "ftree,dfly,dor|dfsp,updn,minhop");
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  FabricView v = discover(*sim);
  ASSERT_TRUE(v.topo);
  RunOptions d;
  d.simHost = kDiagHost;
  RunResult lfts = sim->run({"dump_lfts"}, d);
  auto tables = routing::parseLftDump(lftTables(lfts.out), *v.topo, "dump_lfts");
  ASSERT_TRUE(tables.ok()) << tables.error().message;
  routing::CheckOptions co;
  co.checkAr = co.checkArCdg = false;
  routing::CheckReport rep = routing::checkRoutes(*v.topo, v.lids, *tables, co);
  EXPECT_EQ(rep.unreachable, 0u) << routing::formatReportText(rep);
  EXPECT_TRUE(rep.cdgChecked && rep.cdgAcyclic) << routing::formatReportText(rep);
  EXPECT_GT(rep.destinations, 64u);  // switch LIDs too
}

TEST(SubnetUp, LidsSurviveRestartAndHostReturnsToItsLid) {
  auto sim = startFabric("--kary-ntree 4,3");
  ASSERT_EQ(once(*sim).exitCode, 0);
  FabricView first = discover(*sim);
  ASSERT_TRUE(first.topo);
  auto lidsBefore = checkUniqueLids(*first.topo);

  // A restart on a running subnet keeps every LID.
  RunResult again = once(*sim);
  ASSERT_EQ(again.exitCode, 0) << again.err;
  EXPECT_NE(again.out.find("lids: 0 changed"), std::string::npos) << again.out;
  EXPECT_EQ(checkUniqueLids(*discover(*sim).topo), lidsBefore);

  // A host unplugged (its LID cleared) and plugged back in gets its old LID again, even after the SM has
  // assigned LIDs while it was away.
  auto hostNode = first.topo->findByDescription("host-5 HCA-1");
  ASSERT_TRUE(hostNode);
  const auto& hn = first.topo->node(*hostNode);
  uint64_t hostPortGuid = hn.ports[1].guid.value;
  const auto& sw = first.topo->node(hn.ports[1].peerNode);
  std::string swId = "S-" + std::string(fabric::toString(sw.guid)).substr(2);
  std::string hostId = "H-" + std::string(fabric::toString(hn.guid)).substr(2);
  sim->console("Clear \"" + hostId + "\"");
  ASSERT_EQ(once(*sim).exitCode, 0);
  FabricView without = discover(*sim);
  EXPECT_FALSE(without.topo->findPort(fabric::Guid{hostPortGuid}));
  sim->console("Link \"" + hostId + "\"[1] \"" + swId + "\"[" + std::to_string(hn.ports[1].peerPort.value) +
               "]");
  ASSERT_EQ(once(*sim).exitCode, 0);
  auto after = checkUniqueLids(*discover(*sim).topo);
  EXPECT_EQ(after[hostPortGuid], lidsBefore[hostPortGuid]);
  EXPECT_EQ(after, lidsBefore);
}

TEST(SubnetUp, DaemonAnswersSmInfoAsMaster) {
  auto sim = startFabric("--kary-ntree 2,2");
  RunOptions smOpt;
  smOpt.simHost = "H-0000000000100002";
  pid_t sm = sim->spawn({binPath("ibsmd"), "--routing", "minhop", "--state-dir", sim->dir() + "/state",
                         "--socket", sim->dir() + "/ibsm.sock", "--sweep-interval", "0"},
                        smOpt);
  ASSERT_TRUE(sim->waitForOutput(sm, "SUBNET UP", 30s, 20ms)) << sim->output(sm);
  RunOptions o;
  o.simHost = kDiagHost;
  RunResult r = sim->run({"sminfo"}, o);
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("SMINFO_MASTER"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sm guid 0x100003"), std::string::npos) << r.out;  // port 1 of host 0x100002
  RunResult stopped = sim->stop(sm);
  EXPECT_EQ(stopped.exitCode, 0) << stopped.err;  // SIGTERM ends it cleanly
}

}  // namespace
}  // namespace ibsm::testing
