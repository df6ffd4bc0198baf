// How requests name nodes and how answers name port and node states: resolveNode/resolveEndport and the
// helpers every listing uses (nodeRef, lidValue, ...).
#include <algorithm>
#include <cctype>

#include "daemon/control/control_protocol.h"
#include "daemon/control/protocol_helpers.h"

namespace ibsm::daemon {

using detail::Failure;
using detail::printable;
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

constexpr uint8_t kPhysLinkUp = 5;

bool allDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}
bool allHex(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

std::string firstWord(std::string_view s) {
  size_t sp = s.find_first_of(" \t");
  return std::string(s.substr(0, sp));
}

}  // namespace

namespace detail {

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
  if (v.is_string()) {
    std::string name =
        printable(v.get_ref<const std::string&>());  // not "'" + a temporary: GCC 12 -Wrestrict
    return "'" + name + "'";
  }
  return printable(v.dump(-1, ' ', false, Json::error_handler_t::replace));
}

std::string firstWord(std::string_view s) {
  size_t sp = s.find_first_of(" \t");
  return std::string(s.substr(0, sp));
}

std::string nodeLabel(const Node& n) {
  return n.description.empty() ? fabric::toString(n.guid) : n.description;
}

Json nodeRef(const Topology& topo, const LidAssignment& lids, NodeIndex n, std::optional<PortNum> port) {
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

}  // namespace detail

using detail::lidValue;
using detail::nodeLabel;

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

}  // namespace ibsm::daemon
