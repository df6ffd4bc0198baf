// SubnetManager on the fake fabric: a sweep brings the subnet up as MASTER; what the fabric sends it (traps)
// is validated: malformed traps are answered, counted and dropped without touching the subnet, a good one
// leads to one targeted update after the batch delay.
#include "daemon/sm/subnet_manager.h"

#include <gtest/gtest.h>

#include "mad/fields.h"
#include "mad/notice.h"
#include "mad/smp.h"
#include "routing/route_checker.h"
#include "tests/daemon/sm/sm_fixture.h"

namespace ibsm::daemon {
namespace {

using testing::SmFixture;
using namespace std::chrono_literals;

TEST(SubnetManager, SweepBringsTheSubnetUpAsMaster) {
  SmFixture f;
  f.up();
  EXPECT_EQ(f.sm->state(), SmState::kMaster);
  ASSERT_TRUE(f.sm->snapshot());
  EXPECT_EQ(f.sm->sweeps(), 1u);
  EXPECT_GT(f.sm->actCount(), 0u);
}

// The state handler hears of MASTER as soon as the sweep decides it, before a single Set is sent (a
// takeover's sweep lasts seconds on a large fabric, and `ibsmctl status` shows the state from the start).
TEST(SubnetManager, TheStateHandlerHearsOfMasterBeforeAnythingIsProgrammed) {
  SmFixture f;
  f.create();
  std::vector<std::pair<SmState, size_t>> heard;  // state, SMPs sent by then
  f.sm->setStateHandler([&] { heard.emplace_back(f.sm->state(), f.engine->counters().sent); });
  auto r = f.sm->sweep();
  ASSERT_TRUE(r && r->subnetUp);
  ASSERT_EQ(heard.size(), 1u);
  EXPECT_EQ(heard[0].first, SmState::kMaster);
  EXPECT_EQ(heard[0].second, r->discovery.smps);
}

TEST(SubnetManager, MalformedTrapsAreCountedAndDropped) {
  SmFixture f;
  f.up();
  auto before = f.sm->snapshot();
  mad::Notice n;
  n.generic = true;
  n.type = 1;
  n.producerType = 2;
  n.trapNumber = 128;
  n.issuerLid = f.switchLid();
  n.lidAddr = 0;  // names no LID
  f.deliver(mad::makeTrap(n, 1));
  n.lidAddr = 0xC001;  // a multicast LID
  f.deliver(mad::makeTrap(n, 1));
  n.lidAddr = f.switchLid();
  n.generic = false;  // vendor notice
  f.deliver(mad::makeTrap(n, 1));
  mad::MadPacket garbage = mad::makeTrap(n, 1);
  for (size_t i = 24; i < garbage.bytes.size(); ++i) garbage.bytes[i] = static_cast<uint8_t>(i * 37);
  f.deliver(garbage);
  f.clock.advance(1s);
  f.sm->tick();
  EXPECT_EQ(f.sm->trapCounters().received, 4u);
  EXPECT_EQ(f.sm->trapCounters().malformed, 4u);
  EXPECT_EQ(f.sm->snapshot(), before);  // nothing re-ran
  EXPECT_TRUE(f.events.empty());
}

TEST(SubnetManager, AGoodTrapLeadsToOneTargetedUpdateAfterTheBatchDelay) {
  SmFixture f;
  f.up();
  mad::Notice n;
  n.generic = true;
  n.type = 1;
  n.producerType = 2;
  n.trapNumber = 128;
  n.issuerLid = n.lidAddr = f.switchLid();
  f.deliver(mad::makeTrap(n, 1));
  f.deliver(mad::makeTrap(n, 1));  // the same trap again within the batch
  EXPECT_TRUE(f.events.empty());   // waits for the batch delay
  f.clock.advance(f.sm->options().trapBatchDelay + 1ms);
  f.sm->tick();
  EXPECT_EQ(f.sm->trapCounters().malformed, 0u);
  ASSERT_EQ(f.events.size(), 1u);
  EXPECT_NE(f.events[0].cause.find("trap 128"), std::string::npos) << f.events[0].cause;
  EXPECT_TRUE(f.events[0].ok);
  EXPECT_EQ(f.events[0].lftEntriesChanged, 0u);  // nothing changed in the fabric
}

// A targeted update that re-reads the switch and finds it as it was costs no routing and no programming: the
// snapshot stays the one published, only the re-read's SMPs are sent; a real link change is acted on.
TEST(SubnetManager, AnUpdateThatFindsNothingChangedRoutesAndProgramsNothing) {
  SmFixture f;
  f.up();
  auto before = f.sm->snapshot();
  const fabric::Topology& topo = *before->topology;
  fabric::NodeIndex leaf = topo.switches().front();
  const uint64_t sent = f.engine->counters().sent;
  const uint64_t portInfoSets = f.fabric->receivedSets(mad::kAttrPortInfo);
  const uint64_t lftSets = f.fabric->receivedSets(mad::kAttrLft);
  f.sm->queueUpdate({topo.node(leaf).guid}, "test: nothing happened");
  f.clock.advance(f.sm->options().trapBatchDelay + 1ms);
  f.sm->tick();
  ASSERT_EQ(f.events.size(), 1u);
  EXPECT_NE(f.events[0].action.find("nothing changed"), std::string::npos) << f.events[0].action;
  EXPECT_TRUE(f.events[0].ok);
  EXPECT_EQ(f.events[0].lftBlocksSent, 0u);
  EXPECT_EQ(f.sm->snapshot(), before);  // nothing routed, nothing published
  const uint64_t reread = f.engine->counters().sent - sent;
  EXPECT_EQ(reread, topo.node(leaf).numPorts + 1u);  // one PortInfo Get per port, port 0 included
  EXPECT_EQ(f.events[0].smps, reread);
  EXPECT_EQ(f.fabric->receivedSets(mad::kAttrPortInfo), portInfoSets);  // Gets only
  EXPECT_EQ(f.fabric->receivedSets(mad::kAttrLft), lftSets);

  // A link of that switch goes down: routed and programmed.
  fabric::PortNum up;
  for (unsigned p = 1; p <= topo.node(leaf).numPorts && !up.value; ++p)
    if (topo.node(leaf).ports[p].connected() && topo.node(topo.node(leaf).ports[p].peerNode).isSwitch())
      up = fabric::PortNum{static_cast<uint8_t>(p)};
  ASSERT_TRUE(f.fabric->linkDown(f.fakeIndex(topo, leaf), up));
  f.sm->queueUpdate({topo.node(leaf).guid}, "test: link down");
  f.clock.advance(f.sm->options().trapBatchDelay + 1ms);
  f.sm->tick();
  ASSERT_EQ(f.events.size(), 2u);
  EXPECT_EQ(f.events[1].action.find("nothing changed"), std::string::npos) << f.events[1].action;
  EXPECT_GT(f.events[1].linksDown, 0u);
  EXPECT_GT(f.events[1].lftBlocksSent, 0u);
  EXPECT_NE(f.sm->snapshot(), before);
}

// The first sweep loses every answer to the ARMED Sets of one host port (a port that refuses or a lossy
// link): the subnet is not up, and with no sweep interval nothing would ever try again; the SM sweeps again
// by itself after 1 s, and then the subnet is up.
TEST(SubnetManager, ASweepThatLeftTheSubnetNotUpIsRetried) {
  SmFixture f;
  bool lossy = true;
  auto lossyResponder = [&] {
    f.port.setResponder([&](const mad::MadPacket& sent) {
      auto h = mad::parseHeader(sent);
      auto answers = f.fabric->handle(sent);
      if (lossy && h && h->method == mad::kSet && h->attrId == mad::kAttrPortInfo &&
          mad::fields::get(mad::smpData(sent), IB_PORT_STATE_F) ==
              static_cast<uint32_t>(fabric::PortState::kArmed) &&
          h->attrMod == 1)
        return std::vector<mad::MadPacket>{};
      return answers;
    });
  };
  f.up(/*expectUp=*/false, lossyResponder);
  lossy = false;
  f.clock.advance(500ms);
  f.sm->tick();
  EXPECT_TRUE(f.events.empty());  // not yet
  f.clock.advance(600ms);
  f.sm->tick();
  ASSERT_EQ(f.events.size(), 1u);
  EXPECT_NE(f.events[0].cause.find("retry"), std::string::npos) << f.events[0].cause;
  EXPECT_TRUE(f.events[0].ok);
  f.clock.advance(60s);
  f.sm->tick();
  EXPECT_EQ(f.events.size(), 1u);  // up: no more retries
}

// The wall-clock time of an event comes from the WallClock the SM was given (every timer uses the
// mad::Clock).
TEST(SubnetManager, EventsCarryTheTimeOfTheWallClock) {
  SmFixture f;
  f.create();
  const auto at = std::chrono::system_clock::time_point(std::chrono::hours(24 * 365));
  f.wallClock.set(at);
  auto r = f.sm->sweep();
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(f.events.size(), 1u);
  EXPECT_EQ(f.events[0].when, at);
}

// qos.vls auto: the engines may use up to 8 VLs, at most what every link offers (VLCap). A dragonfly of 9
// groups x 4 routers (2 hosts each) is routed deadlock-free by dfly on 2 VLs when the links offer VL0-7; on
// links that offer only VL 0, dfly and dfsp say they need more and the default chain falls back to updn, with
// nothing VL-related programmed.
TEST(SubnetManager, TheDefaultChainUsesTheVlsTheLinksOffer) {
  for (uint8_t vlCap : {uint8_t{4}, uint8_t{1}}) {  // PortInfo.VLCap: 4 = VL0-7, 1 = VL0 only
    SCOPED_TRACE(int{vlCap});
    testing::SmFixture f;
    tools::FabricSpec spec;
    spec.shape = tools::Shape::kDragonfly;
    spec.dragonflyA = 4;
    spec.dragonflyH = 2;
    spec.hostsPerSwitch = 2;
    fabric::TopologyPtr fly = testing::generate(spec);
    ASSERT_TRUE(fly);
    fabric::Topology::AttrPatch patch;
    for (fabric::NodeIndex n = 0; n < fly->size(); ++n)
      for (unsigned p = 0; p <= fly->node(n).numPorts; ++p) {
        fabric::PortAttrs a = fly->node(n).ports[p].attrs;
        a.valid = true;  // as the fake fabric's defaults (ibsim's), but this VLCap
        a.widthEnabled = a.widthSupported = a.widthActive = 2;
        a.speedEnabled = a.speedSupported = a.speedActive = 1;
        a.mtuCap = 4;
        a.vlCap = vlCap;
        patch.ports.emplace_back(n, fabric::PortNum{static_cast<uint8_t>(p)}, a);
      }
    f.start(fly->withAttrs(patch));
    SmOptions o;  // the default chain
    o.routing.vlLayers = 8;
    o.lightSweepInterval = mad::Duration::zero();
    f.sm = std::make_unique<SubnetManager>(*f.engine, f.clock, f.wallClock, o);
    auto r = f.sm->sweep();
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_TRUE(r->subnetUp);
    if (vlCap == 4) {
      EXPECT_EQ(r->engine, "dfly");
      EXPECT_EQ(f.sm->snapshot()->tables.slLayers, 2u);
      EXPECT_GT(r->vl.sl2vlSet, 0u);
    } else {
      EXPECT_EQ(r->engine, "updn");
      bool said = false;
      for (const auto& why : r->fallbacks)
        said |= why.find("dfsp: the balanced shortest paths need more than 1 VL layer") != std::string::npos;
      EXPECT_TRUE(said);
      EXPECT_EQ(r->vl.phase.smps, 0u);
      EXPECT_EQ(f.fabric->received(mad::kAttrSlToVl), 0u);
    }
  }
}

// A first sweep computes its routes while the endports get their LIDs and the links are armed; when no
// engine can route the fabric, the sweep fails without writing anything to the switches.
TEST(SubnetManager, ASweepNoEngineCanRouteWritesNothingToTheSwitches) {
  SmFixture f;
  f.startFabric();
  SmOptions o;
  o.engines = {"dor"};  // a fat tree is no grid
  o.lightSweepInterval = mad::Duration::zero();
  f.sm = std::make_unique<SubnetManager>(*f.engine, f.clock, f.wallClock, o);
  auto r = f.sm->sweep();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("routing failed"), std::string::npos) << r.error().message;
  EXPECT_GT(f.fabric->receivedSets(mad::kAttrPortInfo), 0u);
  EXPECT_EQ(f.fabric->receivedSets(mad::kAttrSwitchInfo), 0u);
  EXPECT_EQ(f.fabric->receivedSets(mad::kAttrLft), 0u);
  EXPECT_FALSE(f.sm->snapshot());
}

}  // namespace
}  // namespace ibsm::daemon

