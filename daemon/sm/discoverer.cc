#include "daemon/sm/discoverer.h"

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "daemon/program/phase_runner.h"
#include "mad/smp.h"

namespace ibsm::daemon {

using fabric::DrPath;
using fabric::NodeIndex;
using mad::MadResult;

namespace {

constexpr uint8_t kLinkUp = 5;  // PortPhysicalState LinkUp

// State of one sweep; lives while its SMPs are in flight.
struct Sweep {
  mad::MadEngine& engine;
  fabric::TopologyBuilder builder;
  fabric::Rows<std::vector<RawAttr>> portInfo;
  fabric::Rows<RawAttr> switchInfo;
  std::vector<std::string> warnings;
  std::optional<std::string> fatal;
  // Links seen: (node, port) <-> (node, port), applied at the end so an inconsistent answer is reported once.
  struct PendingLink {
    NodeIndex a;
    uint8_t pa;
    NodeIndex b;
    uint8_t pb;
  };
  std::vector<PendingLink> links;
  // [node][port]: a NodeInfo through either end of the port's link answered (the link is among `links`), so
  // exploring the port would only find the node at its other end again.
  std::vector<std::vector<bool>> linkKnown;
  // Ports to explore, in the order their PortInfo answered (breadth-first: the order their probes had when
  // each went out at once). A node's probes go out together; the next node's wait until they are answered.
  // So by a port's turn a probe from the other end of its link has answered, if one was sent, and the port is
  // skipped: each link's far end is probed once, links between nodes as far from the SM as each other
  // included (a dragonfly's, a torus's: without the wait both their ends were probed at once). The nodes are
  // found in the same order as without the wait: numbered alike, each first reached on its breadth-first
  // route. These probes are urgent, so a node's turn does not wait behind the reads queued for the nodes
  // found before it.
  struct Explore {
    NodeIndex node;
    uint8_t port;
    DrPath path;  // to the far end
  };
  std::deque<Explore> toExplore;
  NodeIndex exploring = fabric::kNoNode;  // whose probes are out
  size_t probesOut = 0;
  // A probe not answered at its first attempt ends the waits for the rest of the sweep (it goes on with the
  // engine's retries): on a lossy fabric, or behind a link that died, every wait would cost a timeout. Then
  // the links within a level are probed from both ends again, as fast as before.
  bool waits = true;
  // Flap damping: (node GUID, port) pairs not to explore; the ones met are reported back.
  std::vector<std::pair<fabric::Guid, uint8_t>> heldDown, heldDownSeen;
  // Targeted mode: a changed switch that does not answer makes the whole result unusable.
  bool failOnNoAnswer = false;
  // Targeted mode: links of the changed switches that were ACTIVE. A port that is still ACTIVE has not lost
  // its link since the SM activated it (a link that comes back up starts in INIT on both ends), so its peer
  // is the one known and is not probed again.
  std::map<std::pair<NodeIndex, uint8_t>, PendingLink> activeLinks;
  uint8_t smPortNum = 0;
  // Gets that got no answer after all of the engine's retries: sent again after the others in further rounds
  // (anotherRound, as the programmers' phases do); then given up (`lost`, the sweep's
  // DiscoveryStats::failed).
  struct Again {
    uint16_t attr;
    uint32_t mod;
    DrPath path;
    mad::MadCompletion done;
    unsigned rounds;  // rounds of the engine's retries it had
    MadResult last;
  };
  std::vector<Again> again;
  size_t recovered = 0;  // Gets answered in a round after their first
  size_t lost = 0;
  std::function<bool()> interrupt;
  bool interrupted = false;

  explicit Sweep(mad::MadEngine& e) : engine(e) {}

