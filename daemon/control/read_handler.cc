// ReadHandler: the answers to read-only requests (status, nodes, switches, lids, links, routes, path, ar,
// events, check, topology), built from the published ControlView.
#include <algorithm>
#include <cstdio>

#include "daemon/control/control_protocol.h"
#include "daemon/control/protocol_helpers.h"
#include "fabric/topology_file.h"
#include "routing/pattern_checker.h"
#include "routing/route_checker.h"

namespace ibsm::daemon {

using detail::describeName;
using detail::Failure;
using detail::isoTime;
using detail::lidOwnerRef;
using detail::lidValue;
using detail::nodeLabel;
using detail::nodeRef;
using detail::unixMs;
using fabric::Guid;
using fabric::Lid;
using fabric::Node;
using fabric::NodeIndex;
using fabric::NodeType;
using fabric::PortNum;
using fabric::PortState;
using fabric::Topology;
using routing::LidAssignment;

namespace {

std::vector<unsigned> portsOf(const routing::PortMask& m) {
  std::vector<unsigned> v;
  for (unsigned p = 0; p < m.size(); ++p)
    if (m.test(p)) v.push_back(p);
  return v;
}

const routing::ArTable* arTable(const routing::RoutingTables& t, NodeIndex n) {
  return n < t.ar.size() ? &t.ar[n] : nullptr;
}

std::vector<unsigned> arPorts(const routing::RoutingTables& t, NodeIndex n, Lid lid) {
  const routing::ArTable* ar = arTable(t, n);
  if (!ar || lid.value >= ar->lidToGroup.size()) return {};
  uint16_t g = ar->lidToGroup[lid.value];
  if (g == routing::ArTable::kNoGroup || g >= ar->groups.size()) return {};
  return portsOf(ar->groups[g]);
}

const SubnetSnapshot& needSnapshot(const ControlView& view) {
  if (!view.snapshot || !view.snapshot->topology)
    throw Failure(ErrorCode::kUnavailable, "no sweep has completed yet; try again shortly");
  return *view.snapshot;
}

// Argument access with type checks.
const Json* arg(const Request& r, const char* name) {
  auto it = r.args.find(name);
  return it == r.args.end() || it->is_null() ? nullptr : &*it;
}
const Json& requiredArg(const Request& r, const char* name) {
  const Json* v = arg(r, name);
  if (!v) throw Failure(ErrorCode::kBadRequest, r.command + ": missing argument '" + name + "'");
  if (!v->is_string() && !v->is_number_integer())
    throw Failure(ErrorCode::kBadRequest,
                  r.command + ": argument '" + name + "' must be a string or a number");
  return *v;
}
uint64_t uintArg(const Request& r, const char* name, uint64_t dflt, uint64_t max) {
  const Json* v = arg(r, name);
  if (!v) return dflt;
  if (!v->is_number_integer() ||
      (v->is_number_integer() && !v->is_number_unsigned() && v->get<int64_t>() < 0))
    throw Failure(ErrorCode::kBadRequest,
                  r.command + ": argument '" + name + "' must be a non-negative integer");
  return std::min<uint64_t>(v->get<uint64_t>(), max);
}
std::string stringArg(const Request& r, const char* name, std::string dflt) {
  const Json* v = arg(r, name);
  if (!v) return dflt;
  if (!v->is_string())
    throw Failure(ErrorCode::kBadRequest, r.command + ": argument '" + name + "' must be a string");
  return v->get<std::string>();
}

NodeIndex needNode(const SubnetSnapshot& s, const Json& name) {
  auto n = resolveNode(*s.topology, s.lids, name);
  if (!n) throw Failure(ErrorCode::kNotFound, n.error().message);
  return *n;
}

NodeIndex needSwitch(const SubnetSnapshot& s, const Json& name) {
  NodeIndex n = needNode(s, name);
  if (!s.topology->node(n).isSwitch())
    throw Failure(ErrorCode::kNotFound, describeName(name) + " is a " +
                                            std::string(nodeTypeName(s.topology->node(n).type)) +
                                            ", not a switch");
  return n;
}

// ---- the commands
// ------------------------------------------------------------------------------------------

Json doStatus(const ControlView& v) {
  const StatusInfo& st = v.status;
  Json j;
  j["state"] = st.state;
  j["role"] = st.state == "MASTER" ? "master" : st.state == "STANDBY" ? "standby" : "none";
  j["priority"] = st.priority;
  j["sweeps"] = st.sweeps;
  j["sweeping"] = st.sweeping;
  if (st.sweeping) j["sweep_cause"] = st.sweepCause;
  j["subnet_up"] = st.subnetUp;
  if (st.subnetUpSince) {
    j["subnet_up_since"] = isoTime(*st.subnetUpSince);
    j["subnet_up_since_ms"] = unixMs(*st.subnetUpSince);
  }
  j["last_sweep"] = st.lastSweep ? toJson(*st.lastSweep) : Json(nullptr);
  j["sweep_interval_s"] = st.sweepIntervalS;
  const mad::MadCounters& m = st.mad;
  j["mad"] = {{"sent", m.sent},
              {"received", m.received},
              {"responses", m.responses},
              {"timeouts", m.timeouts},
              {"retries", m.retries},
              {"failed", m.failed},
              {"dropped", m.dropped},
              {"unexpected", m.unexpected},
              {"unsolicited", m.unsolicited},
              {"send_errors", m.sendErrors}};
  j["traps"] = {{"received", st.traps.received},
                {"malformed", st.traps.malformed},
                {"duplicates", st.traps.duplicates},
                {"bad_mkey", st.traps.badMkey}};
  j["ar"] = {{"probes", st.ar.probes}, {"capable", st.ar.capable}, {"incapable", st.ar.incapable}};
  Json sms = Json::array();
  for (const auto& o : st.otherSms)
    sms.push_back({{"guid", fabric::toString(o.guid)},
                   {"lid", o.lid},
                   {"priority", o.priority},
                   {"state", o.state},
                   {"answered", o.answered},
                   {"sm_key_ok", o.keyOk}});
  j["other_sms"] = std::move(sms);
  j["master_guid"] = st.master ? Json(fabric::toString(*st.master)) : Json(nullptr);
  j["act_count"] = st.actCount;
  j["sm_key_mismatches"] = st.smBadKeys;
  j["sa_busy_not_master"] = st.saBusy;
  j["log_level"] = st.logLevel;
  j["pid"] = st.pid;
  j["started"] = isoTime(st.started);
  j["started_ms"] = unixMs(st.started);
  j["config"] = st.configPath;
  j["protocol"] = kProtocolVersion;
  if (v.snapshot && v.snapshot->topology) {
    const SubnetSnapshot& s = *v.snapshot;
    const Topology& t = *s.topology;
    size_t caPorts = 0, endports = 0;
    for (NodeIndex n : t.cas())
      for (unsigned p = 1; p <= t.node(n).numPorts; ++p)
        if (t.node(n).ports[p].connected()) ++caPorts;
    for (NodeIndex n = 0; n < t.size(); ++n)
      for (unsigned p = 0; p <= t.node(n).numPorts; ++p)
        if (s.lids.base(n, PortNum{static_cast<uint8_t>(p)}).value) ++endports;
    j["fabric"] = {{"nodes", t.size()},
                   {"switches", t.switches().size()},
                   {"cas", t.cas().size()},
                   {"ca_ports", caPorts},
                   {"links", t.links().size()},
                   {"endports_with_lid", endports},
                   {"max_lid", s.lids.maxLid().value},
                   {"lmc", s.lids.lmc()}};
    j["routing"] = {{"engine", s.tables.engine}, {"ar", !s.tables.ar.empty()}};
    if (t.smNode() != fabric::kNoNode) j["sm_port"] = nodeRef(t, s.lids, t.smNode(), t.smPort());
  } else {
    j["fabric"] = nullptr;
  }
  return j;
}

Json doNodes(const SubnetSnapshot& s, const Request& r) {
  std::string type = stringArg(r, "type", "");
  if (!type.empty() && type != "SW" && type != "CA" && type != "RT")
    throw Failure(ErrorCode::kBadRequest, "nodes: type must be SW, CA or RT");
  const Topology& t = *s.topology;
  Json list = Json::array();
  for (NodeIndex n = 0; n < t.size(); ++n) {
    const Node& node = t.node(n);
    if (!type.empty() && type != nodeTypeName(node.type)) continue;
    Json j = {{"guid", fabric::toString(node.guid)},
              {"type", nodeTypeName(node.type)},
              {"description", node.description},
              {"ports", node.numPorts},
              {"system_guid", fabric::toString(node.systemGuid)},
              {"vendor_id", node.vendorId},
              {"device_id", node.deviceId},
              {"revision", node.revision}};
    size_t linked = 0;
    Json endports = Json::array();
    for (unsigned p = node.isSwitch() ? 0 : 1; p <= node.numPorts; ++p) {
      PortNum pn{static_cast<uint8_t>(p)};
      if (p > 0 && node.ports[p].connected()) ++linked;
      if (node.isSwitch() && p > 0) continue;
      routing::LidRange range = s.lids.range(n, pn);
      if (!node.isSwitch() && !node.ports[p].connected() && !range.base.value) continue;
      endports.push_back({{"port", p},
                          {"guid", fabric::toString(node.ports[p].guid)},
                          {"lid", range.base.value},
                          {"lmc", range.lmc}});
    }
    j["linked_ports"] = linked;
    j["endports"] = std::move(endports);
    j["lid"] = nodeRef(t, s.lids, n)["lid"];
    list.push_back(std::move(j));
  }
  return {{"nodes", std::move(list)}};
}

Json doSwitches(const SubnetSnapshot& s) {
  const Topology& t = *s.topology;
  Json list = Json::array();
  for (NodeIndex n : t.switches()) {
    const Node& node = t.node(n);
    size_t linked = 0;
    for (unsigned p = 1; p <= node.numPorts; ++p)
      if (node.ports[p].connected()) ++linked;
    size_t entries = 0;
    size_t lftSize = n < s.tables.lft.size() ? s.tables.lft[n].size() : 0;
    if (lftSize)
      for (uint8_t port : s.tables.lft[n])
        if (port <= node.numPorts) ++entries;
    const routing::ArTable* ar = arTable(s.tables, n);
    list.push_back({{"guid", fabric::toString(node.guid)},
                    {"description", node.description},
                    {"lid", s.lids.base(n, PortNum{0}).value},
                    {"ports", node.numPorts},
                    {"linked_ports", linked},
                    {"lft_top", lftSize ? lftSize - 1 : 0},
                    {"lft_entries", entries},
                    {"lft_cap", node.sw.linearFdbCap},
                    {"ar_groups", ar ? ar->groups.size() : 0},
                    {"enhanced_port0", node.sw.enhancedPort0}});
  }
  return {{"switches", std::move(list)}};
}

Json doLids(const SubnetSnapshot& s) {
  const Topology& t = *s.topology;
  Json list = Json::array();
  for (unsigned l = 1; l <= s.lids.maxLid().value; ++l) {
    Lid lid{static_cast<uint16_t>(l)};
    routing::LidOwner o = s.lids.owner(lid);
    if (o.node == fabric::kNoNode || o.node >= t.size() || s.lids.base(o.node, o.port) != lid) continue;
    const Node& node = t.node(o.node);
    routing::LidRange range = s.lids.range(o.node, o.port);
    list.push_back({{"lid", l},
                    {"lmc", range.lmc},
                    {"last_lid", l + range.count() - 1},
                    {"type", nodeTypeName(node.type)},
                    {"guid", fabric::toString(node.ports[o.port.value].guid)},
                    {"node_guid", fabric::toString(node.guid)},
                    {"port", o.port.value},
                    {"description", node.description}});
  }
  return {{"lids", std::move(list)}};
}

Json doLinks(const SubnetSnapshot& s, bool activated) {
  const Topology& t = *s.topology;
  Json list = Json::array();
  auto end = [&](NodeIndex n, PortNum p) {
    Json j = nodeRef(t, s.lids, n);
    j["port"] = p.value;
    return j;
  };
  for (const fabric::Link& l : t.links()) {
    const fabric::Port& pa = t.node(l.a).ports[l.portA.value];
    const fabric::Port& pb = t.node(l.b).ports[l.portB.value];
    PortState sa = effectivePortState(pa, activated), sb = effectivePortState(pb, activated);
    list.push_back({{"a", end(l.a, l.portA)},
                    {"b", end(l.b, l.portB)},
                    {"width", fabric::linkWidthString(pa.attrs.widthActive)},
                    {"speed", fabric::linkSpeedString(pa.attrs.speedActive, pa.attrs.speedExtActive)},
                    {"state", portStateName(std::min(sa, sb))},
                    {"state_a", portStateName(sa)},
                    {"state_b", portStateName(sb)},
                    {"phys_state", physStateName(pa.attrs.physState)}});
  }
  return {{"links", std::move(list)}};
}

// The LIDs a `lid` argument names: one LID for a number, every LID of a node's endports for a name or GUID.
std::vector<Lid> lidsNamed(const SubnetSnapshot& s, const Json& v) {
  if (auto l = lidValue(v)) return {*l};
  NodeIndex n = needNode(s, v);
  const Node& node = s.topology->node(n);
  std::vector<Lid> out;
  for (unsigned p = node.isSwitch() ? 0 : 1; p <= (node.isSwitch() ? 0u : node.numPorts); ++p) {
    routing::LidRange r = s.lids.range(n, PortNum{static_cast<uint8_t>(p)});
    for (unsigned i = 0; r.base.value && i < r.count(); ++i)
      out.push_back(Lid{static_cast<uint16_t>(r.base.value + i)});
  }
  if (out.empty()) throw Failure(ErrorCode::kNotFound, describeName(v) + " has no LID");
  return out;
}

Json doRoutes(const SubnetSnapshot& s, const Request& r) {
  NodeIndex sw = needSwitch(s, requiredArg(r, "switch"));
  const Topology& t = *s.topology;
  const Node& node = t.node(sw);
  const routing::LftRow* lft = sw < s.tables.lft.size() ? &s.tables.lft[sw] : nullptr;
  std::vector<Lid> only;
  if (const Json* l = arg(r, "lid")) only = lidsNamed(s, *l);
  Json routes = Json::array();
  auto entry = [&](Lid lid) {
    uint8_t port = lft && lid.value < lft->size() ? (*lft)[lid.value] : routing::kNoPort;
    if (port > node.numPorts) {
      if (!only.empty())
        routes.push_back(
            {{"lid", lid.value}, {"port", nullptr}, {"destination", lidOwnerRef(t, s.lids, lid)}});
      return;
    }
    Json e = {{"lid", lid.value}, {"port", port}, {"destination", lidOwnerRef(t, s.lids, lid)}};
    auto ar = arPorts(s.tables, sw, lid);
    if (!ar.empty()) e["ar_ports"] = ar;
    routes.push_back(std::move(e));
  };
  if (!only.empty()) {
    for (Lid l : only) entry(l);
  } else if (lft) {
    for (unsigned l = 1; l < lft->size(); ++l) entry(Lid{static_cast<uint16_t>(l)});
  }
  return {{"switch", nodeRef(t, s.lids, sw)}, {"engine", s.tables.engine}, {"routes", std::move(routes)}};
}

Json doPath(const SubnetSnapshot& s, const Request& r) {
  const Topology& t = *s.topology;
  const Json& srcArg = requiredArg(r, "src");
  const Json& dstArg = requiredArg(r, "dst");
  auto src = resolveEndport(t, s.lids, srcArg);
  if (!src) throw Failure(ErrorCode::kNotFound, src.error().message);
  Lid lid;
  if (auto l = lidValue(dstArg)) lid = *l;
  auto dst = resolveEndport(t, s.lids, dstArg);
  if (!dst) throw Failure(ErrorCode::kNotFound, dst.error().message);
  if (!lid.value) lid = s.lids.base(dst->node, dst->port);
  if (!lid.value) throw Failure(ErrorCode::kNotFound, describeName(dstArg) + " has no LID");
  routing::LidOwner owner = s.lids.owner(lid);

  Json hops = Json::array();
  std::string problem;
  bool reached = false;
  NodeIndex sw = fabric::kNoNode;
  unsigned inPort = 0;
  uint8_t sl = 0;  // the engine's SL for the pair; each hop's VL from it (RoutingTables::hopVl)
  const Node& srcNode = t.node(src->node);
  if (srcNode.isSwitch()) {
    sw = src->node;
  } else {
    const fabric::Port& p = srcNode.ports[src->port.value];
    if (!p.connected())
      problem = "the source port is not linked";
    else if (t.node(p.peerNode).isSwitch()) {
      sw = p.peerNode;
      inPort = p.peerPort.value;
      sl = s.tables.pathSl(sw, lid);
    } else if (owner.node == p.peerNode && owner.port == p.peerPort) {
      reached = true;  // two CAs back to back
    } else {
      problem = "the source port is linked to a CA that does not own LID " + std::to_string(lid.value);
    }
  }
  std::vector<uint8_t> visited(t.size(), 0);
  for (int guard = 0; sw != fabric::kNoNode && guard < 64; ++guard) {
    const Node& node = t.node(sw);
    if (visited[sw]) {
      problem = "loop: the route returns to " + nodeLabel(node);
      break;
    }
    visited[sw] = 1;
    uint8_t out = s.tables.lft.size() > sw ? s.tables.port(sw, lid) : routing::kNoPort;
    Json hop = {{"switch", nodeRef(t, s.lids, sw)}, {"in_port", inPort}};
    hop["out_port"] = out <= node.numPorts ? Json(out) : Json(nullptr);
    hop["vl"] = s.tables.slLayers > 1 && out <= node.numPorts ? s.tables.hopVl(sw, inPort, out, sl) : 0;
    auto ar = arPorts(s.tables, sw, lid);
    if (!ar.empty()) hop["ar_ports"] = ar;
    hops.push_back(std::move(hop));
    NodeIndex next = fabric::kNoNode;
    if (out > node.numPorts) {
      problem = nodeLabel(node) + " has no route to LID " + std::to_string(lid.value);
    } else if (out == 0) {
      if (owner.node == sw)
        reached = true;
      else
        problem =
            nodeLabel(node) + " delivers LID " + std::to_string(lid.value) + " to itself but does not own it";
    } else if (!node.ports[out].connected()) {
      problem = nodeLabel(node) + " routes LID " + std::to_string(lid.value) + " to port " +
                std::to_string(out) + ", which is not linked";
    } else {
      const fabric::Port& p = node.ports[out];
      if (t.node(p.peerNode).isSwitch()) {
        next = p.peerNode;
        inPort = p.peerPort.value;
      } else if (owner.node == p.peerNode && owner.port == p.peerPort) {
        reached = true;
      } else {
        problem = nodeLabel(node) + " port " + std::to_string(out) + " leads to " +
                  nodeLabel(t.node(p.peerNode)) + ", which does not own LID " + std::to_string(lid.value);
      }
    }
    sw = next;
    if (sw == fabric::kNoNode) break;
    if (guard == 63) problem = "more than 64 hops";
  }
  Json j = {{"source", nodeRef(t, s.lids, src->node, src->port)},
            {"destination", owner.node != fabric::kNoNode ? nodeRef(t, s.lids, owner.node, owner.port)
                                                          : nodeRef(t, s.lids, dst->node, dst->port)},
            {"lid", lid.value},
            {"hops", std::move(hops)},
            {"reached", reached},
            {"engine", s.tables.engine},
            {"sl", sl},
            {"vl_layers", s.tables.slLayers}};
  if (!reached) j["problem"] = problem.empty() ? "the route ends nowhere" : problem;
  return j;
}

Json doAr(const SubnetSnapshot& s, const Request& r) {
  NodeIndex sw = needSwitch(s, requiredArg(r, "switch"));
  const routing::ArTable* ar = arTable(s.tables, sw);
  Json j = {{"switch", nodeRef(*s.topology, s.lids, sw)}, {"enabled", !s.tables.ar.empty()}};
  Json groups = Json::array();
  if (ar) {
    std::vector<std::vector<unsigned>> members(ar->groups.size());
    for (unsigned l = 0; l < ar->lidToGroup.size(); ++l) {
      uint16_t g = ar->lidToGroup[l];
      if (g != routing::ArTable::kNoGroup && g < members.size()) members[g].push_back(l);
    }
    for (size_t g = 0; g < ar->groups.size(); ++g)
      groups.push_back({{"group", g}, {"ports", portsOf(ar->groups[g])}, {"lids", members[g]}});
    j["capped"] = ar->capped;
  }
  j["groups"] = std::move(groups);
  return j;
}

Json doEvents(const ControlView& v, const Request& r) {
  size_t limit = uintArg(r, "limit", 50, 100000);
  uint64_t since = uintArg(r, "since", 0, UINT64_MAX);
  std::string kind = stringArg(r, "kind", "");
  Json list = Json::array();
  if (v.events)
    for (const Event& e : v.events->recent(limit, since, kind)) {
      Json f = Json::object();
      for (const auto& [k, val] : e.fields) f[k] = val;
      list.push_back({{"seq", e.seq},
                      {"time", isoTime(e.time)},
                      {"time_ms", unixMs(e.time)},
                      {"kind", e.kind},
                      {"message", e.message},
                      {"fields", std::move(f)}});
    }
  return {{"events", std::move(list)}, {"last_seq", v.events ? v.events->lastSeq() : 0}};
}

std::string pkeyHex(uint16_t k) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%04x", k);
  return buf;
}

// The partitions: each with its P_Key, IPoIB group, where it was defined and how many endports hold its key
// (full and limited); with a name, that one with every member port.
Json doPartitions(const SubnetSnapshot& s, const Request& r) {
  const std::string name = stringArg(r, "name", "");
  std::vector<fabric::Partition> defs;
  if (s.partitionDefs) defs = *s.partitionDefs;
  const fabric::Topology& t = *s.topology;
  auto members = [&](uint16_t pkey, size_t& full, size_t& limited, Json* list) {
    full = limited = 0;
    if (!s.partitions) return;
    for (NodeIndex n = 0; n < t.size(); ++n) {
      const fabric::Node& node = t.node(n);
      for (unsigned p = node.isSwitch() ? 0 : 1; p < (node.isSwitch() ? 1u : node.ports.size()); ++p) {
        auto k = s.partitions->keyOf(n, fabric::PortNum{static_cast<uint8_t>(p)}, pkey);
        if (!k) continue;
        bool isFull = (*k & fabric::kFullMemberBit) != 0;
        ++(isFull ? full : limited);
        if (list)
          list->push_back({{"port_guid", fabric::toString(node.ports[p].guid)},
                           {"node", node.description},
                           {"port", p},
                           {"type", node.isSwitch() ? "SW" : "CA"},
                           {"membership", isFull ? "full" : "limited"}});
      }
    }
  };
  Json list = Json::array();
  bool found = false;
  if (!s.partitions) return {{"partitions", list}};
  for (const auto& e : s.partitions->partitions()) {
    if (!name.empty() && e.name != name) continue;
    found = true;
    // Where it was defined: the first rule of that P_Key (the built-in default partition has none).
    std::string origin = "built-in default", kind = "config";
    for (const auto& d : defs)
      if ((d.pkey & 0x7FFF) == e.pkey) {
        origin = d.origin;
        kind = d.origin == "ibsmctl" ? "runtime" : "config";
        break;
      }
    Json j = {{"name", e.name}, {"pkey", pkeyHex(e.pkey)}, {"origin", origin}, {"source", kind}};
    if (e.ipoib)
      j["ipoib"] = {{"mtu", e.ipoib->mtu},
                    {"rate", e.ipoib->rate},
                    {"sl", e.ipoib->sl.value_or(0)},
                    {"q_key", e.ipoib->qkey},
                    {"scope", e.ipoib->scope}};
    size_t full = 0, limited = 0;
    Json ports = Json::array();
    members(e.pkey, full, limited, name.empty() ? nullptr : &ports);
    j["full"] = full;
    j["limited"] = limited;
    if (!name.empty()) j["members"] = std::move(ports);
    list.push_back(std::move(j));
  }
  if (!name.empty() && !found) throw Failure(ErrorCode::kNotFound, "no partition '" + name + "'");
  return {{"partitions", std::move(list)}};
}

}  // namespace

