// OpenSM-format dumps: opensm-subnet.lst lines exactly as OpenSM 3.3 writes them, the AR dump, and the dump
// writer's atomic, change-only, failure-tolerant writing; the LFT dump after every change (dumps.lfts:
// on_change) or only on request (on_request, the default), and the control request `dump` that asks for it.
#include "daemon/control/dumps.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
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
  DumpWriter w({dir + "/dumps", dir + "/state-guid2lid", /*lftsOnChange=*/true}, log);
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
  DumpWriter w({dir, dir + "/guid2lid", /*lftsOnChange=*/true}, log);
  w.submit(testing::makeSnapshot(), true);
  w.flush();
  EXPECT_EQ(w.stats().filesWritten, 3u);
  EXPECT_EQ(slurp(dir + "/guid2lid"), "0x00000000000ca001 5 5\n");
}

TEST_F(DumpWriterTest, AFailedWriteIsLoggedAndKeepsThePreviousFile) {
  auto s = testing::makeSnapshot();
  DumpWriter w({dir, "", /*lftsOnChange=*/true}, log);
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

// The LFT dump of `s` parsed back equals its tables, entry by entry.
void expectLftDumpOf(const std::string& path, const SubnetSnapshot& s) {
  auto parsed = routing::parseLftDump(slurp(path), *s.topology);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  size_t compared = 0;
  for (fabric::NodeIndex sw : s.topology->switches())
    for (unsigned l = 1; l < s.tables.lft[sw].size(); ++l, ++compared)
      EXPECT_EQ(parsed->port(sw, fabric::Lid{static_cast<uint16_t>(l)}), s.tables.lft[sw][l])
          << sw << " " << l;
  EXPECT_GT(compared, 0u);
}

// Waits for one requestLfts answer (the writer calls back on its own thread).
struct Answer {
  std::mutex m;
  std::condition_variable cv;
  std::optional<fabric::Result<std::string>> result;
  DumpWriter::LftDone done() {
    return [this](fabric::Result<std::string> r) {
      std::lock_guard<std::mutex> l(m);
      result.emplace(std::move(r));
      cv.notify_all();
    };
  }
  fabric::Result<std::string> get() {
    std::unique_lock<std::mutex> l(m);
    EXPECT_TRUE(cv.wait_for(l, std::chrono::seconds(30), [&] { return result.has_value(); }));
    return result ? *result : fabric::Result<std::string>(fabric::makeError("no answer"));
  }
};

TEST_F(DumpWriterTest, OnRequestTheLftDumpIsWrittenOnlyWhenAskedFor) {
  std::ofstream(dir + "/state-guid2lid") << "0x00000000000ca001 5 5\n";
  auto s = testing::makeSnapshot();
  DumpWriter w({dir + "/dumps", dir + "/state-guid2lid"}, log);  // dumps.lfts: on_request, the default
  w.submit(s, true);
  w.flush();
  // The small dumps follow the fabric as before; nothing that grows with switches x LIDs is written.
  EXPECT_EQ(w.stats().filesWritten, 3u);
  EXPECT_EQ(slurp(dir + "/dumps/guid2lid"), "0x00000000000ca001 5 5\n");
  EXPECT_FALSE(slurp(dir + "/dumps/opensm-subnet.lst").empty());
  EXPECT_FALSE(slurp(dir + "/dumps/ibsm-ar-groups.dump").empty());
  EXPECT_FALSE(fs::exists(dir + "/dumps/opensm-lfts.dump"));
  // A changed route: not even then.
  auto changed = std::make_shared<SubnetSnapshot>(*s);
  changed->tables.lft[0][5] = changed->tables.lft[0][5] == 1 ? 2 : 1;
  w.submit(changed, true);
  w.flush();
  EXPECT_EQ(w.stats().filesWritten, 3u);
  EXPECT_FALSE(fs::exists(dir + "/dumps/opensm-lfts.dump"));

  // Asked for: written for the snapshot given, with its path as the answer.
  Answer a;
  w.requestLfts(changed, a.done());
  auto path = a.get();
  ASSERT_TRUE(path.ok()) << path.error().message;
  EXPECT_EQ(*path, dir + "/dumps/opensm-lfts.dump");
  expectLftDumpOf(*path, *changed);
  EXPECT_EQ(w.stats().filesWritten, 4u);
  EXPECT_EQ(w.stats().lftRequests, 1u);
  // Asked again with the same content: written again (the operator asked for a file of now).
  Answer again;
  w.requestLfts(changed, again.done());
  ASSERT_TRUE(again.get().ok());
  w.flush();
  EXPECT_EQ(w.stats().filesWritten, 5u);
  EXPECT_EQ(w.stats().lftRequests, 2u);
  // Still not after the next change.
  w.submit(s, true);
  w.flush();
  expectLftDumpOf(dir + "/dumps/opensm-lfts.dump", *changed);
  {
    std::lock_guard<std::mutex> l(m);
    bool written = false;
    for (const auto& r : logged) written = written || (r.id == "DUMP003" && r.level == LogLevel::kInfo);
    EXPECT_TRUE(written);
  }
}

TEST_F(DumpWriterTest, OnChangeTheLftDumpFollowsEveryChangeAndMayBeSwitchedOnAndOff) {
  auto s = testing::makeSnapshot();
  DumpWriter w({dir, ""}, log);
  w.submit(s, true);
  w.flush();
  EXPECT_FALSE(fs::exists(dir + "/opensm-lfts.dump"));
  w.setLftsOnChange(true);  // a SIGHUP that set dumps.lfts: on_change
  w.submit(s, true);
  w.flush();
  expectLftDumpOf(dir + "/opensm-lfts.dump", *s);
  auto changed = std::make_shared<SubnetSnapshot>(*s);
  changed->tables.lft[0][5] = changed->tables.lft[0][5] == 1 ? 2 : 1;
  w.submit(changed, true);
  w.flush();
  expectLftDumpOf(dir + "/opensm-lfts.dump", *changed);
  w.setLftsOnChange(false);  // and back: the file stays as last written
  w.submit(s, true);
  w.flush();
  expectLftDumpOf(dir + "/opensm-lfts.dump", *changed);
  // A request is answered in either mode.
  w.setLftsOnChange(true);
  Answer a;
  w.requestLfts(s, a.done());
  ASSERT_TRUE(a.get().ok());
  expectLftDumpOf(dir + "/opensm-lfts.dump", *s);
}

TEST_F(DumpWriterTest, ARequestThatCannotBeWrittenSaysWhy) {
  auto s = testing::makeSnapshot();
  DumpWriter w({dir, ""}, log);
  Answer none;
  w.requestLfts(nullptr, none.done());
  auto r = none.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "no sweep has completed yet");
  // The temp file cannot be created (a directory is in its place), even for root: the previous file stays.
  std::ofstream(dir + "/opensm-lfts.dump") << "previous\n";
  fs::create_directory(dir + "/opensm-lfts.dump.tmp");
  Answer failed;
  w.requestLfts(s, failed.done());
  r = failed.get();
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error().message.starts_with("cannot write " + dir + "/opensm-lfts.dump: "))
      << r.error().message;
  EXPECT_EQ(slurp(dir + "/opensm-lfts.dump"), "previous\n");
  EXPECT_EQ(w.stats().failures, 1u);
  w.setDir("");
  Answer noDir;
  w.requestLfts(s, noDir.done());
  r = noDir.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "no dump directory (paths.dump_dir)");
}