  // How a Get that gets no answer is sent again. kRounds: with the engine's retries, and then in later
  // rounds (above). kOnce: one attempt, urgent, and the caller is told of a failure (it sends it again).
  enum class Pass { kOnce, kRounds };
  void get(uint16_t attr, uint32_t mod, const DrPath& path, mad::MadCompletion done,
           Pass pass = Pass::kRounds, unsigned round = 1) {
    if (interrupted) return;
    mad::RequestOptions ro;
    ro.owner = this;
    if (pass == Pass::kOnce) {
      ro.retries = 0;
      ro.urgent = true;
    }
    engine.submit(
        mad::makeDirectedSmp(mad::kGet, attr, mod, path),
        [this, attr, mod, path, pass, round, done = std::move(done)](const MadResult& r) mutable {
          if (r.ok() && round > 1) ++recovered;
          if (r.ok() || pass == Pass::kOnce) return done(r);
          if (r.status == mad::MadStatus::kCancelled) return;
          again.push_back({attr, mod, path, std::move(done), round, r});
        },
        ro);
  }
  // Runs the engine until every Get, later rounds included, is answered or given up.
  void run() {
    drain();
    while (!again.empty() && !interrupted) {
      std::vector<Again> batch = std::move(again);
      again.clear();
      const bool answering = recovered > 0;  // the last round got answers
      recovered = 0;
      for (Again& a : batch) {
        if (anotherRound(a.rounds, answering)) {
          get(a.attr, a.mod, a.path, std::move(a.done), Pass::kRounds, a.rounds + 1);
        } else {
          ++lost;
          a.done(a.last);
        }
      }
      drain();
    }
  }
  void drain() {
    if (!interrupt) return engine.runUntilIdle();
    while (!engine.idle()) {
      engine.poll(std::min<mad::Duration>(engine.options().timeout, std::chrono::milliseconds(20)));
      if (!interrupted && interrupt()) {
        interrupted = true;
        engine.cancelQueued(this);
      }
    }
  }

  static bool answered(const MadResult& r) { return r.ok() && r.header.status == 0; }

  // A link a NodeInfo answer showed (an ACTIVE link kept from before is not: its other end may say
  // otherwise).
  void addProbedLink(const PendingLink& l) {
    links.push_back(l);
    for (auto [n, p] : {std::pair{l.a, l.pa}, std::pair{l.b, l.pb}}) {
      if (linkKnown.size() <= n) linkKnown.resize(n + 1u);
      if (linkKnown[n].size() <= p) linkKnown[n].resize(p + 1u);
      linkKnown[n][p] = true;
    }
  }
  bool isLinkKnown(NodeIndex n, uint8_t p) const {
    return n < linkKnown.size() && p < linkKnown[n].size() && linkKnown[n][p];
  }

  void warnNoAnswer(const char* what, const DrPath& path, const MadResult& r) {
    if (failOnNoAnswer && !fatal)
      fatal = std::string("no ") + what + " from directed route " + path.toString();
    warnings.push_back(std::string("DISC001 no ") + what + " from directed route " + path.toString() +
                       (r.ok() ? " (MAD status " + std::to_string(r.header.status) + ")" : " (timeout)"));
  }

  // NodeInfo at `path`, reached from (parent, parentPort) unless this is the local node. `waited`: a probe
  // the next node's turn waits for (see toExplore), tried once first.
  void probe(const DrPath& path, NodeIndex parent, uint8_t parentPort, bool waited = false) {
    mad::MadCompletion done = [this, path, parent, parentPort](const MadResult& r) {
      if (!answered(r)) {
        if (parent == fabric::kNoNode)
          fatal = "the local port does not answer NodeInfo";
        else
          warnNoAnswer("NodeInfo", path, r);
        return;
      }
      auto info = mad::decodeNodeInfo(mad::smpData(r.response));
      if (!info) {
        warnings.push_back("DISC002 bad NodeInfo from " + path.toString() + ": " + info.error().message);
        return;
      }
      onNodeInfo(path, parent, parentPort, *info);
    };
    if (!waited) return get(mad::kAttrNodeInfo, 0, path, std::move(done));
    ++probesOut;
    get(
        mad::kAttrNodeInfo, 0, path,
        [this, path, done = std::move(done)](const MadResult& r) mutable {
          --probesOut;
          if (r.ok()) {
            done(r);
          } else {
            waits = false;
            get(mad::kAttrNodeInfo, 0, path, std::move(done));
          }
          exploreNext();
        },
        Pass::kOnce);
  }

  // Sends the probes whose turn it is (see toExplore), skipping the ports whose link is known by now.
  void exploreNext() {
    while (!toExplore.empty() && !interrupted) {
      const Explore& e = toExplore.front();
      if (probesOut > 0 && e.node != exploring) return;
      if (!isLinkKnown(e.node, e.port)) {
        exploring = e.node;
        probe(e.path, e.node, e.port, waits);
      }
      toExplore.pop_front();
    }
  }

