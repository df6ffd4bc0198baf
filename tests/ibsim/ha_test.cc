// High availability on ibsim: two ibsmd instances at different hosts (exactly one MASTER; the standby takes
// over within poll_interval * poll_retries of the master's death with no LID change and correct routes; a
// restarted better SM gets the fabric back by HANDOVER), and ibsmd next to OpenSM (the higher priority one is
// master).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "routing/lft_dump.h"
#include "routing/route_checker.h"
#include "tests/ibsim/ibsim_fabric.h"

namespace ibsm::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
constexpr const char* kDiagHost = "H-0000000000100000";
constexpr const char* kHostA = "H-0000000000100002";  // port GUID 0x100003: wins a priority tie
constexpr const char* kHostB = "H-0000000000100004";

struct Ha {
  std::unique_ptr<Ibsim> sim;

  Ha() { sim = startFabric("--kary-ntree 2,3"); }

  // smKey 1 is OpenSM's default SM_Key: SMs with different keys do not trust each other.
  pid_t startSm(const std::string& name, const char* host, int priority, const std::string& smKey = "0") {
    RunOptions o;
    o.simHost = host;
    return sim->spawn({binPath("ibsmd"), "--routing", "minhop", "--state-dir", sim->dir() + "/" + name,
                       "--socket", sock(name), "--sweep-interval", "1", "--set",
                       "sm.priority=" + std::to_string(priority), "--set", "sm.key=" + smKey},
                      o);
  }
  std::string sock(const std::string& name) const { return sim->dir() + "/" + name + ".sock"; }
  nlohmann::json status(const std::string& name) {
    RunOptions plain;
    plain.preload = false;
    plain.timeout = 5s;
    RunResult r = sim->run({binPath("ibsmctl"), "--socket", sock(name), "--json", "status"}, plain);
    return nlohmann::json::parse(r.out, nullptr, false);
  }
  std::string state(const std::string& name) {
    auto j = status(name);
    return j.is_object() ? j.value("state", "") : "";
  }
  // Polls until the SM called name reports the state; returns how long it took.
  std::chrono::milliseconds waitState(const std::string& name, const std::string& want,
                                      std::chrono::milliseconds limit, const std::string& context) {
    auto start = Clock::now();
    EXPECT_TRUE(
        waitUntil([&] { return state(name) == want; }, limit, name + " " + want + " (" + context + ")", 20ms))
        << status(name).dump();
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  }
  // Port GUID -> LID as ibnetdiscover sees the fabric now, and the route check of the switches' real tables.
  std::map<uint64_t, uint16_t> lids(routing::CheckReport* check = nullptr) {
    RunOptions o;
    o.simHost = kDiagHost;
    o.timeout = 20s;
    RunResult disc = sim->run({"ibnetdiscover"}, o);
    auto topo = fabric::parseTopology(disc.out, "ibnetdiscover");
    std::map<uint64_t, uint16_t> m;
    if (!topo) {
      ADD_FAILURE() << topo.error().message;
      return m;
    }
    auto la = routing::LidAssignment::fromTopology(**topo);
    for (fabric::NodeIndex n = 0; n < (*topo)->size(); ++n) {
      const fabric::Node& node = (*topo)->node(n);
      for (unsigned p = node.isSwitch() ? 0 : 1; p < (node.isSwitch() ? 1u : node.ports.size()); ++p)
        if (node.isSwitch() || node.ports[p].connected())
          m[node.ports[p].guid.value] = la.base(n, fabric::PortNum{static_cast<uint8_t>(p)}).value;
    }
    if (check) {
      RunResult lfts = sim->run({"dump_lfts"}, o);
      std::string text = lftTables(lfts.out);
      auto tables = routing::parseLftDump(text, **topo, "dump_lfts");
      if (!tables.ok()) {
        ADD_FAILURE() << tables.error().message;
        return m;
      }
      routing::CheckOptions co;
      co.checkAr = co.checkArCdg = false;
      *check = routing::checkRoutes(**topo, la, *tables, co);
    }
    return m;
  }
  static void expectRoutesOk(const routing::CheckReport& r) {
    EXPECT_GT(r.pairs, 0u);
    EXPECT_EQ(r.reachable, r.pairs) << routing::formatReportText(r);
    EXPECT_EQ(r.unreachable, 0u);
  }
};

