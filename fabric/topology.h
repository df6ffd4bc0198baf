// The shared topology model: an immutable snapshot of nodes, ports and links, built once per sweep (or read
// from a topology file) with TopologyBuilder and then shared as std::shared_ptr<const Topology>. Nodes and
// ports are held in flat vectors addressed by dense indices so routing can use plain arrays.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "fabric/ids.h"
#include "fabric/result.h"
#include "fabric/rows.h"

namespace ibsm::fabric {

using NodeIndex = uint32_t;
inline constexpr NodeIndex kNoNode = UINT32_MAX;

enum class NodeType : uint8_t { kUnknown = 0, kCa = 1, kSwitch = 2, kRouter = 3 };
const char* toString(NodeType type);

// PortInfo PortState values (IBA 14.2.5.6).
enum class PortState : uint8_t { kNoChange = 0, kDown = 1, kInit = 2, kArmed = 3, kActive = 4 };
const char* toString(PortState state);

// A directed route from the SM's port: hops[1..count] are egress port numbers (hops[0] is unused, as in the
// SMP's InitialPath). The SMP path field has 64 entries, so at most 63 hops fit.
struct DrPath {
  static constexpr int kMaxHops = 63;
  std::array<uint8_t, 64> hops{};
  uint8_t count = 0;
  bool operator==(const DrPath&) const = default;
  // Path extended by one egress port; nullopt past kMaxHops.
  std::optional<DrPath> extended(uint8_t port) const;
  std::string toString() const;  // "0,1,3,2" as ibnetdiscover/smpquery -D print it
};

// What PortInfo told us about one port (values as encoded in PortInfo, e.g. width 2 = 4x, speed 1 = SDR).
struct PortAttrs {
  Lid lid;
  Lid smLid;
  uint8_t lmc = 0;
  PortState state = PortState::kDown;
  uint8_t physState = 0;  // 5 = LinkUp, 2 = Polling, 3 = Disabled
  uint8_t widthEnabled = 0, widthSupported = 0, widthActive = 0;
  uint8_t speedEnabled = 0, speedSupported = 0, speedActive = 0;
  uint8_t speedExtActive = 0, speedExtSupported = 0;  // FDR/EDR/HDR: 1, 2, 4
  uint8_t mtuCap = 0, neighborMtu = 0;                // 1=256 ... 5=4096
  uint8_t vlCap = 0, operVls = 0;                     // 1=VL0, 2=VL0-1, 3=VL0-3, 4=VL0-7, 5=VL0-14
  uint32_t capMask = 0;
  uint64_t gidPrefix = 0;  // the subnet prefix of the port's GIDs (the SM sets it)
  bool valid = false;  // false when PortInfo was never read (e.g. a port of a node known only from a file)
  bool operator==(const PortAttrs&) const = default;
  // The port reported Down (a port never read is not known to be).
  bool down() const { return valid && state == PortState::kDown; }
};

struct Port {
  PortNum num;
  Guid guid;  // a switch's ports all share the node's port GUID
  PortAttrs attrs;
  NodeIndex peerNode = kNoNode;
  PortNum peerPort;
  bool connected() const { return peerNode != kNoNode; }
};

struct SwitchAttrs {
  uint16_t linearFdbCap = 0;
  uint16_t linearFdbTop = 0;
  uint16_t multicastFdbCap = 0;
  uint16_t partitionEnforcementCap = 0;  // P_Key table size of the external ports (0: none)
  uint8_t lifeTime = 0;
  bool enhancedPort0 = false;
  bool portStateChange = false;
  // OptimizedSLtoVLMappingProgramming (IBA 1.2.1+, bit 0 of that field): SLtoVLMappingTable Sets may name
  // all input ports and/or all output ports in the attribute modifier (mad::kSlToVlAllInputs/AllOutputs).
  bool optimizedSlToVl = false;
  bool operator==(const SwitchAttrs&) const = default;
};

struct Node {
  NodeType type = NodeType::kUnknown;
  Guid guid;
  Guid systemGuid;
  uint32_t vendorId = 0;
  uint16_t deviceId = 0;
  uint32_t revision = 0;
  uint16_t partitionCap = 0;  // NodeInfo.PartitionCap: P_Key table size of a CA port or switch port 0
  std::string description;
  uint8_t numPorts = 0;
  std::vector<Port> ports;  // ports[p] is port p; ports[0] is a switch's management port (unused on a CA)
  SwitchAttrs sw;           // meaningful when type == kSwitch
  bool isSwitch() const { return type == NodeType::kSwitch; }
  const Port& port(PortNum p) const { return ports.at(p.value); }
};

// Directed routes from the SM's port to one node (empty for topologies read from a file). They are kept
// beside the nodes, not in them, so a change of routes (a link on the SM's routes went down) copies no node.
struct NodeRoutes {
  DrPath node;
  // CA ports: the route that enters the node through port p (an SMA may refuse a Set of one port's PortInfo
  // arriving through another); empty when unknown.
  std::vector<DrPath> ports;
};

// One physical link, stored once with a < b (or a == b and portA < portB).
struct Link {
  NodeIndex a;
  PortNum portA;
  NodeIndex b;
  PortNum portB;
};

class Topology : public std::enable_shared_from_this<Topology> {
 public:
  // Versions of a topology share the nodes neither changed (fabric/rows.h).
  const Rows<Node>& nodes() const { return nodes_; }
  const Node& node(NodeIndex i) const { return nodes_[checked(i)]; }
  size_t size() const { return nodes_.size(); }
  // Directed route from the SM's port to node i, and to a CA's port p (empty when unknown: see NodeRoutes).
  const DrPath& route(NodeIndex i) const { return routes_[checked(i)].node; }
  const DrPath& portRoute(NodeIndex i, PortNum p) const;
  // The route that enters node i through port p: the CA port's own when known, else the node's (a switch's
  // ports share its route).
  const DrPath& routeVia(NodeIndex i, PortNum p) const;
  std::optional<NodeIndex> findNode(Guid nodeGuid) const;
  // A CA port GUID or a switch's port GUID -> (node, port).
  std::optional<std::pair<NodeIndex, PortNum>> findPort(Guid portGuid) const;
  // First node whose NodeDescription equals desc.
  std::optional<NodeIndex> findByDescription(std::string_view desc) const;
  const std::vector<NodeIndex>& switches() const { return switches_; }
  const std::vector<NodeIndex>& cas() const { return cas_; }
  const std::vector<Link>& links() const { return links_; }
  // Where the SM sits (discovery's starting point); kNoNode for topologies read from a file.
  NodeIndex smNode() const { return smNode_; }
  PortNum smPort() const { return smPort_; }

