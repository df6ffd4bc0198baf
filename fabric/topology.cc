#include "fabric/topology.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace ibsm::fabric {

const char* toString(NodeType type) {
  switch (type) {
    case NodeType::kCa:
      return "CA";
    case NodeType::kSwitch:
      return "Switch";
    case NodeType::kRouter:
      return "Router";
    default:
      return "Unknown";
  }
}

const char* toString(PortState state) {
  switch (state) {
    case PortState::kNoChange:
      return "NoChange";
    case PortState::kDown:
      return "Down";
    case PortState::kInit:
      return "Init";
    case PortState::kArmed:
      return "Armed";
    case PortState::kActive:
      return "Active";
  }
  return "?";
}

std::optional<DrPath> DrPath::extended(uint8_t port) const {
  if (count >= kMaxHops) return std::nullopt;
  DrPath p = *this;
  p.hops[++p.count] = port;
  return p;
}

std::string DrPath::toString() const {
  // Appended piece by piece: GCC 12 at -O3 reports a false -Wrestrict for `"," + std::to_string(...)`.
  std::string s = "0";
  for (int i = 1; i <= count; ++i) {
    s += ',';
    s += std::to_string(hops[i]);
  }
  return s;
}

namespace {
NodeIndex checkedIndex(NodeIndex i, size_t size, const char* who) {
  if (i >= size) throw std::out_of_range(std::string(who) + ": no node " + std::to_string(i));
  return i;
}
const DrPath& portRouteOf(const NodeRoutes& r, PortNum p) {
  static const DrPath kNone;
  return p.value < r.ports.size() ? r.ports[p.value] : kNone;
}
}  // namespace

NodeIndex Topology::checked(NodeIndex i) const {
  return checkedIndex(i, nodes_.size(), "Topology::node");
}

const DrPath& Topology::portRoute(NodeIndex i, PortNum p) const {
  return portRouteOf(routes_[checked(i)], p);
}

const DrPath& Topology::routeVia(NodeIndex i, PortNum p) const {
  const DrPath& own = portRoute(i, p);
  return own.count ? own : route(i);
}

std::optional<NodeIndex> Topology::findNode(Guid nodeGuid) const {
  if (!byGuid_) return std::nullopt;
  auto it = byGuid_->find(nodeGuid);
  if (it == byGuid_->end()) return std::nullopt;
  return it->second;
}

std::optional<std::pair<NodeIndex, PortNum>> Topology::findPort(Guid portGuid) const {
  if (!byPortGuid_) return std::nullopt;
  auto it = byPortGuid_->find(portGuid);
  if (it == byPortGuid_->end()) return std::nullopt;
  return it->second;
}

std::optional<NodeIndex> Topology::findByDescription(std::string_view desc) const {
  for (NodeIndex i = 0; i < nodes_.size(); ++i)
    if (node(i).description == desc) return i;
  return std::nullopt;
}

TopologyBuilder::TopologyBuilder(const Topology& base)
    : nodes_(base.nodes_),
      routes_(base.routes_),
      base_(base.weak_from_this().lock()),
      byGuid_(base.byGuid_ ? base.byGuid_ : std::make_shared<std::unordered_map<Guid, NodeIndex>>()),
      smNode_(base.smNode_),
      smPort_(base.smPort_),
      sizeHint_{base.switches_.size(), base.cas_.size(), base.links_.size()} {}

NodeIndex TopologyBuilder::checked(NodeIndex i) const {
  return checkedIndex(i, nodes_.size(), "TopologyBuilder::node");
}

Node& TopologyBuilder::node(NodeIndex i) {
  return nodes_[checked(i)];
}

const Node& TopologyBuilder::node(NodeIndex i) const {
  return std::as_const(nodes_)[checked(i)];
}

std::vector<uint8_t> TopologyBuilder::switchFlags() const {
  std::vector<uint8_t> out(size(), 0);
  const size_t shared = base_ ? std::min(base_->size(), size()) : 0;
  if (base_)
    for (NodeIndex s : base_->switches())
      if (s < shared) out[s] = 1;
  for (NodeIndex i = 0; i < size(); ++i)
    if (i >= shared || !nodes_.sameRow(i, base_->nodes_, i)) out[i] = node(i).isSwitch();
  return out;
}

