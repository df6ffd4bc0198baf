// Partitions on ibsim: ibsmd reads an OpenSM partitions.conf with two partitions of hosts on the 2-ary 2-tree
// (4 switches; host-0 .. host-3, node GUIDs 0x100000 + 2i, port GUID + 1; the SM at host-0):
//   alpha 0x0001, ipoib      host-0, host-1 (full)
//   beta  0x0002, ipoib      host-2, host-3 (full)
//   no Default rule: every port a limited member of 0x7fff, the SM's port a full one (OpenSM's rule).
// smpquery pkeys shows the tables on the hosts and on the switch ports facing them (partition enforcement);
// saquery PathRecord between host-1 and host-2 (limited members of the default partition only) finds nothing,
// between host-2 and host-3 it carries beta's P_Key; a join to alpha's broadcast group from host-2 is
// refused, to beta's accepted; each partition's broadcast group is found by its MGID.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "routing/lid_assignment.h"
#include "tests/ibsim/ibsim_fabric.h"

namespace ibsm::testing {
namespace {

using namespace std::chrono_literals;

constexpr const char* kPartitions = R"(# two tenants
alpha=0x0001, ipoib : 0x100001=full, 0x100003=full ;
beta=0x0002, ipoib, sl=1 :
    0x100005=full,
    0x100007=full ;
)";

// The P_Keys of `smpquery pkeys` output, without the unused (0x0000) entries.
std::multiset<uint16_t> pkeysOf(const std::string& out) {
  std::multiset<uint16_t> keys;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    size_t colon = line.find(':');
    if (colon == std::string::npos || line.find("capacity") != std::string::npos) continue;
    std::istringstream words(line.substr(colon + 1));
    for (std::string w; words >> w;) {
      if (w.rfind("0x", 0) != 0) continue;
      auto v = static_cast<uint16_t>(std::stoul(w, nullptr, 16));
      if (v) keys.insert(v);
    }
  }
  return keys;
}

struct PartitionFixture {
  std::unique_ptr<Ibsim> sim = startFabric("--kary-ntree 2,2");
  pid_t sm = -1;
  fabric::TopologyPtr topo;
  RunOptions diag;

  PartitionFixture() {
    writeFile(sim->dir() + "/partitions.conf", kPartitions);
    RunOptions at;
    at.simHost = "H-0000000000100000";
    sm = sim->spawn(
        {binPath("ibsmd"), "--state-dir", sim->dir() + "/state", "--socket", sim->dir() + "/ibsm.sock",
         "--sweep-interval", "0", "--partitions-conf", sim->dir() + "/partitions.conf"},
        at);
    (void)sim->waitForOutput(sm, "SUBNET UP", 30s);  // the test asserts it
    diag.simHost = "H-0000000000100002";
    diag.timeout = 15s;
    topo = parseOrFail(sim->run({"ibnetdiscover"}, diag).out, "ibnetdiscover");
  }
  ~PartitionFixture() { sim->stop(sm); }

  uint16_t lidOf(uint64_t portGuid) const {
    auto where = topo->findPort(fabric::Guid{portGuid});
    return where ? topo->node(where->first).ports[where->second.value].attrs.lid.value : 0;
  }
  // The switch and port facing a host port, as (switch LID, port).
  std::pair<uint16_t, unsigned> facing(uint64_t portGuid) const {
    auto where = topo->findPort(fabric::Guid{portGuid});
    if (!where) return {0, 0};
    const auto& p = topo->node(where->first).ports[where->second.value];
    return {topo->node(p.peerNode).ports[0].attrs.lid.value, p.peerPort.value};
  }
  std::multiset<uint16_t> pkeys(const std::vector<std::string>& args) {
    std::vector<std::string> argv{"smpquery", "pkeys"};
    argv.insert(argv.end(), args.begin(), args.end());
    return pkeysOf(sim->run(argv, diag).out);
  }
  std::string pathRecord(uint64_t from, uint64_t to) {
    return sim
        ->run({"saquery", "PR", "--slid", std::to_string(lidOf(from)), "--dlid", std::to_string(lidOf(to))},
              diag)
        .out;
  }
  std::string join(const std::string& host, const std::string& mgid, const std::string& pkey) {
    RunOptions o;
    o.simHost = host;
    o.timeout = 15s;
    o.env["IBSM_TEST_PKEY"] = pkey;
    RunResult r = sim->run({binPath("ibsm-test-mcast"), "join", mgid, "1"}, o);
    return r.out + r.err;
  }
};

