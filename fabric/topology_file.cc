// Reader and writer for topology files in ibnetdiscover's text format, which is also ibsim's net-file format.
//
// The reader does what ibsim 0.10 does with the same file wherever that is cheap (GUID counters, remote port
// 1 when none is given, width/speed taken from the comments, sticky devid=), so a topology read from a file
// equals the fabric ibsim simulates from it. Where ibsim would silently misread a file (a record not ended by
// a blank line, a link listed on one end only) the reader fails with file:line instead. The input is
// untrusted: every index and number is range-checked and nothing asserts.
#include "fabric/topology_file.h"

#include <sys/stat.h>  // lstat
#include <unistd.h>    // fsync, getpid

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <unordered_map>

#include "fabric/text.h"

namespace ibsm::fabric {
namespace {

// NumPorts is 8 bits wide and port 255 is reserved.
constexpr unsigned kMaxPorts = 254;

// Untrusted text echoed in an error: quoted and cut short.
std::string shown(std::string_view s) {
  constexpr size_t kMax = 40;
  std::string out = "\"";  // appended, not "\"" + a temporary: GCC 12 at -O3 reports a false -Wrestrict
  out += s.substr(0, kMax);
  out += s.size() > kMax ? "...\"" : "\"";
  return out;
}

// Removes and returns the first whitespace-separated word of s.
std::string_view nextWord(std::string_view& s) {
  s = trimLeft(s);
  size_t n = 0;
  while (n < s.size() && !isBlank(s[n])) ++n;
  std::string_view word = s.substr(0, n);
  s.remove_prefix(n);
  return word;
}

// All of text as a number, decimal or 0x-prefixed hex; nullopt when malformed or above max.
std::optional<uint64_t> toNumber(std::string_view text, uint64_t max) {
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    text.remove_prefix(2);
  }
  if (text.empty()) return std::nullopt;
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, base);
  if (ec != std::errc() || end != text.data() + text.size() || v > max) return std::nullopt;
  return v;
}

// s starts with '"': returns the quoted text and removes it (quotes included) from s; nullopt if
// unterminated.
std::optional<std::string_view> takeQuoted(std::string_view& s) {
  size_t close = s.find('"', 1);
  if (s.empty() || s[0] != '"' || close == std::string_view::npos) return std::nullopt;
  std::string_view inner = s.substr(1, close - 1);
  s.remove_prefix(close + 1);
  return inner;
}

// s starts with open: returns the text up to the matching close character and removes it from s.
std::optional<std::string_view> takeBracketed(std::string_view& s, char open, char close) {
  size_t end = s.find(close);
  if (s.empty() || s[0] != open || end == std::string_view::npos) return std::nullopt;
  std::string_view inner = s.substr(1, end - 1);
  s.remove_prefix(end + 1);
  return inner;
}

// Enabled width/speed masks of one port, as PortInfo's LinkWidthEnabled / LinkSpeedEnabled /
// LinkSpeedExtEnabled. Like ibsim, the reader derives a link's active width and speed as the best value both
// ends enable; the defaults are ibsim's (4x, SDR, no extended speed).
struct LinkMasks {
  uint8_t width = 2;
  uint8_t speed = 1;
  uint8_t ext = 0;
};

// What ibsim enables for a port whose comment names the link as e.g. "4xQDR"
// (parse_port_link_width_and_speed): 4x and 12x also enable the narrower standard widths, a speed enables the
// slower ones too.
void applyWidthSpeed(LinkMasks& m, WidthSpeed ws) {
  switch (ws.width) {
    case 8:
      m.width = 1 | 2 | 8;
      break;
    case 2:
      m.width = 1 | 2;
      break;
    default:
      m.width = ws.width;
      break;  // 1x, 2x, 8x stand alone
  }
  switch (ws.speed) {
    case 4:
      m.speed = 1 | 2 | 4;
      break;
    case 2:
      m.speed = 1 | 2;
      break;
    default:
      m.speed = ws.speed;
      break;
  }
  switch (ws.speedExt) {  // SDR/DDR/QDR leave the extended speeds alone, as in ibsim
    case 1:
      m.ext = 1;
      break;
    case 2:
      m.ext = 1 | 2;
      break;
    case 4:
      m.ext = 1 | 2 | 4;
      break;
    case 8:
      m.ext = 1 | 2 | 4 | 8;
      break;
    default:
      break;
  }
}

