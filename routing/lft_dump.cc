#include "routing/lft_dump.h"

#include <cctype>
#include <charconv>
#include <cstdio>
#include <vector>

#include "fabric/text.h"

namespace ibsm::routing {

using fabric::isBlank;
using fabric::printable;
using fabric::trim;

using fabric::Node;
using fabric::NodeType;

namespace {

const char* typeString(NodeType t) {
  switch (t) {
    case NodeType::kCa:
      return "Channel Adapter";
    case NodeType::kSwitch:
      return "Switch";
    case NodeType::kRouter:
      return "Router";
    default:
      return "UNKNOWN";
  }
}

// Parses an unsigned number at the start of s in the given base; advances s past it.
template <typename T>
bool takeNumber(std::string_view& s, int base, T& out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out, base);
  if (ec != std::errc() || end == s.data()) return false;
  s.remove_prefix(static_cast<size_t>(end - s.data()));
  return true;
}

bool isLidsDumpedLine(std::string_view s) {
  // "12 lids dumped", "3 valid lids dumped"
  size_t i = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  if (i == 0) return false;
  std::string_view rest = trim(s.substr(i));
  return rest == "lids dumped" || rest == "valid lids dumped";
}

}  // namespace

std::string formatLftDump(const Topology& topo, const LidAssignment& lids, const RoutingTables& tables) {
  std::string out;
  formatLftDump(topo, lids, tables, [&](std::string_view piece) { out += piece; });
  return out;
}

void formatLftDump(const Topology& topo, const LidAssignment& lids, const RoutingTables& tables,
                   const TextSink& sink) {
  std::string out;
  char buf[160];
  for (NodeIndex sw : topo.switches()) {
    out.clear();
    const Node& n = topo.node(sw);
    const LftRow* lft = sw < tables.lft.size() ? &tables.lft[sw] : nullptr;
    unsigned maxLid = lft && !lft->empty() ? static_cast<unsigned>(lft->size() - 1) : lids.maxLid().value;
    std::snprintf(buf, sizeof buf, "Unicast lids [0-%u] of switch Lid %u guid 0x%016llx (", maxLid,
                  lids.base(sw, PortNum{0}).value, static_cast<unsigned long long>(n.guid.value));
    out += buf;
    out += "'" + n.description + "'):\n";
    if (lft) {
      for (unsigned l = 0; l < lft->size(); ++l) {
        unsigned port = (*lft)[l];
        if (port > n.numPorts) continue;
        std::snprintf(buf, sizeof buf, "0x%04x %03u # ", l, port);
        out += buf;
        LidOwner o = lids.owner(Lid{static_cast<uint16_t>(l)});
        if (o.node == fabric::kNoNode || o.node >= topo.size()) {
          out += "unknown node and type\n";
          continue;
        }
        const Node& d = topo.node(o.node);
        Guid g = o.port.value < d.ports.size() ? d.ports[o.port.value].guid : Guid{};
        std::snprintf(buf, sizeof buf, "%s portguid 0x%016llx: ", typeString(d.type),
                      static_cast<unsigned long long>(g.value));
        out += buf;
        out += "'" + d.description + "'\n";
      }
    }
    out += std::to_string(maxLid) + " lids dumped\n";
    sink(out);
  }
}

fabric::Result<RoutingTables> parseLftDump(std::string_view text, const Topology& topo,
                                           std::string_view fileName) {
  RoutingTables t;
  t.engine = "lft-dump";
  t.lft.resize(topo.size());
  std::vector<uint8_t> seenSwitch(topo.size(), 0);
  std::vector<uint8_t> seenLid;  // of the current switch
  NodeIndex cur = fabric::kNoNode;
  bool inMulticast = false;
  size_t lineNo = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view raw = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++lineNo;
    std::string_view line = trim(raw);
    auto fail = [&](const std::string& what) {
      return fabric::Error{std::string(fileName) + ":" + std::to_string(lineNo) + ": " + what};
    };
    if (line.empty() || line.front() == '#') continue;

    if (line.starts_with("Unicast lids")) {
      inMulticast = false;
      size_t of = line.find("of switch");
      size_t g = line.find(" guid 0x", of == std::string_view::npos ? 0 : of);
      if (g == std::string_view::npos) return fail("switch header without 'guid 0x...'");
      std::string_view hex = line.substr(g + 8);
      uint64_t guid = 0;
      std::string_view digits = hex.substr(0, std::min<size_t>(hex.size(), 17));
      size_t len = 0;
      while (len < digits.size() && std::isxdigit(static_cast<unsigned char>(digits[len]))) ++len;
      if (len == 0 || len > 16 || !takeNumber(hex, 16, guid)) return fail("bad switch GUID in header");
      auto node = topo.findNode(Guid{guid});
      if (!node) return fail("switch " + fabric::toString(Guid{guid}) + " is not in the topology");
      if (!topo.node(*node).isSwitch()) return fail(fabric::toString(Guid{guid}) + " is not a switch");
      if (seenSwitch[*node]) return fail("switch " + fabric::toString(Guid{guid}) + " is listed twice");
      seenSwitch[*node] = 1;
      cur = *node;
      seenLid.assign(fabric::kMaxUnicastLid + 1u, 0);
      // Size the table from the header's range "[0-12]" / "[0x0-0xc]" when it parses; entries may extend it.
      LftRow& lft = t.lft[cur];
      lft.clear();
      size_t dash = line.find('-');
      size_t close = line.find(']');
      if (line.size() > 13 && line[13] == '[' && dash != std::string_view::npos &&
          close != std::string_view::npos && dash < close) {
        std::string_view top = line.substr(dash + 1, close - dash - 1);
        int base = 10;
        if (top.starts_with("0x") || top.starts_with("0X")) {
          top.remove_prefix(2);
          base = 16;
        }
        uint32_t v = 0;
        if (takeNumber(top, base, v) && top.empty() && v <= fabric::kMaxUnicastLid)
          lft.assign(v + 1u, kNoPort);
      }
      continue;
    }
    if (line.starts_with("Multicast mlids")) {
      inMulticast = true;
      cur = fabric::kNoNode;
      continue;
    }
    if (inMulticast) continue;
    if (line.starts_with("Lid") || line.starts_with("Port") || isLidsDumpedLine(line)) continue;
    if (line.starts_with("0x") || line.starts_with("0X")) {
      if (cur == fabric::kNoNode) return fail("LFT entry before any 'Unicast lids ... of switch' header");
      std::string_view s = line.substr(2);
      uint32_t lid = 0;
      if (!takeNumber(s, 16, lid)) return fail("bad LID in '" + printable(line, 60) + "'");
      if (lid > fabric::kMaxUnicastLid)
        return fail("LID " + std::to_string(lid) + " is past the unicast range");
      if (s.empty() || !isBlank(s.front())) return fail("bad entry '" + printable(line, 60) + "'");
      s = trim(s);
      uint32_t port = 0;
      if (!takeNumber(s, 10, port) || (!s.empty() && !isBlank(s.front())))
        return fail("bad port in '" + printable(line, 60) + "'");
      if (port > 255) return fail("port " + std::to_string(port) + " is out of range");
      if (seenLid[lid]) return fail("LID " + std::to_string(lid) + " listed twice for this switch");
      seenLid[lid] = 1;
      LftRow& lft = t.lft[cur];
      if (lft.size() <= lid) lft.resize(lid + 1u, kNoPort);
      lft[lid] = static_cast<uint8_t>(port);
      continue;
    }
    return fail("unrecognized line '" + printable(line, 60) + "'");
  }
  return t;
}

}  // namespace ibsm::routing