TEST(IbsimPartitions, TablesPathRecordsAndJoinsFollowThePartitions) {
  PartitionFixture f;
  ASSERT_TRUE(f.topo);
  ASSERT_NE(f.sim->output(f.sm).find("SUBNET UP"), std::string::npos) << f.sim->output(f.sm);

  // Hosts: their partition's key (full) and the default partition's (limited; the SM's port full).
  using Keys = std::multiset<uint16_t>;
  EXPECT_EQ(f.pkeys({std::to_string(f.lidOf(0x100001))}), (Keys{0xFFFF, 0x8001}));
  EXPECT_EQ(f.pkeys({std::to_string(f.lidOf(0x100003))}), (Keys{0x7FFF, 0x8001}));
  EXPECT_EQ(f.pkeys({std::to_string(f.lidOf(0x100005))}), (Keys{0x7FFF, 0x8002}));
  EXPECT_EQ(f.pkeys({std::to_string(f.lidOf(0x100007))}), (Keys{0x7FFF, 0x8002}));
  // The switch ports facing them hold the same keys.
  for (uint64_t g : {0x100003ULL, 0x100005ULL, 0x100007ULL}) {
    auto [lid, port] = f.facing(g);
    ASSERT_NE(lid, 0) << std::hex << g;
    EXPECT_EQ(f.pkeys({std::to_string(lid), std::to_string(port)}), f.pkeys({std::to_string(f.lidOf(g))}))
        << "switch LID " << lid << " port " << port;
  }
  // Switch port 0: a limited member of the default partition.
  EXPECT_EQ(f.pkeys({std::to_string(f.facing(0x100005).first)}), (Keys{0x7FFF}));

  // PathRecords: none across partitions, beta's P_Key within beta, the default one to the SM.
  std::string across = f.pathRecord(0x100003, 0x100005);
  EXPECT_EQ(across.find("PathRecord dump"), std::string::npos) << across;
  std::string within = f.pathRecord(0x100005, 0x100007);
  EXPECT_NE(within.find("pkey....................0x8002"), std::string::npos) << within;
  std::string toSm = f.pathRecord(0x100005, 0x100001);
  EXPECT_NE(toSm.find("pkey....................0x7FFF"), std::string::npos) << toSm;

  // Joins: host-2 may join beta's broadcast group, not alpha's.
  const std::string betaGroup = "ff12401b8002000000000000ffffffff";
  std::string refused = f.join("H-0000000000100004", "ff12401b8001000000000000ffffffff", "0x8001");
  EXPECT_NE(refused.find("failed"), std::string::npos) << refused;
  std::string ok = f.join("H-0000000000100004", betaGroup, "0x8002");
  EXPECT_NE(ok.find("mlid 0x"), std::string::npos) << ok << f.sim->output(f.sm);

  // Each IPoIB partition's broadcast group answers a query by its MGID.
  for (std::string mgid :
       {"ff12:401b:ffff::ffff:ffff", "ff12:401b:8001::ffff:ffff", "ff12:401b:8002::ffff:ffff"}) {
    RunResult r = f.sim->run({"saquery", "MCMR", "--mgid", mgid}, f.diag);
    EXPECT_NE(r.out.find("MGID...................." + mgid), std::string::npos)
        << mgid << ": " << r.out << r.err;
  }
}