struct ActiveLink {
  uint8_t width, speed, ext;
};

// The best width/speed both ends enable (ibsim's get_active_link*); nullopt where ibsim would abort.
std::optional<ActiveLink> activeLink(LinkMasks a, LinkMasks b) {
  auto best = [](uint8_t common, std::initializer_list<uint8_t> order) -> uint8_t {
    for (uint8_t bit : order)
      if (common & bit) return bit;
    return 0;
  };
  ActiveLink l{best(a.width & b.width, {8, 4, 2, 16, 1}), best(a.speed & b.speed, {4, 2, 1}),
               best(a.ext & b.ext, {8, 4, 2, 1})};
  if (l.width == 0 || l.speed == 0) return std::nullopt;
  return l;
}

struct PortLine {
  unsigned port = 0;
  std::string remoteId;
  unsigned remotePort = 1;   // ibsim's default when the remote port is omitted
  std::optional<Guid> guid;  // "[p](guid)" on a CA or router port line
  uint16_t lid = 0;
  uint8_t lmc = 0;
  LinkMasks masks;
  size_t line = 0;
};

struct NodeBlock {
  NodeType type = NodeType::kUnknown;
  unsigned numPorts = 0;
  std::string id, desc;
  Guid guid, systemGuid;
  std::optional<Guid> switchPortGuid;  // Y in "switchguid=X(Y)"
  uint32_t vendorId = 0;
  uint16_t deviceId = 0;
  bool enhancedPort0 = false;
  uint16_t lid = 0;  // a switch's port-0 LID and LMC, from the header
  uint8_t lmc = 0;
  LinkMasks defaults;
  size_t line = 0;
  std::vector<PortLine> ports;
  std::vector<int> byPort;  // port number -> index into ports, -1 when the file has no line for it
};

const char* kindOf(NodeType type) {
  switch (type) {
    case NodeType::kSwitch:
      return "switch";
    case NodeType::kRouter:
      return "router";
    default:
      return "CA";
  }
}

class Parser {
 public:
  Parser(std::string_view text, std::string_view file) : text_(text), file_(file) {}

  Result<TopologyPtr> run() {
    size_t pos = 0;
    while (pos < text_.size()) {
      size_t end = text_.find('\n', pos);
      if (end == std::string_view::npos) end = text_.size();
      ++line_;
      if (auto r = parseLine(trim(text_.substr(pos, end - pos))); !r) return r.error();
      pos = end + 1;
    }
    return assemble();
  }

 private:
  Error fail(size_t line, const std::string& msg) const {
    return makeError(std::string(file_) + ":" + std::to_string(line) + ": " + msg);
  }
  Error fail(const std::string& msg) const { return fail(line_, msg); }

  Result<void> parseLine(std::string_view t) {
    if (t.empty()) {
      inBlock_ = false;
      return {};
    }
    if (t[0] == '#') return {};
    if (t[0] == '[') {
      if (!inBlock_) return fail("port line outside a node block");
      return parsePort(t);
    }
    // ibsim ends a node's record at the first line that is not a port line and drops that line, so anything
    // but a blank line here would be lost on ibsim.
    if (inBlock_)
      return fail("expected a blank line after the ports of \"" + nodes_.back().id +
                  "\" (ibsim would skip this line)");
    size_t n = 0;
    while (n < t.size() && std::isalpha(static_cast<unsigned char>(t[n]))) ++n;
    std::string_view word = t.substr(0, n), rest = t.substr(n);
    if (word == "Switch") return parseHeader(NodeType::kSwitch, rest);
    if (word == "Ca" || word == "Hca") return parseHeader(NodeType::kCa, rest);
    if (word == "Rt") return parseHeader(NodeType::kRouter, rest);
    rest = trimLeft(rest);
    if (!word.empty() && !rest.empty() && (rest[0] == '=' || rest[0] == '+'))
      return parseAssignment(word, rest[0] == '+', trim(rest.substr(1)));
    return fail("unrecognized line " + shown(t));
  }

