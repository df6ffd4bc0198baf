#include "routing/lid_assignment.h"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cstdio>
#include <tuple>

#include "fabric/text.h"

namespace ibsm::routing {

using fabric::printable;
using fabric::trim;

using fabric::Error;
using fabric::Node;
using fabric::NodeType;
using fabric::Result;

namespace {

constexpr uint32_t kLidSpace = fabric::kMaxUnicastLid + 1u;  // LIDs 0..0xBFFF
constexpr uint8_t kMaxLmc = 7;

// Nodes whose ports 1..n are endports with their own LIDs (a switch has one endport: port 0).
bool hasEndportsOnPorts(const Node& n) {
  return n.type == NodeType::kCa || n.type == NodeType::kRouter;
}

bool rangeFits(uint32_t base, uint32_t count) {
  return base >= 1 && base + count - 1 <= fabric::kMaxUnicastLid;
}

std::string lidRangeText(uint32_t base, uint32_t count) {
  return count == 1 ? std::to_string(base) : std::to_string(base) + "-" + std::to_string(base + count - 1);
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------------
// LidAssignment

LidAssignment::LidAssignment(const Topology& topo) {
  first_.resize(topo.size() + 1);
  uint32_t total = 0;
  for (NodeIndex i = 0; i < topo.size(); ++i) {
    first_[i] = total;
    total += topo.node(i).numPorts + 1u;
  }
  // One sentinel past the last node so a row's end is first_[node + 1].
  first_[topo.size()] = total;
  ranges_.resize(total);
}

LidAssignment LidAssignment::fromTopology(const Topology& topo) {
  LidAssignment a(topo);
  uint8_t lmc = 0;
  auto take = [&](NodeIndex node, PortNum port, const fabric::PortAttrs& attrs, uint8_t portLmc) {
    if (!fabric::isUnicast(attrs.lid) || portLmc > kMaxLmc) return;
    uint32_t count = 1u << portLmc;
    // A port answers to its LID with the low LMC bits ignored, so the range it really holds is aligned.
    uint32_t base = attrs.lid.value & ~(count - 1);
    if (!rangeFits(base, count)) return;
    for (uint32_t l = base; l < base + count; ++l)
      if (a.owner(Lid{static_cast<uint16_t>(l)}).node != fabric::kNoNode)
        return;  // duplicate: first one wins
    a.set(node, port, LidRange{Lid{static_cast<uint16_t>(base)}, portLmc});
  };
  for (NodeIndex i = 0; i < topo.size(); ++i) {
    const Node& n = topo.node(i);
    if (n.isSwitch()) {
      const auto& attrs = n.ports[0].attrs;
      take(i, PortNum{0}, attrs, n.sw.enhancedPort0 ? attrs.lmc : 0);
    } else if (hasEndportsOnPorts(n)) {
      for (unsigned p = 1; p <= n.numPorts; ++p) {
        const auto& attrs = n.ports[p].attrs;
        if (attrs.lmc <= kMaxLmc && fabric::isUnicast(attrs.lid)) lmc = std::max(lmc, attrs.lmc);
        take(i, PortNum{static_cast<uint8_t>(p)}, attrs, attrs.lmc);
      }
    }
  }
  a.setLmc(lmc);
  return a;
}

void LidAssignment::set(NodeIndex node, PortNum port, LidRange range) {
  assert(node + 1 < first_.size());
  uint32_t slot = first_[node] + port.value;
  assert(slot < first_[node + 1]);
  // Free the port's old range.
  LidRange& cur = ranges_[slot];
  if (cur.base.value != 0) {
    for (uint32_t l = cur.base.value; l < cur.base.value + cur.count() && l < owners_.size(); ++l)
      if (owners_[l].node == node && owners_[l].port == port) owners_[l] = LidOwner{};
  }
  cur = LidRange{};
  if (range.base.value != 0) {
    assert(range.lmc <= kMaxLmc && rangeFits(range.base.value, range.count()));
    uint32_t end = range.base.value + range.count();
    if (owners_.size() < end) owners_.resize(end);
    for (uint32_t l = range.base.value; l < end; ++l) {
      // Another endport holding one of these LIDs loses its whole range, so ranges never overlap.
      LidOwner other = owners_[l];
      if (other.node != fabric::kNoNode && !(other.node == node && other.port == port))
        set(other.node, other.port, {});
    }
    if (owners_.size() < end) owners_.resize(end);
    for (uint32_t l = range.base.value; l < end; ++l) owners_[l] = LidOwner{node, port};
    cur = range;
  }
  while (!owners_.empty() && owners_.back().node == fabric::kNoNode) owners_.pop_back();
}

Lid LidAssignment::base(NodeIndex node, PortNum port) const {
  return range(node, port).base;
}

LidRange LidAssignment::range(NodeIndex node, PortNum port) const {
  if (node + 1 >= first_.size()) return {};
  uint32_t slot = first_[node] + port.value;
  if (slot >= first_[node + 1]) return {};
  return ranges_[slot];
}

LidOwner LidAssignment::owner(Lid lid) const {
  if (lid.value == 0 || lid.value >= owners_.size()) return {};
  return owners_[lid.value];
}

// ---------------------------------------------------------------------------------------------------------------
// assignLids

namespace {

struct Endport {
  NodeIndex node;
  PortNum port;
  Guid guid;       // 0: no persistent identity
  uint16_t count;  // LIDs it needs
  uint8_t lmc;     // log2(count)
  Lid current;     // what PortInfo reports now
  uint8_t currentLmc;
  bool compareLmc;    // whether an LMC change counts as "changed" (not for a base switch port 0)
  uint32_t base = 0;  // assigned
};

// Who holds each LID (0 = free, else holder id + 1), plus one "lowest candidate" cursor per range size: LIDs
// are only ever taken, never freed, during one assignment, so each cursor only moves forward and the whole
// fresh allocation is linear in the LID space.
class LidSpace {
 public:
  LidSpace() : holder_(kLidSpace, 0) {}
  bool isFree(uint32_t base, uint32_t count) const {
    if (!rangeFits(base, count)) return false;
    for (uint32_t l = base; l < base + count; ++l)
      if (holder_[l]) return false;
    return true;
  }
  // Holder id of the first taken LID in the range; UINT32_MAX when all are free.
  uint32_t holderIn(uint32_t base, uint32_t count) const {
    for (uint32_t l = base; l < base + count && l < kLidSpace; ++l)
      if (holder_[l]) return holder_[l] - 1;
    return UINT32_MAX;
  }
  void take(uint32_t base, uint32_t count, uint32_t holder) {
    for (uint32_t l = base; l < base + count; ++l) holder_[l] = holder + 1;
  }
  // Lowest free range of `count` LIDs aligned to count; 0 when the space is exhausted.
  uint32_t lowestFree(uint32_t count) {
    unsigned k = static_cast<unsigned>(__builtin_ctz(count));
    uint32_t& c = cursor_[k];
    if (c == 0) c = count;  // base 0 is never valid, so the first aligned base is `count`
    for (; rangeFits(c, count); c += count)
      if (isFree(c, count)) return c;
    return 0;
  }

 private:
  std::vector<uint32_t> holder_;
  uint32_t cursor_[kMaxLmc + 1] = {};
};

}  // namespace

Result<LidAssignResult> assignLids(const Topology& topo, const Guid2Lid& persistent, uint8_t lmc) {
  if (lmc > kMaxLmc) return fabric::makeError("LMC " + std::to_string(lmc) + " is out of range (0..7)");
  LidAssignResult result;
  result.lids = LidAssignment(topo);
  result.lids.setLmc(lmc);

  // Endports in a stable order independent of discovery order: switches by port GUID, then CA/router ports by
  // port GUID; ports without a GUID last, by node and port. The daemon (discovery order) and ibsm-route (file
  // order) therefore give the same fabric the same LIDs.
  std::vector<Endport> eps;
  for (NodeIndex i = 0; i < topo.size(); ++i) {
    const Node& n = topo.node(i);
    if (n.isSwitch()) {
      uint8_t l = n.sw.enhancedPort0 ? lmc : 0;
      const auto& a = n.ports[0].attrs;
      eps.push_back(Endport{i, PortNum{0}, n.ports[0].guid, static_cast<uint16_t>(1u << l), l, a.lid, a.lmc,
                            n.sw.enhancedPort0});
    } else if (hasEndportsOnPorts(n)) {
      for (unsigned p = 1; p <= n.numPorts; ++p) {
        const fabric::Port& port = n.ports[p];
        // Only linked ports are endports of the subnet; an unlinked port cannot be reached or programmed.
        if (!port.connected()) continue;
        eps.push_back(Endport{i, port.num, port.guid, static_cast<uint16_t>(1u << lmc), lmc, port.attrs.lid,
                              port.attrs.lmc, true});
      }
    }
  }
  auto key = [&](const Endport& e) {
    return std::tuple(e.guid.value == 0, !topo.node(e.node).isSwitch(), e.guid.value, e.node, e.port.value);
  };
  std::sort(eps.begin(), eps.end(), [&](const Endport& x, const Endport& y) { return key(x) < key(y); });

  LidSpace space;
  auto describe = [&](const Endport& e) {
    if (e.guid.value != 0) return fabric::toString(e.guid);
    return "node " + fabric::toString(topo.node(e.node).guid) + " port " + std::to_string(e.port.value);
  };
  // Holder ids: endport i is i; the k-th reserved absent GUID is eps.size() + k.
  std::vector<Guid> absentHolders;
  auto holderOf = [&](uint32_t base, uint32_t count) -> std::string {
    uint32_t h = space.holderIn(base, count);
    if (h < eps.size()) return describe(eps[h]);
    if (h != UINT32_MAX && h - eps.size() < absentHolders.size())
      return "absent port " + fabric::toString(absentHolders[h - eps.size()]);
    return "another port";
  };

  // Pass 1: persistent LIDs of present endports.
  for (uint32_t i = 0; i < eps.size(); ++i) {
    Endport& e = eps[i];
    if (e.guid.value == 0) continue;
    auto it = persistent.find(e.guid);
    if (it == persistent.end()) continue;
    uint32_t base = it->second.base.value;
    if (!rangeFits(base, e.count) || base % e.count != 0) {
      result.warnings.push_back("persistent LID " + std::to_string(base) + " of " + describe(e) +
                                " is not valid for LMC " + std::to_string(e.lmc) + "; reassigned");
      continue;
    }
    if (!space.isFree(base, e.count)) {
      result.warnings.push_back("persistent LID " + lidRangeText(base, e.count) + " of " + describe(e) +
                                " clashes with " + holderOf(base, e.count) + "; reassigned");
      continue;
    }
    space.take(base, e.count, i);
    e.base = base;
  }

  // Pass 2: persistent entries of absent ports stay reserved (and are written back), so a host that returns
  // gets its old LIDs.
  std::vector<Guid> presentGuids;
  for (const Endport& e : eps)
    if (e.guid.value != 0) presentGuids.push_back(e.guid);
  std::sort(presentGuids.begin(), presentGuids.end());
  for (const auto& [guid, range] : persistent) {
    if (std::binary_search(presentGuids.begin(), presentGuids.end(), guid)) continue;
    uint32_t base = range.base.value, count = range.lmc <= kMaxLmc ? range.count() : 0;
    if (guid.value == 0 || count == 0 || !rangeFits(base, count) || base % count != 0) {
      result.warnings.push_back("persistent entry " + fabric::toString(guid) + " LID " +
                                std::to_string(base) + " is invalid; dropped");
      continue;
    }
    if (!space.isFree(base, count)) {
      result.warnings.push_back("persistent LID " + lidRangeText(base, count) + " of absent port " +
                                fabric::toString(guid) + " clashes with " + holderOf(base, count) +
                                "; dropped");
      continue;
    }
    space.take(base, count, static_cast<uint32_t>(eps.size() + absentHolders.size()));
    absentHolders.push_back(guid);
    result.guid2lid.emplace(guid, range);
  }

  // Pass 3: the LIDs the ports hold now.
  for (uint32_t i = 0; i < eps.size(); ++i) {
    Endport& e = eps[i];
    if (e.base != 0 || !fabric::isUnicast(e.current)) continue;
    uint32_t base = e.current.value;
    if (base % e.count != 0 || !rangeFits(base, e.count)) continue;  // e.g. LMC grew: silently realigned
    if (!space.isFree(base, e.count)) {
      result.warnings.push_back("LID " + lidRangeText(base, e.count) + " held by " + describe(e) +
                                " is taken by " + holderOf(base, e.count) + "; reassigned");
      continue;
    }
    space.take(base, e.count, i);
    e.base = base;
  }

  // Pass 4: the lowest free aligned range for the rest.
  for (uint32_t i = 0; i < eps.size(); ++i) {
    Endport& e = eps[i];
    if (e.base != 0) continue;
    uint32_t base = space.lowestFree(e.count);
    if (base == 0) {
      size_t missing = 0;
      for (const Endport& x : eps) missing += x.base == 0;
      return fabric::makeError("LID space exhausted: no free range of " + std::to_string(e.count) +
                               " LIDs for " + describe(e) + " (" + std::to_string(missing) +
                               " endports without a LID, " + std::to_string(eps.size()) + " endports, LMC " +
                               std::to_string(lmc) + ")");
    }
    space.take(base, e.count, i);
    e.base = base;
  }

  for (const Endport& e : eps) {
    LidRange r{Lid{static_cast<uint16_t>(e.base)}, e.lmc};
    result.lids.set(e.node, e.port, r);
    if (e.guid.value != 0) result.guid2lid[e.guid] = r;
    if (e.current.value != e.base || (e.compareLmc && e.currentLmc != e.lmc)) ++result.changed;
  }
  return result;
}

// ---------------------------------------------------------------------------------------------------------------
// guid2lid file

std::string formatGuid2Lid(const Guid2Lid& map) {
  std::string out;
  out.reserve(map.size() * 32);
  char line[64];
  for (const auto& [guid, range] : map) {
    unsigned first = range.base.value;
    unsigned last = first + range.count() - 1u;
    std::snprintf(line, sizeof line, "0x%016llx %u %u\n", static_cast<unsigned long long>(guid.value), first,
                  last);
    out += line;
  }
  return out;
}

namespace {

// Splits on blanks; at most `max` tokens are kept, the count tells if there were more.
size_t split(std::string_view s, std::string_view* out, size_t max) {
  size_t n = 0;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    if (i >= s.size()) break;
    size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != '\t') ++j;
    if (n < max) out[n] = s.substr(i, j - i);
    ++n;
    i = j;
  }
  return n;
}

// A LID in decimal or 0x-hex.
std::optional<uint32_t> parseLidNumber(std::string_view t) {
  int b = 10;
  if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
    t.remove_prefix(2);
    b = 16;
  }
  if (t.empty() || t.size() > 8) return std::nullopt;
  uint32_t v = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v, b);
  if (ec != std::errc() || end != t.data() + t.size()) return std::nullopt;
  return v;
}

}  // namespace

