// OpenSM-format dumps: opensm-subnet.lst lines exactly as OpenSM 3.3 writes them, the AR dump, and the dump
// writer's atomic, change-only, failure-tolerant writing.
#include "daemon/control/dumps.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "routing/lft_dump.h"
#include "tests/daemon/control/control_fixture.h"

namespace ibsm::daemon {
namespace {

namespace fs = std::filesystem;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST(ControlDumps, SubnetLstHasOneLinePerPortOfEveryLinkInOpenSmFormat) {
  auto s = testing::makeSnapshot();
  std::string text = formatSubnetLst(*s, /*portsActivated=*/true);
  auto ls = lines(text);
  EXPECT_EQ(ls.size(), 2 * s->topology->links().size());
  // h0 (node 0xca000, port 0xca001) to leafA (0x5000) port 1; LIDs as assigned.
  unsigned h0Lid = s->lids.base(3, fabric::PortNum{1}).value,
           leafLid = s->lids.base(0, fabric::PortNum{0}).value;
  char want[600];
  std::snprintf(
      want, sizeof want,
      "{ CA Ports:01 SystemGUID:00000000000ca000 NodeGUID:00000000000ca000 PortGUID:00000000000ca001 "
      "VenID:000000 DevID:0000 Rev:00000000 {h0 HCA-1} LID:%04X PN:01 } { SW Ports:04 "
      "SystemGUID:0000000000005000 NodeGUID:0000000000005000 PortGUID:0000000000005000 VenID:00000000 "
      "DevID:0000 Rev:00000000 {leafA} LID:%04X PN:01 } PHY=4x LOG=ACT SPD=10",
      h0Lid, leafLid);
  EXPECT_NE(std::find(ls.begin(), ls.end(), std::string(want)), ls.end()) << text;
  // Not activated: the state as discovered.
  EXPECT_NE(formatSubnetLst(*s, false).find("LOG=INI"), std::string::npos);
  EXPECT_EQ(formatSubnetLst(*s, false).find("LOG=ACT"), std::string::npos);
}

TEST(ControlDumps, ArDumpListsGroupsWithTheirLids) {
  auto s = testing::makeSnapshot();
  s->tables.ar.assign(s->topology->size(), routing::ArTable{});
  routing::ArTable& t = s->tables.ar[0];
  routing::PortMask m;
  m.set(3);
  m.set(4);
  t.groups.push_back(m);
  t.lidToGroup.assign(8, routing::ArTable::kNoGroup);
  t.lidToGroup[5] = t.lidToGroup[6] = t.lidToGroup[7] = 0;
  std::string text = formatArDump(*s);
  EXPECT_NE(text.find("Switch 0x0000000000005000 'leafA' lid "), std::string::npos) << text;
  EXPECT_NE(text.find("group 0 ports 3,4 lids 5-7\n"), std::string::npos) << text;
  s->tables.ar.clear();
  EXPECT_NE(formatArDump(*s).find("adaptive routing is off"), std::string::npos);
}

class DumpWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ibsm-dumps-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir = tmpl;
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string dir;
  std::vector<LogRecord> logged;
  std::mutex m;
  Logger log{[this](const LogRecord& r) {
               std::lock_guard<std::mutex> l(m);
               logged.push_back(r);
             },
             LogLevel::kDebug};
};

TEST_F(DumpWriterTest, WritesEveryDumpAndOnlyWhatChangedAfterwards) {
  std::ofstream(dir + "/state-guid2lid") << "0x00000000000ca001 5 5\n";
  auto s = testing::makeSnapshot();
  DumpWriter w({dir + "/dumps", dir + "/state-guid2lid"}, log);
  w.submit(s, true);
  w.flush();
  EXPECT_EQ(w.stats().filesWritten, 4u);
  auto parsed = routing::parseLftDump(slurp(dir + "/dumps/opensm-lfts.dump"), *s->topology);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  for (fabric::NodeIndex sw : s->topology->switches())
    for (unsigned l = 1; l < s->tables.lft[sw].size(); ++l)
      EXPECT_EQ(parsed->port(sw, fabric::Lid{static_cast<uint16_t>(l)}), s->tables.lft[sw][l]);
  EXPECT_EQ(slurp(dir + "/dumps/guid2lid"), "0x00000000000ca001 5 5\n");
  EXPECT_FALSE(slurp(dir + "/dumps/opensm-subnet.lst").empty());
  EXPECT_FALSE(slurp(dir + "/dumps/ibsm-ar-groups.dump").empty());
  // The same snapshot again: nothing rewritten. A changed route: only the LFT dump.
  w.submit(s, true);
  w.flush();
  EXPECT_EQ(w.stats().filesWritten, 4u);
  EXPECT_EQ(w.stats().filesUnchanged, 4u);
  auto changed = std::make_shared<SubnetSnapshot>(*s);
  changed->tables.lft[0][5] = changed->tables.lft[0][5] == 1 ? 2 : 1;
  w.submit(changed, true);
  w.flush();
  EXPECT_EQ(w.stats().filesWritten, 5u);
}

TEST_F(DumpWriterTest, NoGuid2LidCopyOntoItself) {
  std::ofstream(dir + "/guid2lid") << "0x00000000000ca001 5 5\n";
  DumpWriter w({dir, dir + "/guid2lid"}, log);
  w.submit(testing::makeSnapshot(), true);
  w.flush();
  EXPECT_EQ(w.stats().filesWritten, 3u);
  EXPECT_EQ(slurp(dir + "/guid2lid"), "0x00000000000ca001 5 5\n");
}

TEST_F(DumpWriterTest, AFailedWriteIsLoggedAndKeepsThePreviousFile) {
  auto s = testing::makeSnapshot();
  DumpWriter w({dir, ""}, log);
  w.submit(s, true);
  w.flush();
  std::string before = slurp(dir + "/opensm-lfts.dump");
  ASSERT_FALSE(before.empty());
  // The temp file cannot be created (a directory is in its place), even for root.
  fs::create_directory(dir + "/opensm-lfts.dump.tmp");
  auto changed = std::make_shared<SubnetSnapshot>(*s);
  changed->tables.lft[0][5] = changed->tables.lft[0][5] == 1 ? 2 : 1;
  w.submit(changed, true);
  w.flush();
  EXPECT_EQ(w.stats().failures, 1u);
  EXPECT_EQ(slurp(dir + "/opensm-lfts.dump"), before);
  {
    std::lock_guard<std::mutex> l(m);
    bool warned = false;
    for (const auto& r : logged) warned = warned || (r.id == "DUMP002" && r.level == LogLevel::kWarn);
    EXPECT_TRUE(warned);
  }
  // A dump directory that cannot exist (a file is in its place) is a failure too, not a crash.
  std::ofstream(dir + "/file") << "x";
  w.setDir(dir + "/file/sub");
  w.submit(s, true);
  w.flush();
  EXPECT_EQ(w.stats().failures, 1u + 3u);
}

}  // namespace
}  // namespace ibsm::daemon