namespace ibsm::daemon {
namespace {

// The health policy's isolation: a link routed around as if down, without re-reading the fabric; the routes
// come back when it is released, and a heavy sweep in between keeps it out.
TEST(SubnetManager, IsolatedLinksAreRoutedAroundUntilReleased) {
  SmFixture f;
  f.up();
  auto before = f.sm->snapshot();
  const fabric::Topology& t = *before->topology;
  const fabric::Link* link = nullptr;
  for (const auto& l : t.links())
    if (!link && t.node(l.a).isSwitch() && t.node(l.b).isSwitch()) link = &l;
  ASSERT_TRUE(link);
  const std::pair<fabric::Guid, uint8_t> a{t.node(link->a).guid, link->portA.value},
      b{t.node(link->b).guid, link->portB.value};
  // Routes crossing the link in either direction (CA destinations), from the switch tables.
  auto crossing = [&](const SubnetSnapshot& s) {
    size_t n = 0;
    for (fabric::Lid lid{1}; lid.value <= s.lids.maxLid().value; ++lid.value) {
      if (s.topology->node(s.lids.owner(lid).node).isSwitch()) continue;
      n += s.tables.port(*s.topology->findNode(a.first), lid) == a.second;
      n += s.tables.port(*s.topology->findNode(b.first), lid) == b.second;
    }
    return n;
  };
  ASSERT_GT(crossing(*before), 0u);
  const uint64_t smpsBefore = f.engine->counters().sent;

  auto r = f.sm->setIsolatedPorts({a, b}, "health: test");
  ASSERT_TRUE(r) << r.error().message;
  auto isolated = f.sm->snapshot();
  ASSERT_NE(isolated, before);
  EXPECT_EQ(crossing(*isolated), 0u);
  auto n = isolated->topology->findNode(a.first);
  EXPECT_EQ(isolated->topology->node(*n).ports[a.second].attrs.state, fabric::PortState::kDown);
  routing::CheckReport rep = routing::checkRoutes(*isolated->topology, isolated->lids, isolated->tables);
  EXPECT_EQ(rep.unreachable, 0u) << routing::formatReportText(rep);
  EXPECT_EQ(rep.reachable, rep.pairs);
  ASSERT_EQ(f.events.size(), 1u);
  EXPECT_EQ(f.events[0].cause, "health: test");
  EXPECT_NE(f.events[0].action.find("routes: repair"), std::string::npos) << f.events[0].action;
  // Only LFT blocks were written: nothing was read again.
  EXPECT_EQ(f.engine->counters().sent - smpsBefore, f.events[0].smps);
  EXPECT_EQ(f.events[0].lftBlocksSent, f.events[0].smps);

  ASSERT_TRUE(f.sm->sweep("resweep"));
  EXPECT_EQ(crossing(*f.sm->snapshot()), 0u);  // a heavy sweep keeps it out

  f.events.clear();
  ASSERT_TRUE(f.sm->setIsolatedPorts({}, "health: released"));
  EXPECT_EQ(crossing(*f.sm->snapshot()), crossing(*before));  // the engine's routes, from scratch
  ASSERT_EQ(f.events.size(), 1u);
  EXPECT_NE(f.events[0].action.find("from scratch"), std::string::npos) << f.events[0].action;
  EXPECT_TRUE(f.sm->setIsolatedPorts({}, "again"));
  EXPECT_EQ(f.events.size(), 1u);  // nothing changed, nothing done
}

}  // namespace
}  // namespace ibsm::daemon

