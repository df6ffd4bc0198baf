#include "config/partitions_conf.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>
#include <string>

#include "fabric/text.h"

namespace ibsm::config {

using fabric::lower;
using fabric::trim;
using fabric::trimLeft;

using fabric::Membership;
using fabric::Partition;

namespace {

// One piece of a statement with the line it starts on.
struct Piece {
  std::string_view text;
  int line = 0;
};

// Printable for a message: control bytes and bytes >= 0x80 as \xNN, at most 64 characters.
std::string shown(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 64)) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f) {
      static const char* kHex = "0123456789abcdef";
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 0xF];
    } else {
      out += c;
    }
  }
  return s.size() > 64 ? out + "..." : out;
}

bool parseNumber(std::string_view s, uint64_t max, uint64_t& out) {
  s = trim(s);
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) base = 16, s.remove_prefix(2);
  if (s.empty()) return false;
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || end != s.data() + s.size() || v > max) return false;
  out = v;
  return true;
}

class Parser {
 public:
  Parser(std::string_view text, std::string_view file, bool implicitDefault)
      : text_(text), file_(file), implicitDefault_(implicitDefault) {}

  fabric::Result<std::vector<Partition>> run() {
    // Comments go (replaced by spaces, so offsets and lines stay), then statements split at ';'.
    std::string clean(text_);
    for (size_t i = 0; i < clean.size(); ++i) {
      if (clean[i] == '#')
        while (i < clean.size() && clean[i] != '\n') clean[i++] = ' ';
      if (i < clean.size() && clean[i] == '\0') return error(lineAt(clean, i), "", "contains a NUL byte");
    }
    clean_ = std::move(clean);
    size_t start = 0;
    while (start < clean_.size()) {
      size_t semi = clean_.find(';', start);
      std::string_view stmt(clean_.data() + start,
                            (semi == std::string::npos ? clean_.size() : semi) - start);
      size_t lead = stmt.size() - trimLeft(stmt).size();
      if (!trim(stmt).empty()) {
        int line = lineAt(clean_, start + lead);
        if (semi == std::string::npos) return error(line, "", "statement does not end with ';'");
        if (auto e = statement(trim(stmt), line)) return *e;
      }
      if (semi == std::string::npos) break;
      start = semi + 1;
    }
    // Partitions without a P_Key get the lowest unused one.
    std::set<uint16_t> used;
    for (const Partition& p : out_) used.insert(p.pkey);
    uint16_t next = 1;
    for (size_t i : autoKey_) {
      while (used.count(next)) ++next;
      if (next >= fabric::kDefaultPartitionKey) return error(0, out_[i].name, "no P_Key left to generate");
      out_[i].pkey = next;
      used.insert(next);
    }
    if (implicitDefault_ && !used.count(fabric::kDefaultPartitionKey)) {
      // OpenSM: a file without a rule for the default partition makes every other port a limited member.
      Partition d;
      d.name = "Default";
      d.pkey = fabric::kDefaultPartitionKey;
      d.ipoib = fabric::IpoibGroup{};
      d.members.push_back({fabric::PartitionMember::Kind::kAll, {}, {}, Membership::kLimited});
      d.members.push_back({fabric::PartitionMember::Kind::kSelf, {}, {}, Membership::kFull});
      d.origin = std::string(file_) + " (no Default rule)";
      out_.insert(out_.begin(), std::move(d));
    }
    return std::move(out_);
  }

 private:
  static int lineAt(const std::string& s, size_t offset) {
    return 1 + static_cast<int>(std::count(s.begin(), s.begin() + static_cast<long>(offset), '\n'));
  }
  int lineOf(std::string_view piece) const {
    return lineAt(clean_, static_cast<size_t>(piece.data() - clean_.data()));
  }