// Run-time partitions (a job scheduler's prolog/epilog): ibsmctl partition add writes only the blocks that
// change, remove restores every table exactly, config partitions and unsafe changes are refused with nothing
// changed, and the run-time partition survives a config reload and a restart (state directory).
TEST(IbsimPartitions, RunTimeChangesAreDeltasKeptAcrossReloadAndRestart) {
  PartitionFixture f;
  ASSERT_TRUE(f.topo);
  ASSERT_NE(f.sim->output(f.sm).find("SUBNET UP"), std::string::npos) << f.sim->output(f.sm);
  const std::string sock = f.sim->dir() + "/ibsm.sock";
  RunOptions plain;
  plain.preload = false;
  plain.timeout = 30s;
  auto ctl = [&](std::vector<std::string> args) {
    std::vector<std::string> argv{binPath("ibsmctl"), "--socket", sock};
    argv.insert(argv.end(), args.begin(), args.end());
    return f.sim->run(argv, plain);
  };
  // Every port's table, entry by entry (smpquery pkeys text).
  auto tables = [&] {
    std::map<std::string, std::string> t;
    for (fabric::NodeIndex n = 0; n < f.topo->size(); ++n) {
      const fabric::Node& node = f.topo->node(n);
      for (unsigned p = node.isSwitch() ? 0 : 1; p < node.ports.size(); ++p) {
        if (p > 0 && !node.ports[p].connected()) continue;
        uint16_t lid = node.isSwitch() ? node.ports[0].attrs.lid.value : node.ports[p].attrs.lid.value;
        std::vector<std::string> argv{"smpquery", "pkeys", std::to_string(lid)};
        if (node.isSwitch()) argv.push_back(std::to_string(p));
        t[node.description + "/" + std::to_string(p)] = f.sim->run(argv, f.diag).out;
      }
    }
    return t;
  };
  const auto before = tables();

  // host-1 (by NODE/PORTNUM) and host-3 (by port GUID, limited) into job 0x0010.
  RunResult add = ctl({"partition", "add", "job1", "0x0010", "host-1/1", "0x0000000000100007=limited"});
  ASSERT_EQ(add.exitCode, 0) << add.out << add.err;
  // Two hosts and the two switch ports facing them: one block each.
  EXPECT_NE(add.out.find("4 P_Key block(s) written to 4 port(s)"), std::string::npos) << add.out;
  using Keys = std::multiset<uint16_t>;
  EXPECT_EQ(f.pkeys({std::to_string(f.lidOf(0x100003))}), (Keys{0x7FFF, 0x8001, 0x8010}));
  EXPECT_EQ(f.pkeys({std::to_string(f.lidOf(0x100007))}), (Keys{0x7FFF, 0x8002, 0x0010}));
  auto [lid3, port3] = f.facing(0x100007);
  EXPECT_EQ(f.pkeys({std::to_string(lid3), std::to_string(port3)}), (Keys{0x7FFF, 0x8002, 0x0010}));
  std::string within = f.pathRecord(0x100003, 0x100007);
  EXPECT_NE(within.find("pkey....................0x8010"), std::string::npos) << within;
  RunResult list = ctl({"partition", "list"});
  EXPECT_NE(list.out.find("job1"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("runtime"), std::string::npos) << list.out;
  RunResult show = ctl({"partition", "show", "job1"});
  EXPECT_NE(show.out.find("0x0000000000100007"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("limited"), std::string::npos) << show.out;

  // Refused, nothing changed: a config partition (names its file), an unknown port, a used P_Key, the
  // default P_Key, an existing name.
  auto refused = [&](std::vector<std::string> args, const std::string& why) {
    RunResult r = ctl(args);
    EXPECT_EQ(r.exitCode, 1) << r.out << r.err;
    EXPECT_NE(r.err.find(why), std::string::npos) << r.err;
  };
  refused({"partition", "remove", "alpha"}, "is defined in " + f.sim->dir() + "/partitions.conf");
  refused({"partition", "add-member", "beta", "host-1/1"}, "partitions.conf");
  refused({"partition", "add", "job2", "0x0011", "0x00000000deadbeef"}, "no port '0x00000000deadbeef'");
  refused({"partition", "add", "job2", "0x0001", "host-2/1"},
          "P_Key 0x0001 is already used by partition 'alpha'");
  refused({"partition", "add", "job2", "0x7fff", "host-2/1"}, "default partition");
  refused({"partition", "add", "job1", "0x0012", "host-2/1"}, "exists already");
  refused({"partition", "remove-member", "job1", "host-2/1"}, "is not a member");
  EXPECT_EQ(f.pkeys({std::to_string(f.lidOf(0x100005))}), (Keys{0x7FFF, 0x8002}));

  // add-member / remove-member move one port.
  EXPECT_EQ(ctl({"partition", "add-member", "job1", "host-2/1"}).exitCode, 0);
  EXPECT_EQ(f.pkeys({std::to_string(f.lidOf(0x100005))}), (Keys{0x7FFF, 0x8002, 0x8010}));
  EXPECT_EQ(ctl({"partition", "remove-member", "job1", "host-2/1"}).exitCode, 0);
  EXPECT_EQ(f.pkeys({std::to_string(f.lidOf(0x100005))}), (Keys{0x7FFF, 0x8002}));

  // A config reload keeps it; so does a restart with the same state directory.
  ASSERT_EQ(::kill(f.sm, SIGHUP), 0);
  EXPECT_TRUE(f.sim->waitForOutput(f.sm, "CFG003", 10s)) << f.sim->output(f.sm);
  EXPECT_NE(ctl({"partition", "list"}).out.find("job1"), std::string::npos);
  f.sim->stop(f.sm);
  RunOptions at;
  at.simHost = "H-0000000000100000";
  f.sm = f.sim->spawn({binPath("ibsmd"), "--state-dir", f.sim->dir() + "/state", "--socket", sock,
                       "--sweep-interval", "0", "--partitions-conf", f.sim->dir() + "/partitions.conf"},
                      at);
  ASSERT_TRUE(f.sim->waitForOutput(f.sm, "SUBNET UP", 30s)) << f.sim->output(f.sm);
  EXPECT_NE(ctl({"partition", "show", "job1"}).out.find("0x0000000000100007"), std::string::npos);
  EXPECT_EQ(f.pkeys({std::to_string(f.lidOf(0x100007))}), (Keys{0x7FFF, 0x8002, 0x0010}));

  // remove: every table exactly as before the add (entries at the same index).
  RunResult rm = ctl({"partition", "remove", "job1"});
  ASSERT_EQ(rm.exitCode, 0) << rm.out << rm.err;
  EXPECT_NE(rm.out.find("4 P_Key block(s) written to 4 port(s)"), std::string::npos) << rm.out;
  EXPECT_EQ(tables(), before);
  EXPECT_EQ(ctl({"partition", "show", "job1"}).exitCode, 1);
  RunResult events = ctl({"events", "--kind", "partition"});
  EXPECT_NE(events.out.find("partition 'job1' removed"), std::string::npos) << events.out;
}

// OpenSM as the oracle: the same partitions.conf (full, limited, ALL, SELF, ipoib flags) gives every port the
// same set of keys with the same membership bits under OpenSM and under ibsmd, on hosts, switch port 0 and
// the switch ports facing the hosts (entry positions may differ).
TEST(IbsimPartitions, SameKeysAsOpenSmForTheSamePartitionsConf) {
  constexpr const char* kConf = R"(Default=0x7fff, ipoib : ALL=limited, SELF=full, ALL_SWITCHES=full ;
alpha=0x0001, ipoib, mtu=4, rate=3 : 0x100001=full, 0x100003 ;
beta=0x0002, ipoib, sl=1, defmember=full : 0x100005, 0x100007=limited, SELF ;
everyone=0x0003 : ALL_CAS=limited ;
)";
  auto tables = [&](bool opensm) {
    std::map<std::string, std::multiset<uint16_t>> out;
    auto sim = startFabric("--kary-ntree 2,2");
    writeFile(sim->dir() + "/partitions.conf", kConf);
    RunOptions at;
    at.simHost = "H-0000000000100000";
    at.timeout = 60s;
    RunResult r =
        opensm ? sim->run({"opensm", "-o", "-P", sim->dir() + "/partitions.conf", "-f",
                           sim->dir() + "/opensm.log"},
                          at)
               : sim->run({binPath("ibsmd"), "--once", "--state-dir", sim->dir() + "/state", "--socket",
                           sim->dir() + "/ibsm.sock", "--partitions-conf", sim->dir() + "/partitions.conf"},
                          at);
    EXPECT_EQ(r.exitCode, 0) << r.out << r.err;
    RunOptions diag;
    diag.simHost = "H-0000000000100002";
    diag.timeout = 15s;
    auto topo = parseOrFail(sim->run({"ibnetdiscover"}, diag).out, "ibnetdiscover");
    if (!topo) return out;
    for (fabric::NodeIndex n = 0; n < topo->size(); ++n) {
      const fabric::Node& node = topo->node(n);
      if (node.isSwitch()) {
        std::string lid = std::to_string(node.ports[0].attrs.lid.value);
        out[node.description + "/0"] = pkeysOf(sim->run({"smpquery", "pkeys", lid}, diag).out);
        for (unsigned p = 1; p < node.ports.size(); ++p) {
          const auto& port = node.ports[p];
          if (!port.connected() || topo->node(port.peerNode).isSwitch()) continue;
          out[node.description + "/" + std::to_string(p)] =
              pkeysOf(sim->run({"smpquery", "pkeys", lid, std::to_string(p)}, diag).out);
        }
      } else {
        for (unsigned p = 1; p < node.ports.size(); ++p)
          if (node.ports[p].connected())
            out[node.description + "/" + std::to_string(p)] = pkeysOf(
                sim->run({"smpquery", "pkeys", std::to_string(node.ports[p].attrs.lid.value)}, diag).out);
      }
    }
    return out;
  };
  auto byOpenSm = tables(true);
  auto byIbsm = tables(false);
  EXPECT_EQ(byIbsm.size(), 12u);  // 4 hosts, 4 switch ports 0, 4 facing switch ports
  EXPECT_EQ(byIbsm, byOpenSm);
  // The rules did something: host-1 holds alpha (limited), beta's host-3 is limited, all hold 0x0003.
  EXPECT_EQ(byIbsm["host-1 HCA-1/1"], (std::multiset<uint16_t>{0x0001, 0x0003, 0x7FFF}));
}

}  // namespace
}  // namespace ibsm::testing
