// HaCoordinator on the fake fabric: it answers SMInfo Get with our SMInfo (the SM_Key only to a requester
// that presents it), becomes MASTER of a fabric with no other SM, and answers SA requests Busy until then.
#include "daemon/sm/ha_coordinator.h"

#include <gtest/gtest.h>

#include "mad/sa.h"
#include "mad/smp.h"
#include "tests/daemon/sm/sm_fixture.h"

namespace ibsm::daemon {
namespace {

using testing::SmFixture;
using namespace std::chrono_literals;

constexpr fabric::Guid kSelf{0xabc0};
constexpr uint64_t kSmKey = 0x5a5a5a5a12345678;

struct Ha : ::testing::Test {
  SmFixture f;
  std::unique_ptr<HaCoordinator> ha;
  std::vector<TopologyEvent> events;
  uint64_t tid = 100;

  void SetUp() override {
    f.startFabric();
    ha = std::make_unique<HaCoordinator>(*f.engine, f.clock, SmStateOptions{5, kSmKey, 1000ms, 3}, kSelf,
                                         [this](TopologyEvent e) { events.push_back(std::move(e)); });
    f.engine->setUnsolicitedHandler([this](const mad::MadPacket& m, const mad::MadHeader& h) {
      if (h.mgmtClass == mad::kClassSubnAdm)
        ha->refuseSa(m, h);
      else
        ha->onSmInfo(m, h);
    });
  }
  // The answer to one request injected into the port (nothing when none came).
  std::optional<mad::MadPacket> ask(mad::MadPacket request) {
    mad::setTid(request, ++tid);
    const size_t before = f.port.sent().size();
    f.port.inject(std::move(request));
    f.engine->poll(mad::Duration::zero());
    for (size_t i = before; i < f.port.sent().size(); ++i) {
      auto h = mad::parseHeader(f.port.sent()[i]);
      if (h && (h->method & 0x80) && h->tid == tid) return f.port.sent()[i];
    }
    return std::nullopt;
  }
  std::optional<mad::SmInfo> smInfoGet(const mad::SmInfo& asker) {
    mad::MadPacket get = mad::makeDirectedSmp(mad::kGet, mad::kAttrSmInfo, 0, fabric::DrPath{});
    mad::encodeSmInfo(asker, mad::smpData(get));
    auto answer = ask(std::move(get));
    if (!answer) return std::nullopt;
    auto h = mad::parseHeader(*answer);
    EXPECT_TRUE(h && h->method == mad::kGetResp && h->attrId == mad::kAttrSmInfo);
    return mad::decodeSmInfo(mad::smpData(*answer));
  }
};

TEST_F(Ha, AnswersSmInfoGetAndShowsTheSmKeyOnlyToWhoPresentsIt) {
  (void)f.discover();  // some SMPs sent: ActCount counts them
  const uint64_t sent = f.engine->counters().sent;
  ASSERT_GT(sent, 0u);
  auto info = smInfoGet({});
  ASSERT_TRUE(info);
  EXPECT_EQ(info->guid, kSelf);
  EXPECT_EQ(info->priority, 5);
  EXPECT_EQ(info->state, static_cast<uint8_t>(SmState::kDiscovering));
  EXPECT_EQ(info->smKey, 0u);  // no key presented
  EXPECT_EQ(info->actCount, static_cast<uint32_t>(sent));

  mad::SmInfo withKey;
  withKey.guid = fabric::Guid{0x777};
  withKey.smKey = kSmKey;
  info = smInfoGet(withKey);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->smKey, kSmKey);
}

TEST_F(Ha, BecomesMasterOfAFabricWithoutOtherSmsAndOnlyThenServesTheSa) {
  mad::MadPacket saGet = mad::makeSaMad(mad::kGet, mad::kSaAttrMcMemberRecord);
  auto busy = ask(saGet);
  ASSERT_TRUE(busy);
  EXPECT_EQ(mad::parseHeader(*busy)->status, 0x0001);  // Busy: not the master (yet)
  EXPECT_EQ(ha->saBusyReplies(), 1u);

  DiscoveryResult found = f.discover();
  auto decision = ha->discover(found.topology);
  EXPECT_EQ(decision.state, SmState::kMaster);
  EXPECT_FALSE(decision.handoverTo);
  EXPECT_EQ(ha->state(), SmState::kMaster);
  auto info = smInfoGet({});
  ASSERT_TRUE(info);
  EXPECT_EQ(info->state, static_cast<uint8_t>(SmState::kMaster));
  // Our port is the one the topology shows, not the one given at construction.
  const fabric::Topology& t = *found.topology;
  EXPECT_EQ(info->guid, t.node(t.smNode()).port(t.smPort()).guid);
  auto turn = ha->tick(false);
  EXPECT_TRUE(turn.master);
  EXPECT_FALSE(turn.sweep);
}

// A planned handover needs a master and a standby that answered it; refused otherwise, with the priority
// left as it was.
TEST_F(Ha, APlannedHandoverIsRefusedWithoutAStandby) {
  auto notMaster = ha->planHandover(std::nullopt);
  ASSERT_FALSE(notMaster);
  EXPECT_NE(notMaster.error().message.find("not the master (DISCOVERING)"), std::string::npos)
      << notMaster.error().message;
  (void)ha->discover(f.discover().topology);
  ASSERT_EQ(ha->state(), SmState::kMaster);
  auto none = ha->planHandover(std::nullopt);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().message, "no standby SM answered this master");
  auto unknown = ha->planHandover(fabric::Guid{0x1234});
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("is not a standby SM"), std::string::npos)
      << unknown.error().message;
  EXPECT_EQ(ha->priority(), 5);
  EXPECT_EQ(ha->state(), SmState::kMaster);
}

}  // namespace
}  // namespace ibsm::daemon