  void onNodeInfo(const DrPath& path, NodeIndex parent, uint8_t parentPort, const mad::NodeInfo& info) {
    if (auto known = builder.findNode(info.nodeGuid)) {
      const fabric::Node& n = builder.node(*known);
      if (n.type != info.type || n.numPorts != info.numPorts) {
        warnings.push_back("DISC003 node " + fabric::toString(info.nodeGuid) +
                           " answers differently on route " + path.toString() + "; ignoring that route");
        return;
      }
      // A CA met again through another of its ports: NodeInfo tells that port's GUID.
      if (!n.isSwitch()) {
        builder.node(*known).ports[info.localPort].guid = info.portGuid;
        builder.setPortRoute(*known, fabric::PortNum{info.localPort}, path);
      }
      if (parent != fabric::kNoNode) addProbedLink({parent, parentPort, *known, info.localPort});
      // Targeted mode: the far end of a re-read link may have changed too (a replugged host is back in INIT).
      if (failOnNoAnswer) queryPort(*known, path, info.localPort, info.localPort, n.isSwitch());
      return;
    }
    fabric::Node node;
    node.type = info.type;
    node.guid = info.nodeGuid;
    node.systemGuid = info.systemGuid;
    node.vendorId = info.vendorId;
    node.deviceId = info.deviceId;
    node.revision = info.revision;
    node.partitionCap = info.partitionCap;
    node.numPorts = info.numPorts;
    auto added = builder.addNode(std::move(node));
    if (!added) {
      warnings.push_back("DISC004 " + added.error().message);
      return;
    }
    NodeIndex idx = *added;
    builder.setRoute(idx, path);
    fabric::Node& n = builder.node(idx);
    if (info.type == fabric::NodeType::kSwitch) {
      n.ports[0].guid = info.portGuid;
    } else {
      n.ports[info.localPort].guid = info.portGuid;
      builder.setPortRoute(idx, fabric::PortNum{info.localPort}, path);
    }
    portInfo.push_back(std::vector<RawAttr>(info.numPorts + 1u));
    switchInfo.resize(switchInfo.size() + 1);  // a row of its own once SwitchInfo answers
    if (parent == fabric::kNoNode)
      smPortNum = info.localPort;
    else
      addProbedLink({parent, parentPort, idx, info.localPort});

    get(mad::kAttrNodeDescription, 0, path, [this, idx, path](const MadResult& r) {
      if (answered(r))
        builder.node(idx).description = mad::decodeNodeDescription(mad::smpData(r.response));
      else
        warnNoAnswer("NodeDescription", path, r);
    });
    if (info.type == fabric::NodeType::kSwitch) {
      get(mad::kAttrSwitchInfo, 0, path, [this, idx, path](const MadResult& r) {
        if (!answered(r)) return warnNoAnswer("SwitchInfo", path, r);
        std::copy_n(mad::smpData(r.response), 64, switchInfo[idx].begin());
        builder.node(idx).sw = mad::decodeSwitchInfo(mad::smpData(r.response));
      });
      for (unsigned p = 0; p <= info.numPorts; ++p)
        queryPort(idx, path, static_cast<uint8_t>(p), info.localPort, true);
    } else {
      // A CA or router: PortInfo of every port (the SMP cannot pass through it, so nothing to explore).
      for (unsigned p = 1; p <= info.numPorts; ++p)
        queryPort(idx, path, static_cast<uint8_t>(p), info.localPort, false);
    }
  }

  void queryPort(NodeIndex idx, const DrPath& path, uint8_t port, uint8_t arrivalPort, bool isSwitch) {
    get(mad::kAttrPortInfo, port, path, [=, this](const MadResult& r) {
      if (!answered(r)) return warnNoAnswer(("PortInfo " + std::to_string(port)).c_str(), path, r);
      onPortInfo(idx, path, port, arrivalPort, isSwitch, mad::smpData(r.response));
    });
  }