void ReadHandler::resetCacheFor(const std::shared_ptr<const SubnetSnapshot>& snap) {
  if (cachedFor_ == snap.get() && !cachedSnap_.expired()) return;
  cachedFor_ = snap.get();
  cachedSnap_ = snap;
  check_.reset();
  pattern_.reset();
  loads_.reset();
}

// The route checker's verdict on the live tables, computed once per snapshot; with `pattern`, the
// permutation congestion of that pattern over the ranks (default: every host in name order) too, kept for
// the last pattern and rank list asked.
Json ReadHandler::check(const SubnetSnapshot& s, const Request& r) {
  const std::string patternArg = stringArg(r, "pattern", ""), ranksArg = stringArg(r, "ranks", "");
  std::optional<routing::Pattern> pattern;
  if (!patternArg.empty() || !ranksArg.empty()) {
    pattern = routing::parsePattern(patternArg.empty() ? "shift" : patternArg);
    if (!pattern)
      throw Failure(ErrorCode::kBadRequest,
                    "check: pattern must be shift, ring or all2all, not '" + patternArg + "'");
  }
  if (!check_) {
    routing::CheckOptions co;
    co.threads = checkThreads_;
    routing::CheckReport rep = routing::checkRoutes(*s.topology, s.lids, s.tables, co);
    Json report = Json::parse(routing::formatReportJson(rep), nullptr, false);
    if (report.is_discarded()) throw Failure(ErrorCode::kInternal, "route checker report is not JSON");
    check_ = Json{{"ok", rep.ok()}, {"report", std::move(report)}, {"text", routing::formatReportText(rep)}};
  }
  if (!pattern) return *check_;
  const std::string key = std::string(routing::patternName(*pattern)) + '\n' + ranksArg;
  if (!pattern_ || pattern_->first != key) {
    std::vector<routing::Rank> ranks;
    if (!ranksArg.empty()) {
      auto parsed = routing::parseRanks(*s.topology, s.lids, ranksArg, stringArg(r, "ranks_name", "ranks"));
      if (!parsed) throw Failure(ErrorCode::kBadRequest, "check: " + parsed.error().message);
      ranks = std::move(*parsed);
    }
    routing::PatternOptions po;
    po.pattern = *pattern;
    po.threads = checkThreads_;
    routing::PatternReport rep = routing::checkPattern(*s.topology, s.lids, s.tables, std::move(ranks), po);
    Json report = Json::parse(routing::formatPatternJson(rep), nullptr, false);
    if (report.is_discarded()) throw Failure(ErrorCode::kInternal, "pattern report is not JSON");
    pattern_.emplace(key,
                     Json{{"pattern", std::move(report)}, {"pattern_text", routing::formatPatternText(rep)}});
  }
  Json out = *check_;
  out["pattern"] = pattern_->second["pattern"];
  out["text"] = out["text"].get<std::string>() + pattern_->second["pattern_text"].get<std::string>();
  return out;
}