  // vendid=, devid=, sysimgguid=, switchguid=X(Y), caguid=, rtguid= (ibnetdiscover) and ibsim's hcaguids=,
  // width=, speed=, extspeed= and relative "switchguid+N".
  Result<void> parseAssignment(std::string_view key, bool relative, std::string_view value) {
    int type = key == "caguid" || key == "hcaguids" ? 0 : key == "switchguid" ? 1 : key == "rtguid" ? 2 : -1;
    if (relative && type < 0) return fail("'+' is only allowed with GUID bases");
    if (type >= 0) {
      value = trim(value.substr(0, value.find('#')));
      std::string_view number = trim(value.substr(0, value.find('(')));
      auto v = toNumber(number, UINT64_MAX);
      if (!v) return fail("bad GUID " + shown(number));
      if (relative) {
        if (*v > UINT64_MAX - base_[type]) return fail("GUID base overflows");
        next_[type] = base_[type] + *v;
      } else {
        base_[type] = next_[type] = *v;
      }
      value.remove_prefix(number.size());
      value = trimLeft(value);
      if (!value.empty()) {
        auto inner = takeBracketed(value, '(', ')');
        auto portGuid = inner ? parseGuid(trim(*inner)) : std::nullopt;
        if (type != 1 || !portGuid || !trim(value).empty()) return fail("bad GUID line");
        pendingSwitchPortGuid_ = *portGuid;
      }
      return {};
    }
    auto number = [&](uint64_t min, uint64_t max) -> std::optional<uint64_t> {
      auto v = toNumber(value, max);
      if (!v || *v < min) return std::nullopt;
      return v;
    };
    auto bad = [&] { return fail("bad value " + shown(value) + " for " + std::string(key)); };
    std::optional<uint64_t> v;
    if (key == "vendid") {
      if (!(v = number(0, 0xFFFFFF))) return bad();
      pendingVendorId_ = static_cast<uint32_t>(*v);
    } else if (key == "devid") {
      if (!(v = number(0, 0xFFFF))) return bad();
      deviceId_ = static_cast<uint16_t>(*v);
    } else if (key == "sysimgguid") {
      if (!(v = number(0, UINT64_MAX))) return bad();
      pendingSysImgGuid_ = *v;
    } else if (key == "width") {
      if (!(v = number(1, 31))) return bad();
      defaults_.width = static_cast<uint8_t>(*v);
    } else if (key == "speed") {
      if (!(v = number(1, 7))) return bad();
      defaults_.speed = static_cast<uint8_t>(*v);
    } else if (key == "extspeed") {
      if (!(v = number(0, 15))) return bad();
      defaults_.ext = static_cast<uint8_t>(*v);
    } else {
      return fail("unknown setting " + shown(key));
    }
    return {};
  }

  // lid N, lmc N and "enhanced|base port 0" after a header's id or description. Before the '#' (strict)
  // nothing else is allowed; in the comment other words are ignored.
  Result<void> scanHeaderWords(std::string_view s, bool strict, NodeBlock& b) {
    for (std::string_view w = nextWord(s); !w.empty(); w = nextWord(s)) {
      if (w == "lid" || w == "lmc") {
        std::string_view v = nextWord(s);
        auto n = toNumber(v, w == "lid" ? 0xFFFF : 7);
        if (!n) return fail("bad " + std::string(w == "lid" ? "LID" : "LMC") + " " + shown(v));
        if (w == "lid")
          b.lid = static_cast<uint16_t>(*n);
        else
          b.lmc = static_cast<uint8_t>(*n);
      } else if (strict) {
        return fail("unexpected " + shown(w) + " in node header");
      } else if (w == "enhanced" || w == "base") {
        b.enhancedPort0 = w == "enhanced";
      }
    }
    return {};
  }

