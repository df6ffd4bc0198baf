#include "daemon/control/control_protocol.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <ctime>
#include <map>
#include <set>
#include <stdexcept>

#include "fabric/topology_file.h"
#include "routing/route_checker.h"

namespace ibsm::daemon {

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

// Raised inside the handler and turned into an error response at its boundary.
struct Failure : std::runtime_error {
  Failure(ErrorCode c, const std::string& m) : std::runtime_error(m), code(c) {}
  ErrorCode code;
};

constexpr size_t kMaxNesting = 16;
constexpr uint8_t kPhysLinkUp = 5;

// Deepest [ / { nesting outside strings; stops counting past the limit.
size_t nesting(std::string_view s) {
  size_t depth = 0, deepest = 0;
  bool inString = false, escaped = false;
  for (char c : s) {
    if (inString) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        inString = false;
      continue;
    }
    if (c == '"')
      inString = true;
    else if (c == '[' || c == '{')
      deepest = std::max(deepest, ++depth);
    else if ((c == ']' || c == '}') && depth > 0)
      --depth;
    if (deepest > kMaxNesting) break;
  }
  return deepest;
}

std::string printable(std::string_view s, size_t max = 40) {
  std::string out;
  for (char c : s.substr(0, max)) out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  if (s.size() > max) out += "...";
  return out;
}

std::string isoTime(std::chrono::system_clock::time_point t) {
  std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[80];
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count() % 1000;
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

int64_t unixMs(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

bool allDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}
bool allHex(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

// A LID from a JSON number or a decimal string; nullopt when the value is not LID-shaped; throws when it is
// but is out of range.
std::optional<Lid> lidValue(const Json& v) {
  uint64_t n = 0;
  if (v.is_number_unsigned())
    n = v.get<uint64_t>();
  else if (v.is_number_integer()) {
    int64_t i = v.get<int64_t>();
    if (i < 0)
      throw Failure(ErrorCode::kBadRequest, "LID " + std::to_string(i) + " is out of range 1..49151");
    n = static_cast<uint64_t>(i);
  } else if (v.is_string() && allDigits(v.get_ref<const std::string&>())) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s.size() > 6)
      return std::nullopt;  // too long for a LID: a GUID of decimal-looking hex digits, or a name
    n = std::stoull(s);
  } else {
    return std::nullopt;
  }
  if (n < 1 || n > fabric::kMaxUnicastLid)
    throw Failure(ErrorCode::kBadRequest, "LID " + std::to_string(n) + " is out of range 1..49151");
  return Lid{static_cast<uint16_t>(n)};
}

std::string describeName(const Json& v) {
  if (v.is_string()) return "'" + printable(v.get_ref<const std::string&>()) + "'";
  return printable(v.dump(-1, ' ', false, Json::error_handler_t::replace));
}

std::string firstWord(std::string_view s) {
  size_t sp = s.find_first_of(" \t");
  return std::string(s.substr(0, sp));
}

std::string nodeLabel(const Node& n) {
  return n.description.empty() ? fabric::toString(n.guid) : n.description;
}

// Endport (or node) as JSON: what every listing uses to name a node.
Json nodeRef(const Topology& topo, const LidAssignment& lids, NodeIndex n, std::optional<PortNum> port = {}) {
  const Node& node = topo.node(n);
  Json j = {{"guid", fabric::toString(node.guid)},
            {"description", node.description},
            {"type", nodeTypeName(node.type)}};
  PortNum p = port ? *port : PortNum{0};
  if (!port && !node.isSwitch()) {
    for (unsigned i = 1; i <= node.numPorts; ++i)
      if (lids.base(n, PortNum{static_cast<uint8_t>(i)}).value) {
        p = PortNum{static_cast<uint8_t>(i)};
        break;
      }
  }
  if (port || !node.isSwitch()) {
    j["port"] = p.value;
    if (p.value < node.ports.size()) j["port_guid"] = fabric::toString(node.ports[p.value].guid);
  }
  Lid l = lids.base(n, node.isSwitch() ? PortNum{0} : p);
  j["lid"] = l.value;
  return j;
}

Json lidOwnerRef(const Topology& topo, const LidAssignment& lids, Lid lid) {
  routing::LidOwner o = lids.owner(lid);
  if (o.node == fabric::kNoNode || o.node >= topo.size()) return nullptr;
  return nodeRef(topo, lids, o.node, o.port);
}

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
  const std::vector<uint8_t>* lft = sw < s.tables.lft.size() ? &s.tables.lft[sw] : nullptr;
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
            {"engine", s.tables.engine}};
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