Json ReadHandler::topology(const SubnetSnapshot& s, const Request& r) {
  std::string format = stringArg(r, "format", "ibnetdiscover");
  if (format == "dot") {
    if (!loads_) loads_ = linkLoads(s);
    return {{"format", "dot"}, {"text", formatDot(s, *loads_)}};
  }
  if (format == "ibnetdiscover")
    return {{"format", "ibnetdiscover"}, {"text", fabric::formatTopology(*s.topology)}};
  throw Failure(ErrorCode::kBadRequest, "topology: format must be ibnetdiscover or dot");
}

Json ReadHandler::dispatch(const Request& r, const ControlView& v) {
  const std::string& c = r.command;
  if (c == "status") return doStatus(v);
  if (c == "events") return doEvents(v, r);
  if (c == "health") {
    const Json* all = arg(r, "all");
    if (all && !all->is_boolean()) throw Failure(ErrorCode::kBadRequest, "health: all must be true or false");
    if (!v.health)
      throw Failure(
          ErrorCode::kUnavailable,
          "no counter sweep has completed yet (every perfmgr.interval_s seconds; 0 turns them off)");
    return healthJson(*v.health, all && all->get<bool>());
  }
  const SubnetSnapshot& s = needSnapshot(v);
  resetCacheFor(v.snapshot);
  if (c == "nodes") return doNodes(s, r);
  if (c == "switches") return doSwitches(s);
  if (c == "lids") return doLids(s);
  if (c == "links") return doLinks(s, v.portsActivated);
  if (c == "routes") return doRoutes(s, r);
  if (c == "path") return doPath(s, r);
  if (c == "ar") return doAr(s, r);
  if (c == "check") return check(s, r);
  if (c == "topology") return topology(s, r);
  if (c == "partitions") return doPartitions(s, r);
  throw Failure(ErrorCode::kInternal, "'" + c + "' is not a read-only command");
}

Json ReadHandler::handle(const Request& r, const ControlView& v) {
  try {
    return okResponse(r.id, dispatch(r, v));
  } catch (const Failure& f) {
    return errorResponse(r.id, f.code, f.what());
  } catch (const std::exception& e) {
    return errorResponse(r.id, ErrorCode::kInternal, std::string("internal error: ") + e.what());
  }
}

}  // namespace ibsm::daemon