  // Switch|Ca|Hca|Rt <nports> "<id>" [# "<desc>" [enhanced|base port 0] [lid N] [lmc M]]
  Result<void> parseHeader(NodeType type, std::string_view rest) {
    if (rest.empty() || !isBlank(rest[0])) return fail("bad node header");
    rest = trimLeft(rest);
    size_t n = 0;
    while (n < rest.size() && !isBlank(rest[n]) && rest[n] != '"') ++n;
    std::string_view count = rest.substr(0, n);
    auto numPorts = toNumber(count, kMaxPorts);
    if (!numPorts || *numPorts == 0)
      return fail("bad port count " + shown(count) + " (1.." + std::to_string(kMaxPorts) + ")");
    rest = trimLeft(rest.substr(n));
    if (rest.empty() || rest[0] != '"') return fail("bad node header: expected a quoted node id");
    auto id = takeQuoted(rest);
    if (!id) return fail("unterminated node id");
    if (id->empty()) return fail("empty node id");

    NodeBlock b;
    b.type = type;
    b.numPorts = static_cast<unsigned>(*numPorts);
    b.id = std::string(*id);
    b.line = line_;
    b.defaults = defaults_;
    size_t hash = rest.find('#');
    if (auto r = scanHeaderWords(rest.substr(0, hash), true, b); !r) return r;
    if (hash != std::string_view::npos) {
      std::string_view c = trimLeft(rest.substr(hash + 1));
      if (!c.empty() && c[0] == '"') {
        auto desc = takeQuoted(c);
        if (!desc) return fail("unterminated node description");
        b.desc = std::string(*desc);
      } else {  // unquoted: up to the first keyword ibsim also stops at
        size_t end = c.size();
        for (std::string_view k : {" enhanced port ", " base port ", " lid ", " lmc "})
          end = std::min(end, c.find(k));
        b.desc = std::string(trim(c.substr(0, end)));
        // The writer cannot quote a description holding a quote; refusing it keeps what is read writable.
        if (b.desc.find('"') != std::string::npos) return fail("unbalanced quote in node description");
        c.remove_prefix(end);
      }
      if (auto r = scanHeaderWords(c, false, b); !r) return r;
    }
    if (b.desc.empty()) b.desc = b.id;  // as ibsim: a node without a description is described by its id

    // ibsim's GUID counters: the node takes the counter of its type; a switch then reserves one GUID, a CA or
    // router one for the node plus one per port.
    int t = type == NodeType::kCa ? 0 : type == NodeType::kSwitch ? 1 : 2;
    if (next_[t] == 0)
      return fail("node GUID would be 0: give it a " + std::string(t == 2 ? "rtguid" : "GUID") + "= line");
    uint64_t step = type == NodeType::kSwitch ? 1 : b.numPorts + 1u;
    if (next_[t] > UINT64_MAX - step) return fail("node GUID range overflows");
    b.guid = Guid{next_[t]};
    next_[t] += step;
    b.systemGuid = Guid{pendingSysImgGuid_ ? pendingSysImgGuid_ : b.guid.value};
    b.vendorId = pendingVendorId_;
    b.deviceId = deviceId_;  // devid= sticks until changed, vendid= and sysimgguid= apply to one node (ibsim)
    pendingVendorId_ = 0;
    pendingSysImgGuid_ = 0;
    if (type == NodeType::kSwitch) {
      b.switchPortGuid = pendingSwitchPortGuid_;
      pendingSwitchPortGuid_.reset();
    }
    b.byPort.assign(b.numPorts + 1u, -1);
    nodes_.push_back(std::move(b));
    inBlock_ = true;
    return {};
  }