namespace ibsm::daemon {
namespace {

// The SM's leaf and its port to the first switch reached through it (a spine: all leaves but the SM's own are
// behind it, on routes whose second hop is that port).
std::pair<fabric::NodeIndex, std::optional<uint8_t>> smLeafUplink(const fabric::Topology& topo) {
  std::optional<uint8_t> port;
  for (fabric::NodeIndex s : topo.switches())
    if (!port && topo.route(s).count == 2) port = topo.route(s).hops[2];
  return {topo.node(0).ports[topo.smPort().value].peerNode, port};
}

// Every event was a targeted update (no heavy sweep) that succeeded; the snapshot has `nodes` nodes and valid
// routes.
void expectUpdatedInPlace(const SmFixture& f, size_t nodes) {
  ASSERT_FALSE(f.events.empty());
  for (const auto& e : f.events) {
    EXPECT_EQ(e.action.find("heavy sweep"), std::string::npos) << e.action;
    EXPECT_TRUE(e.ok) << e.action;
  }
  const auto& after = *f.sm->snapshot();
  EXPECT_EQ(after.topology->size(), nodes);
  EXPECT_TRUE(routing::checkRoutes(*after.topology, after.lids, after.tables).ok());
}

// A link on the SM's directed routes goes down and its traps are lost: the light sweep finds it from its live
// end first, then asks the switches behind it (silent on their old routes) again on their new ones. Each is a
// targeted update; nothing is re-read through the dead link into a heavy sweep.
TEST(SubnetManager, ALightSweepRoutesAroundADeadLinkBeforeAskingTheSwitchesBehindIt) {
  SmFixture f;
  f.up();
  auto before = f.sm->snapshot();
  const fabric::Topology& topo = *before->topology;
  const auto [leaf, port] = smLeafUplink(topo);
  ASSERT_TRUE(port);
  size_t behind = 0;
  for (fabric::NodeIndex s : topo.switches())
    behind += topo.route(s).count >= 2 && topo.route(s).hops[2] == *port;
  ASSERT_GT(behind, 1u);
  ASSERT_TRUE(f.fabric->linkDown(f.fakeIndex(topo, leaf), fabric::PortNum{*port}));
  while (f.port.receive(mad::Duration::zero())) {
  }  // the traps are lost
  const uint64_t lost = f.fabric->lost();
  f.sm->lightSweep();
  expectUpdatedInPlace(f, topo.size());
  EXPECT_EQ(f.events[0].linksDown, 1u);
  // One short attempt each through the dead link, no more.
  EXPECT_LE(f.fabric->lost() - lost, 2 * behind);
}

// Only the far end of a dead link on the SM's directed routes reports it (its trap; the near end's is lost):
// that switch is silent on its route, which crosses the link. Its neighbours, read around it, still see it
// linked: it is alive, read through one of them, and the update finds the link from there; no heavy sweep.
TEST(SubnetManager, ASwitchSilentBehindAnUnknownDeadLinkIsFoundAliveThroughItsNeighbours) {
  SmFixture f;
  f.up();
  auto before = f.sm->snapshot();
  const fabric::Topology& topo = *before->topology;
  const auto [leaf, port] = smLeafUplink(topo);
  ASSERT_TRUE(port);
  const fabric::NodeIndex spine = topo.node(leaf).ports[*port].peerNode;
  ASSERT_TRUE(f.fabric->linkDown(f.fakeIndex(topo, leaf), fabric::PortNum{*port}));
  while (f.port.receive(mad::Duration::zero())) {
  }  // the traps are lost
  f.sm->queueUpdate({topo.node(spine).guid}, "test: the far end's trap");
  f.clock.advance(f.sm->options().trapBatchDelay + 1ms);
  f.sm->tick();
  ASSERT_EQ(f.events.size(), 1u);
  expectUpdatedInPlace(f, topo.size());
  EXPECT_EQ(f.events[0].linksDown, 1u);
}

// The spine that carries the SM's directed routes to the other leaves dies: its links go down in two pieces,
// each reported by the leaves' traps. Each piece is one targeted update that reads around the silent spine
// (through leaves and the other spines) instead of through it; after the second the spine is gone with its
// links. No update falls into a heavy sweep or ends with errors, and every route stays valid.
TEST(SubnetManager, AWholeSwitchLostInPiecesIsReadAroundWithoutAHeavySweep) {
  SmFixture f;
  f.up();
  auto before = f.sm->snapshot();
  const fabric::Topology& topo = *before->topology;
  const auto [leaf, port] = smLeafUplink(topo);
  ASSERT_TRUE(port);
  const fabric::NodeIndex spine = topo.node(leaf).ports[*port].peerNode;
  std::vector<uint8_t> links;
  for (unsigned p = 1; p < topo.node(spine).ports.size(); ++p)
    if (topo.node(spine).ports[p].connected()) links.push_back(static_cast<uint8_t>(p));
  ASSERT_GT(links.size(), 2u);
  const uint64_t lost = f.fabric->lost();
  for (size_t piece : {links.size() / 2, links.size()}) {
    for (size_t i = piece == links.size() ? links.size() / 2 : 0; i < piece; ++i)
      ASSERT_TRUE(f.fabric->linkDown(f.fakeIndex(topo, spine), fabric::PortNum{links[i]}));
    f.sm->tick();  // the traps
    f.clock.advance(f.sm->options().trapBatchDelay + 1ms);
    f.sm->tick();
  }
  ASSERT_EQ(f.events.size(), 2u);
  expectUpdatedInPlace(f, topo.size() - 1);
  EXPECT_EQ(f.events[0].linksDown + f.events[1].linksDown, links.size());
  // Only short attempts at port 0 of each switch whose route passed the spine, no more.
  size_t behind = 0;
  for (fabric::NodeIndex s : topo.switches())
    behind += topo.route(s).count >= 2 && topo.route(s).hops[2] == *port;
  EXPECT_LE(f.fabric->lost() - lost, 2 * behind);
  const auto after = f.sm->snapshot();
  EXPECT_FALSE(after->topology->findNode(topo.node(spine).guid));
  // Every endport left keeps its LID (taken over from the last snapshot, no assignment).
  ASSERT_EQ(after->topology->size(), topo.size() - 1);
  for (fabric::NodeIndex n = 0; n < after->topology->size(); ++n) {
    const fabric::Node& node = after->topology->node(n);
    const fabric::NodeIndex was = *topo.findNode(node.guid);
    for (unsigned p = 0; p <= node.numPorts; ++p)
      EXPECT_EQ(after->lids.base(n, fabric::PortNum{static_cast<uint8_t>(p)}),
                before->lids.base(was, fabric::PortNum{static_cast<uint8_t>(p)}))
          << node.description << " port " << p;
  }
  EXPECT_EQ(after->lids.maxLid(), before->lids.maxLid());
}

}  // namespace
}  // namespace ibsm::daemon

