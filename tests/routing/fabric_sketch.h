// Small fabrics built in code for the routing tests (LID assignment, min-hop, checker, LFT dump). Each test
// draws its fabric as an ASCII sketch next to the code that builds it. GUIDs are predictable: switch i has
// node GUID 0x5000 + i, CA i has node GUID 0xca000 + 0x10 * i and port p GUID node GUID + p.
#pragma once

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "fabric/topology.h"
#include "routing/lid_assignment.h"

namespace ibsm::routing::testing {

using fabric::Guid;
using fabric::Lid;
using fabric::Node;
using fabric::NodeIndex;
using fabric::NodeType;
using fabric::PortNum;
using fabric::TopologyBuilder;
using fabric::TopologyPtr;

class FabricSketch {
 public:
  NodeIndex addSwitch(const std::string& desc, uint8_t ports = 36, bool enhancedPort0 = false) {
    Node n;
    n.type = NodeType::kSwitch;
    n.guid = Guid{0x5000u + switches_++};
    n.systemGuid = n.guid;
    n.description = desc;
    n.numPorts = ports;
    n.sw.enhancedPort0 = enhancedPort0;
    n.sw.linearFdbCap = 0xC000;
    return add(std::move(n));
  }
  NodeIndex addCa(const std::string& desc, uint8_t ports = 1) {
    Node n;
    n.type = NodeType::kCa;
    n.guid = Guid{0xca000u + 0x10u * cas_++};
    n.systemGuid = n.guid;
    n.description = desc;
    n.numPorts = ports;
    NodeIndex i = add(std::move(n));
    Node& added = b_.node(i);
    for (unsigned p = 1; p <= ports; ++p) added.ports[p].guid = Guid{added.guid.value + p};
    return i;
  }
  // The next free port of a node (1-based), so sketches need not count ports.
  uint8_t nextPort(NodeIndex n) { return static_cast<uint8_t>(++used_[n]); }
  void link(NodeIndex a, unsigned pa, NodeIndex b, unsigned pb) {
    auto r = b_.connect(a, PortNum{static_cast<uint8_t>(pa)}, b, PortNum{static_cast<uint8_t>(pb)});
    EXPECT_TRUE(r.ok()) << r.error().message;
    used_[a] = std::max<unsigned>(used_[a], pa);
    used_[b] = std::max<unsigned>(used_[b], pb);
  }
  void link(NodeIndex a, NodeIndex b) { link(a, nextPort(a), b, nextPort(b)); }
  Node& node(NodeIndex i) { return b_.node(i); }
  TopologyPtr build() {
    auto t = std::move(b_).build();
    EXPECT_TRUE(t.ok()) << t.error().message;
    return t.ok() ? *t : nullptr;
  }

 private:
  NodeIndex add(Node n) {
    auto r = b_.addNode(std::move(n));
    EXPECT_TRUE(r.ok());
    used_.push_back(0);
    return *r;
  }
  TopologyBuilder b_;
  std::vector<unsigned> used_;
  unsigned switches_ = 0, cas_ = 0;
};

// Torus (or mesh when wrap = false) of dims[0] x dims[1] switches, `hosts` CAs per switch.
inline TopologyPtr makeGrid(unsigned x, unsigned y, unsigned hosts, bool wrap) {
  FabricSketch f;
  std::vector<NodeIndex> sw;
  for (unsigned i = 0; i < x * y; ++i) sw.push_back(f.addSwitch("sw" + std::to_string(i), 16));
  auto at = [&](unsigned i, unsigned j) { return sw[(j % y) * x + (i % x)]; };
  for (unsigned j = 0; j < y; ++j)
    for (unsigned i = 0; i < x; ++i) {
      if (i + 1 < x || (wrap && x > 2)) f.link(at(i, j), at(i + 1, j));
      if (j + 1 < y || (wrap && y > 2)) f.link(at(i, j), at(i, j + 1));
    }
  for (unsigned s = 0; s < sw.size(); ++s)
    for (unsigned h = 0; h < hosts; ++h) {
      NodeIndex ca = f.addCa("h" + std::to_string(s) + "-" + std::to_string(h));
      f.link(ca, 1, sw[s], f.nextPort(sw[s]));
    }
  return f.build();
}

// Two-level fat tree: `leaves` leaf switches with `hostsPerLeaf` hosts each, every leaf linked to every one
// of `spines` spines by `parallel` links.
inline TopologyPtr makeFatTree2(unsigned leaves, unsigned spines, unsigned hostsPerLeaf,
                                unsigned parallel = 1) {
  FabricSketch f;
  std::vector<NodeIndex> leaf, spine;
  for (unsigned i = 0; i < leaves; ++i) leaf.push_back(f.addSwitch("leaf" + std::to_string(i)));
  for (unsigned i = 0; i < spines; ++i) spine.push_back(f.addSwitch("spine" + std::to_string(i)));
  for (unsigned l = 0; l < leaves; ++l)
    for (unsigned s = 0; s < spines; ++s)
      for (unsigned p = 0; p < parallel; ++p) f.link(leaf[l], spine[s]);
  for (unsigned l = 0; l < leaves; ++l)
    for (unsigned h = 0; h < hostsPerLeaf; ++h) {
      NodeIndex ca = f.addCa("h" + std::to_string(l) + "-" + std::to_string(h));
      f.link(ca, 1, leaf[l], f.nextPort(leaf[l]));
    }
  return f.build();
}

// Random connected mesh: a random spanning tree plus `extra` random links (parallel links allowed), one host
// per switch. Deterministic for a seed.
inline TopologyPtr makeRandomMesh(unsigned switches, unsigned extra, uint32_t seed) {
  FabricSketch f;
  std::mt19937 rng(seed);
  std::vector<NodeIndex> sw;
  for (unsigned i = 0; i < switches; ++i) sw.push_back(f.addSwitch("sw" + std::to_string(i), 24));
  std::vector<unsigned> deg(switches, 0);
  for (unsigned i = 1; i < switches; ++i) {
    unsigned j = std::uniform_int_distribution<unsigned>(0, i - 1)(rng);
    f.link(sw[i], sw[j]);
    ++deg[i];
    ++deg[j];
  }
  for (unsigned e = 0; e < extra; ++e) {
    unsigned i = std::uniform_int_distribution<unsigned>(0, switches - 1)(rng);
    unsigned j = std::uniform_int_distribution<unsigned>(0, switches - 1)(rng);
    if (i == j || deg[i] >= 20 || deg[j] >= 20) continue;
    f.link(sw[i], sw[j]);
    ++deg[i];
    ++deg[j];
  }
  for (unsigned s = 0; s < switches; ++s) {
    NodeIndex ca = f.addCa("h" + std::to_string(s));
    f.link(ca, 1, sw[s], f.nextPort(sw[s]));
  }
  return f.build();
}

inline LidAssignment assignOrDie(const fabric::Topology& topo, uint8_t lmc = 0) {
  auto r = assignLids(topo, {}, lmc);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return r.ok() ? r->lids : LidAssignment(topo);
}

}  // namespace ibsm::routing::testing
