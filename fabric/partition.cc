#include "fabric/partition.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "fabric/text.h"

namespace ibsm::fabric {

namespace {
// 'text', appended piece by piece (GCC 12 at -O3 reports a false -Wrestrict for `"'" + std::string&&`).
std::string quoted(std::string_view text) {
  std::string out = "'";
  out += text;
  out += '\'';
  return out;
}

std::string hex4(uint16_t v) {
  static const char* kDigits = "0123456789abcdef";
  std::string s = "0x0000";
  for (int i = 0; i < 4; ++i) s[5 - i] = kDigits[(v >> (4 * i)) & 0xF];
  return s;
}

}  // namespace

std::string_view toString(Membership m) {
  switch (m) {
    case Membership::kLimited:
      return "limited";
    case Membership::kFull:
      return "full";
    case Membership::kBoth:
      return "both";
  }
  return "limited";
}

std::optional<Membership> parseMembership(std::string_view s) {
  std::string u = upper(trim(s));
  if (u == "FULL") return Membership::kFull;
  if (u == "LIMITED") return Membership::kLimited;
  if (u == "BOTH") return Membership::kBoth;
  return std::nullopt;
}

std::string toString(const PartitionMember& m) {
  switch (m.kind) {
    case PartitionMember::Kind::kPortGuid:
      return toString(m.guid);
    case PartitionMember::Kind::kAll:
      return "ALL";
    case PartitionMember::Kind::kAllCas:
      return "ALL_CAS";
    case PartitionMember::Kind::kAllSwitches:
      return "ALL_SWITCHES";
    case PartitionMember::Kind::kAllRouters:
      return "ALL_ROUTERS";
    case PartitionMember::Kind::kSelf:
      return "SELF";
    case PartitionMember::Kind::kNodeDesc:
      return "node:" + m.pattern;
  }
  return "?";
}

Result<PartitionMember> parsePartitionMember(std::string_view text, Membership defaultMembership) {
  PartitionMember m;
  m.membership = defaultMembership;
  std::string_view spec = trim(text);
  // The membership follows the last '=' (a node pattern may not contain one).
  if (size_t eq = spec.rfind('='); eq != std::string_view::npos) {
    auto ms = parseMembership(spec.substr(eq + 1));
    if (!ms)
      return makeError(quoted(trim(spec.substr(eq + 1))) + " is not a membership (full, limited or both)");
    m.membership = *ms;
    spec = trim(spec.substr(0, eq));
  }
  if (spec.empty()) return makeError("empty member");
  std::string u = upper(spec);
  if (u == "ALL") {
    m.kind = PartitionMember::Kind::kAll;
  } else if (u == "ALL_CAS") {
    m.kind = PartitionMember::Kind::kAllCas;
  } else if (u == "ALL_SWITCHES") {
    m.kind = PartitionMember::Kind::kAllSwitches;
  } else if (u == "ALL_ROUTERS") {
    m.kind = PartitionMember::Kind::kAllRouters;
  } else if (u == "SELF") {
    m.kind = PartitionMember::Kind::kSelf;
  } else if (u.starts_with("NODE:")) {
    m.kind = PartitionMember::Kind::kNodeDesc;
    m.pattern = std::string(trim(spec.substr(5)));
    if (m.pattern.empty()) return makeError("node: needs a NodeDescription pattern");
  } else {
    // OpenSM accepts hexadecimal (0x...) and decimal GUIDs.
    std::optional<Guid> g;
    if (u.starts_with("0X")) {
      g = parseGuid(spec);
    } else if (!spec.empty() && spec.size() <= 20 &&
               std::all_of(spec.begin(), spec.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      uint64_t v = 0;
      bool overflow = false;
      for (char c : spec) {
        uint64_t d = static_cast<uint64_t>(c - '0');
        if (v > (UINT64_MAX - d) / 10) overflow = true;
        v = v * 10 + d;
      }
      if (!overflow) g = Guid{v};
    }
    if (!g || g->value == 0)
      return makeError(quoted(spec) +
                       " is not a port GUID, ALL, ALL_CAS, ALL_SWITCHES, ALL_ROUTERS, SELF or node:PATTERN");
    m.kind = PartitionMember::Kind::kPortGuid;
    m.guid = *g;
  }
  return m;
}

Partition defaultPartition() {
  Partition p;
  p.name = "Default";
  p.pkey = kDefaultPartitionKey;
  p.ipoib = IpoibGroup{};
  p.members.push_back({PartitionMember::Kind::kAll, {}, {}, Membership::kFull});
  p.origin = "built-in default";
  return p;
}

bool matchPattern(std::string_view pattern, std::string_view text) {
  // Iterative wildcard match with one backtrack point (linear in practice, no recursion).
  size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

PartitionMap PartitionMap::resolve(const Topology& topo, std::span<const Partition> partitions) {
  PartitionMap map;
  map.offsets_.resize(topo.size());
  size_t slots = 0;
  for (NodeIndex i = 0; i < topo.size(); ++i) {
    map.offsets_[i] = slots;
    slots += topo.node(i).ports.size();
  }
  map.keys_.resize(slots);

  // Merge entries of one P_Key (OpenSM: the first name is kept); the default partition goes first.
  std::vector<const Partition*> order;
  std::map<uint16_t, std::vector<const Partition*>> byKey;
  const Partition builtIn = defaultPartition();
  bool haveDefault = false;
  for (const Partition& p : partitions)
    haveDefault = haveDefault || (p.pkey & 0x7FFF) == kDefaultPartitionKey;
  if (!haveDefault) order.push_back(&builtIn), byKey[kDefaultPartitionKey].push_back(&builtIn);
  for (const Partition& p : partitions) {
    uint16_t k = p.pkey & 0x7FFF;
    if (k == 0) continue;
    auto& list = byKey[k];
    if (list.empty()) order.push_back(&p);
    list.push_back(&p);
  }
  std::stable_partition(order.begin(), order.end(),
                        [](const Partition* p) { return (p->pkey & 0x7FFF) == kDefaultPartitionKey; });

  // Per partition, each endport's membership (slot -> full?).
  std::vector<int8_t> member(slots, -1);  // -1 none, 0 limited, 1 full
  std::vector<size_t> touched;
  auto add = [&](NodeIndex n, unsigned port, Membership ms) {
    size_t s = map.offsets_[n] + port;
    int8_t v = ms == Membership::kLimited ? 0 : 1;
    if (member[s] < 0) touched.push_back(s);
    member[s] = std::max(member[s], v);
  };
  auto addNode = [&](NodeIndex n, Membership ms) {
    const Node& node = topo.node(n);
    if (node.isSwitch()) {
      add(n, 0, ms);
      return;
    }
    for (unsigned p = 1; p < node.ports.size(); ++p)
      if (node.ports[p].connected() || (n == topo.smNode() && p == topo.smPort().value)) add(n, p, ms);
  };
  for (const Partition* first : order) {
    const uint16_t k = first->pkey & 0x7FFF;
    Entry entry{k, first->name, std::nullopt};
    for (const Partition* p : byKey[k]) {
      if (p->ipoib && !entry.ipoib) entry.ipoib = p->ipoib;
      for (const PartitionMember& m : p->members) {
        using K = PartitionMember::Kind;
        switch (m.kind) {
          case K::kPortGuid:
            if (auto where = topo.findPort(m.guid)) {
              const Node& node = topo.node(where->first);
              add(where->first, node.isSwitch() ? 0 : where->second.value, m.membership);
            }
            break;
          case K::kAll:
          case K::kAllCas:
          case K::kAllSwitches:
          case K::kAllRouters:
            for (NodeIndex n = 0; n < topo.size(); ++n) {
              NodeType t = topo.node(n).type;
              if (m.kind == K::kAll || (m.kind == K::kAllCas && t == NodeType::kCa) ||
                  (m.kind == K::kAllSwitches && t == NodeType::kSwitch) ||
                  (m.kind == K::kAllRouters && t == NodeType::kRouter))
                addNode(n, m.membership);
            }
            break;
          case K::kSelf:
            if (topo.smNode() != kNoNode)
              add(topo.smNode(), topo.node(topo.smNode()).isSwitch() ? 0 : topo.smPort().value, m.membership);
            break;
          case K::kNodeDesc:
            for (NodeIndex n = 0; n < topo.size(); ++n)
              if (matchPattern(m.pattern, topo.node(n).description)) addNode(n, m.membership);
            break;
        }
      }
    }
    // The SM's own port stays a full member of the default partition, whatever the rules say.
    if (k == kDefaultPartitionKey && topo.smNode() != kNoNode)
      add(topo.smNode(), topo.node(topo.smNode()).isSwitch() ? 0 : topo.smPort().value, Membership::kFull);
    for (size_t s : touched) {
      map.keys_[s].push_back(static_cast<uint16_t>(k | (member[s] > 0 ? kFullMemberBit : 0)));
      member[s] = -1;
    }
    touched.clear();
    map.entries_.push_back(std::move(entry));
  }
  return map;
}

std::span<const uint16_t> PartitionMap::keys(NodeIndex node, PortNum port) const {
  if (node >= offsets_.size()) return {};
  size_t s = offsets_[node] + port.value;
  size_t end = node + 1 < offsets_.size() ? offsets_[node + 1] : keys_.size();
  if (s >= end) return {};
  return keys_[s];
}

std::optional<uint16_t> PartitionMap::keyOf(NodeIndex node, PortNum port, uint16_t pkey) const {
  for (uint16_t k : keys(node, port))
    if ((k & 0x7FFF) == (pkey & 0x7FFF)) return k;
  return std::nullopt;
}

std::optional<uint16_t> PartitionMap::commonKey(NodeIndex srcNode, PortNum srcPort, NodeIndex dstNode,
                                                PortNum dstPort, std::optional<uint16_t> wanted) const {
  for (uint16_t a : keys(srcNode, srcPort)) {
    if (wanted && (a & 0x7FFF) != (*wanted & 0x7FFF)) continue;
    auto b = keyOf(dstNode, dstPort, a);
    if (b && ((a | *b) & kFullMemberBit)) return a;
  }
  return std::nullopt;
}

std::optional<std::string> checkPartitions(std::span<const Partition> partitions, const Topology* topo) {
  std::map<uint16_t, const Partition*> byKey;
  for (const Partition& p : partitions) {
    const std::string where = p.origin.empty() ? "" : " (" + p.origin + ")";
    if ((p.pkey & 0x7FFF) == 0 || (p.pkey & kFullMemberBit))
      return "partition '" + p.name + "'" + where + ": P_Key " + hex4(p.pkey) +
             " is out of range 0x0001..0x7fff";
    auto [it, fresh] = byKey.emplace(p.pkey, &p);
    if (!fresh && it->second->name != p.name)
      return "partition '" + p.name + "'" + where + ": P_Key " + hex4(p.pkey) +
             " is already used by partition '" + it->second->name + "'" +
             (it->second->origin.empty() ? "" : " (" + it->second->origin + ")");
    if (!topo) continue;
    for (const PartitionMember& m : p.members)
      if (m.kind == PartitionMember::Kind::kPortGuid && !topo->findPort(m.guid))
        return "partition '" + p.name + "'" + where + ": no port " + toString(m.guid) + " in the fabric";
  }
  if (!topo) return std::nullopt;
  PartitionMap map = PartitionMap::resolve(*topo, partitions);
  for (NodeIndex n = 0; n < topo->size(); ++n) {
    const Node& node = topo->node(n);
    if (!node.partitionCap) continue;
    for (unsigned port = 0; port < node.ports.size(); ++port) {
      size_t count = map.keys(n, PortNum{static_cast<uint8_t>(port)}).size();
      if (count > node.partitionCap)
        return "port " + toString(node.ports[port].guid) + " (" + node.description + " port " +
               std::to_string(port) + ") would hold " + std::to_string(count) +
               " P_Keys, more than its table's " + std::to_string(node.partitionCap) +
               " entries (PartitionCap)";
      // The switch port facing a CA port holds the same keys where the switch enforces partitions.
      const Port& pt = node.ports[port];
      if (node.isSwitch() || port == 0 || !pt.connected()) continue;
      const Node& peer = topo->node(pt.peerNode);
      if (peer.isSwitch() && peer.sw.partitionEnforcementCap && count > peer.sw.partitionEnforcementCap)
        return "port " + toString(pt.guid) + " (" + node.description + " port " + std::to_string(port) +
               ") would hold " + std::to_string(count) + " P_Keys, more than the " +
               std::to_string(peer.sw.partitionEnforcementCap) + " its switch port (" + peer.description +
               " port " + std::to_string(pt.peerPort.value) + ") can enforce (PartitionEnforcementCap)";
    }
  }
  return std::nullopt;
}

}  // namespace ibsm::fabric
