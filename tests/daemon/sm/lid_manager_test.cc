// LidManager on the fake fabric: the guid2lid file keeps the ports' LIDs across a restart of the SM (and of
// the fabric), and a takeover keeps the LIDs the fabric holds over the file.
#include "daemon/sm/lid_manager.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "daemon/state/state_store.h"
#include "tests/daemon/sm/sm_fixture.h"

namespace ibsm::daemon {
namespace {

namespace fs = std::filesystem;
using testing::SmFixture;

struct Lids : ::testing::Test {
  fs::path dir;
  std::string path;
  void SetUp() override {
    dir = fs::temp_directory_path() / ("ibsm-lid-test-" + std::to_string(::getpid()) + "-" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
    path = (dir / "guid2lid").string();
  }
  void TearDown() override { fs::remove_all(dir); }

  // A map that gives every end port of topo a LID other than a fresh assignment would: 200, 201, ...
  static routing::Guid2Lid unusual(const fabric::Topology& topo) {
    routing::Guid2Lid map;
    uint16_t next = 200;
    for (fabric::NodeIndex n = 0; n < topo.size(); ++n) {
      const fabric::Node& node = topo.node(n);
      for (unsigned p = node.isSwitch() ? 0 : 1; p < (node.isSwitch() ? 1u : node.ports.size()); ++p)
        if (node.ports[p].guid.value != 0) map[node.ports[p].guid] = {fabric::Lid{next++}, 0};
    }
    return map;
  }
  // The LIDs of an assignment by port GUID.
  static routing::Guid2Lid byGuid(const fabric::Topology& topo, const routing::LidAssignment& lids) {
    routing::Guid2Lid map;
    for (fabric::NodeIndex n = 0; n < topo.size(); ++n) {
      const fabric::Node& node = topo.node(n);
      for (unsigned p = node.isSwitch() ? 0 : 1; p < (node.isSwitch() ? 1u : node.ports.size()); ++p) {
        routing::LidRange r = lids.range(n, fabric::PortNum{static_cast<uint8_t>(p)});
        if (r.base.value != 0) map[node.ports[p].guid] = r;
      }
    }
    return map;
  }
};

TEST_F(Lids, Guid2LidKeepsTheLidsAcrossARestart) {
  routing::Guid2Lid first;
  {
    SmFixture f;
    f.startFabric();
    DiscoveryResult found = f.discover();
    ASSERT_TRUE(saveGuid2Lid(path, unusual(*found.topology)));
    LidManager lids(path, 0);
    auto r = lids.assign(*found.topology, false);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_TRUE(r->warnings.empty()) << r->warnings.front();
    first = byGuid(*found.topology, r->lids);
    EXPECT_EQ(first, unusual(*found.topology));  // the file's LIDs, not fresh ones
  }
  // A new SM on a fabric that booted again (no port holds a LID): the file it saved hands out the same LIDs.
  SmFixture f;
  f.startFabric();
  DiscoveryResult found = f.discover();
  LidManager restarted(path, 0);
  auto r = restarted.assign(*found.topology, false);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(byGuid(*found.topology, r->lids), first);
  // Without the file the LIDs would differ.
  LidManager forgetful("", 0);
  auto fresh = forgetful.assign(*found.topology, false);
  ASSERT_TRUE(fresh);
  EXPECT_NE(byGuid(*found.topology, fresh->lids), first);
}

TEST_F(Lids, ATakeoverKeepsTheLidsTheFabricHolds) {
  SmFixture f;
  f.startFabric();
  SwitchTableCache cache;
  f.bringUp(cache);  // another SM programmed fresh LIDs
  DiscoveryResult found = f.discover();
  const routing::Guid2Lid held =
      byGuid(*found.topology, routing::LidAssignment::fromTopology(*found.topology));
  ASSERT_FALSE(held.empty());
  ASSERT_TRUE(saveGuid2Lid(path, unusual(*found.topology)));  // our own file says otherwise

  LidManager lids(path, 0);
  auto kept = lids.assign(*found.topology, /*keepHeld=*/true);
  ASSERT_TRUE(kept) << kept.error().message;
  EXPECT_EQ(byGuid(*found.topology, kept->lids), held);
  EXPECT_EQ(kept->changed, 0u);
  // The file now says what the fabric holds; without keepHeld it wins (here: the same LIDs again).
  auto again = lids.assign(*found.topology, false);
  ASSERT_TRUE(again);
  EXPECT_EQ(byGuid(*found.topology, again->lids), held);

  ASSERT_TRUE(saveGuid2Lid(path, unusual(*found.topology)));
  auto fromFile = lids.assign(*found.topology, false);
  ASSERT_TRUE(fromFile);
  EXPECT_EQ(byGuid(*found.topology, fromFile->lids), unusual(*found.topology));
  EXPECT_GT(fromFile->changed, 0u);
}

// The map is written only when it changes: a second assignment of the same fabric leaves the file alone
// (an atomic write would make a new inode).
TEST_F(Lids, AnUnchangedMapIsNotWrittenAgain) {
  SmFixture f;
  f.startFabric();
  DiscoveryResult found = f.discover();
  LidManager lids(path, 0);
  ASSERT_TRUE(lids.assign(*found.topology, false));
  const auto inode = [&] {
    struct stat st {};
    EXPECT_EQ(::stat(path.c_str(), &st), 0);
    return st.st_ino;
  };
  const auto written = inode();
  auto again = lids.assign(*found.topology, false);
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->warnings.empty());
  EXPECT_EQ(inode(), written);
}

}  // namespace
}  // namespace ibsm::daemon