  // [p][(guid)] "remote-id"[rp][(remote guid)] [w=N] [s=N] [e=N] [# comment]
  Result<void> parsePort(std::string_view s) {
    NodeBlock& b = nodes_.back();
    auto num = takeBracketed(s, '[', ']');
    if (!num || num->find('"') != std::string_view::npos) return fail("bad port line: missing ']'");
    auto p = toNumber(trim(*num), 255);
    if (!p) return fail("bad port number " + shown(*num));
    if (*p == 0) return fail("port 0 cannot be linked");
    if (*p > b.numPorts)
      return fail("port " + std::to_string(*p) + " is past the " + kindOf(b.type) + "'s " +
                  std::to_string(b.numPorts) + " ports");
    if (int prev = b.byPort[*p]; prev >= 0)
      return fail("port " + std::to_string(*p) + " is listed twice (also on line " +
                  std::to_string(b.ports[prev].line) + ")");
    PortLine pl;
    pl.port = static_cast<unsigned>(*p);
    pl.line = line_;
    pl.masks = b.defaults;
    if (!s.empty() && s[0] == '(') {
      if (b.type == NodeType::kSwitch) return fail("unexpected port GUID on a switch port line");
      auto inner = takeBracketed(s, '(', ')');
      auto guid = inner ? parseGuid(trim(*inner)) : std::nullopt;
      if (!guid) return fail("bad port GUID");
      pl.guid = *guid;
    }
    s = trimLeft(s);
    if (s.empty() || s[0] != '"') return fail("bad port line: expected \"remote-id\"");
    auto remote = takeQuoted(s);
    if (!remote) return fail("unterminated remote node id");
    if (remote->empty()) return fail("empty remote node id");
    pl.remoteId = std::string(*remote);
    if (!s.empty() && s[0] == '[') {
      auto inner = takeBracketed(s, '[', ']');
      auto rp = inner ? toNumber(trim(*inner), 255) : std::nullopt;
      if (!rp || *rp == 0) return fail("bad remote port");
      pl.remotePort = static_cast<unsigned>(*rp);
    }
    s = trimLeft(s);
    if (!s.empty() && s[0] == '(') {  // the remote CA's port GUID; its own port line is what counts
      auto inner = takeBracketed(s, '(', ')');
      if (!inner || !parseGuid(trim(*inner))) return fail("bad remote port GUID");
    }
    size_t hash = s.find('#');
    std::string_view opts = s.substr(0, hash);
    for (std::string_view w = nextWord(opts); !w.empty(); w = nextWord(opts)) {
      // ibsim link options: w= width mask, s= speed mask (0 means QDR), e= extended speed mask.
      auto v = w.size() > 2 && w[1] == '=' ? toNumber(w.substr(2), 31) : std::nullopt;
      if (!v || (w[0] == 'w' && *v == 0) || (w[0] == 's' && *v > 7) || (w[0] == 'e' && *v > 15) ||
          (w[0] != 'w' && w[0] != 's' && w[0] != 'e'))
        return fail("bad link option " + shown(w));
      uint8_t mask = static_cast<uint8_t>(*v);
      if (w[0] == 'w') pl.masks.width = mask;
      if (w[0] == 's') pl.masks.speed = mask ? mask : 4;
      if (w[0] == 'e') pl.masks.ext = mask;
    }
    if (hash != std::string_view::npos)
      if (auto r = parseComment(s.substr(hash + 1), b.type != NodeType::kSwitch, pl); !r) return r;
    b.byPort[pl.port] = static_cast<int>(b.ports.size());
    b.ports.push_back(std::move(pl));
    return {};
  }

  // Switch port: # "remote desc" lid L 4xQDR.  CA port: # lid L lmc M "remote desc" lid L 4xQDR.
  // Any other comment is free text. The remote LID is checked but not kept: the remote's own lines give it.
  Result<void> parseComment(std::string_view c, bool caLike, PortLine& pl) {
    c = trimLeft(c);
    if (caLike && c.starts_with("lid") && (c.size() == 3 || isBlank(c[3]))) {
      nextWord(c);
      std::string_view v = nextWord(c);
      auto lid = toNumber(v, 0xFFFF);
      if (!lid) return fail("bad LID " + shown(v));
      pl.lid = static_cast<uint16_t>(*lid);
      std::string_view save = c;
      if (nextWord(c) == "lmc") {
        v = nextWord(c);
        auto lmc = toNumber(v, 7);
        if (!lmc) return fail("bad LMC " + shown(v));
        pl.lmc = static_cast<uint8_t>(*lmc);
      } else {
        c = save;
      }
      c = trimLeft(c);
    }
    if (!c.empty() && c[0] == '"' && !takeQuoted(c)) return fail("unterminated remote description");
    if (nextWord(c) != "lid") return {};
    std::string_view v = nextWord(c);
    if (!toNumber(v, 0xFFFF)) return fail("bad remote LID " + shown(v));
    std::string_view ws = nextWord(c);
    if (ws.empty()) return {};
    auto parsed = parseWidthSpeed(ws);
    if (!parsed) return fail("bad link width/speed " + shown(ws));
    applyWidthSpeed(pl.masks, *parsed);
    return {};
  }

