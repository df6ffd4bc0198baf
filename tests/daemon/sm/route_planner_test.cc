// RoutePlanner with routing.threads: the engine chain from scratch, a repair after a link went down and the
// rebalancing run after it give the same tables (and link loads) with 4 workers as with one. The rebalance
// modes; dfly's link that comes back, taken by the rebalance; a standby's prepared plan.
#include "daemon/sm/route_planner.h"

#include <gtest/gtest.h>

#include "tests/routing/generated_fabrics.h"

namespace ibsm::daemon {
namespace {

using routing::testing::generate;

// Everything the SM programs or the planner keeps from one planning round.
struct Outcome {
  RoutePlanner::Plan fromScratch, repair, rebalance;
};

// From scratch on `topo`; then, with the first switch-to-switch link down, a repair and (in the background)
// the rebalancing run.
Outcome planAll(const fabric::TopologyPtr& topo, unsigned threads) {
  mad::FakeClock clock;
  RoutePlanner planner(clock, /*background=*/true);
  routing::Options options;
  options.threads = threads;
  options.vlLayers = 4;
  planner.setOptions({"ftree", "dor|dfsp", "updn", "minhop"}, options);
  auto lids = routing::assignLids(*topo, {}, 0);
  EXPECT_TRUE(lids.ok());
  // Plans for `t` (a repair of `previous` when given) and publishes the plan as the SM does.
  auto planAndPublish = [&](const fabric::TopologyPtr& t, const SubnetSnapshot* previous,
                            RoutePlanner::Plan& plan) {
    auto planned = planner.plan(previous, *t, lids->lids, previous != nullptr);
    EXPECT_TRUE(planned.ok()) << planned.error().message;
    plan = *planned;
    auto snap = std::make_shared<SubnetSnapshot>();
    snap->topology = t;
    snap->lids = lids->lids;
    snap->tables = planned->tables;
    planner.published(snap, *planned);  // starts the loads or the rebalance in the background
    return snap;
  };
  Outcome out;
  auto before = planAndPublish(topo, nullptr, out.fromScratch);

  fabric::Topology::AttrPatch down;
  for (fabric::NodeIndex s : topo->switches()) {
    for (unsigned p = 1; p < topo->node(s).ports.size() && down.ports.empty(); ++p) {
      const fabric::Port& port = topo->node(s).ports[p];
      if (!port.connected() || !topo->node(port.peerNode).isSwitch()) continue;
      for (auto [n, num] : {std::pair{s, p}, std::pair{port.peerNode, unsigned(port.peerPort.value)}}) {
        fabric::PortAttrs a = topo->node(n).ports[num].attrs;
        a.valid = true;
        a.state = fabric::PortState::kDown;
        down.ports.emplace_back(n, fabric::PortNum{static_cast<uint8_t>(num)}, a);
      }
    }
  }
  auto current = planAndPublish(topo->withAttrs(down), before.get(), out.repair);
  planner.wait();
  auto rebalance = planner.takeRebalance(current.get());
  EXPECT_EQ(rebalance.has_value(), out.repair.repaired);  // a from-scratch plan has nothing to rebalance
  if (rebalance) out.rebalance = std::move(rebalance->plan);
  return out;
}

void expectSame(const RoutePlanner::Plan& one, const RoutePlanner::Plan& many, const std::string& what) {
  EXPECT_EQ(many.tables.engine, one.tables.engine) << what;
  EXPECT_TRUE(many.tables.lft == one.tables.lft) << what;
  EXPECT_TRUE(many.tables.ar == one.tables.ar) << what;
  EXPECT_EQ(many.tables.sl, one.tables.sl) << what;
  EXPECT_EQ(many.tables.slToVl, one.tables.slToVl) << what;
  EXPECT_EQ(many.how, one.how) << what;
  ASSERT_EQ(!many.loads, !one.loads) << what;
  if (one.loads) {
    EXPECT_EQ(*many.loads, *one.loads) << what;
  }
}

TEST(RoutePlanner, FourThreadsRouteAsOne) {
  // ftree on a fat tree, dor|dfsp on a torus, updn on a dragonfly (dfsp/dor decline or need more VLs).
  for (const auto& spec : {routing::testing::fatTree(2, 12), routing::testing::torus({4, 4}),
                           routing::testing::dragonfly(4, 2)}) {
    fabric::TopologyPtr topo = generate(spec);
    ASSERT_TRUE(topo);
    Outcome one = planAll(topo, 1), four = planAll(topo, 4);
    SCOPED_TRACE(one.fromScratch.tables.engine);
    if (spec.shape == tools::Shape::kFatTree) {
      EXPECT_TRUE(one.repair.repaired) << one.repair.how;
    }
    expectSame(one.fromScratch, four.fromScratch, "from scratch");
    expectSame(one.repair, four.repair, "repair");
    expectSame(one.rebalance, four.rebalance, "rebalance");
  }
}

// The rebalancing run after a repair, per routing.rebalance: incremental (the default) starts from the
// repaired routes and moves few of them; full routes from scratch; off runs nothing.
TEST(RoutePlanner, RebalanceModes) {
  fabric::TopologyPtr topo = generate(routing::testing::fatTree(3, 8));
  ASSERT_TRUE(topo);
  auto lids = routing::assignLids(*topo, {}, 0);
  ASSERT_TRUE(lids.ok());
  // A spine's up-link to a core: the repair alone leaves the spine's other up-links above the bound.
  fabric::TopologyPtr after =
      routing::testing::takeDown(*topo, {routing::testing::coreLink(*topo, "spine-0")});
  for (RebalanceMode mode : {RebalanceMode::kIncremental, RebalanceMode::kFull, RebalanceMode::kOff}) {
    mad::FakeClock clock;
    RoutePlanner planner(clock, /*background=*/true);
    planner.setOptions({"ftree"}, routing::Options{}, {mode, 1});
    auto publish = [&](const fabric::TopologyPtr& t, const SubnetSnapshot* previous) {
      auto planned = planner.plan(previous, *t, lids->lids, previous != nullptr);
      EXPECT_TRUE(planned.ok());
      auto snap = std::make_shared<SubnetSnapshot>();
      snap->topology = t;
      snap->lids = lids->lids;
      snap->tables = planned->tables;
      planner.published(snap, *planned);
      return std::pair{snap, *planned};
    };
    auto [before, scratch] = publish(topo, nullptr);
    planner.wait();
    auto [current, repair] = publish(after, before.get());
    ASSERT_TRUE(repair.repaired);
    planner.wait();
    auto r = planner.takeRebalance(current.get());
    if (mode == RebalanceMode::kOff) {
      EXPECT_FALSE(r.has_value());
      continue;
    }
    ASSERT_TRUE(r.has_value());
    EXPECT_TRUE(r->error.empty()) << r->error;
    EXPECT_LT(r->maxLoad, r->currentMaxLoad);
    EXPECT_GT(r->lowerBound, 0u);
    if (mode == RebalanceMode::kIncremental) {
      EXPECT_EQ(r->plan.how, "incremental");
      ASSERT_TRUE(r->plan.moved && repair.moved);
      EXPECT_GT(*r->plan.moved, 0u);
      EXPECT_LE(*r->plan.moved, 3 * *repair.moved);
    } else {
      EXPECT_EQ(r->plan.how, "ftree from scratch");
    }
  }
}

// A dfly link that comes back (routing/dfly_repair.h): with the incremental rebalance to follow, the repair
// keeps the routes and leaves routing from scratch to the rebalance, off the event loop, which gives the
// engine's routes back, each entry that moves counted as restored (so the SM writes them whatever the load
// gain); after the loss it declines (the repaired routes stay). With no incremental rebalance to follow
// (full, off) the repair routes from scratch itself, as it always did.
TEST(RoutePlanner, ADflyLinkThatComesBackIsTakenByTheRebalance) {
  fabric::TopologyPtr fly = generate(routing::testing::dragonfly(4, 2));
  ASSERT_TRUE(fly);
  fabric::Topology::AttrPatch vls;  // links that offer VL0-7: dfly routes on 2 VLs, repairs on up to 4
  for (fabric::NodeIndex n = 0; n < fly->size(); ++n)
    for (unsigned p = 0; p <= fly->node(n).numPorts; ++p) {
      fabric::PortAttrs a = fly->node(n).ports[p].attrs;
      a.valid = true;
      a.vlCap = 4;
      vls.ports.emplace_back(n, fabric::PortNum{static_cast<uint8_t>(p)}, a);
    }
  const fabric::TopologyPtr whole = fly->withAttrs(vls);
  const fabric::TopologyPtr after =
      routing::testing::takeDown(*whole, {routing::testing::switchLinks(*whole).front()});
  auto lids = routing::assignLids(*whole, {}, 0);
  ASSERT_TRUE(lids.ok());
  for (RebalanceMode mode : {RebalanceMode::kIncremental, RebalanceMode::kFull, RebalanceMode::kOff}) {
    SCOPED_TRACE(static_cast<int>(mode));
    mad::FakeClock clock;
    RoutePlanner planner(clock, /*background=*/true);
    routing::Options options;
    options.vlLayers = 8;
    planner.setOptions({"dfly"}, options, {mode, 1});
    auto publish = [&](const fabric::TopologyPtr& t, const SubnetSnapshot* previous) {
      auto planned = planner.plan(previous, *t, lids->lids, previous != nullptr);
      EXPECT_TRUE(planned.ok()) << planned.error().message;
      auto snap = std::make_shared<SubnetSnapshot>();
      snap->topology = t;
      snap->lids = lids->lids;
      snap->tables = planned->tables;
      planner.published(snap, *planned);
      planner.wait();
      return std::pair{snap, *planned};
    };
    auto [before, scratch] = publish(whole, nullptr);
    ASSERT_EQ(scratch.tables.engine, "dfly");
    auto [degraded, down] = publish(after, before.get());
    ASSERT_TRUE(down.repaired) << down.how;
    auto none = planner.takeRebalance(degraded.get());
    if (mode == RebalanceMode::kIncremental) {
      ASSERT_TRUE(none.has_value());
      EXPECT_NE(none->error.find("no link that came back waits"), std::string::npos) << none->error;
    }
    auto [current, up] = publish(whole, degraded.get());
    ASSERT_TRUE(up.repaired) << up.how;
    auto r = planner.takeRebalance(current.get());
    if (mode != RebalanceMode::kIncremental) {
      EXPECT_NE(up.how.find("(dfly: the dragonfly is whole again, its routes from scratch)"),
                std::string::npos)
          << up.how;
      EXPECT_TRUE(up.tables.lft == scratch.tables.lft);
      continue;
    }
    EXPECT_EQ(up.how,
              "repair of 0 LID(s) (dfly: the routes stay; the rebalance takes the new link(s) off the "
              "event loop)");
    EXPECT_TRUE(up.tables.lft == down.tables.lft);
    ASSERT_TRUE(r.has_value());
    EXPECT_TRUE(r->error.empty()) << r->error;
    EXPECT_EQ(r->plan.how, "incremental (dfly: the dragonfly is whole again, its routes from scratch)");
    EXPECT_TRUE(r->plan.tables.lft == scratch.tables.lft);
    EXPECT_TRUE(r->plan.tables.ar == scratch.tables.ar);
    EXPECT_EQ(r->plan.tables.sl, scratch.tables.sl);
    ASSERT_TRUE(r->plan.moved && down.moved);
    EXPECT_EQ(*r->plan.moved, *down.moved);  // what the repair moved moves back
    EXPECT_EQ(r->restored, *r->plan.moved);
    EXPECT_LT(r->maxLoad, r->currentMaxLoad);
  }
}

// A standby's prepared plan: the same tables as a from-scratch plan, taken for the same fabric read again
// (another Topology object) and these LIDs; not for a fabric that changed since, other LIDs or new options.
TEST(RoutePlanner, APreparedPlanIsTakenOnlyForTheFabricAndOptionsItWasMadeFor) {
  fabric::TopologyPtr topo = generate(routing::testing::fatTree(3, 8));
  ASSERT_TRUE(topo);
  const routing::LidAssignment lids = routing::assignLids(*topo, {}, 0)->lids;
  const fabric::TopologyPtr readAgain = generate(routing::testing::fatTree(3, 8));
  const fabric::TopologyPtr changed =
      routing::testing::takeDown(*topo, {routing::testing::coreLink(*topo, "spine-0")});
  mad::FakeClock clock;
  RoutePlanner planner(clock, /*background=*/true);
  planner.setOptions({"ftree", "minhop"}, routing::Options{});
  auto scratch = planner.plan(nullptr, *topo, lids, false);
  ASSERT_TRUE(scratch.ok());

  planner.prepare(topo, lids);
  auto prepared = planner.takePrepared(*readAgain, lids);
  ASSERT_TRUE(prepared.has_value());
  EXPECT_TRUE(prepared->tables.lft == scratch->tables.lft);
  EXPECT_EQ(prepared->how, "prepared while standby: from scratch by ftree");
  EXPECT_FALSE(planner.takePrepared(*topo, lids).has_value()) << "taken once";

  planner.prepare(topo, lids);
  EXPECT_FALSE(planner.takePrepared(*changed, lids).has_value());
  routing::LidAssignment other = lids;
  other.set(topo->cas().front(), fabric::PortNum{1}, routing::LidRange{fabric::Lid{0x400}, 0});
  EXPECT_FALSE(planner.takePrepared(*topo, other).has_value());
  planner.setOptions({"minhop"}, routing::Options{});
  EXPECT_FALSE(planner.takePrepared(*topo, lids).has_value());
  planner.wait();  // a new one is made once the last one is done
  planner.prepare(topo, lids);
  auto again = planner.takePrepared(*topo, lids);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->tables.engine, "minhop");
}

}  // namespace
}  // namespace ibsm::daemon