TEST(Ha, FailoverKeepsLidsAndHandoverToBetterSm) {
  Ha h;
  pid_t a = h.startSm("a", kHostA, 1);
  h.waitState("a", "MASTER", 30s, "first SM alone");
  pid_t b = h.startSm("b", kHostB, 1);
  h.waitState("b", "STANDBY", 30s, "second SM finds a master");
  EXPECT_EQ(h.state("a"), "MASTER");                      // exactly one master
  EXPECT_GT(h.status("a").value("act_count", 0u), 100u);  // ActCount: the SMPs the master sent
  auto sb = h.status("b");
  ASSERT_TRUE(sb["other_sms"].is_array()) << sb.dump();
  ASSERT_EQ(sb["other_sms"].size(), 1u) << sb.dump();
  EXPECT_EQ(sb["other_sms"][0].value("guid", ""), "0x0000000000100003");
  EXPECT_EQ(sb["other_sms"][0].value("state", ""), "MASTER");
  EXPECT_EQ(sb["other_sms"][0].value("priority", 0), 1);
  EXPECT_GT(sb["other_sms"][0].value("lid", 0), 0);
  RunOptions plain;
  plain.preload = false;
  RunResult text = h.sim->run({binPath("ibsmctl"), "--socket", h.sock("b"), "status"}, plain);
  EXPECT_NE(text.out.find("Other SM"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("0x0000000000100003"), std::string::npos) << text.out;
  // Only the master is the SA: a request sent to the standby's LID is answered Busy.
  RunOptions diag;
  diag.simHost = kDiagHost;
  diag.env["IBSM_TEST_SA_LID"] = std::to_string(h.lids().at(0x100005));
  RunResult join = h.sim->run({binPath("ibsm-test-mcast"), "join", "ipoib", "1"}, diag);
  EXPECT_EQ(join.out.find("mlid 0xC000"), std::string::npos) << join.out << join.err;
  EXPECT_EQ(h.status("b").value("sa_busy_not_master", 0), 1) << join.out << join.err;
  EXPECT_EQ(h.status("a").value("sa_busy_not_master", 0), 0);

  routing::CheckReport before;
  auto lidsBefore = h.lids(&before);
  Ha::expectRoutesOk(before);
  ASSERT_FALSE(lidsBefore.empty());

  // The master dies: the standby takes over within poll_interval * poll_retries (1 s * 3) plus a sweep.
  h.sim->stop(a);
  auto failover = h.waitState("b", "MASTER", 10s, "failover");
  std::printf("failover: master stopped -> standby MASTER in %lld ms\n",
              static_cast<long long>(failover.count()));
  EXPECT_LT(failover, 5000ms);
  routing::CheckReport after;
  // Programming finishes after the state flips: wait for the routes to be complete again (h.lids() runs the
  // diags, so no sleep in between).
  std::map<uint64_t, uint16_t> lidsAfter;
  EXPECT_TRUE(waitUntil(
      [&] {
        lidsAfter = h.lids(&after);
        return after.reachable == after.pairs && after.pairs != 0;
      },
      20s, "complete routes after the failover", 0ms));
  EXPECT_EQ(lidsAfter, lidsBefore);  // no LID changed
  Ha::expectRoutesOk(after);
  EXPECT_NE(h.sim->output(b).find("failover"), std::string::npos) << h.sim->output(b);

  // The first SM comes back, better than the master now: it stands by, then the master hands over.
  a = h.startSm("a", kHostA, 5);
  h.waitState("a", "MASTER", 20s, "handover to the restarted better SM");
  h.waitState("b", "STANDBY", 10s, "old master after the handover");
  auto sa = h.status("a");
  EXPECT_EQ(sa.value("state", ""), "MASTER");
  auto lidsHanded = h.lids(&after);
  EXPECT_EQ(lidsHanded, lidsBefore);
  // b sent HANDOVER when it learnt of a (Trap 144 or a's SMInfo query); a may take it mid-way through its
  // first sweep, and b may see a MASTER before a's ACKNOWLEDGE arrives: either way b stepped down.
  EXPECT_NE(h.sim->output(b).find("SM state MASTER -> STANDBY"), std::string::npos) << h.sim->output(b);
}

// A better SM (priority 15) with another SM_Key does not take the fabric: the master counts the mismatch and
// never steps down; the intruder does not trust the master either (it is a misconfigured second fabric
// owner).
TEST(Ha, BetterSmWithWrongSmKeyDoesNotTakeTheFabric) {
  Ha h;
  pid_t a = h.startSm("a", kHostA, 1, "5");
  h.waitState("a", "MASTER", 30s, "first SM alone");
  pid_t b = h.startSm("b", kHostB, 15, "6");
  EXPECT_TRUE(waitUntil(
      [&] {
        return h.status("a").value("sm_key_mismatches", 0) > 0 &&
               h.status("b").value("sm_key_mismatches", 0) > 0;
      },
      20s, "an SM_Key mismatch seen by both SMs", 100ms))
      << h.status("a").dump() << "\n"
      << h.status("b").dump();
  std::this_thread::sleep_for(3s);  // several poll intervals: a would have handed over by now
  EXPECT_EQ(h.state("a"), "MASTER");
  EXPECT_NE(h.state("b"), "STANDBY");  // b trusts no master with another key
  EXPECT_EQ(h.sim->output(a).find("-> STANDBY"), std::string::npos) << h.sim->output(a);
  EXPECT_EQ(h.sim->output(a).find("HANDOVER"), std::string::npos) << h.sim->output(a);
  h.sim->stop(b);
  h.sim->stop(a);
}

}  // namespace
}  // namespace ibsm::testing

