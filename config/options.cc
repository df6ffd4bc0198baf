#include "config/options.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <limits>
#include <type_traits>

namespace ibsm::config {
namespace {

constexpr std::array<std::string_view, 5> kEngineNames = {"minhop", "updn", "ftree", "dfsp", "dor"};
constexpr std::array<std::string_view, 11> kSections = {"routing", "sweep",   "sm", "mad", "paths", "dumps",
                                                        "log",     "control", "ar", "qos", "flap"};
constexpr size_t kSunPathMax = 107;  // sizeof(sockaddr_un::sun_path) - 1
constexpr size_t kMaxQuoted = 64;    // longer values are cut in messages

using MaybeProblem = std::optional<Problem>;

bool printable(char c) {
  return c >= 0x20 && c < 0x7f;
}

// `text` in YAML double quotes ("\x01" escapes); bytes >= 0x80 are escaped too when `asciiOnly`.
std::string doubleQuoted(std::string_view text, bool asciiOnly) {
  std::string out = "\"";
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if ((asciiOnly ? !printable(c) : (u < 0x20 || u == 0x7f)) || c == '"' || c == '\\') {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// A value quoted for a message, printable ASCII only, so that no input can put control bytes into a log.
std::string quoteForMessage(std::string_view text) {
  if (text.size() <= kMaxQuoted) return doubleQuoted(text, true);
  std::string cut = doubleQuoted(text.substr(0, kMaxQuoted), true);
  return cut.insert(cut.size() - 1, "...");
}

std::string describe(const RawValue& v) {
  switch (v.kind) {
    case RawValue::Kind::kNull:
      return "nothing";
    case RawValue::Kind::kList:
      return "a list";
    case RawValue::Kind::kMap:
      return "a map";
    case RawValue::Kind::kScalar:
      break;
  }
  return (v.quoted ? "the string " : "") + quoteForMessage(v.text);
}

// Short printable plain scalars as written ("9 is out of range"), others quoted.
std::string shown(const RawValue& v) {
  bool plain =
      !v.quoted && v.text.size() <= kMaxQuoted && std::all_of(v.text.begin(), v.text.end(), printable);
  return plain ? v.text : quoteForMessage(v.text);
}

Problem problem(const RawValue& v, std::string message) {
  return Problem{v.where, std::move(message)};
}

// Decimal or 0x-hex, as YAML writes integers; a sign is accepted so that "-1" is reported as out of range.
MaybeProblem parseUint(const RawValue& v, uint64_t lo, uint64_t hi, uint64_t& out) {
  if (v.kind != RawValue::Kind::kScalar || v.quoted)
    return problem(v, "expected an integer, got " + describe(v));
  std::string_view s = v.text;
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  int base = 10;
  if (s.starts_with("0x") || s.starts_with("0X")) {
    base = 16;
    s.remove_prefix(2);
  }
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n, base);
  bool allDigits = !s.empty() && end == s.data() + s.size();
  if (!allDigits || (ec != std::errc() && ec != std::errc::result_out_of_range)) {
    return problem(v, "expected an integer, got " + describe(v));
  }
  std::string range = std::to_string(lo) + ".." + std::to_string(hi);
  if (ec == std::errc::result_out_of_range || (negative && n != 0) || n < lo || n > hi) {
    return problem(v, shown(v) + " is out of range " + range);
  }
  out = n;
  return std::nullopt;
}

MaybeProblem parseBool(const RawValue& v, bool& out) {
  if (v.kind == RawValue::Kind::kScalar && !v.quoted) {
    std::string s = v.text;
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    if (s == "true" || s == "yes" || s == "on") return out = true, std::nullopt;
    if (s == "false" || s == "no" || s == "off") return out = false, std::nullopt;
  }
  return problem(v, "expected true or false, got " + describe(v));
}

MaybeProblem parseGuidValue(const RawValue& v, Guid& out) {
  if (v.kind != RawValue::Kind::kScalar) return problem(v, "expected a GUID, got " + describe(v));
  auto guid = fabric::parseGuid(v.text);
  if (!guid) return problem(v, shown(v) + " is not a GUID (expected 0x and up to 16 hex digits)");
  if (guid->value == 0) return problem(v, shown(v) + " is not a valid GUID (zero)");
  out = *guid;
  return std::nullopt;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A YAML list of scalars, or one comma-separated scalar (the command-line form); null = empty.
MaybeProblem splitList(const RawValue& v, std::string_view what, std::vector<RawValue>& out) {
  out.clear();
  if (v.kind == RawValue::Kind::kList) {
    out = v.items;
  } else if (v.kind == RawValue::Kind::kScalar) {
    std::string_view rest = v.text;
    while (!trim(rest).empty()) {
      size_t comma = rest.find(',');
      RawValue item = v;
      item.text = std::string(trim(rest.substr(0, comma)));
      if (item.text.empty()) return problem(v, "empty item in " + quoteForMessage(v.text));
      out.push_back(std::move(item));
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    }
  } else if (v.kind != RawValue::Kind::kNull) {
    return problem(v, "expected " + std::string(what) + ", got " + describe(v));
  }
  return std::nullopt;
}

MaybeProblem parseEngines(const RawValue& v, std::vector<std::string>& out) {
  std::vector<RawValue> items;
  if (auto p = splitList(v, "a list of engine names", items)) return p;
  std::string known = "minhop, updn, ftree, dfsp, dor";
  if (items.empty()) return problem(v, "empty engine list: name at least one of " + known);
  std::vector<std::string> names;
  for (const RawValue& item : items) {
    if (item.kind != RawValue::Kind::kScalar)
      return problem(item, "expected an engine name, got " + describe(item));
    // An element may name alternatives, "dor|dfsp": the one with the lowest max link load routes.
    std::string_view rest = item.text;
    while (true) {
      size_t bar = rest.find('|');
      std::string_view name = rest.substr(0, bar);
      if (std::find(kEngineNames.begin(), kEngineNames.end(), name) == kEngineNames.end())
        return problem(item,
                       "unknown engine " + quoteForMessage(std::string(name)) + " (known: " + known + ")");
      if (bar == std::string_view::npos) break;
      rest.remove_prefix(bar + 1);
    }
    if (std::find(names.begin(), names.end(), item.text) != names.end()) {
      return problem(item, "engine " + quoteForMessage(item.text) + " listed twice");
    }
    names.push_back(item.text);
  }
  out = std::move(names);
  return std::nullopt;
}

MaybeProblem parseGuidList(const RawValue& v, std::vector<Guid>& out) {
  std::vector<RawValue> items;
  if (auto p = splitList(v, "a list of GUIDs", items)) return p;
  std::vector<Guid> guids;
  for (const RawValue& item : items) {
    Guid guid;
    if (auto p = parseGuidValue(item, guid)) return p;
    if (std::find(guids.begin(), guids.end(), guid) != guids.end()) {
      return problem(item, "GUID " + fabric::toString(guid) + " listed twice");
    }
    guids.push_back(guid);
  }
  out = std::move(guids);
  return std::nullopt;
}

MaybeProblem parseString(const RawValue& v, std::string_view what, std::string& out) {
  if (v.kind != RawValue::Kind::kScalar || v.text.empty()) {
    return problem(v, "expected " + std::string(what) + ", got " + describe(v));
  }
  if (v.text.find('\0') != std::string::npos) return problem(v, "contains a NUL character");
  out = v.text;
  return std::nullopt;
}

MaybeProblem parseAbsolutePath(const RawValue& v, std::string& out) {
  std::string path;
  if (auto p = parseString(v, "an absolute path", path)) return p;
  if (path[0] != '/') return problem(v, "expected an absolute path, got " + describe(v));
  out = std::move(path);
  return std::nullopt;
}

MaybeProblem parseGroupName(const RawValue& v, std::string& out) {
  std::string name;
  if (auto p = parseString(v, "a group name", name)) return p;
  auto okChar = [](char c, bool first) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           (!first && ((c >= '0' && c <= '9') || c == '.' || c == '-'));
  };
  bool ok = name.size() <= 32 && okChar(name[0], true);
  for (size_t i = 1; ok && i < name.size(); ++i) {
    ok = okChar(name[i], false) || (name[i] == '$' && i + 1 == name.size());
  }
  if (!ok) return problem(v, shown(v) + " is not a valid group name");
  out = std::move(name);
  return std::nullopt;
}

// A string YAML reads back unchanged: plain for safe absolute paths, double-quoted otherwise.
std::string yamlString(std::string_view s) {
  bool plain = !s.empty() && s[0] == '/' && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("/_.+-").find(c) != std::string_view::npos;
  });
  return plain ? std::string(s) : doubleQuoted(s, false);
}

template <typename T>
std::string yamlList(const std::vector<T>& items, std::string (*one)(const T&)) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + one(items[i]);
  return out + "]";
}