  // A copy with some attributes replaced (what the SM has since written to the ports and switches); nodes,
  // links and routes stay as they are.
  struct AttrPatch {
    std::vector<std::tuple<NodeIndex, PortNum, PortAttrs>> ports;
    std::vector<std::pair<NodeIndex, SwitchAttrs>> switches;
    bool empty() const { return ports.empty() && switches.empty(); }
  };
  std::shared_ptr<const Topology> withAttrs(const AttrPatch& patch) const;
  // Node i of this topology, found in `older` (a version it was made from): by its number when it kept it
  // (checked without reading either node when they share it), else by GUID.
  std::optional<NodeIndex> findIn(const Topology& older, NodeIndex i) const {
    if (i < older.nodes_.size() && (nodes_.sameRow(i, older.nodes_, i) || older.node(i).guid == node(i).guid))
      return i;
    return older.findNode(node(i).guid);
  }

 private:
  friend class TopologyBuilder;
  NodeIndex checked(NodeIndex i) const;  // throws std::out_of_range past the last node
  Rows<Node> nodes_;
  Rows<NodeRoutes> routes_;  // as many as nodes
  // Node GUID -> index, shared with the builders and topologies made from this one until a node is added.
  std::shared_ptr<const std::unordered_map<Guid, NodeIndex>> byGuid_;
  // Port GUID -> (node, port), shared likewise while the nodes keep their numbers and port GUIDs.
  std::shared_ptr<const std::unordered_map<Guid, std::pair<NodeIndex, PortNum>>> byPortGuid_;
  std::vector<NodeIndex> switches_, cas_;
  std::vector<Link> links_;
  NodeIndex smNode_ = kNoNode;
  PortNum smPort_;
};

using TopologyPtr = std::shared_ptr<const Topology>;

// Whether b is a read again with nothing changed: the same nodes under the same numbers, the same links, and
// every port's and switch's attributes alike (a switch's PortStateChange flag aside).
bool sameFabric(const Topology& a, const Topology& b);

// Collects nodes and links, checks them, and produces the immutable snapshot.
class TopologyBuilder {
 public:
  TopologyBuilder() = default;
  // Starts from base's nodes, links and routes (its nodes shared until written: a re-discovery).
  explicit TopologyBuilder(const Topology& base);