  fabric::Error error(int line, std::string_view name, const std::string& what) const {
    // Appended piece by piece: GCC 12 at -O3 reports a false -Wrestrict for `"literal" + std::string&&`.
    std::string where(file_);
    if (line > 0) {
      where += ':';
      where += std::to_string(line);
    }
    where += ": ";
    if (!name.empty()) {
      where += shown(name);
      where += ": ";
    }
    where += what;
    return fabric::Error{where};
  }

  // Splits at any of `seps`, dropping empty pieces; each piece knows its line.
  std::vector<Piece> split(std::string_view s, std::string_view seps) const {
    std::vector<Piece> out;
    size_t b = 0;
    for (size_t i = 0; i <= s.size(); ++i) {
      if (i < s.size() && seps.find(s[i]) == std::string_view::npos) continue;
      std::string_view t = trim(s.substr(b, i - b));
      if (!t.empty()) out.push_back({t, lineOf(t)});
      b = i + 1;
    }
    return out;
  }

  std::optional<fabric::Error> statement(std::string_view stmt, int line) {
    size_t colon = stmt.find(':');
    if (colon == std::string_view::npos)
      return error(line, "", "expected ':' between the partition definition and its members");
    Partition p;
    bool ipoib = false;
    fabric::IpoibGroup group;
    Membership defMember = Membership::kLimited;
    std::vector<Piece> def = split(stmt.substr(0, colon), ",");
    // The first piece is Name[=PKey]; an empty name is allowed (OpenSM logs it as "").
    std::string_view head = def.empty() || def[0].text.find('=') == std::string_view::npos
                                ? (def.empty() ? std::string_view{} : def[0].text)
                                : def[0].text;
    bool hasKey = false;
    if (size_t eq = head.find('='); eq != std::string_view::npos) {
      p.name = std::string(trim(head.substr(0, eq)));
      uint64_t k = 0;
      if (!parseNumber(head.substr(eq + 1), 0xFFFF, k) || (k & 0x7FFF) == 0)
        return error(line, p.name,
                     "P_Key '" + shown(trim(head.substr(eq + 1))) + "' is not a number in 0x0001..0x7fff");
      p.pkey = static_cast<uint16_t>(k & 0x7FFF);  // only the low 15 bits count (opensm(8))
      hasKey = true;
    } else {
      p.name = std::string(head);
    }
    for (size_t i = 1; i < def.size(); ++i) {
      std::string_view flag = def[i].text;
      size_t eq = flag.find('=');
      std::string key = lower(trim(flag.substr(0, eq)));
      std::string_view value = eq == std::string_view::npos ? std::string_view{} : trim(flag.substr(eq + 1));
      auto number = [&](uint64_t lo, uint64_t hi, uint64_t& v) -> std::optional<fabric::Error> {
        if (!parseNumber(value, hi, v) || v < lo) {
          std::string what = "'";
          what += shown(flag);
          what += "' is out of range ";
          what += std::to_string(lo);
          what += "..";
          what += std::to_string(hi);
          return error(def[i].line, p.name, what);
        }
        return std::nullopt;
      };
      uint64_t v = 0;
      if (key == "ipoib" && eq == std::string_view::npos) {
        ipoib = true;
      } else if (key == "indx0" && eq == std::string_view::npos) {
        // Entry 0 of block 0: ibsm keeps the default partition there and others where they are.
      } else if (key == "defmember") {
        auto m = fabric::parseMembership(value);
        if (!m) return error(def[i].line, p.name, "'" + shown(flag) + "': expected full, limited or both");
        defMember = *m;
      } else if (key == "mtu") {
        if (auto e = number(1, 5, v)) return e;
        group.mtu = static_cast<uint8_t>(v);
      } else if (key == "rate") {
        if (auto e = number(2, 22, v)) return e;
        group.rate = static_cast<uint8_t>(v);
      } else if (key == "sl") {
        if (auto e = number(0, 15, v)) return e;
        group.sl = static_cast<uint8_t>(v);
      } else if (key == "scope") {
        if (auto e = number(1, 15, v)) return e;
        group.scope = static_cast<uint8_t>(v);
      } else if (key == "q_key" || key == "qkey") {
        if (auto e = number(0, 0xFFFFFFFF, v)) return e;
        group.qkey = static_cast<uint32_t>(v);
      } else if (key == "tclass" || key == "flowlabel") {
        if (auto e = number(0, key == "tclass" ? 0xFF : 0xFFFFF, v)) return e;
      } else {
        return error(
            def[i].line, p.name,
            "unknown flag '" + shown(flag) +
                "' (known: ipoib, indx0, defmember, mtu, rate, sl, scope, Q_Key, TClass, FlowLabel)");
      }
    }
    if (ipoib) p.ipoib = group;

    // Members: pieces separated by ',', ':' or line ends; an mgid= definition runs to the end of its line.
    std::string_view props = stmt.substr(colon + 1);
    size_t at = 0;
    while (at < props.size()) {
      std::string_view rest = trimLeft(props.substr(at));
      if (rest.empty()) break;
      at = static_cast<size_t>(rest.data() - props.data());
      size_t end;
      if (lower(rest.substr(0, 5)) == "mgid=") {
        end = rest.find('\n');
      } else if (lower(rest.substr(0, 5)) == "node:") {
        end = rest.find_first_of(",\n", 5);
      } else {
        end = rest.find_first_of(",:\n");
      }
      std::string_view item = trim(rest.substr(0, end));
      at = end == std::string_view::npos ? props.size() : at + end + 1;
      if (item.empty() || lower(item.substr(0, 5)) == "mgid=") continue;
      std::string key = lower(trim(item.substr(0, item.find('='))));
      if (key == "defmember") {
        auto m = fabric::parseMembership(item.substr(item.find('=') + 1));
        if (!m) return error(lineOf(item), p.name, "'" + shown(item) + "': expected full, limited or both");
        defMember = *m;
        continue;
      }
      auto member = fabric::parsePartitionMember(item, defMember);
      if (!member) return error(lineOf(item), p.name, member.error().message);
      p.members.push_back(std::move(member).value());
    }
    p.origin = std::string(file_) + ":" + std::to_string(line);
    if (!hasKey) autoKey_.push_back(out_.size());
    out_.push_back(std::move(p));
    return std::nullopt;
  }