  Result<TopologyPtr> assemble() {
    if (nodes_.empty()) return makeError(std::string(file_) + ": no nodes found");
    std::unordered_map<std::string, NodeIndex> byId;
    std::unordered_map<uint64_t, size_t> nodeGuidLine, portGuidLine;
    for (NodeIndex i = 0; i < nodes_.size(); ++i) {
      const NodeBlock& b = nodes_[i];
      if (auto [it, fresh] = byId.emplace(b.id, i); !fresh)
        return fail(b.line, "node id \"" + b.id + "\" is already used on line " +
                                std::to_string(nodes_[it->second].line));
      if (auto [it, fresh] = nodeGuidLine.emplace(b.guid.value, b.line); !fresh)
        return fail(b.line, "duplicate node GUID " + toString(b.guid) + " (also on line " +
                                std::to_string(it->second) + ")");
    }

    // Port GUIDs: the file's own first (a switch's is its node GUID unless "switchguid=X(Y)" says Y), then
    // ibsim's node GUID + port number for CA ports the file does not list. Such a guessed GUID that clashes
    // with a stated one is left unknown (0) rather than failing a real fabric's file over a guess.
    std::vector<std::vector<Guid>> portGuids(nodes_.size());
    auto claim = [&](Guid g, size_t line) -> Result<void> {
      if (auto [it, fresh] = portGuidLine.emplace(g.value, line); !fresh)
        return fail(line, "duplicate port GUID " + toString(g) + " (also on line " +
                              std::to_string(it->second) + ")");
      return {};
    };
    for (NodeIndex i = 0; i < nodes_.size(); ++i) {
      const NodeBlock& b = nodes_[i];
      portGuids[i].assign(b.numPorts + 1u, Guid{});
      if (b.type == NodeType::kSwitch) {
        portGuids[i][0] = b.switchPortGuid.value_or(b.guid);
        if (auto r = claim(portGuids[i][0], b.line); !r) return r.error();
        continue;
      }
      for (const PortLine& pl : b.ports) {
        if (!pl.guid || pl.guid->value == 0) continue;
        portGuids[i][pl.port] = *pl.guid;
        if (auto r = claim(*pl.guid, pl.line); !r) return r.error();
      }
    }
    for (NodeIndex i = 0; i < nodes_.size(); ++i) {
      const NodeBlock& b = nodes_[i];
      if (b.type == NodeType::kSwitch) continue;
      for (unsigned p = 1; p <= b.numPorts; ++p) {
        int k = b.byPort[p];
        if ((k >= 0 && b.ports[k].guid) || b.guid.value > UINT64_MAX - p) continue;
        Guid g{b.guid.value + p};
        if (portGuidLine.emplace(g.value, b.line).second) portGuids[i][p] = g;
      }
    }

    // Links: each port line must be answered by the remote's line for the remote port.
    struct PendingLink {
      NodeIndex a;
      unsigned pa;
      NodeIndex b;
      unsigned pb;
      ActiveLink active;
    };
    std::vector<PendingLink> links;
    for (NodeIndex i = 0; i < nodes_.size(); ++i) {
      const NodeBlock& b = nodes_[i];
      for (const PortLine& pl : b.ports) {
        auto it = byId.find(pl.remoteId);
        if (it == byId.end()) return fail(pl.line, "unknown node \"" + pl.remoteId + "\"");
        NodeIndex j = it->second;
        const NodeBlock& r = nodes_[j];
        std::string remote = "\"" + r.id + "\"[" + std::to_string(pl.remotePort) + "]";
        if (pl.remotePort > r.numPorts)
          return fail(pl.line, "port " + std::to_string(pl.remotePort) + " is past \"" + r.id + "\"'s " +
                                   std::to_string(r.numPorts) + " ports");
        if (j == i && pl.remotePort == pl.port) return fail(pl.line, "port linked to itself");
        int k = r.byPort[pl.remotePort];
        if (k < 0) return fail(pl.line, "link to " + remote + " is listed on this end only");
        const PortLine& back = r.ports[k];
        if (back.remoteId != b.id || back.remotePort != pl.port)
          return fail(pl.line, "link to " + remote + " does not match line " + std::to_string(back.line) +
                                   ", which links " + remote + " to \"" + back.remoteId + "\"[" +
                                   std::to_string(back.remotePort) + "]");
        if (std::pair{i, pl.port} > std::pair{j, pl.remotePort}) continue;  // the other end adds it
        auto active = activeLink(pl.masks, back.masks);
        if (!active) return fail(pl.line, "the two ends of this link enable no common width or speed");
        links.push_back({i, pl.port, j, pl.remotePort, *active});
      }
    }

    TopologyBuilder builder;
    auto wrap = [&](const Error& e) { return makeError(std::string(file_) + ": " + e.message); };
    for (NodeIndex i = 0; i < nodes_.size(); ++i) {
      const NodeBlock& b = nodes_[i];
      Node n;
      n.type = b.type;
      n.guid = b.guid;
      n.systemGuid = b.systemGuid;
      n.vendorId = b.vendorId;
      n.deviceId = b.deviceId;
      n.description = b.desc;
      n.numPorts = static_cast<uint8_t>(b.numPorts);
      n.sw.enhancedPort0 = b.enhancedPort0;
      auto added = builder.addNode(std::move(n));
      if (!added) return wrap(added.error());
      Node& node = builder.node(*added);
      for (unsigned p = 0; p <= b.numPorts; ++p) node.ports[p].guid = portGuids[i][p];
      if (b.type == NodeType::kSwitch) {
        PortAttrs& a = node.ports[0].attrs;
        a.lid = Lid{b.lid};
        a.lmc = b.lmc;
        a.state = PortState::kActive;  // the switch management port is always up
        a.physState = 5;
        a.valid = true;
      }
    }
    for (const PendingLink& l : links) {
      if (auto r = builder.connect(l.a, PortNum{static_cast<uint8_t>(l.pa)}, l.b,
                                   PortNum{static_cast<uint8_t>(l.pb)});
          !r)
        return wrap(r.error());
      for (auto [n, p] : {std::pair{l.a, l.pa}, std::pair{l.b, l.pb}}) {
        const NodeBlock& b = nodes_[n];
        PortAttrs& a = builder.node(n).ports[p].attrs;
        if (b.type != NodeType::kSwitch) {
          const PortLine& pl = b.ports[b.byPort[p]];
          a.lid = Lid{pl.lid};
          a.lmc = pl.lmc;
        }
        a.state = PortState::kActive;
        a.physState = 5;  // LinkUp
        a.widthActive = l.active.width;
        a.speedActive = l.active.speed;
        a.speedExtActive = l.active.ext;
        a.valid = true;
      }
    }
    auto topo = std::move(builder).build();
    if (!topo) return wrap(topo.error());
    return topo;
  }