  // Adds a node; ports are created (numPorts + 1 entries) if the node has none. Fails on a duplicate node
  // GUID.
  Result<NodeIndex> addNode(Node node);
  std::optional<NodeIndex> findNode(Guid guid) const;
  Node& node(NodeIndex i);  // for writing: the node is this builder's own from here on
  const Node& node(NodeIndex i) const;
  size_t size() const { return nodes_.size(); }
  const DrPath& route(NodeIndex i) const { return routes_[checked(i)].node; }
  const DrPath& portRoute(NodeIndex i, PortNum p) const;
  // The route that enters node i through port p: the CA port's own when known, else the node's (a switch's
  // ports share its route).
  const DrPath& routeVia(NodeIndex i, PortNum p) const;
  // Writes a route (nothing when it is the same one).
  void setRoute(NodeIndex i, const DrPath& route);
  void setPortRoute(NodeIndex i, PortNum p, const DrPath& route);
  // Node i's routes become other's node j's, shared.
  void shareRoutes(NodeIndex i, const TopologyBuilder& other, NodeIndex j);
  // Per node, 1 for a switch: from the base's switch list for the rows shared with it (no node row is read).
  std::vector<uint8_t> switchFlags() const;
  // Connects two ports; fails if a port number is out of range, a port is already linked elsewhere, or a CA
  // port 0 / switch port 0 is used.
  Result<void> connect(NodeIndex a, PortNum pa, NodeIndex b, PortNum pb);
  // Unlinks port p of node n and its peer's port, if linked.
  void disconnect(NodeIndex n, PortNum p);
  void setSmPort(NodeIndex node, PortNum port) {
    smNode_ = node;
    smPort_ = port;
  }
  // Fails on duplicate port GUIDs.
  Result<TopologyPtr> build() &&;

 private:
  NodeIndex checked(NodeIndex i) const;  // throws std::out_of_range past the last node
  // build() when the nodes are base_'s, under the same numbers, with the same types and port GUIDs: the
  // indexes are base_'s and only the links of the nodes written are read again; nullptr otherwise.
  TopologyPtr buildOnBase();
  // Every port of switch i carries its port GUID (the node GUID when NodeInfo gave none); returns it.
  Guid unifySwitchPortGuids(NodeIndex i);
  Rows<Node> nodes_;
  Rows<NodeRoutes> routes_;               // as many as nodes
  std::shared_ptr<const Topology> base_;  // the topology this builder started from, when held by a shared_ptr
  // As Topology's, shared with the base (a re-discovery adds no node and copies none of it).
  std::shared_ptr<const std::unordered_map<Guid, NodeIndex>> byGuid_ =
      std::make_shared<std::unordered_map<Guid, NodeIndex>>();
  NodeIndex smNode_ = kNoNode;
  PortNum smPort_;
  struct {
    size_t switches = 0, cas = 0, links = 0;
  } sizeHint_;  // of the base topology: what build() reserves
};

// Link width/speed as ibnetdiscover prints them ("4xQDR"); empty when unknown.
std::string linkWidthString(uint8_t widthActive);                          // 1x, 4x, 8x, 12x, 2x
std::string linkSpeedString(uint8_t speedActive, uint8_t speedExtActive);  // SDR, DDR, QDR, FDR, EDR, HDR
// Inverse of the two above: "4xQDR" -> (width, speed, speedExt); nullopt when unparseable.
struct WidthSpeed {
  uint8_t width, speed, speedExt;
};
std::optional<WidthSpeed> parseWidthSpeed(std::string_view text);

}  // namespace ibsm::fabric