std::string hex64(uint64_t v) {
  return fabric::toString(Guid{v});
}

// Builders for the table. `field` is a generic lambda returning a reference to the member, so the same one
// serves parse (non-const Config) and format (const Config).
template <typename F>
Option uintOption(std::string_view key, bool reloadable, bool ConfigDiff::*effect, uint64_t lo, uint64_t hi,
                  F field) {
  using T = std::remove_reference_t<decltype(field(std::declval<Config&>()))>;
  static_assert(std::is_unsigned_v<T>);
  return Option{key, reloadable, effect,
                [=](const RawValue& v, Config& c) -> MaybeProblem {
                  uint64_t n = 0;
                  if (auto p = parseUint(v, lo, hi, n)) return p;
                  field(c) = static_cast<T>(n);
                  return std::nullopt;
                },
                [=](const Config& c) { return std::to_string(field(c)); }};
}

template <typename F>
Option pathOption(std::string_view key, bool reloadable, F field) {
  return Option{key, reloadable, nullptr,
                [=](const RawValue& v, Config& c) { return parseAbsolutePath(v, field(c)); },
                [=](const Config& c) { return yamlString(field(c)); }};
}

std::vector<Option> makeTable() {
  std::vector<Option> t;
  t.push_back(
      {"port_guid", false, nullptr,
       [](const RawValue& v, Config& c) -> MaybeProblem {
         if (v.kind == RawValue::Kind::kNull) return c.portGuid.reset(), std::nullopt;
         Guid g;
         if (auto p = parseGuidValue(v, g)) return p;
         c.portGuid = g;
         return std::nullopt;
       },
       [](const Config& c) { return c.portGuid ? fabric::toString(*c.portGuid) : std::string("~"); }});
  t.push_back({"routing.engines", true, &ConfigDiff::reroute,
               [](const RawValue& v, Config& c) { return parseEngines(v, c.routing.engines); },
               [](const Config& c) {
                 return yamlList<std::string>(c.routing.engines, [](const std::string& s) { return s; });
               }});
  t.push_back({"routing.roots", true, &ConfigDiff::reroute,
               [](const RawValue& v, Config& c) { return parseGuidList(v, c.routing.roots); },
               [](const Config& c) {
                 return yamlList<Guid>(c.routing.roots, [](const Guid& g) { return fabric::toString(g); });
               }});
  t.push_back({"routing.roots_file", true, &ConfigDiff::reroute,
               [](const RawValue& v, Config& c) -> MaybeProblem {
                 if (v.kind == RawValue::Kind::kNull) return c.routing.rootsFile.reset(), std::nullopt;
                 std::string path;
                 if (auto p = parseString(v, "a path", path)) return p;
                 c.routing.rootsFile = std::move(path);
                 return std::nullopt;
               },
               [](const Config& c) {
                 return c.routing.rootsFile ? yamlString(*c.routing.rootsFile) : std::string("~");
               }});
  t.push_back(uintOption(
      "routing.lmc", true, &ConfigDiff::reassignLids, 0, 7, [](auto& c) -> auto& { return c.routing.lmc; }));
  t.push_back(uintOption(
      "sweep.interval_s", true, &ConfigDiff::sweepTimer, 0, 86400,
      [](auto& c) -> auto& { return c.sweep.intervalS; }));
  t.push_back(uintOption(
      "sm.priority", true, &ConfigDiff::sm, 0, 15, [](auto& c) -> auto& { return c.sm.priority; }));
  t.push_back({"sm.key", false, nullptr,
               [](const RawValue& v, Config& c) {
                 return parseUint(v, 0, std::numeric_limits<uint64_t>::max(), c.sm.key);
               },
               [](const Config& c) { return hex64(c.sm.key); }});
  t.push_back({"sm.m_key", false, nullptr,
               [](const RawValue& v, Config& c) -> MaybeProblem {
                 if (v.kind == RawValue::Kind::kScalar && v.text == "random") {
                   c.sm.mKey = 0;
                   c.sm.mKeyRandom = true;
                   return std::nullopt;
                 }
                 c.sm.mKeyRandom = false;
                 if (parseUint(v, 0, std::numeric_limits<uint64_t>::max(), c.sm.mKey))
                   return problem(v, "expected a 64-bit M_Key (0 = off) or random, got " + describe(v));
                 return std::nullopt;
               },
               [](const Config& c) { return c.sm.mKeyRandom ? std::string("random") : hex64(c.sm.mKey); }});
  t.push_back(uintOption(
      "sm.m_key_protection_level", false, nullptr, 0, 3,
      [](auto& c) -> auto& { return c.sm.mKeyProtectBits; }));
  t.push_back(uintOption(
      "sm.m_key_lease_period", false, nullptr, 0, 65535, [](auto& c) -> auto& { return c.sm.mKeyLeaseS; }));
  t.push_back(uintOption(
      "sm.poll_interval_ms", true, &ConfigDiff::sm, 10, 600000,
      [](auto& c) -> auto& { return c.sm.pollIntervalMs; }));
  t.push_back(uintOption(
      "sm.poll_retries", true, &ConfigDiff::sm, 1, 100, [](auto& c) -> auto& { return c.sm.pollRetries; }));
  t.push_back(uintOption(
      "mad.window", true, &ConfigDiff::mad, 1, 1024, [](auto& c) -> auto& { return c.mad.window; }));
  t.push_back(uintOption(
      "mad.timeout_ms", true, &ConfigDiff::mad, 1, 60000, [](auto& c) -> auto& { return c.mad.timeoutMs; }));
  t.push_back(uintOption(
      "mad.retries", true, &ConfigDiff::mad, 0, 20, [](auto& c) -> auto& { return c.mad.retries; }));
  t.push_back(pathOption(
      "paths.state_dir", false, [](auto& c) -> auto& { return c.paths.stateDir; }));
  t.push_back(pathOption(
      "paths.guid2lid", false, [](auto& c) -> auto& { return c.paths.guid2lid; }));
  t.push_back(pathOption(
      "paths.dump_dir", true, [](auto& c) -> auto& { return c.paths.dumpDir; }));
  // Reloadable like paths.dump_dir: the dump writer takes the new value for its next round.
  t.push_back({"dumps.lfts", true, nullptr,
               [](const RawValue& v, Config& c) -> MaybeProblem {
                 for (LftDumps w : {LftDumps::kOnRequest, LftDumps::kOnChange}) {
                   if (v.kind == RawValue::Kind::kScalar && v.text == toString(w))
                     return c.dumps.lfts = w, std::nullopt;
                 }
                 return problem(v, "expected on_request or on_change, got " + describe(v));
               },
               [](const Config& c) { return std::string(toString(c.dumps.lfts)); }});
  t.push_back({"log.level", true, &ConfigDiff::logLevel,
               [](const RawValue& v, Config& c) -> MaybeProblem {
                 for (LogLevel l : {LogLevel::kError, LogLevel::kWarn, LogLevel::kInfo, LogLevel::kDebug}) {
                   if (v.kind == RawValue::Kind::kScalar && v.text == toString(l))
                     return c.log.level = l, std::nullopt;
                 }
                 return problem(v, "expected error, warn, info or debug, got " + describe(v));
               },
               [](const Config& c) { return std::string(toString(c.log.level)); }});
  t.push_back({"control.socket", false, nullptr,
               [](const RawValue& v, Config& c) -> MaybeProblem {
                 std::string path;
                 if (auto p = parseAbsolutePath(v, path)) return p;
                 if (path.size() > kSunPathMax) {
                   return problem(v, "socket path is " + std::to_string(path.size()) +
                                         " bytes, longer than " + std::to_string(kSunPathMax));
                 }
                 c.control.socket = std::move(path);
                 return std::nullopt;
               },
               [](const Config& c) { return yamlString(c.control.socket); }});
  t.push_back(
      {"control.group", false, nullptr,
       [](const RawValue& v, Config& c) -> MaybeProblem {
         if (v.kind == RawValue::Kind::kNull) return c.control.group.reset(), std::nullopt;
         std::string name;
         if (auto p = parseGroupName(v, name)) return p;
         c.control.group = std::move(name);
         return std::nullopt;
       },
       [](const Config& c) { return c.control.group ? yamlString(*c.control.group) : std::string("~"); }});
  t.push_back({"ar.enable", true, &ConfigDiff::reroute,
               [](const RawValue& v, Config& c) { return parseBool(v, c.ar.enable); },
               [](const Config& c) { return std::string(c.ar.enable ? "true" : "false"); }});
  t.push_back(uintOption(
      "ar.group_cap", true, &ConfigDiff::reroute, 1, 4096, [](auto& c) -> auto& { return c.ar.groupCap; }));
  t.push_back(uintOption(
      "qos.vls", true, &ConfigDiff::reroute, 1, 15, [](auto& c) -> auto& { return c.qos.vls; }));
  t.push_back(uintOption(
      "qos.vl_arb_weight", true, &ConfigDiff::reroute, 1, 255,
      [](auto& c) -> auto& { return c.qos.vlArbWeight; }));
  t.push_back(uintOption(
      "flap.hold_down_ms", true, &ConfigDiff::flap, 0, 600000,
      [](auto& c) -> auto& { return c.flap.holdDownMs; }));
  t.push_back(uintOption(
      "flap.max_backoff_ms", true, &ConfigDiff::flap, 0, 86400000,
      [](auto& c) -> auto& { return c.flap.maxBackoffMs; }));
  return t;
}