  std::string_view text_, file_;
  size_t line_ = 0;
  std::vector<NodeBlock> nodes_;
  bool inBlock_ = false;  // inside a node's record: after its header, before the blank line that ends it
  // ibsim's GUID counters for CAs, switches and routers (ibsim starts routers at 0, i.e. they need rtguid=).
  uint64_t base_[3] = {0x100000, 0x200000, 0};
  uint64_t next_[3] = {0x100000, 0x200000, 0};
  uint32_t pendingVendorId_ = 0;
  uint64_t pendingSysImgGuid_ = 0;
  std::optional<Guid> pendingSwitchPortGuid_;
  uint16_t deviceId_ = 0;
  LinkMasks defaults_;
};

std::string hex(uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
  return buf;
}

// ibnetdiscover's node ids: "S-", "H-" or "R-" and the node GUID in 16 hex digits.
std::string nodeId(const Node& n) {
  char buf[24];
  char kind = n.type == NodeType::kSwitch ? 'S' : n.type == NodeType::kRouter ? 'R' : 'H';
  std::snprintf(buf, sizeof buf, "\"%c-%016llx\"", kind, static_cast<unsigned long long>(n.guid.value));
  return buf;
}

// A description goes inside double quotes on one line, so it cannot hold a quote or a line break.
std::string quotedDesc(const std::string& desc) {
  std::string s = "\"";
  for (char c : desc) s += c == '"' ? '\'' : (c == '\n' || c == '\r') ? ' ' : c;
  return s + "\"";
}

// The LID ibnetdiscover shows for a node's port: a switch's port-0 LID, a CA's own port LID.
uint16_t lidOf(const Node& n, unsigned port) {
  return n.isSwitch() ? n.ports[0].attrs.lid.value : n.ports[port].attrs.lid.value;
}

// "4xQDR"; a port without a known width or speed is written as ibsim's default, 4x SDR.
std::string widthSpeed(const PortAttrs& a) {
  std::string w = linkWidthString(a.widthActive), s = linkSpeedString(a.speedActive, a.speedExtActive);
  if (w.empty()) w = "4x";
  if (s.empty()) s = linkSpeedString(1, a.speedExtActive);
  return w + s;
}

}  // namespace