std::string dotEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += (static_cast<unsigned char>(c) < 0x20) ? '?' : c;
  }
  return out;
}

}  // namespace

const char* toString(ErrorCode code) {
  switch (code) {
    case ErrorCode::kBadRequest:
      return "bad_request";
    case ErrorCode::kTooLarge:
      return "too_large";
    case ErrorCode::kUnknownCommand:
      return "unknown_command";
    case ErrorCode::kNotFound:
      return "not_found";
    case ErrorCode::kPermissionDenied:
      return "permission_denied";
    case ErrorCode::kUnavailable:
      return "unavailable";
    case ErrorCode::kBusy:
      return "busy";
    case ErrorCode::kFailed:
      return "failed";
    case ErrorCode::kInternal:
      return "internal";
  }
  return "internal";
}

const std::vector<CommandInfo>& commands() {
  static const std::vector<CommandInfo> kCommands = {
      {"status", Access::kRead, {}, "SM state, sweeps, SUBNET UP since, fabric counts, MAD counters"},
      {"nodes", Access::kRead, {"type"}, "every node (type SW, CA or RT to filter)"},
      {"switches", Access::kRead, {}, "every switch with LID, ports, LFT size, AR groups"},
      {"lids", Access::kRead, {}, "every endport LID"},
      {"links", Access::kRead, {}, "every link with width, speed and state"},
      {"routes", Access::kRead, {"switch", "lid"}, "a switch's forwarding table (or one LID / node of it)"},
      {"path", Access::kRead, {"src", "dst"}, "the route from one endport to another, hop by hop"},
      {"ar", Access::kRead, {"switch"}, "a switch's adaptive-routing groups"},
      {"events", Access::kRead, {"limit", "since", "kind"}, "recent events (sweeps, reloads, requests)"},
      {"check", Access::kRead, {}, "the route checker on the live tables"},
      {"topology", Access::kRead, {"format"}, "the fabric as ibnetdiscover text or Graphviz (format dot)"},
      {"resweep",
       Access::kChange,
       {"heavy"},
       "sweep now (heavy: forget what the switches hold, rewrite all)"},
      {"reroute", Access::kChange, {}, "recompute and reprogram the routes now"},
      {"loglevel", Access::kChange, {"level"}, "set the log level: error, warn, info or debug"},
  };
  return kCommands;
}

const CommandInfo* findCommand(std::string_view name) {
  for (const CommandInfo& c : commands())
    if (c.name == name) return &c;
  return nullptr;
}

std::variant<Request, RequestError> parseRequest(std::string_view line) {
  if (line.size() > kMaxRequestBytes)
    return RequestError{ErrorCode::kTooLarge,
                        "request of " + std::to_string(line.size()) + " bytes exceeds the limit of " +
                            std::to_string(kMaxRequestBytes),
                        nullptr};
  if (nesting(line) > kMaxNesting)
    return RequestError{ErrorCode::kBadRequest, "request nests deeper than " + std::to_string(kMaxNesting),
                        nullptr};
  Json j = Json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return RequestError{ErrorCode::kBadRequest, "request is not valid JSON", nullptr};
  if (!j.is_object()) return RequestError{ErrorCode::kBadRequest, "request must be a JSON object", nullptr};
  Request r;
  if (auto it = j.find("id"); it != j.end()) {
    if (it->is_structured())
      return RequestError{ErrorCode::kBadRequest, "'id' must be a string or a number", nullptr};
    r.id = *it;
  }
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "id" && it.key() != "command" && it.key() != "args")
      return RequestError{ErrorCode::kBadRequest, "unknown field '" + printable(it.key()) + "'", r.id};
  auto cmd = j.find("command");
  if (cmd == j.end() || !cmd->is_string() || cmd->get_ref<const std::string&>().empty())
    return RequestError{ErrorCode::kBadRequest, "'command' must be a non-empty string", r.id};
  r.command = cmd->get<std::string>();
  const CommandInfo* info = findCommand(r.command);
  if (!info)
    return RequestError{ErrorCode::kUnknownCommand, "unknown command '" + printable(r.command) + "'", r.id};
  if (auto a = j.find("args"); a != j.end() && !a->is_null()) {
    if (!a->is_object()) return RequestError{ErrorCode::kBadRequest, "'args' must be an object", r.id};
    for (auto it = a->begin(); it != a->end(); ++it)
      if (std::find(info->args.begin(), info->args.end(), it.key()) == info->args.end())
        return RequestError{ErrorCode::kBadRequest,
                            r.command + ": unknown argument '" + printable(it.key()) + "'", r.id};
    r.args = *a;
  }
  return r;
}