namespace ibsm::daemon {
namespace {

// The link that carries most of the SM's directed routes goes down: the update gives the nodes behind it
// routes that lead to them (the fabric answers NodeInfo on each with that node) and keeps every other route
// as it was.
TEST(SubnetManager, AnUpdateKeepsTheDirectedRoutesThatStillLeadToTheirNodes) {
  SmFixture f;
  f.up();
  const auto before = f.sm->snapshot();
  const fabric::Topology& topo = *before->topology;
  const auto [leaf, port] = smLeafUplink(topo);
  ASSERT_TRUE(port);
  auto crosses = [&](const fabric::DrPath& r) { return r.count >= 2 && r.hops[2] == *port; };
  ASSERT_TRUE(f.fabric->linkDown(f.fakeIndex(topo, leaf), fabric::PortNum{*port}));
  f.sm->queueUpdate({topo.node(leaf).guid}, "test: link down");
  f.clock.advance(f.sm->options().trapBatchDelay + 1ms);
  f.sm->tick();
  ASSERT_EQ(f.events.size(), 1u);
  EXPECT_EQ(f.events[0].action.find("heavy sweep"), std::string::npos) << f.events[0].action;
  const fabric::Topology& after = *f.sm->snapshot()->topology;
  ASSERT_EQ(after.size(), topo.size());
  size_t moved = 0, kept = 0;
  for (fabric::NodeIndex n = 1; n < topo.size(); ++n) {
    const fabric::Guid guid = topo.node(n).guid;
    auto m = after.findNode(guid);
    ASSERT_TRUE(m);
    const fabric::DrPath& was = topo.route(n);
    const fabric::DrPath& now = after.route(*m);
    if (crosses(was)) {
      ++moved;
      EXPECT_FALSE(crosses(now)) << now.toString();
    } else {
      ++kept;
      EXPECT_EQ(now, was) << fabric::toString(guid);
    }
    auto answers = f.fabric->handle(mad::makeDirectedSmp(mad::kGet, mad::kAttrNodeInfo, 0, now));
    ASSERT_EQ(answers.size(), 1u) << now.toString();
    auto info = mad::decodeNodeInfo(mad::smpData(answers[0]));
    ASSERT_TRUE(info);
    EXPECT_EQ(info->nodeGuid, guid) << now.toString();
  }
  EXPECT_GT(moved, 1u);
  EXPECT_GT(kept, 1u);
}

}  // namespace
}  // namespace ibsm::daemon