  std::string_view text_;
  std::string_view file_;
  bool implicitDefault_;
  std::string clean_;
  std::vector<Partition> out_;
  std::vector<size_t> autoKey_;
};

std::string hex4(uint16_t v) {
  static const char* kDigits = "0123456789abcdef";
  std::string s = "0x0000";
  for (int i = 0; i < 4; ++i) s[5 - i] = kDigits[(v >> (4 * i)) & 0xF];
  return s;
}

}  // namespace

fabric::Result<std::vector<Partition>> parsePartitionsConf(std::string_view text, std::string_view fileName,
                                                           DefaultRule rule) {
  return Parser(text, fileName, rule == DefaultRule::kOpenSm).run();
}

std::string formatPartitionsConf(const std::vector<Partition>& partitions) {
  std::string out;
  for (const Partition& p : partitions) {
    out += p.name + "=" + hex4(p.pkey);
    if (p.ipoib) {
      const fabric::IpoibGroup& g = *p.ipoib;
      out += ",ipoib,mtu=" + std::to_string(g.mtu) + ",rate=" + std::to_string(g.rate);
      if (g.sl) out += ",sl=" + std::to_string(*g.sl);
      out += ",scope=" + std::to_string(g.scope) + ",Q_Key=" + std::to_string(g.qkey);
    }
    out += " :";
    for (size_t i = 0; i < p.members.size(); ++i)
      out += std::string(i ? "," : "") + " " + fabric::toString(p.members[i]) + "=" +
             std::string(fabric::toString(p.members[i].membership));
    out += " ;\n";
  }
  return out;
}

}  // namespace ibsm::config