namespace ibsm::testing {
namespace {

// "sminfo" from a diag host: the master's SMInfo (at the SMLID the diag port holds).
std::string sminfo(Ha& h) {
  RunOptions o;
  o.simHost = kDiagHost;
  o.timeout = 10s;
  RunResult r = h.sim->run({"sminfo"}, o);
  return r.out + r.err;
}

pid_t startOpensm(Ha& h, const char* host, int priority) {
  RunOptions o;
  o.simHost = host;
  o.env["OSM_CACHE_DIR"] = h.sim->dir() + "/osm";
  std::filesystem::create_directories(h.sim->dir() + "/osm");
  return h.sim->spawn({"opensm", "-p", std::to_string(priority), "-R", "minhop", "-s", "1", "-f",
                       h.sim->dir() + "/osm/opensm.log", "-d", "2"},
                      o);
}

TEST(Ha, OpensmBetterTakesTheFabricFromIbsmd) {
  Ha h;
  pid_t a = h.startSm("a", kHostA, 1, "1");
  h.waitState("a", "MASTER", 30s, "ibsmd alone");
  pid_t o = startOpensm(h, kHostB, 10);
  // OpenSM finds ibsmd master, stands by; ibsmd sees the better standby and hands over.
  h.waitState("a", "STANDBY", 30s, "ibsmd hands over to the better OpenSM");
  if (h.state("a") != "STANDBY") ADD_FAILURE() << h.sim->output(o) << h.sim->output(a);
  EXPECT_TRUE(waitUntil([&] { return sminfo(h).find("sm guid 0x100005,") != std::string::npos; }, 20s,
                        "sminfo to show OpenSM as master", 100ms))
      << sminfo(h) << h.sim->output(a) << h.sim->output(o);
  std::string s = sminfo(h);
  EXPECT_NE(s.find("SMINFO_MASTER"), std::string::npos) << s;
  routing::CheckReport check;
  h.lids(&check);
  Ha::expectRoutesOk(check);
}

// OpenSM asks for ibsmd's SMInfo when the IsSM trap arrives, often before ibsmd knows the master, so it gets
// no SM_Key and ignores ibsmd; ibsmd's own Trap 144 on entering STANDBY makes OpenSM look again and hand
// over.
TEST(Ha, IbsmdBetterTakesTheFabricFromOpensm) {
  Ha h;
  pid_t o = startOpensm(h, kHostB, 1);
  EXPECT_TRUE(waitUntil([&] { return sminfo(h).find("SMINFO_MASTER") != std::string::npos; }, 30s,
                        "sminfo to show a master", 100ms))
      << sminfo(h) << h.sim->output(o);
  pid_t a = h.startSm("a", kHostA, 10, "1");
  h.waitState("a", "MASTER", 40s, "OpenSM hands over to the better ibsmd");
  EXPECT_TRUE(waitUntil([&] { return sminfo(h).find("sm guid 0x100003,") != std::string::npos; }, 20s,
                        "sminfo to show ibsmd as master", 100ms))
      << sminfo(h) << h.sim->output(a) << h.sim->output(o);
  auto st = h.status("a");
  ASSERT_EQ(st["other_sms"].size(), 1u) << st.dump();
  EXPECT_TRUE(waitUntil([&] { return h.status("a")["other_sms"][0].value("state", "") == "STANDBY"; }, 20s,
                        "ibsmd to see OpenSM in STANDBY", 100ms))
      << h.status("a").dump();
  routing::CheckReport check;
  h.lids(&check);
  Ha::expectRoutesOk(check);
}

}  // namespace
}  // namespace ibsm::testing