const DrPath& TopologyBuilder::portRoute(NodeIndex i, PortNum p) const {
  return portRouteOf(std::as_const(routes_)[checked(i)], p);
}

void TopologyBuilder::setRoute(NodeIndex i, const DrPath& route) {
  if (this->route(i) != route) routes_[i].node = route;
}

void TopologyBuilder::setPortRoute(NodeIndex i, PortNum p, const DrPath& route) {
  if (portRoute(i, p) == route) return;
  NodeRoutes& r = routes_[i];
  if (r.ports.size() <= p.value) r.ports.resize(p.value + 1u);
  r.ports[p.value] = route;
}

void TopologyBuilder::shareRoutes(NodeIndex i, const TopologyBuilder& other, NodeIndex j) {
  routes_.share(checked(i), other.routes_, other.checked(j));
}

Result<NodeIndex> TopologyBuilder::addNode(Node node) {
  if (byGuid_->count(node.guid)) return makeError("duplicate node GUID " + toString(node.guid));
  if (node.ports.empty()) {
    node.ports.resize(node.numPorts + 1u);
    for (unsigned p = 0; p <= node.numPorts; ++p) node.ports[p].num = PortNum{static_cast<uint8_t>(p)};
  } else if (node.ports.size() != node.numPorts + 1u) {
    return makeError("node " + toString(node.guid) + ": port vector does not match NumPorts");
  }
  NodeIndex i = static_cast<NodeIndex>(nodes_.size());
  using Index = std::unordered_map<Guid, NodeIndex>;
  if (byGuid_.use_count() > 1) byGuid_ = std::make_shared<Index>(*byGuid_);  // copy on write
  // The index is always made non-const (here or as the member's default), so writing it is sound.
  const_cast<Index&>(*byGuid_).emplace(node.guid, i);
  nodes_.push_back(std::move(node));
  routes_.resize(nodes_.size());  // none yet
  return i;
}

std::optional<NodeIndex> TopologyBuilder::findNode(Guid guid) const {
  auto it = byGuid_->find(guid);
  if (it == byGuid_->end()) return std::nullopt;
  return it->second;
}

Result<void> TopologyBuilder::connect(NodeIndex a, PortNum pa, NodeIndex b, PortNum pb) {
  if (a >= nodes_.size() || b >= nodes_.size()) return makeError("connect: no such node");
  const Node& na = std::as_const(nodes_)[a];
  const Node& nb = std::as_const(nodes_)[b];
  auto describe = [](const Node& n, PortNum p) {
    return toString(n.guid) + "[" + std::to_string(p.value) + "]";
  };
  if (pa.value == 0 || pa.value > na.numPorts)
    return makeError("port " + describe(na, pa) + " is out of range (1.." + std::to_string(na.numPorts) +
                     ")");
  if (pb.value == 0 || pb.value > nb.numPorts)
    return makeError("port " + describe(nb, pb) + " is out of range (1.." + std::to_string(nb.numPorts) +
                     ")");
  if (a == b && pa == pb) return makeError("port " + describe(na, pa) + " linked to itself");
  const Port& x = na.ports[pa.value];
  const Port& y = nb.ports[pb.value];
  if (x.connected() && (x.peerNode != b || x.peerPort != pb))
    return makeError("port " + describe(na, pa) + " is already linked to " +
                     describe(std::as_const(*this).node(x.peerNode), x.peerPort));
  if (y.connected() && (y.peerNode != a || y.peerPort != pa))
    return makeError("port " + describe(nb, pb) + " is already linked to " +
                     describe(std::as_const(*this).node(y.peerNode), y.peerPort));
  if (x.connected() && y.connected()) return {};  // linked already: the nodes stay shared
  Port& px = nodes_[a].ports[pa.value];
  px.peerNode = b;
  px.peerPort = pb;
  Port& py = nodes_[b].ports[pb.value];
  py.peerNode = a;
  py.peerPort = pa;
  return {};
}

void TopologyBuilder::disconnect(NodeIndex n, PortNum p) {
  const Port& port = std::as_const(*this).node(n).ports.at(p.value);
  if (!port.connected()) return;
  const auto [peer, peerPort] = std::pair{port.peerNode, port.peerPort};
  Port& back = nodes_[peer].ports[peerPort.value];
  back.peerNode = kNoNode;
  back.peerPort = PortNum{};
  Port& here = nodes_[n].ports[p.value];
  here.peerNode = kNoNode;
  here.peerPort = PortNum{};
}

