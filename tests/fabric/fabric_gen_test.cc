#include <gtest/gtest.h>

#include <map>
#include <set>

#include "fabric/topology_file.h"
#include "tools/fabric_gen/cli.h"
#include "tools/fabric_gen/compare.h"
#include "tools/fabric_gen/generator.h"

namespace ibsm::tools {
namespace {

using fabric::Node;
using fabric::NodeIndex;
using fabric::Topology;
using fabric::TopologyPtr;

TopologyPtr gen(const FabricSpec& spec) {
  auto t = generateFabric(spec);
  EXPECT_TRUE(t.ok()) << t.error().message;
  return t.ok() ? *t : std::make_shared<Topology>();
}

FabricSpec karyNTree(unsigned k, unsigned n) {
  FabricSpec s;
  s.shape = Shape::kKaryNTree;
  s.k = k;
  s.n = n;
  return s;
}

FabricSpec fatTree(unsigned levels, unsigned radix) {
  FabricSpec s;
  s.shape = Shape::kFatTree;
  s.levels = levels;
  s.radix = radix;
  return s;
}

FabricSpec mesh(unsigned switches, unsigned degree, unsigned hostsPerSwitch, uint64_t seed) {
  FabricSpec s;
  s.shape = Shape::kMesh;
  s.switches = switches;
  s.degree = degree;
  s.hostsPerSwitch = hostsPerSwitch;
  s.seed = seed;
  return s;
}

FabricSpec torus(std::vector<unsigned> dims, unsigned hostsPerSwitch) {
  FabricSpec s;
  s.shape = Shape::kTorus;
  s.dims = std::move(dims);
  s.hostsPerSwitch = hostsPerSwitch;
  return s;
}

FabricSpec dragonfly(unsigned a, unsigned h, unsigned hostsPerSwitch) {
  FabricSpec s;
  s.shape = Shape::kDragonfly;
  s.dragonflyA = a;
  s.dragonflyH = h;
  s.hostsPerSwitch = hostsPerSwitch;
  return s;
}

FabricSpec hypercube(unsigned d, unsigned hostsPerSwitch) {
  FabricSpec s;
  s.shape = Shape::kHypercube;
  s.hypercubeD = d;
  s.hostsPerSwitch = hostsPerSwitch;
  return s;
}

struct Counts {
  size_t hosts, switches, hostLinks, switchLinks;
};

Counts counts(const Topology& t) {
  Counts c{t.cas().size(), t.switches().size(), 0, 0};
  for (const auto& l : t.links())
    (t.node(l.a).isSwitch() && t.node(l.b).isSwitch() ? c.switchLinks : c.hostLinks)++;
  return c;
}

bool connected(const Topology& t) {
  if (t.size() == 0) return true;
  std::vector<char> seen(t.size(), 0);
  std::vector<NodeIndex> stack{0};
  seen[0] = 1;
  size_t reached = 1;
  while (!stack.empty()) {
    const Node& n = t.node(stack.back());
    stack.pop_back();
    for (const auto& p : n.ports)
      if (p.connected() && !seen[p.peerNode]) {
        seen[p.peerNode] = 1;
        ++reached;
        stack.push_back(p.peerNode);
      }
  }
  return reached == t.size();
}

// Number of links between each pair of switches.
std::map<std::pair<NodeIndex, NodeIndex>, unsigned> switchPairs(const Topology& t) {
  std::map<std::pair<NodeIndex, NodeIndex>, unsigned> pairs;
  for (const auto& l : t.links())
    if (t.node(l.a).isSwitch() && t.node(l.b).isSwitch()) ++pairs[{std::min(l.a, l.b), std::max(l.a, l.b)}];
  return pairs;
}

unsigned switchNeighbours(const Topology& t, NodeIndex sw) {
  std::set<NodeIndex> peers;
  for (const auto& p : t.node(sw).ports)
    if (p.connected() && t.node(p.peerNode).isSwitch()) peers.insert(p.peerNode);
  return static_cast<unsigned>(peers.size());
}

void expectRoundTrip(const Topology& t) {
  auto back = fabric::parseTopology(fabric::formatTopology(t), "gen.net");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(diffTopologies(t, **back), "");
}

TEST(FabricGenTest, KaryNTreeCounts) {
  for (auto [k, n, hosts, switches] : std::vector<std::array<size_t, 4>>{
           {4, 3, 64, 48}, {12, 3, 1728, 432}, {2, 1, 2, 1}, {3, 2, 9, 6}, {2, 4, 16, 32}}) {
    TopologyPtr t = gen(karyNTree(static_cast<unsigned>(k), static_cast<unsigned>(n)));
    Counts c = counts(*t);
    EXPECT_EQ(c.hosts, hosts) << k << "," << n;
    EXPECT_EQ(c.switches, switches);
    EXPECT_EQ(c.hostLinks, hosts);
    EXPECT_EQ(c.switchLinks, (n - 1) * hosts);  // K^(N-1) switches per level boundary, K links each
    EXPECT_TRUE(connected(*t));
    for (NodeIndex s : t->switches()) EXPECT_EQ(t->node(s).numPorts, 2 * k);
  }
}

TEST(FabricGenTest, KaryNTreeIsTheClassicConstruction) {
  // 4-ary 3-tree: leaves have 4 hosts and 4 parents, middle switches 4 children and 4 parents, the top only
  // 4 children; any two switches share at most one link.
  TopologyPtr t = gen(karyNTree(4, 3));
  std::map<std::string, std::pair<unsigned, unsigned>> byLevel;  // name prefix -> (hosts, switch neighbours)
  for (NodeIndex s : t->switches()) {
    const Node& n = t->node(s);
    unsigned hosts = 0;
    for (const auto& p : n.ports)
      if (p.connected() && !t->node(p.peerNode).isSwitch()) ++hosts;
    std::string level = n.description.substr(0, n.description.find('-'));
    auto [it, fresh] = byLevel.emplace(level, std::pair{hosts, switchNeighbours(*t, s)});
    EXPECT_EQ(it->second, (std::pair{hosts, switchNeighbours(*t, s)})) << n.description;
  }
  EXPECT_EQ(byLevel["leaf"], (std::pair{4u, 4u}));
  EXPECT_EQ(byLevel["level1"], (std::pair{0u, 8u}));
  EXPECT_EQ(byLevel["spine"], (std::pair{0u, 4u}));
  for (auto [pair, links] : switchPairs(*t)) EXPECT_EQ(links, 1u);
  EXPECT_TRUE(t->findByDescription("host-17 HCA-1").has_value());
  EXPECT_TRUE(t->findByDescription("spine-15").has_value());
}

TEST(FabricGenTest, FatTreeCounts) {
  struct Case {
    FabricSpec spec;
    size_t hosts, switches, switchLinks;
  };
  std::vector<Case> cases;
  cases.push_back({fatTree(2, 36), 648, 36 + 18, 36 * 18});
  cases.push_back({fatTree(2, 64), 2048, 64 + 32, 64 * 32});
  cases.push_back({fatTree(2, 40), 800, 40 + 20, 40 * 20});
  cases.push_back({fatTree(3, 36), 11664, 648 + 648 + 324, 648 * 18 * 2});
  FabricSpec over = fatTree(2, 36);  // 24 down, 12 up: 2:1 oversubscribed
  over.hostsPerLeaf = 24;
  cases.push_back({over, 36 * 24, 36 + 12, 36 * 12});
  FabricSpec par = fatTree(2, 36);  // each leaf-spine pair linked twice: 9 spines, 18 leaves
  par.parallel = 2;
  cases.push_back({par, 18 * 18, 18 + 9, 18 * 9 * 2});
  FabricSpec given = fatTree(3, 36);  // a small 3-level tree with explicit counts
  given.pods = 4;
  given.leaves = 3;
  given.spines = 2;
  given.cores = 4;
  given.hostsPerLeaf = 5;
  cases.push_back({given, 4 * 3 * 5, 4 * 3 + 4 * 2 + 4, 4 * 3 * 2 + 4 * 2 * 2});
  for (const Case& c : cases) {
    TopologyPtr t = gen(c.spec);
    Counts got = counts(*t);
    EXPECT_EQ(got.hosts, c.hosts) << c.spec.levels << " levels, radix " << c.spec.radix;
    EXPECT_EQ(got.switches, c.switches);
    EXPECT_EQ(got.switchLinks, c.switchLinks);
    EXPECT_EQ(got.hostLinks, c.hosts);
    EXPECT_TRUE(connected(*t));
    for (NodeIndex s : t->switches()) EXPECT_EQ(t->node(s).numPorts, c.spec.radix);
    for (auto [pair, links] : switchPairs(*t)) EXPECT_EQ(links, c.spec.parallel);
  }
}

TEST(FabricGenTest, FatTreeLeavesReachEverySpine) {
  TopologyPtr t = gen(fatTree(2, 36));
  for (NodeIndex s : t->switches()) {
    const Node& n = t->node(s);
    EXPECT_EQ(switchNeighbours(*t, s), n.description.starts_with("leaf-") ? 18u : 36u) << n.description;
  }
}

TEST(FabricGenTest, PartiallyPopulatedLeaves) {
  FabricSpec s = fatTree(2, 36);
  s.hosts = 100;
  TopologyPtr t = gen(s);
  EXPECT_EQ(t->cas().size(), 100u);
  EXPECT_EQ(t->switches().size(), 54u);
  std::map<std::string, unsigned> hostsOn;
  for (NodeIndex h : t->cas()) ++hostsOn[t->node(t->node(h).ports[1].peerNode).description];
  EXPECT_EQ(hostsOn["leaf-0"], 18u);
  EXPECT_EQ(hostsOn["leaf-5"], 10u);
  EXPECT_EQ(hostsOn.count("leaf-6"), 0u);
  EXPECT_TRUE(connected(*t));
}

TEST(FabricGenTest, MeshCountsAndDegree) {
  TopologyPtr t = gen(mesh(20, 4, 2, 42));
  Counts c = counts(*t);
  EXPECT_EQ(c.hosts, 40u);
  EXPECT_EQ(c.switches, 20u);
  EXPECT_GE(c.switchLinks, 19u);  // at least the spanning tree
  EXPECT_LE(c.switchLinks, 40u);  // at most degree * switches / 2
  EXPECT_GE(c.switchLinks, 35u);  // random filling gets close to the degree
  EXPECT_TRUE(connected(*t));
  for (NodeIndex s : t->switches()) EXPECT_LE(switchNeighbours(*t, s), 4u);
  for (auto [pair, links] : switchPairs(*t)) {
    EXPECT_NE(pair.first, pair.second);
    EXPECT_EQ(links, 1u);
  }
}

TEST(FabricGenTest, MeshIsDeterministicForASeed) {
  std::string a = fabric::formatTopology(*gen(mesh(30, 5, 1, 7)));
  EXPECT_EQ(a, fabric::formatTopology(*gen(mesh(30, 5, 1, 7))));
  EXPECT_NE(a, fabric::formatTopology(*gen(mesh(30, 5, 1, 8))));
}

TEST(FabricGenTest, MeshStaysConnectedForManySeeds) {
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    TopologyPtr t = gen(mesh(15, 2, 0, seed));  // degree 2: the spanning tree is all there is room for
    EXPECT_TRUE(connected(*t)) << seed;
    EXPECT_EQ(t->cas().size(), 0u);
  }
}

TEST(FabricGenTest, TorusCounts) {
  struct Case {
    std::vector<unsigned> dims;
    size_t switches, switchLinks;
  };
  for (const Case& c :
       std::vector<Case>{{{4, 4}, 16, 32}, {{3, 3, 3}, 27, 81}, {{2, 3}, 6, 3 + 6}, {{5, 1}, 5, 5}}) {
    TopologyPtr t = gen(torus(c.dims, 2));
    Counts got = counts(*t);
    EXPECT_EQ(got.switches, c.switches);
    EXPECT_EQ(got.hosts, 2 * c.switches);
    EXPECT_EQ(got.switchLinks, c.switchLinks);
    EXPECT_TRUE(connected(*t));
  }
  TopologyPtr t = gen(torus({4, 4}, 1));
  for (NodeIndex s : t->switches()) EXPECT_EQ(switchNeighbours(*t, s), 4u);
  EXPECT_TRUE(t->findByDescription("torus-3-2").has_value());
  FabricSpec par = torus({4, 4}, 1);
  par.parallel = 2;
  EXPECT_EQ(counts(*gen(par)).switchLinks, 64u);
}

// Dragonfly 4,2: 9 groups of 4 routers. Inside a group every router reaches the 3 others; between groups
// there is exactly one global link per pair of groups, and each router carries H = 2 of them.
TEST(FabricGenTest, DragonflyGroupsAreAllToAllWithOneGlobalLinkPerGroupPair) {
  for (auto [a, h] : std::vector<std::pair<unsigned, unsigned>>{{4, 2}, {2, 1}, {3, 3}, {1, 2}}) {
    SCOPED_TRACE(std::to_string(a) + "," + std::to_string(h));
    TopologyPtr t = gen(dragonfly(a, h, 2));
    const unsigned groups = a * h + 1;
    Counts got = counts(*t);
    EXPECT_EQ(got.switches, size_t{groups} * a);
    EXPECT_EQ(got.hosts, 2 * got.switches);
    EXPECT_EQ(got.switchLinks, size_t{groups} * a * (a - 1) / 2 + size_t{groups} * (groups - 1) / 2);
    EXPECT_TRUE(connected(*t));
    // Group of a switch, from its description "dfly-G-R".
    auto group = [&](NodeIndex n) {
      const std::string& d = t->node(n).description;
      return std::stoul(d.substr(5, d.find('-', 5) - 5));
    };
    std::map<std::pair<unsigned long, unsigned long>, unsigned> global;
    std::map<NodeIndex, unsigned> globalPorts;
    for (const auto& [pair, n] : switchPairs(*t)) {
      EXPECT_EQ(n, 1u);
      auto [ga, gb] = std::pair{group(pair.first), group(pair.second)};
      if (ga == gb) continue;
      ++global[{std::min(ga, gb), std::max(ga, gb)}];
      ++globalPorts[pair.first];
      ++globalPorts[pair.second];
    }
    EXPECT_EQ(global.size(), size_t{groups} * (groups - 1) / 2);
    for (const auto& [pair, n] : global) EXPECT_EQ(n, 1u);
    for (NodeIndex s : t->switches()) {
      EXPECT_EQ(globalPorts[s], h) << t->node(s).description;
      EXPECT_EQ(switchNeighbours(*t, s), a - 1 + h);
    }
    expectRoundTrip(*t);
  }
  EXPECT_TRUE(gen(dragonfly(4, 2, 1))->findByDescription("dfly-8-3").has_value());
}

TEST(FabricGenTest, HypercubeLinksDifferInOneBit) {
  TopologyPtr t = gen(hypercube(5, 2));
  Counts got = counts(*t);
  EXPECT_EQ(got.switches, 32u);
  EXPECT_EQ(got.hosts, 64u);
  EXPECT_EQ(got.switchLinks, 32u * 5 / 2);
  for (NodeIndex s : t->switches()) {
    const Node& n = t->node(s);
    unsigned id = std::stoul(n.description.substr(6));
    for (unsigned dim = 0; dim < 5; ++dim) {
      const auto& p = n.ports[3 + dim];
      ASSERT_TRUE(p.connected());
      EXPECT_EQ(std::stoul(t->node(p.peerNode).description.substr(6)), id ^ (1u << dim));
      EXPECT_EQ(p.peerPort.value, 3 + dim);
    }
  }
  expectRoundTrip(*t);
  EXPECT_EQ(counts(*gen(hypercube(1, 0))).switchLinks, 1u);
}

TEST(FabricGenTest, TwoPortHcasGoToTwoSwitches) {
  FabricSpec s = karyNTree(4, 3);
  s.hcaPorts = 2;
  TopologyPtr t = gen(s);
  EXPECT_EQ(t->cas().size(), 32u);  // leaf pairs share their 4 host ports
  for (NodeIndex h : t->cas()) {
    const Node& n = t->node(h);
    ASSERT_EQ(n.numPorts, 2);
    ASSERT_TRUE(n.ports[1].connected() && n.ports[2].connected()) << n.description;
    EXPECT_NE(n.ports[1].peerNode, n.ports[2].peerNode);
    EXPECT_EQ(n.ports[2].guid.value, n.guid.value + 2);
  }
  FabricSpec odd = torus({3, 1}, 1);  // 3 switches: the third has no partner, its host keeps port 2 unlinked
  odd.hcaPorts = 2;
  TopologyPtr o = gen(odd);
  ASSERT_EQ(o->cas().size(), 2u);
  EXPECT_FALSE(o->node(o->cas()[1]).ports[2].connected());
  FabricSpec ft = fatTree(2, 36);
  ft.hcaPorts = 2;
  ft.hosts = 20;
  EXPECT_EQ(gen(ft)->cas().size(), 20u);
}

TEST(FabricGenTest, GuidsFollowIbsimsScheme) {
  TopologyPtr t = gen(karyNTree(2, 2));
  EXPECT_EQ(t->node(t->switches()[0]).guid.value, 0x200000u);
  EXPECT_EQ(t->node(t->switches()[3]).guid.value, 0x200003u);
  EXPECT_EQ(t->node(t->cas()[0]).guid.value, 0x100000u);
  EXPECT_EQ(t->node(t->cas()[1]).guid.value, 0x100002u);  // node + 1 port GUID each
  EXPECT_EQ(t->node(t->cas()[1]).ports[1].guid.value, 0x100003u);
  FabricSpec shifted = karyNTree(2, 2);
  shifted.guidBase = 0x0002c90300000000;
  EXPECT_EQ(gen(shifted)->node(0).guid.value, 0x0002c90300200000u);
}

TEST(FabricGenTest, RemovalsKeepTheFabricConnected) {
  FabricSpec s = fatTree(2, 36);
  s.removeLinks = 10;
  s.seed = 3;
  TopologyPtr t = gen(s);
  EXPECT_EQ(counts(*t).switchLinks, 648u - 10u);
  EXPECT_EQ(counts(*t).hostLinks, 648u);
  EXPECT_TRUE(connected(*t));
  EXPECT_EQ(fabric::formatTopology(*t), fabric::formatTopology(*gen(s)));  // deterministic
  s.seed = 4;
  EXPECT_NE(fabric::formatTopology(*t), fabric::formatTopology(*gen(s)));

  FabricSpec k = karyNTree(4, 3);
  k.removeSwitches = 3;
  k.removeLinks = 5;
  TopologyPtr full = gen(karyNTree(4, 3)), cut = gen(k);
  EXPECT_EQ(cut->switches().size(), 45u);
  EXPECT_TRUE(connected(*cut));
  for (NodeIndex i = 0; i < cut->size(); ++i) {  // the surviving nodes keep their GUIDs
    auto same = full->findNode(cut->node(i).guid);
    ASSERT_TRUE(same.has_value());
    EXPECT_EQ(full->node(*same).description, cut->node(i).description);
  }
  size_t leaves = 0;
  for (NodeIndex sw : cut->switches()) leaves += cut->node(sw).description.starts_with("leaf-");
  EXPECT_EQ(leaves, 16u);  // only switches without hosts go
  EXPECT_EQ(cut->cas().size(), 64u);
  // The removed switches take their links with them, then 5 more go.
  size_t touching = 0;
  for (const auto& l : full->links())
    touching += !cut->findNode(full->node(l.a).guid) || !cut->findNode(full->node(l.b).guid);
  EXPECT_GE(touching, 3u * 4u);
  EXPECT_EQ(counts(*cut).switchLinks, 128u - touching - 5u);
}

TEST(FabricGenTest, RemovalsThatWouldDisconnectFail) {
  FabricSpec ring = torus({3, 1}, 1);  // a ring of 3: only one link can go
  ring.removeLinks = 2;
  auto r = generateFabric(ring);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("--remove-links: only 1 of 3"), std::string::npos) << r.error().message;
  ring.allowDisconnect = true;
  TopologyPtr t = gen(ring);
  EXPECT_EQ(counts(*t).switchLinks, 1u);
  EXPECT_FALSE(connected(*t));