Json okResponse(const Json& id, Json result) {
  return {{"id", id}, {"ok", true}, {"result", std::move(result)}};
}

Json errorResponse(const Json& id, ErrorCode code, std::string_view message) {
  return {
      {"id", id}, {"ok", false}, {"error", {{"code", toString(code)}, {"message", std::string(message)}}}};
}

std::string toLine(const Json& response) {
  return response.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

bool mayChangeState(const PeerCredentials& peer, const AccessPolicy& policy) {
  if (peer.uid == 0 || peer.uid == policy.daemonUid) return true;
  if (!policy.group) return false;
  if (peer.gid == *policy.group) return true;
  return std::find(peer.groups.begin(), peer.groups.end(), *policy.group) != peer.groups.end();
}

Json toJson(const SweepSummary& s) {
  Json j = {{"number", s.number},
            {"time", isoTime(s.start)},
            {"time_ms", unixMs(s.start)},
            {"duration_ms", s.durationMs},
            {"cause", s.cause},
            {"heavy", s.heavy},
            {"ok", s.ok},
            {"subnet_up", s.subnetUp},
            {"smps", s.smps},
            {"timeouts", s.timeouts},
            {"lids_changed", s.lidsChanged},
            {"lft_blocks_sent", s.lftBlocksSent},
            {"lft_blocks_unchanged", s.lftBlocksSkipped},
            {"routes_changed", s.routesChanged},
            {"program_errors", s.programErrors},
            {"engine", s.engine},
            {"fallbacks", s.fallbacks},
            {"discovery_ms", s.discoveryMs},
            {"routing_ms", s.routingMs}};
  if (!s.ok) j["error"] = s.error;
  return j;
}

fabric::Result<NodeIndex> resolveNode(const Topology& topo, const LidAssignment& lids, const Json& name) {
  try {
    if (auto lid = lidValue(name)) {
      routing::LidOwner o = lids.owner(*lid);
      if (o.node == fabric::kNoNode || o.node >= topo.size())
        return fabric::makeError("no endport has LID " + std::to_string(lid->value));
      return o.node;
    }
  } catch (const Failure& f) {
    return fabric::makeError(f.what());
  }
  if (!name.is_string()) return fabric::makeError("a node is named by a description, GUID or LID");
  const std::string& s = name.get_ref<const std::string&>();
  if (s.empty()) return fabric::makeError("empty node name");
  std::string_view hex = s;
  bool prefixed = hex.starts_with("0x") || hex.starts_with("0X");
  if (prefixed) hex.remove_prefix(2);
  if ((prefixed && allHex(hex)) || (hex.size() == 16 && allHex(hex))) {
    auto g = fabric::parseGuid(s);
    if (!g) return fabric::makeError("bad GUID '" + printable(s) + "'");
    if (auto n = topo.findNode(*g)) return *n;
    if (auto p = topo.findPort(*g)) return p->first;
    if (prefixed) return fabric::makeError("no node or port has GUID " + fabric::toString(*g));
  }
  std::vector<NodeIndex> exact, word;
  for (NodeIndex n = 0; n < topo.size(); ++n) {
    const std::string& d = topo.node(n).description;
    if (d == s)
      exact.push_back(n);
    else if (firstWord(d) == s)
      word.push_back(n);
  }
  const std::vector<NodeIndex>& hits = exact.empty() ? word : exact;
  if (hits.size() == 1) return hits[0];
  if (hits.empty())
    return fabric::makeError("no node '" + printable(s) + "' (give a node description, GUID or LID)");
  std::string list;
  for (size_t i = 0; i < hits.size() && i < 3; ++i)
    list += (i ? ", " : "") + fabric::toString(topo.node(hits[i]).guid);
  if (hits.size() > 3) list += ", ...";
  return fabric::makeError("'" + printable(s) + "' matches " + std::to_string(hits.size()) + " nodes (" +
                           list + "); give a GUID or LID");
}

fabric::Result<Endport> resolveEndport(const Topology& topo, const LidAssignment& lids, const Json& name) {
  auto n = resolveNode(topo, lids, name);
  if (!n) return n.error();
  const Node& node = topo.node(*n);
  if (node.isSwitch()) return Endport{*n, PortNum{0}};
  // A LID or port GUID names one port.
  try {
    if (auto lid = lidValue(name)) return Endport{*n, lids.owner(*lid).port};
  } catch (const Failure& f) {
    return fabric::makeError(f.what());
  }
  if (name.is_string())
    if (auto g = fabric::parseGuid(name.get_ref<const std::string&>()))
      if (auto p = topo.findPort(*g); p && p->first == *n && !topo.findNode(*g))
        return Endport{*n, p->second};
  for (unsigned p = 1; p <= node.numPorts; ++p)
    if (node.ports[p].connected() && lids.base(*n, PortNum{static_cast<uint8_t>(p)}).value)
      return Endport{*n, PortNum{static_cast<uint8_t>(p)}};
  for (unsigned p = 1; p <= node.numPorts; ++p)
    if (node.ports[p].connected()) return Endport{*n, PortNum{static_cast<uint8_t>(p)}};
  return fabric::makeError(nodeLabel(node) + " has no linked port");
}

PortState effectivePortState(const fabric::Port& port, bool portsActivated) {
  PortState s = port.attrs.state;
  if (portsActivated && port.connected() && port.attrs.valid && port.attrs.physState == kPhysLinkUp &&
      (s == PortState::kInit || s == PortState::kArmed))
    return PortState::kActive;
  return s;
}

const char* portStateName(PortState s) {
  switch (s) {
    case PortState::kNoChange:
      return "NOCHANGE";
    case PortState::kDown:
      return "DOWN";
    case PortState::kInit:
      return "INIT";
    case PortState::kArmed:
      return "ARMED";
    case PortState::kActive:
      return "ACTIVE";
  }
  return "?";
}

const char* physStateName(uint8_t p) {
  switch (p) {
    case 1:
      return "Sleep";
    case 2:
      return "Polling";
    case 3:
      return "Disabled";
    case 4:
      return "PortConfigurationTraining";
    case 5:
      return "LinkUp";
    case 6:
      return "LinkErrorRecovery";
    case 7:
      return "PhyTest";
    default:
      return "?";
  }
}

const char* nodeTypeName(NodeType t) {
  switch (t) {
    case NodeType::kSwitch:
      return "SW";
    case NodeType::kCa:
      return "CA";
    case NodeType::kRouter:
      return "RT";
    default:
      return "?";
  }
}

std::vector<std::vector<uint64_t>> linkLoads(const SubnetSnapshot& snap) {
  const Topology& t = *snap.topology;
  std::vector<std::vector<uint64_t>> loads(t.size());
  for (NodeIndex n = 0; n < t.size(); ++n) loads[n].assign(t.node(n).numPorts + 1u, 0);
  // Sources: linked CA ports with a LID; their count per attached switch is the traffic each switch injects.
  struct Source {
    NodeIndex ca;
    unsigned port;
    NodeIndex sw;
  };
  std::vector<Source> sources;
  for (NodeIndex n : t.cas())
    for (unsigned p = 1; p <= t.node(n).numPorts; ++p) {
      const fabric::Port& port = t.node(n).ports[p];
      if (port.connected() && t.node(port.peerNode).isSwitch() &&
          snap.lids.base(n, PortNum{static_cast<uint8_t>(p)}).value)
        sources.push_back({n, p, port.peerNode});
    }
  std::vector<uint64_t> inject(t.size(), 0);
  std::vector<uint8_t> onPath(t.size(), 0);
  for (unsigned l = 1; l <= snap.lids.maxLid().value; ++l) {
    Lid lid{static_cast<uint16_t>(l)};
    routing::LidOwner o = snap.lids.owner(lid);
    if (o.node == fabric::kNoNode || snap.lids.base(o.node, o.port) != lid) continue;
    std::fill(inject.begin(), inject.end(), 0);
    for (const Source& s : sources) {
      if (s.ca == o.node && s.port == o.port.value) continue;  // a port to itself
      ++inject[s.sw];
      ++loads[s.ca][s.port];
    }
    for (NodeIndex sw : t.switches()) {
      if (!inject[sw]) continue;
      // Follow the LFT from this switch, adding its injected routes to every egress on the way.
      std::fill(onPath.begin(), onPath.end(), 0);
      NodeIndex cur = sw;
      for (int hop = 0; hop < 64 && cur != fabric::kNoNode && !onPath[cur]; ++hop) {
        onPath[cur] = 1;
        uint8_t out = cur < snap.tables.lft.size() ? snap.tables.port(cur, lid) : routing::kNoPort;
        const Node& node = t.node(cur);
        if (out == 0 || out > node.numPorts || !node.ports[out].connected()) break;
        loads[cur][out] += inject[sw];
        NodeIndex next = node.ports[out].peerNode;
        cur = t.node(next).isSwitch() ? next : fabric::kNoNode;
      }
    }
  }
  return loads;
}

std::string formatDot(const SubnetSnapshot& snap, const std::vector<std::vector<uint64_t>>& loads) {
  const Topology& t = *snap.topology;
  uint64_t maxLoad = 1;
  for (const auto& v : loads)
    for (uint64_t x : v) maxLoad = std::max(maxLoad, x);
  std::string out =
      "graph ibsm {\n  graph [overlap=false, splines=true, label=\"ibsm: " + dotEscape(snap.tables.engine) +
      " routes, link labels: ports and routes each way\"];\n"
      "  node [fontsize=10];\n  edge [fontsize=8];\n";
  char buf[512];
  for (NodeIndex n = 0; n < t.size(); ++n) {
    const Node& node = t.node(n);
    Lid lid = node.isSwitch() ? snap.lids.base(n, PortNum{0}) : Lid{};
    if (!node.isSwitch())
      for (unsigned p = 1; p <= node.numPorts && !lid.value; ++p)
        lid = snap.lids.base(n, PortNum{static_cast<uint8_t>(p)});
    std::snprintf(buf, sizeof buf, "  \"%s\" [label=\"%s\\nLID %u\", shape=%s%s];\n",
                  fabric::toString(node.guid).c_str(), dotEscape(nodeLabel(node)).c_str(), lid.value,
                  node.isSwitch() ? "box" : "ellipse",
                  node.isSwitch() ? ", style=filled, fillcolor=\"#dbe8f6\"" : "");
    out += buf;
  }
  for (const fabric::Link& l : t.links()) {
    uint64_t ab = loads[l.a][l.portA.value], ba = loads[l.b][l.portB.value];
    double width = 1.0 + 4.0 * static_cast<double>(std::max(ab, ba)) / static_cast<double>(maxLoad);
    std::snprintf(buf, sizeof buf, "  \"%s\" -- \"%s\" [label=\"%u:%u\\n%llu | %llu\", penwidth=%.2f];\n",
                  fabric::toString(t.node(l.a).guid).c_str(), fabric::toString(t.node(l.b).guid).c_str(),
                  l.portA.value, l.portB.value, static_cast<unsigned long long>(ab),
                  static_cast<unsigned long long>(ba), width);
    out += buf;
  }
  out += "}\n";
  return out;
}

void ReadHandler::resetCacheFor(const std::shared_ptr<const SubnetSnapshot>& snap) {
  if (cachedFor_ == snap.get() && !cachedSnap_.expired()) return;
  cachedFor_ = snap.get();
  cachedSnap_ = snap;
  check_.reset();
  loads_.reset();
}

Json ReadHandler::dispatch(const Request& r, const ControlView& v) {
  const std::string& c = r.command;
  if (c == "status") return doStatus(v);
  if (c == "events") return doEvents(v, r);
  const SubnetSnapshot& s = needSnapshot(v);
  resetCacheFor(v.snapshot);
  if (c == "nodes") return doNodes(s, r);
  if (c == "switches") return doSwitches(s);
  if (c == "lids") return doLids(s);
  if (c == "links") return doLinks(s, v.portsActivated);
  if (c == "routes") return doRoutes(s, r);
  if (c == "path") return doPath(s, r);
  if (c == "ar") return doAr(s, r);
  if (c == "check") {
    if (!check_) {
      routing::CheckReport rep = routing::checkRoutes(*s.topology, s.lids, s.tables);
      Json report = Json::parse(routing::formatReportJson(rep), nullptr, false);
      if (report.is_discarded()) throw Failure(ErrorCode::kInternal, "route checker report is not JSON");
      check_ =
          Json{{"ok", rep.ok()}, {"report", std::move(report)}, {"text", routing::formatReportText(rep)}};
    }
    return *check_;
  }
  if (c == "topology") {
    std::string format = stringArg(r, "format", "ibnetdiscover");
    if (format == "dot") {
      if (!loads_) loads_ = linkLoads(s);
      return {{"format", "dot"}, {"text", formatDot(s, *loads_)}};
    }
    if (format == "ibnetdiscover")
      return {{"format", "ibnetdiscover"}, {"text", fabric::formatTopology(*s.topology)}};
    throw Failure(ErrorCode::kBadRequest, "topology: format must be ibnetdiscover or dot");
  }
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
