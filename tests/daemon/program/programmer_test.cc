#include "daemon/program/programmer.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "mad/smp.h"
#include "tests/daemon/fake_fabric_fixture.h"

namespace ibsm::daemon {
namespace {

using fabric::NodeIndex;
using fabric::PortNum;
using fabric::PortState;
using testing::FakeFabricFixture;
using testing::generate;
using namespace std::chrono_literals;

fabric::TopologyPtr fatTree() {
  tools::FabricSpec spec;
  spec.shape = tools::Shape::kFatTree;
  spec.levels = 2;
  spec.radix = 12;
  spec.hcaPorts = 2;
  return generate(spec);
}

// The LFT a switch of the fake fabric holds, over LIDs 0..maxLid.
std::vector<uint8_t> held(const mad::FakeFabric& f, NodeIndex sw, size_t lids) {
  std::vector<uint8_t> out(lids);
  for (size_t lid = 0; lid < lids; ++lid) out[lid] = f.lftPort(sw, static_cast<uint16_t>(lid));
  return out;
}

TEST(Programmer, BringsTheFabricUp) {
  FakeFabricFixture fx;
  fx.start(fatTree());
  SwitchTableCache cache;
  auto up = fx.bringUp(cache);
  const fabric::Topology& t = *up.found.topology;
  const size_t lidCount = up.lids.maxLid().value + 1u;
  for (NodeIndex n = 0; n < t.size(); ++n) {
    const fabric::Node& node = t.node(n);
    NodeIndex f = fx.fakeIndex(t, n);
    for (unsigned p = 1; p <= node.numPorts; ++p) {
      if (!node.ports[p].connected()) continue;
      EXPECT_EQ(fx.fabric->portAttrs(f, PortNum{static_cast<uint8_t>(p)}).state, PortState::kActive)
          << node.description << " port " << p;
    }
    for (unsigned p = node.isSwitch() ? 0 : 1; p <= (node.isSwitch() ? 0u : node.numPorts); ++p) {
      if (!node.isSwitch() && !node.ports[p].connected()) continue;
      fabric::PortAttrs a = fx.fabric->portAttrs(f, PortNum{static_cast<uint8_t>(p)});
      EXPECT_EQ(a.lid, up.lids.base(n, PortNum{static_cast<uint8_t>(p)}))
          << node.description << " port " << p;
      EXPECT_EQ(a.smLid, up.lids.base(t.smNode(), t.smPort()));
    }
    if (node.isSwitch()) {
      EXPECT_EQ(fx.fabric->switchAttrs(f).linearFdbTop, up.lids.maxLid().value);
      routing::LftRow want = up.tables.lft[n];
      want.resize(lidCount, routing::kNoPort);
      EXPECT_EQ(held(*fx.fabric, f, lidCount), want) << node.description;
    }
  }
  EXPECT_GT(up.report.lftBlocksSent, 0u);
  EXPECT_EQ(fx.port.localPort().lid, up.lids.base(t.smNode(), t.smPort()).value);

  // The LFTs work: every endport answers a LID-routed NodeInfo.
  size_t answered = 0, asked = 0;
  for (NodeIndex n : t.cas())
    for (unsigned p = 1; p <= t.node(n).numPorts; ++p) {
      uint16_t lid = up.lids.base(n, PortNum{static_cast<uint8_t>(p)}).value;
      if (lid == 0) continue;
      ++asked;
      fx.engine->submit(mad::makeLidRoutedSmp(mad::kGet, mad::kAttrNodeInfo, 0, lid),
                        [&](const mad::MadResult& r) { answered += r.ok(); });
    }
  fx.engine->runUntilIdle();
  EXPECT_GT(asked, 0u);
  EXPECT_EQ(answered, asked);
}

TEST(Programmer, SendsOnlyWhatChanged) {
  FakeFabricFixture fx;
  fx.start(fatTree());
  SwitchTableCache cache;
  auto up = fx.bringUp(cache);
  const uint64_t lftSets = fx.fabric->receivedSets(mad::kAttrLft);

  // Same tables, fresh discovery (as the next sweep does): nothing to send.
  DiscoveryResult again = fx.discover();
  Programmer programmer(*fx.engine, fx.clock);
  ProgramReport second = programmer.program(again, up.lids, up.tables, cache, ProgramOptions{});
  EXPECT_TRUE(second.errors.empty());
  EXPECT_EQ(second.lftBlocksSent, 0u);
  EXPECT_EQ(second.smps(), 0u);
  EXPECT_EQ(fx.fabric->receivedSets(mad::kAttrLft), lftSets);

  // One entry of one switch changes (to another of its linked ports): one block goes out.
  const fabric::Topology& t = *again.topology;
  NodeIndex sw = t.switches().front();
  routing::RoutingTables changed = up.tables;
  uint16_t lid = up.lids.maxLid().value;
  uint8_t old = changed.lft[sw][lid];
  uint8_t other = 0;
  for (unsigned p = 1; p <= t.node(sw).numPorts && !other; ++p)
    if (p != old && t.node(sw).ports[p].connected()) other = static_cast<uint8_t>(p);
  ASSERT_NE(other, 0);
  changed.lft[sw][lid] = other;
  DiscoveryResult fresh = fx.discover();
  ProgramReport third = programmer.program(fresh, up.lids, changed, cache, ProgramOptions{});
  EXPECT_TRUE(third.errors.empty());
  EXPECT_EQ(third.lftBlocksSent, 1u);
  EXPECT_EQ(fx.fabric->receivedSets(mad::kAttrLft), lftSets + 1);
  EXPECT_EQ(fx.fabric->lftPort(fx.fakeIndex(t, sw), lid), other);
  // The same tables again: every switch holds its row in full, nothing is compared or sent.
  ProgramReport fourth = programmer.program(fresh, up.lids, changed, cache, ProgramOptions{});
  EXPECT_EQ(fourth.lftBlocksSent, 0u);
  EXPECT_EQ(fourth.lftBlocksSkipped, third.lftBlocksSkipped + third.lftBlocksSent);

  // A block Set that got no answer leaves its switch's row unconfirmed: the same tables once more send it.
  routing::RoutingTables back = changed;  // shares every row
  back.lft[sw][lid] = old;                // but this switch's
  DiscoveryResult before = fx.discover();
  fx.fabric->setDropRate(1.0);
  ProgramReport lost = programmer.program(before, up.lids, back, cache, ProgramOptions{});
  EXPECT_FALSE(lost.errors.empty());
  fx.fabric->setDropRate(0.0);
  DiscoveryResult after = fx.discover();
  ProgramReport retried = programmer.program(after, up.lids, back, cache, ProgramOptions{});
  EXPECT_TRUE(retried.errors.empty());
  EXPECT_EQ(retried.lftBlocksSent, 1u);
  EXPECT_EQ(fx.fabric->lftPort(fx.fakeIndex(t, sw), lid), old);
}

// A switch whose LFT Sets partly failed: the blocks acknowledged are known (not sent again), the failed one
// is unknown and goes out again with the same tables.
TEST(Programmer, KnowsTheAcknowledgedBlocksOfASwitchWithAFailedSet) {
  FakeFabricFixture fx;
  fx.start(fatTree());
  SwitchTableCache cache;
  auto up = fx.bringUp(cache);
  const fabric::Topology& t = *up.found.topology;
  const NodeIndex sw = t.switches().front();
  routing::RoutingTables changed = up.tables;
  ASSERT_GT(up.lids.maxLid().value, mad::kLftBlockLids);
  // One entry in each of blocks 0 and 1 (a route out of the switch) moves to another linked port of it.
  for (size_t b : {0u, 1u}) {
    size_t lid = b * mad::kLftBlockLids;
    while (changed.lft[sw][lid] == 0 || changed.lft[sw][lid] == routing::kNoPort) ++lid;
    ASSERT_LE(lid, up.lids.maxLid().value);
    const uint8_t old = changed.lft[sw][lid];
    for (unsigned p = 1; p <= t.node(sw).numPorts; ++p)
      if (p != old && t.node(sw).ports[p].connected()) {
        changed.lft[sw][lid] = static_cast<uint8_t>(p);
        break;
      }
    ASSERT_NE(changed.lft[sw][lid], old);
  }
  bool dropBlock1 = true;
  fx.port.setResponder([&](const mad::MadPacket& sent) {
    auto h = mad::parseHeader(sent);
    if (dropBlock1 && h && h->method == mad::kSet && h->attrId == mad::kAttrLft && h->attrMod == 1)
      return std::vector<mad::MadPacket>{};
    return fx.fabric->handle(sent);
  });
  Programmer programmer(*fx.engine, fx.clock);
  DiscoveryResult first = fx.discover();
  ProgramReport lost = programmer.program(first, up.lids, changed, cache, ProgramOptions{});
  EXPECT_EQ(lost.lftBlocksSent, 1u);
  EXPECT_FALSE(lost.errors.empty());
  dropBlock1 = false;
  DiscoveryResult second = fx.discover();
  ProgramReport retried = programmer.program(second, up.lids, changed, cache, ProgramOptions{});
  EXPECT_TRUE(retried.errors.empty());
  EXPECT_EQ(retried.lftBlocksSent, 1u);
  const size_t lidCount = up.lids.maxLid().value + 1u;
  routing::LftRow want = changed.lft[sw];
  want.resize(lidCount, routing::kNoPort);
  EXPECT_EQ(held(*fx.fabric, fx.fakeIndex(t, sw), lidCount), want);
  // Now the switch holds the row in full: nothing is compared again.
  ProgramReport again = programmer.program(second, up.lids, changed, cache, ProgramOptions{});
  EXPECT_EQ(again.lftBlocksSent, 0u);
  EXPECT_EQ(again.smps(), 0u);
}

// A new master asks every host to re-register, once per CA port (also where the LID is already right), and
// the command is not repeated by later Sets of the same port.
TEST(Programmer, ClientReregisterOncePerPort) {
  FakeFabricFixture fx;
  fx.start(fatTree());
  SwitchTableCache cache;
  auto up = fx.bringUp(cache);
  EXPECT_EQ(fx.fabric->clientReregistrations(), 0u);
  size_t caPorts = 0;
  for (NodeIndex n : up.found.topology->cas())
    for (unsigned p = 1; p <= up.found.topology->node(n).numPorts; ++p)
      caPorts += up.found.topology->node(n).ports[p].connected();
  DiscoveryResult again = fx.discover();
  Programmer programmer(*fx.engine, fx.clock);
  ProgramOptions rereg;
  rereg.clientReregister = true;
  ProgramReport r = programmer.program(again, up.lids, up.tables, cache, rereg);
  EXPECT_TRUE(r.errors.empty());
  EXPECT_EQ(fx.fabric->clientReregistrations(), caPorts);
  ProgramReport later = programmer.program(again, up.lids, up.tables, cache, ProgramOptions{});
  EXPECT_EQ(later.smps(), 0u);
  EXPECT_EQ(fx.fabric->clientReregistrations(), caPorts);
}

// The topology of `dr` with the attributes of both ends of (ca, port 1)'s link as the fabric holds them now:
// what a re-discovery builds on the last one when that link changed (every other row shared).
fabric::TopologyPtr withLinkReadAgain(FakeFabricFixture& fx, const DiscoveryResult& dr, NodeIndex ca) {
  const fabric::Topology& t = *dr.topology;
  const fabric::Port& port = t.node(ca).ports[1];
  fabric::Topology::AttrPatch patch;
  for (auto [n, p] : {std::pair{ca, PortNum{1}}, std::pair{port.peerNode, port.peerPort}})
    patch.ports.emplace_back(n, p, fx.fabric->portAttrs(fx.fakeIndex(t, n), p));
  return t.withAttrs(patch);
}

// After a run that ended without an error, the next one with the same LIDs and options does not look at the
// rows it left in phases 1 and 2 (an event costs what changed): the rows that changed since are looked at
// and their ports brought up; after a run with errors every row is looked at again.
TEST(Programmer, LooksAgainAtTheRowsChangedSinceACleanRun) {
  FakeFabricFixture fx;
  fx.start(fatTree());
  SwitchTableCache cache;
  auto up = fx.bringUp(cache);
  Programmer programmer(*fx.engine, fx.clock);
  DiscoveryResult dr = fx.discover();
  ASSERT_TRUE(programmer.program(dr, up.lids, up.tables, cache, ProgramOptions{}).errors.empty());
  const fabric::Topology& t = *dr.topology;
  const NodeIndex ca = t.cas().back();
  ASSERT_NE(ca, t.smNode());
  const fabric::Port& link = t.node(ca).ports[1];
  ASSERT_TRUE(link.connected());
  auto state = [&](NodeIndex n, PortNum p) { return fx.fabric->portAttrs(fx.fakeIndex(t, n), p).state; };
  auto bounce = [&] {  // the link goes down and comes back: both ends in INIT
    ASSERT_TRUE(fx.fabric->linkDown(fx.fakeIndex(t, ca), PortNum{1}));
    ASSERT_TRUE(fx.fabric->linkUp(fx.fakeIndex(t, ca), PortNum{1}));
    ASSERT_EQ(state(ca, PortNum{1}), PortState::kInit);
  };

  bounce();
  DiscoveryResult changed = dr;
  changed.topology = withLinkReadAgain(fx, dr, ca);
  ProgramReport r = programmer.program(changed, up.lids, up.tables, cache, ProgramOptions{});
  EXPECT_TRUE(r.errors.empty());
  EXPECT_EQ(r.portsActivated, 2u);
  EXPECT_EQ(state(ca, PortNum{1}), PortState::kActive);
  EXPECT_EQ(state(link.peerNode, link.peerPort), PortState::kActive);

  // A run whose Sets get no answer leaves the ports as they were (its topology says so) and trusts nothing
  // afterwards: the next run on that topology brings them up.
  bounce();
  DiscoveryResult again = changed;
  again.topology = withLinkReadAgain(fx, changed, ca);
  fx.fabric->setDropRate(1.0);
  EXPECT_FALSE(programmer.program(again, up.lids, up.tables, cache, ProgramOptions{}).errors.empty());
  fx.fabric->setDropRate(0.0);
  ProgramReport retried = programmer.program(again, up.lids, up.tables, cache, ProgramOptions{});
  EXPECT_TRUE(retried.errors.empty());
  EXPECT_EQ(retried.portsActivated, 2u);
  EXPECT_EQ(state(ca, PortNum{1}), PortState::kActive);
  EXPECT_EQ(state(link.peerNode, link.peerPort), PortState::kActive);
}

// The management ports of a topology (CA ports with a link, switch port 0), as (node, port).
std::vector<std::pair<NodeIndex, unsigned>> managementPorts(const fabric::Topology& t) {
  std::vector<std::pair<NodeIndex, unsigned>> out;
  for (NodeIndex n = 0; n < t.size(); ++n) {
    const fabric::Node& node = t.node(n);
    if (node.isSwitch())
      out.emplace_back(n, 0);
    else
      for (unsigned p = 1; p <= node.numPorts; ++p)
        if (node.ports[p].connected()) out.emplace_back(n, p);
  }
  return out;
}

constexpr mad::MkeyInfo kMkey{0x0123456789abcdef, 2, 60};

// M_Key protection on SMAs that implement it (IBA 14.2.4): one run writes M_Key, protect bits and lease into
// every management port; with the key in its SMPs the SM still discovers and manages the fabric (at protect
// level 2 no Get passes without it) and sends nothing more; a diag tool without the key is refused.
TEST(Programmer, ProtectsEveryManagementPortWithTheMkey) {
  FakeFabricFixture fx;
  mad::FakeFabricOptions fo;
  fo.enforceMkey = true;
  fx.start(fatTree(), {32, 100ms, 3}, fo);
  fx.engine->setSmpMkey(kMkey.key);
  ProgramOptions opt;
  opt.mkey = kMkey;
  SwitchTableCache cache;
  auto up = fx.bringUp(cache, "minhop", {}, opt);
  const fabric::Topology& t = *up.found.topology;
  const auto mgmt = managementPorts(t);
  for (auto [n, p] : mgmt)
    EXPECT_EQ(fx.fabric->portMkey(fx.fakeIndex(t, n), PortNum{static_cast<uint8_t>(p)}), kMkey)
        << t.node(n).description << " port " << p;
  EXPECT_EQ(up.report.mkeysSet, mgmt.size());
  EXPECT_EQ(up.report.mkeyIgnored, 0u);
  EXPECT_EQ(fx.fabric->mkeyViolations(), 0u);

  // The next sweep reads every port with the key and finds nothing to write.
  DiscoveryResult again = fx.discover();
  EXPECT_EQ(again.topology->size(), t.size());
  Programmer programmer(*fx.engine, fx.clock);
  ProgramReport second = programmer.program(again, up.lids, up.tables, cache, opt);
  EXPECT_TRUE(second.errors.empty());
  EXPECT_EQ(second.smps(), 0u);

  // A tool without the key: its Get and its Set of a host's PortInfo go unanswered.
  const NodeIndex ca = t.cas().front();
  const fabric::DrPath& route = t.routeVia(ca, fabric::PortNum{1});
  mad::MadEngine tool(fx.port, fx.clock, {4, 100ms, 0});
  std::vector<bool> ok;
  for (uint8_t method : {mad::kGet, mad::kSet})
    tool.submit(mad::makeDirectedSmp(method, mad::kAttrPortInfo, 1, route),
                [&](const mad::MadResult& r) { ok.push_back(r.ok()); });
  tool.runUntilIdle();
  EXPECT_EQ(ok, (std::vector<bool>{false, false}));
  EXPECT_EQ(fx.fabric->mkeyViolations(), 2u);
  EXPECT_EQ(fx.fabric->portMkey(fx.fakeIndex(t, ca), PortNum{1}), kMkey);
}

// ibsim's SMAs acknowledge the Set and drop the M_Key fields: each such port is counted once, and later runs
// do not write them again (no PortInfo Set every sweep).
TEST(Programmer, SmaWithoutMkeySupportIsCountedOnceAndNotAskedAgain) {
  FakeFabricFixture fx;
  fx.start(fatTree());
  fx.engine->setSmpMkey(kMkey.key);
  ProgramOptions opt;
  opt.mkey = kMkey;
  SwitchTableCache cache;
  DiscoveryResult found = fx.discover();
  auto lids = routing::assignLids(*found.topology, {}, 0);
  ASSERT_TRUE(lids);
  auto tables = routing::makeEngine("minhop")->compute(*found.topology, lids->lids, {});
  ASSERT_TRUE(tables);
  Programmer programmer(*fx.engine, fx.clock);
  ProgramReport first = programmer.program(found, lids->lids, *tables, cache, opt);
  EXPECT_TRUE(first.errors.empty());
  const size_t mgmt = managementPorts(*found.topology).size();
  EXPECT_EQ(first.mkeysSet, 0u);
  EXPECT_EQ(first.mkeyIgnored, mgmt);
  const uint64_t portInfoSets = fx.fabric->receivedSets(mad::kAttrPortInfo);

  DiscoveryResult again = fx.discover();
  ProgramReport second = programmer.program(again, lids->lids, *tables, cache, opt);
  EXPECT_TRUE(second.errors.empty());
  EXPECT_EQ(second.mkeyIgnored, 0u);
  EXPECT_EQ(second.smps(), 0u);
  EXPECT_EQ(fx.fabric->receivedSets(mad::kAttrPortInfo), portInfoSets);
}

// A host already protected by another SM's key (protect level 1: Gets pass, our Sets are discarded): its
// PortInfo Sets fail as errors naming the host after the retries, the rest of the fabric comes up and is
// protected, nothing crashes.
TEST(Programmer, PortWithAForeignMkeyFailsCleanly) {
  FakeFabricFixture fx;
  mad::FakeFabricOptions fo;
  fo.enforceMkey = true;
  fx.start(fatTree(), {32, 100ms, 1}, fo);
  const fabric::Topology& ft = fx.fabric->topology();
  const NodeIndex foreign = ft.cas().front();
  fx.fabric->setPortMkey(foreign, PortNum{1}, mad::MkeyInfo{0xbadbadbad, 1, 0});
  fx.engine->setSmpMkey(kMkey.key);
  ProgramOptions opt;
  opt.mkey = kMkey;
  SwitchTableCache cache;
  auto up = fx.bringUp(cache, "minhop", {}, opt, /*allowErrors=*/true);
  const fabric::Topology& t = *up.found.topology;
  EXPECT_EQ(t.size(), ft.size());  // discovery read it (Gets pass at level 1)
  // The unanswered Sets are the foreign host's (its switch's port then cannot go ACTIVE: refused with 0x1C).
  size_t unanswered = 0;
  for (const std::string& e : up.report.errors) {
    if (e.find("no answer") == std::string::npos) continue;
    ++unanswered;
    EXPECT_NE(e.find(fabric::toString(ft.node(foreign).guid)), std::string::npos) << e;
  }
  EXPECT_GE(unanswered, 1u);
  EXPECT_EQ(up.report.mkeysSet, managementPorts(t).size() - 1);
  EXPECT_EQ(fx.fabric->portMkey(foreign, PortNum{1}), (mad::MkeyInfo{0xbadbadbad, 1, 0}));
  EXPECT_GE(fx.fabric->mkeyViolations(), 2u);  // the Set and its retry
  EXPECT_EQ(fx.fabric->portAttrs(foreign, PortNum{1}).lid.value, 0);
}

TEST(Programmer, LeavesTheResultAtWhatTheFabricHolds) {
  // A targeted update starts from the previous result, not from a fresh discovery: after programming, that
  // result must say what the ports and switches now hold, so a second run sends nothing at all.
  FakeFabricFixture fx;
  fx.start(fatTree());
  SwitchTableCache cache;
  auto up = fx.bringUp(cache);
  const fabric::Topology& t = *up.found.topology;
  for (NodeIndex n = 0; n < t.size(); ++n) {
    const fabric::Node& node = t.node(n);
    for (unsigned p = 1; p <= node.numPorts; ++p) {
      if (node.ports[p].connected()) {
        EXPECT_EQ(node.ports[p].attrs.state, PortState::kActive);
      }
    }
    if (node.isSwitch()) {
      EXPECT_EQ(node.sw.linearFdbTop, up.lids.maxLid().value);
    }
    unsigned p = node.isSwitch() ? 0 : 1;
    if (node.isSwitch() || node.ports[p].connected()) {
      EXPECT_EQ(node.ports[p].attrs.lid, up.lids.base(n, PortNum{static_cast<uint8_t>(p)}));
    }
  }
  const uint64_t sent = fx.engine->counters().sent;
  Programmer programmer(*fx.engine, fx.clock);
  ProgramReport again = programmer.program(up.found, up.lids, up.tables, cache, ProgramOptions{});
  EXPECT_TRUE(again.errors.empty()) << again.errors.front();
  EXPECT_EQ(again.smps(), 0u);
  EXPECT_EQ(fx.engine->counters().sent, sent);
}

// The answer to the first attempt of every third PortInfo Set is lost after the fake SMA applied it: the
// retried PortState change is refused with 0x1C (the port already has that state, as on ibsim), which the
// Programmer must take as done (found by the 10% MAD-loss test on ibsim, tests/ibsim/faults_test.cc).
TEST(Programmer, RetriedPortStateSetRefusedAsAlreadyAppliedIsNotAnError) {
  FakeFabricFixture fx;
  fx.start(fatTree());
  unsigned portInfoSets = 0, lostAnswers = 0;
  std::set<std::array<uint8_t, mad::kMadSize>> seen;  // requests with the TID zeroed: first attempts only
  fx.port.setResponder([&](const mad::MadPacket& sent) {
    auto answers = fx.fabric->handle(sent);
    auto h = mad::parseHeader(sent);
    mad::MadPacket key = sent;
    mad::setTid(key, 0);
    if (h && h->method == mad::kSet && h->attrId == mad::kAttrPortInfo && seen.insert(key.bytes).second &&
        ++portInfoSets % 3 == 0) {
      ++lostAnswers;
      return std::vector<mad::MadPacket>{};
    }
    return answers;
  });
  SwitchTableCache cache;
  auto up = fx.bringUp(cache);  // expects no errors
  EXPECT_GT(lostAnswers, 0u);
  EXPECT_GT(up.report.portsActivated, 0u);
  const fabric::Topology& t = *up.found.topology;
  for (NodeIndex n = 0; n < t.size(); ++n)
    for (unsigned p = 1; p <= t.node(n).numPorts; ++p)
      if (t.node(n).ports[p].connected()) {
        EXPECT_EQ(fx.fabric->portAttrs(fx.fakeIndex(t, n), PortNum{static_cast<uint8_t>(p)}).state,
                  PortState::kActive);
      }
}

// Every attempt of the first pass of LFT block 0's Set on each switch is lost (4 = 1 + the fixture's 3
// retries): the second pass delivers them, so the run ends with no errors and the right tables.
TEST(Programmer, SetsWithNoAnswerGoAgainInASecondPass) {
  FakeFabricFixture fx;
  fx.start(fatTree());
  std::map<std::array<uint8_t, mad::kMadSize>, unsigned> attempts;  // by request with the TID zeroed
  unsigned lost = 0;
  fx.port.setResponder([&](const mad::MadPacket& sent) {
    auto h = mad::parseHeader(sent);
    mad::MadPacket key = sent;
    mad::setTid(key, 0);
    if (h && h->method == mad::kSet && h->attrId == mad::kAttrLft && h->attrMod == 0 &&
        ++attempts[key.bytes] <= 4) {
      ++lost;
      return std::vector<mad::MadPacket>{};
    }
    return fx.fabric->handle(sent);
  });
  SwitchTableCache cache;
  auto up = fx.bringUp(cache);  // expects no errors
  const fabric::Topology& t = *up.found.topology;
  EXPECT_EQ(lost, 4 * t.switches().size());
  size_t secondPass = 0;
  for (const auto& ph : up.report.phases) secondPass += ph.secondPass;
  EXPECT_EQ(secondPass, t.switches().size());
  const size_t lidCount = up.lids.maxLid().value + 1u;
  for (NodeIndex n : t.switches()) {
    routing::LftRow want = up.tables.lft[n];
    want.resize(lidCount, routing::kNoPort);
    EXPECT_EQ(held(*fx.fabric, fx.fakeIndex(t, n), lidCount), want) << t.node(n).description;
  }
}

TEST(Programmer, ReportsRefusedSets) {
  // A stale discovery (ports still INIT) after the fabric is up: the ARMED Sets are refused by the SMAs
  // (ACTIVE -> ARMED is not a transition) and reported, nothing crashes.
  FakeFabricFixture fx;
  fx.start(fatTree());
  SwitchTableCache cache;
  auto up = fx.bringUp(cache);
  Programmer programmer(*fx.engine, fx.clock);
  ProgramReport r = programmer.program(up.discovered, up.lids, up.tables, cache, ProgramOptions{});
  EXPECT_FALSE(r.errors.empty());
  EXPECT_NE(r.errors.front().find("PROG001"), std::string::npos);
  EXPECT_EQ(r.portsArmed, 0u);
}

}  // namespace
}  // namespace ibsm::daemon