  FabricSpec all = torus({3, 3}, 1);  // every switch has a host
  all.removeSwitches = 1;
  EXPECT_FALSE(generateFabric(all).ok());
}

TEST(FabricGenTest, EveryShapeRoundTripsThroughTheFileFormat) {
  std::vector<FabricSpec> specs{karyNTree(4, 3), fatTree(2, 36), fatTree(3, 36), mesh(25, 5, 3, 9),
                                torus({3, 4, 2}, 2)};
  FabricSpec edr = fatTree(2, 40);
  edr.hcaPorts = 2;
  edr.parallel = 2;
  edr.link = "4xEDR";
  edr.removeLinks = 7;
  specs.push_back(edr);
  FabricSpec hdr = torus({4, 4}, 1);
  hdr.link = "12xHDR";
  hdr.removeLinks = 3;
  specs.push_back(hdr);
  for (const FabricSpec& s : specs) expectRoundTrip(*gen(s));
}

TEST(FabricGenTest, DiffReportsWhatDiffers) {
  TopologyPtr a = gen(mesh(8, 3, 1, 1));
  EXPECT_NE(diffTopologies(*a, *gen(mesh(8, 3, 1, 2))).find("linked to"), std::string::npos);
  auto edited = [&](const std::string& from, const std::string& to) {
    std::string text = fabric::formatTopology(*a);
    size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    auto t = fabric::parseTopology(text, "edited.net");
    EXPECT_TRUE(t.ok()) << t.error().message;
    return diffTopologies(*a, **t);
  };
  EXPECT_NE(edited("\"switch-3\" base", "\"switch-x\" base").find("description"), std::string::npos);
  // One end saying SDR makes the link SDR (the best speed both ends enable).
  EXPECT_NE(edited("4xQDR", "4xSDR").find("link 4xQDR vs 4xSDR"), std::string::npos);
  EXPECT_NE(edited("lid 0 lmc 0", "lid 12 lmc 0").find("LID 0 vs 12"), std::string::npos);
  FabricSpec cut = karyNTree(2, 3);
  cut.removeSwitches = 1;
  std::string d = diffTopologies(*gen(karyNTree(2, 3)), *gen(cut));
  EXPECT_NE(d.find("missing node"), std::string::npos) << d;
  EXPECT_NE(d.find("node count: expected 20, got 19"), std::string::npos) << d;
  EXPECT_EQ(diffTopologies(*a, *a), "");
}

