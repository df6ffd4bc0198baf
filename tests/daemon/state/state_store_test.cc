#include "daemon/state/state_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace ibsm::daemon {
namespace {

namespace fs = std::filesystem;

struct StateDir : ::testing::Test {
  fs::path dir;
  void SetUp() override {
    dir = fs::temp_directory_path() / ("ibsm-state-test-" + std::to_string(::getpid()) + "-" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string read(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }
};

TEST_F(StateDir, MkeyIsGeneratedOnceAndKeptSecret) {
  const std::string path = (dir / "sub" / kMkeyFile).string();  // the state directory may not exist yet
  auto first = loadOrCreateMkey(path);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_TRUE(first->created);
  EXPECT_NE(first->key, 0u);
  EXPECT_TRUE(first->warnings.empty());
  char want[32];
  std::snprintf(want, sizeof want, "0x%016llx\n", static_cast<unsigned long long>(first->key));
  EXPECT_EQ(read(path), want);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // A restart reads the same key back.
  auto second = loadOrCreateMkey(path);
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_FALSE(second->created);
  EXPECT_EQ(second->key, first->key);
  // A hand-written key (upper case, no newline) is taken as it is.
  write(path, "0x00000000DEADBEEF");
  auto given = loadOrCreateMkey(path);
  ASSERT_TRUE(given);
  EXPECT_EQ(given->key, 0xdeadbeefu);
}

TEST_F(StateDir, DamagedMkeyFileIsKeptAsideAndReplaced) {
  const std::string path = (dir / kMkeyFile).string();
  for (std::string bad : {"", "garbage\n", "0x123\n", "0x0000000000000000\n", "0x00000000deadbeef\nmore\n",
                          "0x00000000deadbeeg\n"}) {
    write(path, bad);
    auto r = loadOrCreateMkey(path);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_TRUE(r->created) << bad;
    EXPECT_NE(r->key, 0u);
    ASSERT_EQ(r->warnings.size(), 1u) << bad;
    EXPECT_EQ(r->warnings[0].rfind("STATE003 " + path + ": not an M_Key", 0), 0u) << r->warnings[0];
    EXPECT_NE(r->warnings[0].find("kept as " + path + ".bad-"), std::string::npos) << r->warnings[0];
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().filename().string().starts_with("mkey.bad-")) fs::remove(e.path());
  }
}

TEST_F(StateDir, MkeyThatCannotBeSavedIsAnError) {
  if (::geteuid() == 0) {
    // root writes anywhere: make the state "directory" a file instead.
    write(dir / "notadir", "x");
    auto r = loadOrCreateMkey((dir / "notadir" / kMkeyFile).string());
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("cannot keep the generated M_Key"), std::string::npos)
        << r.error().message;
    return;
  }
  fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec);
  auto r = loadOrCreateMkey((dir / kMkeyFile).string());
  fs::permissions(dir, fs::perms::owner_all);
  ASSERT_FALSE(r);
}

}  // namespace
}  // namespace ibsm::daemon
