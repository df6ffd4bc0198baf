// M_Key protection on ibsim. ibsim 0.10's SMAs do not implement M_Key (found by experiment, and in its
// source: a PortInfo Set keeps none of M_Key, MKeyProtectBits and MKeyLeasePeriod, and no SMP's M_Key is
// checked), so enforcement cannot be tested here (the unit tests do it on FakeFabric with enforceMkey). What
// is tested is ibsmd's side on a real transport: with protection on it brings the subnet up with the key in
// its SMPs, finds that the ports drop the key and says so (MKEY001), and keeps a random key in the state
// directory across restarts; with protection off none of it happens. And the ibsim limitation itself, so that
// this test tells when a newer ibsim starts keeping the key.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <regex>

#include "tests/ibsim/ibsim_fabric.h"

namespace ibsm::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

constexpr const char* kDiagHost = "H-0000000000100000";

struct MkeyFabric {
  std::unique_ptr<Ibsim> sim = startFabric("--kary-ntree 2,2");
  std::string state = sim->dir() + "/state";
  std::string keyFile = state + "/mkey";

  RunResult once(const std::vector<std::string>& set) {
    std::vector<std::string> argv{binPath("ibsmd"), "--once", "--routing", "minhop", "--state-dir", state};
    for (const auto& s : set) argv.insert(argv.end(), {"--set", s});
    RunOptions o;
    o.timeout = 50s;
    return sim->run(argv, o);
  }
  // M_Key, protect bits and lease of the diag host's port as smpquery shows them with -K.
  std::string portMkey() {
    RunOptions o;
    o.simHost = kDiagHost;
    RunResult r = sim->run({"smpquery", "-K", "-D", "portinfo", "0"}, o);
    EXPECT_EQ(r.exitCode, 0) << r.err;
    std::smatch m;
    std::regex re(R"(Mkey:\.+(0x[0-9a-f]+))");
    return std::regex_search(r.out, m, re) ? m[1].str() : "(none) " + r.out;
  }
};

TEST(MkeyTest, RandomKeyIsKeptAcrossRestartsAndPortsWithoutMkeySupportAreReported) {
  MkeyFabric f;
  const std::vector<std::string> on{"sm.m_key=random", "sm.m_key_protection_level=2",
                                    "sm.m_key_lease_period=60"};
  RunResult first = f.once(on);
  ASSERT_EQ(first.exitCode, 0) << first.out << first.err;
  EXPECT_NE(first.out.find("SUBNET UP"), std::string::npos) << first.out;
  EXPECT_NE(first.err.find("MKEY002 generated a new M_Key, kept in " + f.keyFile), std::string::npos)
      << first.err;
  // 4 switches (port 0) and 4 hosts: every management port acknowledged the Set and dropped the key.
  EXPECT_NE(first.err.find("MKEY001 8 port(s) acknowledged the M_Key but do not keep it"), std::string::npos)
      << first.err;
  const std::string key = readFile(f.keyFile);
  EXPECT_TRUE(std::regex_match(key, std::regex("0x[0-9a-f]{16}\n"))) << key;
  struct stat st {};
  ASSERT_EQ(::stat(f.keyFile.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(f.portMkey(), "0x0000000000000000");  // ibsim 0.10 keeps no M_Key

  // A restart with the same state directory uses the same key, and still manages the fabric.
  RunResult second = f.once(on);
  ASSERT_EQ(second.exitCode, 0) << second.out << second.err;
  EXPECT_EQ(second.err.find("MKEY002"), std::string::npos) << second.err;
  EXPECT_EQ(readFile(f.keyFile), key);

  // A damaged key file is kept aside and replaced (STATE003); the SM still comes up.
  writeFile(f.keyFile, "not a key\n");
  RunResult third = f.once(on);
  ASSERT_EQ(third.exitCode, 0) << third.out << third.err;
  EXPECT_NE(third.err.find("STATE003 " + f.keyFile + ": not an M_Key"), std::string::npos) << third.err;
  EXPECT_NE(third.err.find("kept as " + f.keyFile + ".bad-"), std::string::npos) << third.err;
  EXPECT_NE(readFile(f.keyFile), key);
}

TEST(MkeyTest, FixedKeyNeedsNoStateAndOffChangesNothing) {
  MkeyFabric f;
  RunResult fixed = f.once({"sm.m_key=0x1234abcd"});
  ASSERT_EQ(fixed.exitCode, 0) << fixed.out << fixed.err;
  EXPECT_NE(fixed.err.find("MKEY001 8 port(s)"), std::string::npos) << fixed.err;
  EXPECT_FALSE(fs::exists(f.keyFile));

  RunResult off = f.once({});
  ASSERT_EQ(off.exitCode, 0) << off.out << off.err;
  EXPECT_NE(off.out.find("SUBNET UP"), std::string::npos) << off.out;
  EXPECT_EQ(off.err.find("MKEY"), std::string::npos) << off.err;
  EXPECT_FALSE(fs::exists(f.keyFile));
}

}  // namespace
}  // namespace ibsm::testing