// Optimal string alignment distance: Levenshtein plus adjacent transpositions ("lcm" -> "lmc" is 1).
size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

std::string_view leaf(std::string_view key) {
  size_t dot = key.rfind('.');
  return dot == std::string_view::npos ? key : key.substr(dot + 1);
}

}  // namespace

std::string_view toString(LogLevel level) {
  switch (level) {
    case LogLevel::kError:
      return "error";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kDebug:
      return "debug";
  }
  return "?";
}

std::string_view toString(LftDumps when) {
  return when == LftDumps::kOnChange ? "on_change" : "on_request";
}

std::string Location::str() const {
  if (line <= 0) return origin;
  return origin + ":" + std::to_string(line) + ":" + std::to_string(column);
}

const std::vector<Option>& optionTable() {
  static const std::vector<Option> table = makeTable();
  return table;
}

const Option* findOption(std::string_view key) {
  for (const Option& o : optionTable()) {
    if (o.key == key) return &o;
  }
  return nullptr;
}

bool isSection(std::string_view name) {
  return std::find(kSections.begin(), kSections.end(), name) != kSections.end();
}

std::string printableText(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (printable(c)) {
      out += c;
      continue;
    }
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
    out += buf;
  }
  return out;
}

std::string printableKey(std::string_view key) {
  bool sane = !key.empty() && key.size() <= kMaxQuoted && std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '-';
  });
  return sane ? std::string(key) : quoteForMessage(key);
}

std::string suggestKey(std::string_view unknown) {
  if (unknown.size() > kMaxQuoted) return "";  // bounds the distance computation on hostile input
  // The right name in the wrong section: "sweep.lmc" -> "routing.lmc".
  if (unknown.find('.') != std::string_view::npos) {
    for (const Option& o : optionTable()) {
      if (o.key.find('.') != std::string_view::npos && leaf(o.key) == leaf(unknown))
        return std::string(o.key);
    }
  }
  std::vector<std::string_view> candidates(kSections.begin(), kSections.end());
  for (const Option& o : optionTable()) candidates.push_back(o.key);
  std::string_view best;
  size_t bestDistance = std::numeric_limits<size_t>::max();
  for (std::string_view c : candidates) {
    size_t d = editDistance(unknown, c);
    if (d < bestDistance) bestDistance = d, best = c;
  }
  bool close = bestDistance <= 2 || bestDistance <= unknown.size() / 4;
  return close && bestDistance < unknown.size() ? std::string(best) : std::string();
}

}  // namespace ibsm::config
