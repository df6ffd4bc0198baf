// Fabric generator: builds test fabrics (k-ary n-trees, 2/3-level fat trees, random meshes, tori,
// dragonflies, hypercubes) as a fabric::Topology, for unit tests of routing and discovery and, written with
// fabric::formatTopology, as ibsim net files. Deterministic: the same spec (seed included) always gives the
// same fabric, GUIDs included.
//
// GUIDs follow ibsim's scheme so files look like ibsim's own: switch i gets guidBase + 0x200000 + i, CAs
// count up from guidBase + 0x100000 taking one GUID for the node and one per port (port p = node GUID + p).
// Nodes are ordered switches first (edge switches, then upward), then hosts; removed switches keep the GUIDs
// of the others stable, so a degraded fabric differs from the full one only by what was removed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fabric/result.h"
#include "fabric/topology.h"

namespace ibsm::tools {

enum class Shape { kKaryNTree, kFatTree, kMesh, kTorus, kDragonfly, kHypercube };

struct FabricSpec {
  Shape shape = Shape::kKaryNTree;

  // k-ary n-tree: K^N hosts; N levels of K^(N-1) switches with 2K ports (K down, K up; the top level's up
  // ports stay unused).
  unsigned k = 4, n = 3;

  // Fat tree of `radix`-port switches. 2 levels: leaves and spines; 3 levels: pods of leaves and spines,
  // spine a of every pod linked to the a-th group ("plane") of cores. A count of 0 means derived (full,
  // non-blocking above the leaves): hostsPerLeaf = radix/2, spines = leaf up ports / parallel, leaves = radix
  // / parallel (2 levels) or radix/2 / parallel per pod (3 levels), cores per plane = spine up ports /
  // parallel, pods = radix / parallel. hostsPerLeaf above radix/2 oversubscribes; `hosts` caps the host
  // count, filling leaves in order (partially populated leaves).
  unsigned levels = 2;
  unsigned radix = 36;
  unsigned hostsPerLeaf = 0;
  unsigned leaves = 0;  // total (2 levels) or per pod (3 levels)
  unsigned spines = 0;  // total (2 levels) or per pod (3 levels)
  unsigned pods = 0;    // 3 levels
  unsigned cores = 0;   // 3 levels, total; a multiple of the spines per pod
  unsigned hosts = 0;   // 0 = every host port of every leaf populated

  // Random connected mesh: `switches` switches, each with up to `degree` switch neighbours (a random spanning
  // tree first, so it is connected, then random extra links).
  unsigned switches = 0, degree = 0;

  // 2D or 3D torus (wrap-around links in every dimension of size >= 3, one link for size 2).
  std::vector<unsigned> dims;

  // Dragonfly: A*H+1 groups of A routers ("dfly-G-R"); the routers of a group are linked all-to-all, and each
  // router has H global links, so every group has exactly one global link to every other group. Router
  // ports: hosts, then A-1 local ports (towards the other routers of its group, in router order), then H
  // global ports. Group g's k-th global link (k = 0..A*H-1, router k/H, global port k%H) goes to group
  // (g+k+1) mod (A*H+1).
  unsigned dragonflyA = 0, dragonflyH = 0;

  // Hypercube of 2^D switches ("hcube-I"): switch i is linked to i xor 2^d on port hosts+1+d.
  unsigned hypercubeD = 0;

  unsigned hostsPerSwitch = 1;  // mesh, torus, dragonfly and hypercube
  unsigned parallel = 1;        // links between each linked switch pair (fat tree, mesh, torus)
  // 2: each host's second port goes to the next edge switch (edge switches are paired 0+1, 2+3, ...; a pair
  // shares its host ports, so hosts halve); a host with no partner switch keeps port 2 unlinked.
  unsigned hcaPorts = 1;

  // Degradation, applied in this order with `seed`: remove switches that have no hosts, then switch-to-switch
  // links, each only if the fabric stays connected (unless allowDisconnect). Fails if not enough can be
  // removed.
  unsigned removeSwitches = 0, removeLinks = 0;
  bool allowDisconnect = false;
  uint64_t seed = 1;

  uint64_t guidBase = 0;
  std::string link = "4xQDR";  // width and speed of every link, as ibnetdiscover prints it
};

// Checks the spec (ranges, port budgets, shape-specific limits); the error says which option is wrong.
fabric::Result<void> validateSpec(const FabricSpec& spec);

fabric::Result<fabric::TopologyPtr> generateFabric(const FabricSpec& spec);

// What ibsim must be able to hold to load a fabric: nodes (-N, default 2048), switches (-S, 256) and ports
// (-P, 13312: switch ports including port 0, plus CA ports).
struct IbsimSize {
  size_t nodes = 0, switches = 0, ports = 0;
};
IbsimSize ibsimSize(const fabric::Topology& topo);
// The ibsim options needed beyond its defaults, e.g. "-N 2160 -S 432"; empty when the defaults suffice.
std::string ibsimFlags(const fabric::Topology& topo);

}  // namespace ibsm::tools