  void onPortInfo(NodeIndex idx, const DrPath& path, uint8_t port, uint8_t arrivalPort, bool isSwitch,
                  const uint8_t* data) {
    std::copy_n(data, 64, portInfo[idx][port].begin());
    fabric::PortAttrs attrs = mad::decodePortInfo(data);
    builder.node(idx).ports[port].attrs = attrs;
    // Explore every other linked port of a switch; from a CA only the SM's own port, when the CA is local.
    bool local = path.count == 0;
    bool explore = isSwitch ? port != 0 && (port != arrivalPort || local) : local && port == arrivalPort;
    if (!explore || attrs.physState != kLinkUp) return;
    const fabric::Guid guid = builder.node(idx).guid;
    if (std::find(heldDown.begin(), heldDown.end(), std::pair{guid, port}) != heldDown.end()) {
      heldDownSeen.emplace_back(guid, port);
      return;
    }
    if (auto known = activeLinks.find({idx, port});
        known != activeLinks.end() && attrs.state == fabric::PortState::kActive) {
      links.push_back(known->second);
      return;
    }
    auto next = path.extended(port);
    if (!next) {
      fatal = "node beyond the directed-route limit of " + std::to_string(DrPath::kMaxHops) +
              " hops, behind route " + path.toString() + "," + std::to_string(port);
      return;
    }
    toExplore.push_back({idx, port, *next});
    exploreNext();
  }
};

}  // namespace

namespace {

// Whether the directed route leads from the SM's node (node 0) over linked ports to `node`, arriving on
// `port` unless that is 0 (a DR SMP is forwarded by switches only).
bool leadsTo(const fabric::TopologyBuilder& b, const DrPath& route, NodeIndex node, fabric::PortNum port) {
  if (route.count == 0) return false;
  NodeIndex at = 0;
  fabric::PortNum arrived{};
  for (uint8_t i = 1; i <= route.count; ++i) {  // hops[1..count]
    const fabric::Node& n = b.node(at);
    const uint8_t p = route.hops[i];
    if ((i > 1 && !n.isSwitch()) || p == 0 || p > n.numPorts || !n.ports[p].connected()) return false;
    at = n.ports[p].peerNode;
    arrived = n.ports[p].peerPort;
  }
  return at == node && (port.value == 0 || arrived == port);
}

// Ports found without their link: both ends of each, as (node, port).
using DeadPorts = std::set<std::pair<NodeIndex, uint8_t>>;

// Directed routes breadth-first from the SM's port that pass through no `avoid` switch and over no dead port
// (a DR SMP never passes through a CA). The walk keeps each node's parent only, and goes only as far as the
// nodes asked for (a few switches near a lost link are): a route is made when asked for.
class RoutesAvoiding {
 public:
  RoutesAvoiding(const fabric::Topology& topo, const std::vector<bool>& avoid, const DeadPorts& dead)
      : topo_(topo), avoid_(avoid), dead_(dead), via_(topo.size(), {fabric::kNoNode, 0}), queue_{0} {
    via_[0] = {0, 0};
  }
  // nullopt when the walk does not reach n, or only past the directed-route hop limit.
  std::optional<DrPath> operator()(NodeIndex n) {
    while (via_[n].first == fabric::kNoNode && head_ < queue_.size()) step();
    if (via_[n].first == fabric::kNoNode) return std::nullopt;
    std::vector<uint8_t> ports;
    for (; n != 0; n = via_[n].first) ports.push_back(via_[n].second);
    std::optional<DrPath> route = DrPath{};
    for (size_t i = ports.size(); i-- > 0 && route;) route = route->extended(ports[i]);
    return route;
  }