TopologyPtr Topology::withAttrs(const AttrPatch& patch) const {
  auto copy = std::make_shared<Topology>(*this);
  for (const auto& [n, p, attrs] : patch.ports) copy->nodes_[checked(n)].ports.at(p.value).attrs = attrs;
  for (const auto& [n, sw] : patch.switches) copy->nodes_[checked(n)].sw = sw;
  return copy;
}

Guid TopologyBuilder::unifySwitchPortGuids(NodeIndex i) {
  const Node& n = std::as_const(nodes_)[i];
  const Guid portGuid = n.ports[0].guid.value ? n.ports[0].guid : n.guid;
  if (std::any_of(n.ports.begin(), n.ports.end(), [&](const Port& p) { return p.guid != portGuid; }))
    for (auto& p : nodes_[i].ports) p.guid = portGuid;
  return portGuid;
}

TopologyPtr TopologyBuilder::buildOnBase() {
  if (!base_ || nodes_.size() != base_->size()) return nullptr;
  std::vector<NodeIndex> written;
  std::vector<bool> isWritten(nodes_.size(), false);
  for (NodeIndex i = 0; i < nodes_.size(); ++i) {
    if (nodes_.sameRow(i, base_->nodes_, i)) continue;
    const Node& was = base_->node(i);
    if (const Node& n = std::as_const(nodes_)[i];
        n.type != was.type || n.guid != was.guid || n.ports.size() != was.ports.size())
      return nullptr;
    // The base's switch rows carry their port GUID on every port already (build() does the same).
    if (was.isSwitch()) unifySwitchPortGuids(i);
    const Node& n = std::as_const(nodes_)[i];
    for (size_t p = 0; p < n.ports.size(); ++p)
      if (n.ports[p].guid != was.ports[p].guid) return nullptr;
    written.push_back(i);
    isWritten[i] = true;
  }
  auto topo = std::make_shared<Topology>();
  topo->byGuid_ = std::move(byGuid_);
  topo->byPortGuid_ = base_->byPortGuid_;
  topo->switches_ = base_->switches_;
  topo->cas_ = base_->cas_;
  // The base's links between nodes not written, and the links of the written ones, both in (a, portA) order.
  std::vector<Link> fresh;
  for (NodeIndex i : written) {
    const Node& n = std::as_const(nodes_)[i];
    for (unsigned p = 1; p <= n.numPorts; ++p) {
      const Port& port = n.ports[p];
      if (!port.connected()) continue;
      const std::pair here{i, p}, there{port.peerNode, static_cast<unsigned>(port.peerPort.value)};
      if (isWritten[port.peerNode] && there < here) continue;  // found from that end
      fresh.push_back(here < there ? Link{i, PortNum{static_cast<uint8_t>(p)}, port.peerNode, port.peerPort}
                                   : Link{port.peerNode, port.peerPort, i, PortNum{static_cast<uint8_t>(p)}});
    }
  }
  auto before = [](const Link& x, const Link& y) {
    return std::pair{x.a, x.portA} < std::pair{y.a, y.portA};
  };
  std::sort(fresh.begin(), fresh.end(), before);
  topo->links_.reserve(base_->links_.size() + fresh.size());
  auto f = fresh.begin();
  for (const Link& l : base_->links_) {
    if (isWritten[l.a] || isWritten[l.b]) continue;
    for (; f != fresh.end() && before(*f, l); ++f) topo->links_.push_back(*f);
    topo->links_.push_back(l);
  }
  topo->links_.insert(topo->links_.end(), f, fresh.end());
  topo->nodes_ = std::move(nodes_);
  topo->routes_ = std::move(routes_);
  topo->smNode_ = smNode_;
  topo->smPort_ = smPort_;
  return topo;
}