Result<TopologyPtr> parseTopology(std::string_view text, std::string_view fileName) {
  return Parser(text, fileName).run();
}

Result<TopologyPtr> readTopologyFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeError(path + ": cannot open: " + std::strerror(errno));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return makeError(path + ": read error");
  return parseTopology(text, path);
}

std::string formatTopology(const Topology& topo) {
  std::string out = "#\n# Topology file: written by ibsm in ibnetdiscover format\n#\n";
  for (const Node& n : topo.nodes()) {
    const std::string id = nodeId(n);
    out += "\nvendid=0x" + hex(n.vendorId) + "\ndevid=0x" + hex(n.deviceId) + "\n";
    if (n.systemGuid.value) out += "sysimgguid=0x" + hex(n.systemGuid.value) + "\n";
    if (n.isSwitch()) {
      const PortAttrs& a = n.ports[0].attrs;
      out += "switchguid=0x" + hex(n.guid.value) + "(" + hex(n.ports[0].guid.value) + ")\n";
      out += "Switch\t" + std::to_string(n.numPorts) + " " + id + "\t\t# " + quotedDesc(n.description) +
             (n.sw.enhancedPort0 ? " enhanced" : " base") + " port 0 lid " + std::to_string(a.lid.value) +
             " lmc " + std::to_string(a.lmc) + "\n";
    } else {
      bool router = n.type == NodeType::kRouter;
      out += std::string(router ? "rtguid=0x" : "caguid=0x") + hex(n.guid.value) + "\n";
      out += std::string(router ? "Rt\t" : "Ca\t") + std::to_string(n.numPorts) + " " + id + "\t\t# " +
             quotedDesc(n.description) + "\n";
    }
    for (unsigned p = 1; p <= n.numPorts && p < n.ports.size(); ++p) {
      const Port& port = n.ports[p];
      if (!port.connected()) continue;
      const Node& r = topo.node(port.peerNode);
      const unsigned rp = port.peerPort.value;
      if (rp >= r.ports.size()) continue;  // cannot happen in a built Topology
      std::string remote = nodeId(r) + "[" + std::to_string(rp) + "]";
      std::string tail =
          quotedDesc(r.description) + " lid " + std::to_string(lidOf(r, rp)) + " " + widthSpeed(port.attrs);
      // "[" is appended on its own: GCC 12 at -O3 reports a false -Wrestrict for "[" + std::to_string(p).
      out += '[';
      out += std::to_string(p);
      if (n.isSwitch()) {
        out += "]\t" + remote;
        if (!r.isSwitch()) out += "(" + hex(r.ports[rp].guid.value) + ") ";
        out += "\t\t# " + tail + "\n";
      } else {
        out += "](" + hex(port.guid.value) + ") \t" + remote;
        if (!r.isSwitch()) out += " (" + hex(r.ports[rp].guid.value) + ") ";
        out += "\t\t# lid " + std::to_string(port.attrs.lid.value) + " lmc " +
               std::to_string(port.attrs.lmc) + " " + tail + "\n";
      }
    }
  }
  return out;
}

namespace {

// Writes all of text to path (created or truncated); fsync only where it means something (regular files).
Result<void> writeWhole(const std::string& path, const std::string& text, bool sync) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return makeError(path + ": cannot create: " + std::strerror(errno));
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size() && std::fflush(f) == 0 &&
            (!sync || ::fsync(fileno(f)) == 0);
  int err = errno;
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (!ok) return makeError(path + ": write failed: " + std::strerror(err));
  return {};
}

}  // namespace

Result<void> writeTopologyFile(const Topology& topo, const std::string& path) {
  const std::string text = formatTopology(topo);
  // Something other than a regular file (/dev/stdout, a FIFO, a symlink) is written in place: renaming over
  // it would replace the device or link itself.
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) return writeWhole(path, text, false);
  // Otherwise write a temp file next to the target and rename it over, so readers never see half a file.
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  if (auto r = writeWhole(tmp, text, true); !r) {
    std::remove(tmp.c_str());
    return r;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    return makeError(path + ": cannot rename " + tmp + " into place: " + std::strerror(err));
  }
  return {};
}

}  // namespace ibsm::fabric