TEST(FabricGenTest, IbsimFlags) {
  EXPECT_EQ(ibsimFlags(*gen(karyNTree(4, 3))), "");
  EXPECT_EQ(ibsimFlags(*gen(karyNTree(12, 3))), "-N 2160 -S 432");
  EXPECT_EQ(ibsimFlags(*gen(fatTree(3, 36))), "-N 13284 -S 1620 -P 71604");
}

TEST(FabricGenTest, InvalidSpecsAreRefused) {
  auto bad = [](FabricSpec s, const char* msg) {
    auto r = validateSpec(s);
    ASSERT_FALSE(r.ok()) << msg;
    EXPECT_NE(r.error().message.find(msg), std::string::npos) << r.error().message;
    EXPECT_FALSE(generateFabric(s).ok());
  };
  bad(karyNTree(1, 3), "K must be");
  bad(karyNTree(128, 2), "K must be");
  bad(karyNTree(8, 9), "too large");
  FabricSpec s = fatTree(2, 36);
  s.spines = 19;
  bad(s, "--spines 19");
  s = fatTree(2, 36);
  s.leaves = 37;
  bad(s, "--leaves 37");
  s = fatTree(2, 36);
  s.hostsPerLeaf = 36;
  bad(s, "--hosts-per-leaf");
  s = fatTree(3, 36);
  s.cores = 5;
  bad(s, "--cores must be a multiple");
  s = fatTree(4, 36);
  bad(s, "LEVELS must be 2 or 3");
  bad(mesh(10, 10, 1, 1), "--degree must be 1..9");
  bad(mesh(10, 1, 1, 1), "--degree 1 can connect only 2");
  bad(mesh(10, 3, 252, 1), "exceeds 254 ports");
  bad(torus({4}, 1), "2 or 3 dimensions");
  s = torus({4, 4}, 1);
  s.link = "4xFAST";
  bad(s, "--link");
  s.link = "4xQDR";
  s.hcaPorts = 3;
  bad(s, "--hca-ports");
}