Result<TopologyPtr> TopologyBuilder::build() && {
  if (TopologyPtr patched = buildOnBase()) return patched;
  auto topo = std::make_shared<Topology>();
  topo->byGuid_ = std::move(byGuid_);
  auto byPortGuid = std::make_shared<std::unordered_map<Guid, std::pair<NodeIndex, PortNum>>>();
  byPortGuid->reserve(nodes_.size());
  topo->switches_.reserve(sizeHint_.switches);
  topo->cas_.reserve(sizeHint_.cas);
  topo->links_.reserve(sizeHint_.links);
  for (NodeIndex i = 0; i < nodes_.size(); ++i) {
    const Node& n = std::as_const(nodes_)[i];
    if (n.isSwitch()) {
      topo->switches_.push_back(i);
      const Guid portGuid = unifySwitchPortGuids(i);  // n is not read again
      if (!byPortGuid->emplace(portGuid, std::pair{i, PortNum{0}}).second)
        return makeError("duplicate port GUID " + toString(portGuid));
    } else {
      if (n.type == NodeType::kCa) topo->cas_.push_back(i);
      for (unsigned p = 1; p <= n.numPorts; ++p) {
        const Port& port = n.ports[p];
        if (port.guid.value == 0) continue;
        if (!byPortGuid->emplace(port.guid, std::pair{i, PortNum{static_cast<uint8_t>(p)}}).second)
          return makeError("duplicate port GUID " + toString(port.guid));
      }
    }
    const Node& linked = std::as_const(nodes_)[i];
    for (unsigned p = 1; p <= linked.numPorts; ++p) {
      const Port& port = linked.ports[p];
      if (!port.connected()) continue;
      if (std::pair{i, p} < std::pair{port.peerNode, static_cast<unsigned>(port.peerPort.value)})
        topo->links_.push_back(Link{i, PortNum{static_cast<uint8_t>(p)}, port.peerNode, port.peerPort});
    }
  }
  topo->byPortGuid_ = std::move(byPortGuid);
  topo->nodes_ = std::move(nodes_);
  topo->routes_ = std::move(routes_);
  topo->smNode_ = smNode_;
  topo->smPort_ = smPort_;
  return TopologyPtr(std::move(topo));
}

std::string linkWidthString(uint8_t w) {
  switch (w) {
    case 1:
      return "1x";
    case 2:
      return "4x";
    case 4:
      return "8x";
    case 8:
      return "12x";
    case 16:
      return "2x";
    default:
      return "";
  }
}

std::string linkSpeedString(uint8_t speed, uint8_t ext) {
  switch (ext) {
    case 1:
      return "FDR";
    case 2:
      return "EDR";
    case 4:
      return "HDR";
    case 8:
      return "NDR";
    default:
      break;
  }
  switch (speed) {
    case 1:
      return "SDR";
    case 2:
      return "DDR";
    case 4:
      return "QDR";
    default:
      return "";
  }
}

std::optional<WidthSpeed> parseWidthSpeed(std::string_view text) {
  static constexpr std::pair<std::string_view, uint8_t> kWidths[] = {
      {"12x", 8}, {"1x", 1}, {"2x", 16}, {"4x", 2}, {"8x", 4}};
  static constexpr std::tuple<std::string_view, uint8_t, uint8_t> kSpeeds[] = {
      {"SDR", 1, 0}, {"DDR", 2, 0}, {"QDR", 4, 0}, {"FDR10", 4, 0},
      {"FDR", 4, 1}, {"EDR", 4, 2}, {"HDR", 4, 4}, {"NDR", 4, 8}};
  for (auto [wname, w] : kWidths) {
    if (!text.starts_with(wname)) continue;
    std::string_view rest = text.substr(wname.size());
    for (auto [sname, s, e] : kSpeeds)
      if (rest == sname) return WidthSpeed{w, s, e};
  }
  return std::nullopt;
}

bool sameFabric(const Topology& a, const Topology& b) {
  if (a.size() != b.size()) return false;
  for (NodeIndex n = 0; n < a.size(); ++n) {
    const Node &x = a.node(n), &y = b.node(n);
    if (&x == &y) continue;  // shared by both versions
    SwitchAttrs sx = x.sw, sy = y.sw;
    sx.portStateChange = sy.portStateChange = false;
    if (x.type != y.type || x.guid != y.guid || x.numPorts != y.numPorts || x.description != y.description ||
        sx != sy || x.ports.size() != y.ports.size())
      return false;
    for (size_t p = 0; p < x.ports.size(); ++p) {
      const Port &u = x.ports[p], &v = y.ports[p];
      if (u.guid != v.guid || u.peerNode != v.peerNode || u.peerPort != v.peerPort || !(u.attrs == v.attrs))
        return false;
    }
  }
  return true;
}

}  // namespace ibsm::fabric