Result<Guid2Lid> parseGuid2Lid(std::string_view text) {
  return parseGuid2Lid(text, "guid2lid");
}

Result<Guid2Lid> parseGuid2Lid(std::string_view text, std::string_view fileName) {
  Guid2Lid map;
  std::map<Guid, size_t> lineOf;
  size_t lineNo = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++lineNo;
    if (size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;
    auto fail = [&](const std::string& what) {
      return Error{std::string(fileName) + ":" + std::to_string(lineNo) + ": " + what};
    };
    std::string_view tok[3];
    size_t n = split(line, tok, 3);
    if (n != 3)
      return fail("expected 'GUID FIRST_LID LAST_LID', got " + std::to_string(n) + " field" +
                  (n == 1 ? "" : "s"));
    auto guid = fabric::parseGuid(tok[0]);
    if (!guid || guid->value == 0) return fail("bad GUID '" + printable(tok[0]) + "'");
    auto first = parseLidNumber(tok[1]);
    auto last = parseLidNumber(tok[2]);
    if (!first || !fabric::isUnicast(Lid{static_cast<uint16_t>(*first <= 0xFFFF ? *first : 0)}))
      return fail("bad LID '" + printable(tok[1]) + "' (unicast LIDs are 1..49151)");
    if (!last || !fabric::isUnicast(Lid{static_cast<uint16_t>(*last <= 0xFFFF ? *last : 0)}))
      return fail("bad LID '" + printable(tok[2]) + "' (unicast LIDs are 1..49151)");
    if (*last < *first)
      return fail("last LID " + std::to_string(*last) + " is below first LID " + std::to_string(*first));
    uint32_t count = *last - *first + 1;
    if (count > 128 || (count & (count - 1)) != 0)
      return fail("LID range " + std::to_string(*first) + "-" + std::to_string(*last) +
                  " is not 2^LMC LIDs (LMC 0..7)");
    if (*first % count != 0)
      return fail("LID range " + std::to_string(*first) + "-" + std::to_string(*last) +
                  " is not aligned to " + std::to_string(count));
    if (auto [it, inserted] = lineOf.emplace(*guid, lineNo); !inserted)
      return fail("duplicate GUID " + fabric::toString(*guid) + " (first at line " +
                  std::to_string(it->second) + ")");
    map.emplace(*guid,
                LidRange{Lid{static_cast<uint16_t>(*first)}, static_cast<uint8_t>(__builtin_ctz(count))});
  }
  return map;
}

}  // namespace ibsm::routing