 private:
  void step() {  // the links of the next node in the walk
    const NodeIndex at = queue_[head_++];
    const fabric::Node& n = topo_.node(at);
    for (unsigned p = 1; p <= n.numPorts && p < n.ports.size(); ++p) {
      const fabric::Port& port = n.ports[p];
      if (!port.connected() || via_[port.peerNode].first != fabric::kNoNode ||
          (at == 0 && !n.isSwitch() && p != topo_.smPort().value) ||
          dead_.contains({at, static_cast<uint8_t>(p)}))
        continue;
      via_[port.peerNode] = {at, static_cast<uint8_t>(p)};
      if (topo_.node(port.peerNode).isSwitch() && !avoid_[port.peerNode]) queue_.push_back(port.peerNode);
    }
  }
  const fabric::Topology& topo_;
  const std::vector<bool>& avoid_;
  const DeadPorts& dead_;
  std::vector<std::pair<NodeIndex, uint8_t>> via_;  // (parent, its port); parent kNoNode: not reached
  std::vector<NodeIndex> queue_;
  size_t head_ = 0;
};

// Whether the directed route passes a dead port or through an `avoid` switch before its end.
bool crosses(const fabric::Topology& topo, const DrPath& route, const std::vector<bool>& avoid,
             const DeadPorts& dead) {
  NodeIndex at = 0;
  for (uint8_t i = 1; i <= route.count; ++i) {
    const fabric::Node& n = topo.node(at);
    const uint8_t p = route.hops[i];
    if ((i > 1 && avoid[at]) || dead.contains({at, p}) || p >= n.ports.size() || !n.ports[p].connected())
      return true;
    at = n.ports[p].peerNode;
  }
  return false;
}

// Applies the links, drops nodes the SM cannot reach any more, gives every node a directed route that leads
// to it (breadth-first from the SM's port where its old one does not; a DR SMP never passes through a CA) and
// builds the snapshot.
fabric::Result<DiscoveryResult> finish(Sweep& sweep) {
  if (sweep.fatal) return fabric::makeError(*sweep.fatal);
  if (sweep.builder.size() == 0) return fabric::makeError("discovery found no node");
  for (const auto& l : sweep.links) {
    auto linked = sweep.builder.connect(l.a, fabric::PortNum{l.pa}, l.b, fabric::PortNum{l.pb});
    if (!linked) sweep.warnings.push_back("DISC005 inconsistent link: " + linked.error().message);
  }
  // A node (or CA port) keeps the directed route it has while that still leads to it (a re-discovery then
  // writes only the routes that ran over a changed link); otherwise it gets a breadth-first one. The switches
  // breadth-first from the SM's port (only they forward a DR SMP; the SM's node only on its own port); every
  // other node from the ports of the reached switches (and of the SM node) as they are walked: those name
  // the node and port on the other side, so the rows of the CAs, the most numerous nodes, are not read, only
  // their routes. A CA port keeps a route that leads there or gets the breadth-first one; the node keeps its
  // own route when it leads there through a port reached, else takes its lowest reached port's.
  fabric::TopologyBuilder& old = sweep.builder;
  const fabric::TopologyBuilder& read =
      old;  // nodes a re-discovery shares are written only where they change
  const size_t count = old.size();
  constexpr uint32_t kNotReached = UINT32_MAX;
  const std::vector<uint8_t> isSwitch = read.switchFlags();
  std::vector<uint32_t> at(count, kNotReached);  // a reached switch's (or the SM node's) place in `forwards`
  std::vector<NodeIndex> forwards{0};            // the local node is always the first one added
  std::vector<DrPath> bfs{DrPath{}};             // their breadth-first routes
  std::vector<uint8_t> firstPort(count, 0), firstHop(count, 0), nodeRouted(count, 0);
  std::vector<uint32_t> firstVia(count, kNotReached);  // the place in `forwards` of firstPort's switch
  at[0] = 0;
  old.setRoute(0, DrPath{});
  for (size_t head = 0; head < forwards.size(); ++head) {
    const fabric::Node& n = read.node(forwards[head]);
    for (unsigned p = 1; p <= n.numPorts; ++p) {
      const fabric::Port& port = n.ports[p];
      const NodeIndex i = port.peerNode;
      if (!port.connected() || at[i] != kNotReached || (!n.isSwitch() && p != sweep.smPortNum)) continue;
      auto route = bfs[head].extended(static_cast<uint8_t>(p));
      if (!route) continue;  // beyond the hop limit: discovery already failed for such nodes
      if (isSwitch[i]) {
        at[i] = static_cast<uint32_t>(forwards.size());
        forwards.push_back(i);
        bfs.push_back(*route);
        // A route equal to the breadth-first one leads there (most do): only others are walked.
        if (const DrPath& had = read.route(i); had != *route && !leadsTo(read, had, i, {}))
          old.setRoute(i, *route);
        continue;
      }
      const fabric::PortNum in = port.peerPort;
      if (const DrPath& had = read.portRoute(i, in); had != *route && !leadsTo(read, had, i, in))
        old.setPortRoute(i, in, *route);
      if (!nodeRouted[i]) {
        const DrPath& had = read.route(i);
        nodeRouted[i] = had == *route || leadsTo(read, had, i, in);
      }
      if (!firstPort[i] || in.value < firstPort[i]) {
        firstPort[i] = in.value;
        firstHop[i] = static_cast<uint8_t>(p);
        firstVia[i] = static_cast<uint32_t>(head);
      }
    }
  }
  std::vector<bool> reached(count, false);
  size_t reachedCount = 0;
  for (NodeIndex i = 0; i < count; ++i) {
    if (at[i] == kNotReached && !firstPort[i]) continue;
    if (at[i] == kNotReached && !nodeRouted[i]) old.setRoute(i, *bfs[firstVia[i]].extended(firstHop[i]));
    reached[i] = true;
    ++reachedCount;
  }
  DiscoveryResult result;
  // When every node is still reached (a re-discovery usually reaches them all), the nodes keep their numbers
  // (what the repair and the programmers' caches like best): then the sweep's own builder is the result,
  // links, routes and all, with no second copy of the fabric. Otherwise the nodes reached keep their order;
  // the local node is number 0 either way.
  if (reachedCount == count) {
    old.setSmPort(0, fabric::PortNum{sweep.smPortNum});
    auto topo = std::move(old).build();
    if (!topo) return topo.error();
    result.topology = std::move(*topo);
    result.portInfo = std::move(sweep.portInfo);
    result.switchInfo = std::move(sweep.switchInfo);
    result.heldDown = std::move(sweep.heldDownSeen);
    result.stats.warnings = std::move(sweep.warnings);
    return result;
  }
  fabric::TopologyBuilder fresh;
  std::vector<NodeIndex> newIndex(count, fabric::kNoNode);
  for (NodeIndex o = 0; o < count; ++o) {
    if (!reached[o]) continue;
    fabric::Node n = read.node(o);
    for (auto& port : n.ports) port.peerNode = fabric::kNoNode;
    if (auto i = fresh.addNode(std::move(n))) {  // GUIDs are unique in `old`
      fresh.shareRoutes(*i, old, o);
      newIndex[o] = *i;
    }
    result.portInfo.pushShared(sweep.portInfo, o);
    result.switchInfo.pushShared(sweep.switchInfo, o);
  }
  for (NodeIndex o = 0; o < count; ++o) {
    if (!reached[o]) continue;
    const fabric::Node& n = read.node(o);
    for (unsigned p = 1; p <= n.numPorts; ++p) {
      const fabric::Port& port = n.ports[p];
      if (port.connected() && newIndex[port.peerNode] != fabric::kNoNode)
        (void)fresh.connect(newIndex[o], fabric::PortNum{static_cast<uint8_t>(p)}, newIndex[port.peerNode],
                            port.peerPort);
    }
  }
  fresh.setSmPort(0, fabric::PortNum{sweep.smPortNum});
  sweep.warnings.push_back("DISC006 " + std::to_string(count - reachedCount) +
                           " node(s) no longer reachable");
  auto topo = std::move(fresh).build();
  if (!topo) return topo.error();
  result.topology = std::move(*topo);
  result.heldDown = std::move(sweep.heldDownSeen);
  result.stats.warnings = std::move(sweep.warnings);
  return result;
}

}  // namespace

fabric::Result<DiscoveryResult> Discoverer::discover(const std::function<bool()>& interrupt) {
  const mad::TimePoint start = clock_.now();
  const mad::MadCounters before = engine_.counters();
  auto sweep = std::make_unique<Sweep>(engine_);
  sweep->interrupt = interrupt;
  sweep->probe(DrPath{}, fabric::kNoNode, 0);
  sweep->run();
  if (sweep->interrupted) return fabric::makeError("interrupted");
  auto result = finish(*sweep);
  if (result) fillStats(result->stats, before, start, sweep->lost);
  return result;
}

fabric::Result<DiscoveryResult> Discoverer::rediscover(
    const DiscoveryResult& previous, const std::vector<NodeIndex>& changed,
    const std::vector<std::pair<fabric::Guid, uint8_t>>& heldDown) {
  const mad::TimePoint start = clock_.now();
  const mad::MadCounters before = engine_.counters();
  const fabric::Topology& topo = *previous.topology;
  std::vector<bool> isChanged(topo.size(), false), silent(topo.size(), false);
  std::vector<NodeIndex> toRead;
  for (NodeIndex n : changed)
    if (n < topo.size() && topo.node(n).isSwitch() && !isChanged[n]) {
      isChanged[n] = true;
      toRead.push_back(n);
    }
  // Routes that avoid silent switches, for the switches read around them (see below).
  std::map<NodeIndex, DrPath> via;
  DeadPorts dead;
  // A neighbour's port facing a silent switch: the route it was asked on and its PhysicalPortState.
  struct Facing {
    DrPath route;
    std::optional<uint8_t> physState;
  };
  std::map<std::pair<NodeIndex, uint8_t>, Facing> facing;
  auto routeOf = [&](NodeIndex n) {
    auto it = via.find(n);
    return it != via.end() ? it->second : topo.route(n);
  };

  // First the changed switches' PortInfo. A port is as the SM left it when it is still ACTIVE with its link
  // (a link that came back starts in INIT), or still has no link; and port 0 keeps its LID.
  struct Read {
    NodeIndex node;
    uint8_t port;
    std::optional<RawAttr> data;
  };
  std::vector<Read> reads;
  // previous.heldDown: the ports found up but kept down by a hold. One whose hold has ended is to be brought
  // up now; holds on ports that are down (the link that just went down starts one) change nothing read here.
  bool same = std::all_of(previous.heldDown.begin(), previous.heldDown.end(), [&](const auto& p) {
    return std::find(heldDown.begin(), heldDown.end(), p) != heldDown.end();
  });
  // In rounds: a switch whose link to a changed one is lost is read too (a switch that died takes all its
  // links, and its neighbours' traps and PortStateChange come in pieces over seconds). A changed switch that
  // does not answer on its route (dead, or behind a link that is) is read around instead: its neighbours are
  // asked about their ports facing it, on routes that avoid it. If one of them still sees the link up, it is
  // alive and read through that neighbour; otherwise it is gone with all its links. A heavy sweep is left for
  // what this cannot reach.
  for (int round = 0; !toRead.empty() && round < 4; ++round) {
    const size_t first = reads.size();
    for (NodeIndex i : toRead)
      for (unsigned p = 0; p <= topo.node(i).numPorts; ++p) reads.push_back({i, static_cast<uint8_t>(p), {}});
    auto ask = [&](size_t k, mad::RequestOptions attempts, auto then) {
      Read& rd = reads[k];
      engine_.submit(
          mad::makeDirectedSmp(mad::kGet, mad::kAttrPortInfo, rd.port, routeOf(rd.node)),
          [&rd, &same, &topo, then](const MadResult& r) {
            if (!r.ok() || r.header.status != 0) return void(same = false);
            rd.data.emplace();
            std::copy_n(mad::smpData(r.response), rd.data->size(), rd.data->begin());
            const fabric::PortAttrs now = mad::decodePortInfo(rd.data->data());
            const fabric::Port& was = topo.node(rd.node).ports[rd.port];
            if (rd.port == 0)
              same = same && now.lid == was.attrs.lid;
            else if (was.connected())
              same = same && was.attrs.state == fabric::PortState::kActive &&
                     now.state == fabric::PortState::kActive;
            else
              same = same && now.physState != kLinkUp;
            then();
          },
          attempts);
    };
    // Port 0 first, with one short attempt: a switch on a route through a dead link (or dead itself) costs
    // that, not every port with every retry. Its other ports are asked once it answers (a switch silent by
    // loss alone is found alive through a neighbour below).
    for (size_t k = first; k < reads.size(); k += topo.node(reads[k].node).numPorts + 1u)
      ask(k, mad::RequestOptions{{}, 1}, [&ask, k, n = topo.node(reads[k].node).numPorts] {
        for (size_t j = 1; j <= n; ++j) ask(k + j, {}, [] {});
      });
    engine_.runUntilIdle();
    toRead.clear();
    auto readAlso = [&](NodeIndex n) {
      if (isChanged[n] || silent[n]) return;
      isChanged[n] = true;
      toRead.push_back(n);
    };
    std::vector<NodeIndex> quiet;
    for (size_t k = first; k < reads.size(); ++k) {
      const Read& rd = reads[k];
      if (rd.port == 0) {
        if (!rd.data) quiet.push_back(rd.node);
        continue;
      }
      const fabric::Port& was = topo.node(rd.node).ports[rd.port];
      if (!rd.data || !was.connected() ||
          mad::decodePortInfo(rd.data->data()).state == fabric::PortState::kActive)
        continue;
      dead.insert({rd.node, rd.port});
      dead.insert({was.peerNode, was.peerPort.value});
      if (topo.node(was.peerNode).isSwitch()) readAlso(was.peerNode);
    }
    // What was read of the silent ones on their old routes failed: each neighbour is asked about its port
    // facing it, on a route that avoids lost links and silent switches. One that still sees the link up
    // brings it back, read through that neighbour next round; else it stays silent (gone, see below).
    for (NodeIndex x : quiet) {
      silent[x] = true;
      isChanged[x] = false;
    }
    std::erase_if(reads, [&](const Read& rd) { return silent[rd.node]; });
    std::optional<RoutesAvoiding> around;
    auto reachable = [&](NodeIndex n) -> std::optional<DrPath> {
      if (!crosses(topo, routeOf(n), silent, dead)) return routeOf(n);
      if (!around) around.emplace(topo, silent, dead);
      return (*around)(n);
    };
    for (NodeIndex x : quiet)
      for (unsigned p = 1; p <= topo.node(x).numPorts && p < topo.node(x).ports.size(); ++p) {
        const fabric::Port& port = topo.node(x).ports[p];
        if (!port.connected() || !topo.node(port.peerNode).isSwitch() || silent[port.peerNode]) continue;
        auto r = reachable(port.peerNode);
        if (!r) continue;
        Facing& f = facing[{port.peerNode, port.peerPort.value}];
        f = Facing{*r, std::nullopt};
        engine_.submit(mad::makeDirectedSmp(mad::kGet, mad::kAttrPortInfo, port.peerPort.value, *r),
                       [&f](const MadResult& res) {
                         if (res.ok() && res.header.status == 0)
                           f.physState = mad::decodePortInfo(mad::smpData(res.response)).physState;
                       });
      }
    engine_.runUntilIdle();
    for (NodeIndex x : quiet)
      for (unsigned p = 1; p <= topo.node(x).numPorts && p < topo.node(x).ports.size() && silent[x]; ++p) {
        const fabric::Port& port = topo.node(x).ports[p];
        auto f = facing.find({port.peerNode, port.peerPort.value});
        if (f == facing.end() || f->second.physState != kLinkUp) continue;
        if (auto r = f->second.route.extended(port.peerPort.value)) {
          silent[x] = false;
          isChanged[x] = true;
          via[x] = *r;
          toRead.push_back(x);
        }
      }
    // The switches to read next whose routes pass a lost link or a silent switch are read around them; one
    // that has no such route is cut off (dropped when the snapshot is built) and not read.
    around.reset();  // silent switches came back
    std::erase_if(toRead, [&](NodeIndex n) {
      if (auto r = reachable(n)) return via[n] = *r, false;
      isChanged[n] = false;
      return true;
    });
  }
  for (NodeIndex n : toRead)  // left after the last round: asked below
    for (unsigned p = 0; p <= topo.node(n).numPorts; ++p) reads.push_back({n, static_cast<uint8_t>(p), {}});
  // A silent switch is gone only when each switch it was linked to is silent too or answered that its port
  // facing it has no link. Otherwise (a neighbour not reached) it is asked on its old route below, and a
  // heavy sweep follows when that fails.
  for (NodeIndex x = 0; x < topo.size(); ++x) {
    if (!silent[x]) continue;
    same = false;
    bool gone = true;
    for (unsigned p = 1; p <= topo.node(x).numPorts && p < topo.node(x).ports.size(); ++p) {
      const fabric::Port& port = topo.node(x).ports[p];
      if (!port.connected() || !topo.node(port.peerNode).isSwitch() || silent[port.peerNode]) continue;
      auto f = facing.find({port.peerNode, port.peerPort.value});
      gone = gone && f != facing.end() && f->second.physState && *f->second.physState != kLinkUp;
    }
    if (gone) continue;
    silent[x] = false;
    isChanged[x] = true;
    for (unsigned p = 0; p <= topo.node(x).numPorts; ++p) reads.push_back({x, static_cast<uint8_t>(p), {}});
  }
  if (same) {
    DiscoveryResult result;
    result.topology = previous.topology;
    result.heldDown = previous.heldDown;
    result.unchanged = true;
    fillStats(result.stats, before, start, 0);
    return result;
  }

  // Something changed: patch the previous topology, exploring from the changed switches' ports. The nodes,
  // their PortInfo and the links of the others are shared with it, not copied.
  auto sweep = std::make_unique<Sweep>(engine_);
  sweep->failOnNoAnswer = true;
  sweep->heldDown = heldDown;
  sweep->builder = fabric::TopologyBuilder(topo);
  sweep->portInfo = previous.portInfo;
  sweep->switchInfo = previous.switchInfo;
  sweep->smPortNum = topo.smPort().value;
  for (NodeIndex i = 0; i < topo.size(); ++i) {
    if (silent[i]) {  // gone: its links go with it (a node left unreachable is dropped)
      for (unsigned p = 1; p <= topo.node(i).numPorts && p < topo.node(i).ports.size(); ++p)
        sweep->builder.disconnect(i, fabric::PortNum{static_cast<uint8_t>(p)});
      continue;
    }
    if (!isChanged[i]) continue;
    const fabric::Node& n = topo.node(i);
    // A port still ACTIVE keeps its known peer; every other one is explored again: the one towards the SM
    // included (its link may be what changed). Either way the link is unlinked here and comes back as found.
    for (unsigned p = 1; p <= n.numPorts && p < n.ports.size(); ++p) {
      const fabric::Port& port = n.ports[p];
      if (port.connected() && port.attrs.valid && port.attrs.state == fabric::PortState::kActive)
        sweep->activeLinks[{i, static_cast<uint8_t>(p)}] = {i, static_cast<uint8_t>(p), port.peerNode,
                                                            port.peerPort.value};
      sweep->builder.disconnect(i, fabric::PortNum{static_cast<uint8_t>(p)});
    }
  }
  // The answers already read are used as they are; a port that did not answer is asked again.
  for (const Read& rd : reads) {
    if (rd.data)
      sweep->onPortInfo(rd.node, routeOf(rd.node), rd.port, 0xFF, true, rd.data->data());
    else
      sweep->queryPort(rd.node, routeOf(rd.node), rd.port, 0xFF, true);
  }
  sweep->run();
  auto result = finish(*sweep);
  if (result) fillStats(result->stats, before, start, sweep->lost);
  return result;
}

void Discoverer::fillStats(DiscoveryStats& stats, const mad::MadCounters& before, mad::TimePoint start,
                           size_t lost) const {
  const mad::MadCounters& after = engine_.counters();
  stats.smps = after.sent - before.sent;
  stats.timeouts = after.timeouts - before.timeouts;
  stats.failed = lost;
  stats.elapsed = clock_.now() - start;
}

}  // namespace ibsm::daemon