TEST(FabricGenCliTest, ParsesShapesAndOptions) {
  auto r = parseCommandLine({"--fat-tree", "3", "--radix=36", "--hosts-per-leaf", "18", "--seed", "0x10",
                             "-o", "f.net", "--remove-links", "4", "--link", "4xEDR", "-q"});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->mode, CliRequest::Mode::kGenerate);
  EXPECT_EQ(r->spec.shape, Shape::kFatTree);
  EXPECT_EQ(r->spec.levels, 3u);
  EXPECT_EQ(r->spec.radix, 36u);
  EXPECT_EQ(r->spec.seed, 16u);
  EXPECT_EQ(r->spec.removeLinks, 4u);
  EXPECT_EQ(r->spec.link, "4xEDR");
  EXPECT_EQ(r->output, "f.net");
  EXPECT_TRUE(r->quiet);

  r = parseCommandLine({"--torus", "4,4,2", "--hosts-per-switch", "3", "--hca-ports", "2"});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->spec.dims, (std::vector<unsigned>{4, 4, 2}));
  EXPECT_EQ(r->output, "-");

  r = parseCommandLine({"--dragonfly", "4,2", "--hosts-per-switch", "2"});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->spec.shape, Shape::kDragonfly);
  EXPECT_EQ(r->spec.dragonflyA, 4u);
  EXPECT_EQ(r->spec.dragonflyH, 2u);
  r = parseCommandLine({"--hypercube", "5", "--hosts-per-switch", "2"});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->spec.shape, Shape::kHypercube);
  EXPECT_EQ(r->spec.hypercubeD, 5u);

  r = parseCommandLine({"--compare", "a.net", "b.net"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->mode, CliRequest::Mode::kCompare);
  EXPECT_EQ(r->files, (std::vector<std::string>{"a.net", "b.net"}));
  EXPECT_EQ(parseCommandLine({"--kary-ntree", "4,3", "--help"})->mode, CliRequest::Mode::kHelp);
  EXPECT_EQ(parseCommandLine({"--ibsim-flags", "x.net"})->mode, CliRequest::Mode::kIbsimFlags);
  EXPECT_NE(usage().find("--remove-switches"), std::string::npos);
}