TEST_F(DumpWriterTest, RequestsQueuedTogetherShareOneWriteAndAllAreAnswered) {
  auto s = testing::makeSnapshot();
  std::vector<std::unique_ptr<Answer>> answers;
  {
    DumpWriter w({dir, ""}, log);
    for (int i = 0; i < 20; ++i) {
      answers.push_back(std::make_unique<Answer>());
      w.requestLfts(s, answers.back()->done());
    }
    // Destroyed with requests possibly pending: each is still written and answered first.
  }
  for (auto& a : answers) {
    auto r = a->get();
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(*r, dir + "/opensm-lfts.dump");
  }
  expectLftDumpOf(dir + "/opensm-lfts.dump", *s);
}

// The control request `dump`: arguments, before the first sweep, the path once written, a failed write.
TEST_F(DumpWriterTest, DumpRequestAnswersWithThePathOnceWritten) {
  auto s = testing::makeSnapshot();
  DumpWriter w({dir + "/d", ""}, log);
  std::mutex rm;
  std::condition_variable rcv;
  std::vector<Json> replies;
  auto reply = [&](Json j) {
    std::lock_guard<std::mutex> l(rm);
    replies.push_back(std::move(j));
    rcv.notify_all();
  };
  auto next = [&]() -> Json {
    std::unique_lock<std::mutex> l(rm);
    EXPECT_TRUE(rcv.wait_for(l, std::chrono::seconds(30), [&] { return !replies.empty(); }));
    if (replies.empty()) return Json();
    Json j = replies.front();
    replies.erase(replies.begin());
    return j;
  };
  auto request = [](Json args) {
    Request r;
    r.id = 9;
    r.command = "dump";
    r.args = std::move(args);
    return r;
  };
  handleDumpRequest(request(Json::object()), s, w, reply);
  Json bad = next();
  EXPECT_EQ(bad["error"]["code"], "bad_request");
  EXPECT_EQ(bad["error"]["message"], "dump: file must be lfts");
  handleDumpRequest(request({{"file", "subnet"}}), s, w, reply);
  EXPECT_EQ(next()["error"]["code"], "bad_request");
  handleDumpRequest(request({{"file", "lfts"}}), nullptr, w, reply);
  Json early = next();
  EXPECT_EQ(early["error"]["code"], "unavailable");
  EXPECT_EQ(early["error"]["message"], "dump: no sweep has completed yet");
  EXPECT_EQ(early["id"], 9);

  handleDumpRequest(request({{"file", "lfts"}}), s, w, reply);
  Json ok = next();
  ASSERT_TRUE(ok["ok"].get<bool>()) << ok.dump();
  EXPECT_EQ(ok["id"], 9);
  EXPECT_EQ(ok["result"], Json({{"path", dir + "/d/opensm-lfts.dump"}}));
  expectLftDumpOf(dir + "/d/opensm-lfts.dump", *s);

  fs::create_directory(dir + "/d/opensm-lfts.dump.tmp");
  handleDumpRequest(request({{"file", "lfts"}}), s, w, reply);
  Json failed = next();
  EXPECT_EQ(failed["error"]["code"], "failed");
  EXPECT_TRUE(failed["error"]["message"].get<std::string>().starts_with("dump: cannot write " + dir +
                                                                        "/d/opensm-lfts.dump: "))
      << failed.dump();
  std::lock_guard<std::mutex> l(rm);
  EXPECT_TRUE(replies.empty());  // one reply per request
}

}  // namespace
}  // namespace ibsm::daemon