namespace ibsm::daemon {
namespace {

// A trap that comes in while a light sweep asks the switches stops the asking after the SMPs in flight (one
// window): the trap's update does not wait for the whole round.
TEST(SubnetManager, ATrapStopsALightSweepAndItsUpdateGoesFirst) {
  SmFixture f;
  testing::SmSetup setup;
  setup.engine.window = 2;
  f.create(setup);
  auto r = f.sm->sweep();
  ASSERT_TRUE(r && r->subnetUp);
  f.events.clear();
  const fabric::Topology& topo = *f.sm->snapshot()->topology;
  ASSERT_GT(topo.switches().size(), 2 * setup.engine.window);
  const fabric::Link* link = nullptr;
  for (const auto& l : topo.links())
    if (!link && topo.node(l.a).isSwitch() && topo.node(l.b).isSwitch()) link = &l;
  ASSERT_TRUE(link);
  ASSERT_TRUE(f.fabric->linkDown(f.fakeIndex(topo, link->a), link->portA));  // its traps are on their way
  const uint64_t asked =
      f.fabric->received(mad::kAttrSwitchInfo) - f.fabric->receivedSets(mad::kAttrSwitchInfo);
  f.sm->lightSweep();
  const uint64_t now =
      f.fabric->received(mad::kAttrSwitchInfo) - f.fabric->receivedSets(mad::kAttrSwitchInfo);
  EXPECT_LE(now - asked, 2 * setup.engine.window);
  EXPECT_TRUE(f.events.empty());
  f.clock.advance(f.sm->options().trapBatchDelay + 1ms);
  f.sm->tick();
  ASSERT_FALSE(f.events.empty());
  EXPECT_EQ(f.events[0].cause.rfind("trap", 0), 0u) << f.events[0].cause;
  EXPECT_EQ(f.events[0].linksDown, 1u);
  EXPECT_EQ(f.events[0].action.find("heavy sweep"), std::string::npos) << f.events[0].action;
}

}  // namespace
}  // namespace ibsm::daemon