TEST(FabricGenCliTest, BadArgumentsGiveOneClearLine) {
  struct Case {
    std::vector<std::string> args;
    const char* error;
  };
  for (const Case& c : std::vector<Case>{
           {{}, "no shape given"},
           {{"--bogus"}, "unknown option --bogus"},
           {{"--kary-ntree"}, "--kary-ntree expects a value"},
           {{"--kary-ntree", "4"}, "--kary-ntree 4: expects K,N"},
           {{"--kary-ntree", "4,x"}, "expects K,N"},
           {{"--kary-ntree", "4,3", "--mesh", "5", "--degree", "2"}, "give only one shape"},
           {{"--kary-ntree", "4,3", "--degree", "2"}, "--degree does not apply to --kary-ntree"},
           {{"--kary-ntree", "4,3", "--seed", "1", "--seed", "2"}, "--seed given twice"},
           {{"--fat-tree", "2", "--radix", "3"}, "--radix 3: expects a number 4..254"},
           {{"--fat-tree", "2", "--pods", "3"}, "--pods and --cores need --fat-tree 3"},
           {{"--fat-tree", "2", "--spines", "40"}, "--spines 40"},
           {{"--mesh", "8"}, "--mesh needs --degree"},
           {{"--mesh", "8", "--degree", "9"}, "--degree must be 1..7"},
           {{"--torus", "4"}, "expects X,Y or X,Y,Z"},
           {{"--dragonfly", "4"}, "--dragonfly 4: expects A,H"},
           {{"--dragonfly", "0,2"}, "A and H must be at least 1"},
           {{"--dragonfly", "4,2", "--parallel", "2"}, "--parallel does not apply to --dragonfly"},
           {{"--hypercube", "18"}, "--hypercube 18: expects a number 1..17"},
           {{"--hypercube", "3", "--degree", "2"}, "--degree does not apply to --hypercube"},
           {{"--kary-ntree", "4,3", "--quiet=yes"}, "--quiet takes no value"},
           {{"--compare", "a.net"}, "--compare expects two files"},
           {{"--compare", "a", "b", "--seed", "1"}, "take no other options"},
       }) {
    auto r = parseCommandLine(c.args);
    ASSERT_FALSE(r.ok()) << c.error;
    EXPECT_NE(r.error().message.find(c.error), std::string::npos) << r.error().message;
    EXPECT_EQ(r.error().message.find('\n'), std::string::npos);
  }
}

}  // namespace
}  // namespace ibsm::tools
