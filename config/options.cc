#include "config/options.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <limits>
#include <type_traits>

#include "fabric/text.h"

namespace ibsm::config {

using fabric::trim;
namespace {

constexpr std::array<std::string_view, 6> kEngineNames = {"minhop", "updn", "ftree", "dfsp", "dor", "dfly"};
constexpr std::array<std::string_view, 14> kSections = {"routing", "sweep", "sm",      "mad",     "paths",
                                                        "dumps",   "log",   "control", "metrics", "ar",
                                                        "qos",     "flap",  "perfmgr", "health"};
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
  std::string known = "minhop, updn, ftree, dfsp, dor, dfly";
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
  return Option{key,
                reloadable,
                effect,
                [=](const RawValue& v, Config& c) -> MaybeProblem {
                  uint64_t n = 0;
                  if (auto p = parseUint(v, lo, hi, n)) return p;
                  field(c) = static_cast<T>(n);
                  return std::nullopt;
                },
                [=](const Config& c) { return std::to_string(field(c)); },
                std::to_string(lo) + ".." + std::to_string(hi)};
}

// A 64-bit key (SM_Key, SA_Key), shown in hex; restart-only.
template <typename F>
Option keyOption(std::string_view key, F field) {
  return Option{key, false, nullptr,
                [=](const RawValue& v, Config& c) {
                  return parseUint(v, 0, std::numeric_limits<uint64_t>::max(), field(c));
                },
                [=](const Config& c) { return hex64(field(c)); }};
}

template <typename F>
Option pathOption(std::string_view key, bool reloadable, F field) {
  return Option{key, reloadable, nullptr,
                [=](const RawValue& v, Config& c) { return parseAbsolutePath(v, field(c)); },
                [=](const Config& c) { return yamlString(field(c)); }};
}

// The documentation of every option, in the order of the table: config/ibsm.yaml.example and ibsm.yaml(5) are
// generated from it (config/config_doc.h). Adding an option: add it to makeTable() and describe it here; the
// ranges of numbers come from the table. Then regenerate the example (ninja config-example).
const std::vector<OptionDoc> kDocs = {
    {"port_guid", "a port GUID (0x and up to 16 hex digits)", "GUID of the local port to bind.",
     "0x0002c903000b2240", "the first active port"},
    {"routing.engines",
     "a list of minhop, updn, ftree, dfsp, dor, dfly, or one comma-separated string such as \"ftree,updn\"; "
     "an element may name alternatives, \"dor|dfsp\"",
     "Engines tried in order until one can route the fabric; an engine that cannot says why (ROUTE002) and "
     "the next one is tried. Of alternatives, every one that routes (deadlock-free within the VLs qos.vls "
     "allows) is computed and the lowest max link load wins (ties: fewer VLs, then the first named). The "
     "default routes fat trees with ftree and nothing VL-related is programmed, dragonflies with dfly (3 "
     "VLs with routing.dfly_spread, else 2), other fabrics with the better of dor and dfsp, which may "
     "spread their paths over VLs; a fabric that needs more VLs than it has falls back to updn.",
     "", ""},
    {"routing.roots", "a list of node GUIDs",
     "Root switches (node GUIDs) for updn and ftree. Not together with roots_file.",
     "[0x0002c903000b2240, 0x0002c903000b2250]", "none, detected from the topology"},
    {"routing.roots_file", "a path, relative to the config file",
     "A file of root switch GUIDs, one per line ('#' starts a comment), instead of roots.", "roots.txt",
     "none"},
    {"routing.lmc", "", "LID mask control: each port gets 2^lmc LIDs (more paths, more LIDs).", "", ""},
    {"routing.threads", "",
     "Worker threads for the routing engines, the link loads of a repair or rebalance and the route check "
     "(`ibsmctl check`); the routes are the same for any number. The ibsmd flag --threads N overrides it.",
     "8", "the number of online cores"},
    {"routing.rebalance", "off, incremental or full",
     "What follows the fast repair of a failure (or a link that came back), off the event loop: "
     "incremental moves single routes from the routes in place off the most loaded links until the max link "
     "load reaches the lower bound no routing can beat, or no single move lowers it (few routes and LFT "
     "blocks are written); full routes the fabric from scratch with the engine chain (its balance, but most "
     "LFT blocks are rewritten while traffic runs); off keeps the repaired routes.",
     "", ""},
    {"routing.rebalance_min_gain_pct", "",
     "A rebalance that lowers the max link load by less than this percentage writes nothing.", "", ""},
    {"routing.dfly_spread", "true or false",
     "dfly: besides the minimal routes, route part of each group pair's traffic through third groups, chosen "
     "per destination and source switch for collective traffic (shift permutations of the hosts in name "
     "order) within a cap on the all-pairs max link load; on 3 VLs, so only where the fabric offers at least "
     "4 (qos.vls), else dfly stays minimal on 2. Its repairs are as fast as the minimal routes'; off by "
     "default because it costs bring-up time on large dragonflies (2,064 switches: routing 13 s and 544,000 "
     "SL-to-VL Sets against 0.7 s and 31,000).",
     "", ""},
    {"sweep.interval_s", "", "Seconds between light sweeps; 0 = sweep only on traps and requests.", "", ""},
    {"sm.priority", "", "SMInfo priority; the SM with the highest priority becomes master.", "", ""},
    {"sm.key", "a 64-bit number", "SM_Key.", "", ""},
    {"sm.sa_key", "a 64-bit number",
     "SA_Key (OpenSM's sa_key): an SA request carrying it is trusted (P_KeyTableRecords are given only to "
     "trusted requesters), one carrying 0 is answered as untrusted, and one carrying any other key is "
     "dropped unanswered (IBA 15.2.1.1; OpenSM's default key, which its osmtest presents, is 1).",
     "", ""},
    {"sm.m_key", "0 (off), a 64-bit key or random",
     "M_Key protecting the PortInfo of every managed port (IBA 14.2.4; OpenSM's m_key). random is generated "
     "once and kept in <state_dir>/mkey, so a restarted ibsmd with the same state directory still manages "
     "the "
     "ports it protected. Every SMP ibsmd sends carries it.",
     "", ""},
    {"sm.m_key_protection_level", "",
     "MKeyProtectBits written with the M_Key: 0 = Sets need the key, 1 = also hide the key from Gets without "
     "it, 2 and 3 = Gets need the key too.",
     "", ""},
    {"sm.m_key_lease_period", "",
     "MKeyLeasePeriod in seconds (0 = never): how long a port stays protected after an SMP with a wrong key "
     "while no SM presents the right one; then its protect bits fall back to 0.",
     "", ""},
    {"sm.poll_interval_ms", "",
     "A standby SM polls the master every poll_interval_ms milliseconds; each poll waits at most that long "
     "(and 1 s) for its answer, so a dead master is noticed within (poll_retries + 1) * poll_interval_ms "
     "(800 ms with the defaults).",
     "", ""},
    {"sm.poll_retries", "", "A standby SM takes over after poll_retries unanswered polls.", "", ""},
    {"mad.window", "", "MADs in flight.", "", ""},
    {"mad.timeout_ms", "",
     "The wait for the answer to a first attempt, in milliseconds, until answers were measured, and the "
     "longest one then. Per path length (hop count of a directed-route SMP; LID-routed SMPs and GMPs "
     "together) ibsmd waits the smoothed round trip of answered MADs plus four times its variation (as TCP "
     "does), at least 10 ms; each resend waits twice as long as the one before, up to twice this.",
     "", ""},
    {"mad.retries", "",
     "Resends after the first attempt. Loss compounds along a directed route (10% per switch port is about "
     "40% "
     "per attempt of a 3-hop SMP and its answer); 7 resends keep a sweep whole at such rates and cost "
     "nothing "
     "where nothing is lost.",
     "", ""},
    {"paths.state_dir", "an absolute path", "Directory for persistent state (guid2lid, mkey).", "", ""},
    {"paths.guid2lid", "an absolute path", "GUID-to-LID map kept across restarts (OpenSM's guid2lid format).",
     "/var/lib/ibsm/guid2lid", "<state_dir>/guid2lid"},
    {"paths.dump_dir", "an absolute path", "Where fabric and routing dumps are written.", "/var/lib/ibsm",
     "<state_dir>"},
    {"paths.partitions_conf", "a path, relative to the config file",
     "OpenSM's partitions.conf, read as it is (opensm(8) PARTITION CONFIGURATION; also ibsmd "
     "--partitions-conf FILE). Its partitions add to the `partitions` list; as in OpenSM, a file without a "
     "rule for the default partition 0x7fff makes every port but the SM's a limited member of it.",
     "/etc/opensm/partitions.conf", "none"},
    {"dumps.lfts", "on_request or on_change",
     "When opensm-lfts.dump (every switch's forwarding table, as dump_lfts prints it) is written into "
     "dump_dir: on_request (only for `ibsmctl dump lfts`) or on_change (after every sweep or update that "
     "changed it, and at the end of --once). It grows with switches x LIDs (1.58 GB on an 11,664-host Clos). "
     "guid2lid, opensm-subnet.lst and ibsm-ar-groups.dump always follow the fabric.",
     "", ""},
    {"log.level", "error, warn, info or debug", "Log level.", "", ""},
    {"control.socket", "an absolute path of at most 107 bytes", "Control socket used by ibsmctl.", "", ""},
    {"control.group", "a group name",
     "Group owning the control socket (mode 0660): its members may read through it and change state "
     "(resweep, reroute, loglevel, dump). The Debian package creates the system group ibsm and sets it.",
     "ibsm", "none, root only"},
    {"metrics.listen", "ADDR:PORT with an IPv4 address, or empty",
     "Where ibsmd serves its Prometheus metrics (GET /metrics over HTTP, no TLS and no authentication: keep "
     "it "
     "on a management address). Empty: no endpoint. Port 0 takes any free port (logged as METRICS001). "
     "The ibsmd flag --metrics ADDR:PORT overrides it. IPv4 only: Debian's civetweb has no IPv6.",
     "127.0.0.1:9464", "empty, off"},
    {"ar.enable", "true or false", "Compute and program adaptive-routing groups.", "", ""},
    {"ar.group_cap", "", "Most AR groups per switch.", "", ""},
    {"qos.vls", "auto or 1..15",
     "Data VLs the routing may use to stay deadlock-free (never more than every link offers). Engines such "
     "as dfsp then spread their paths over VL layers (SL i on VL i) and ibsmd programs the SL-to-VL and VL "
     "arbitration tables where paths run on an SL above 0; with 1 nothing is programmed and every path uses "
     "VL 0. auto: the fewest data VLs any link offers (VLCap of both ends), at most 8.",
     "", ""},
    {"qos.vl_arb_weight", "", "Low-priority VL arbitration weight of every VL in use, in 64-byte units.", "",
     ""},
    {"flap.hold_down_ms", "",
     "A port that went down stays out of routing at least hold_down_ms milliseconds; each new flap doubles "
     "that, up to max_backoff_ms.",
     "", ""},
    {"flap.max_backoff_ms", "",
     "Longest hold-down of a flapping port in milliseconds; not less than "
     "hold_down_ms.",
     "", ""},
    {"perfmgr.interval_s", "",
     "Seconds between counter sweeps: PortCounters (and PortCountersExtended where the port has them) of "
     "every linked switch and CA port, kept as 64-bit totals; the master clears the error counters it read. "
     "0 = no counter sweeps (and no health policy).",
     "", ""},
    {"health.action", "report or isolate",
     "What happens to a port whose error counters rise faster than a threshold: report (a warning, HLTH001) "
     "or isolate (also routed around as if its link were down, HLTH002; never when that would cut a node "
     "off, HLTH003). `ibsmctl health` lists the ports by state.",
     "", ""},
    {"health.thresholds", "a map of counter names to increases per minute (0: not watched)",
     "Thresholds of the health policy. Counters: symbol_error, link_error_recovery, link_downed, "
     "port_rcv_errors, port_rcv_remote_physical_errors, port_rcv_switch_relay_errors, port_xmit_discards, "
     "port_xmit_constraint_errors, port_rcv_constraint_errors, local_link_integrity_errors, "
     "excessive_buffer_overrun_errors, vl15_dropped, port_xmit_wait; the ones not given keep their default.",
     "", ""},
    {"health.start_threshold", "",
     "Counts found at ibsmd's first read of a port are of unknown age: a watched counter (threshold above 0) "
     "that is not zero makes a warning (HLTH001, \"found at start, interval unknown\"); with health.action "
     "isolate, a count past start_threshold isolates the port's link as soon as its loss cuts no node off "
     "(0: "
     "never). The master clears what it read, so rates follow.",
     "", ""},
    {"health.max_isolated", "",
     "Most links isolated at once; past it, ports over a threshold are reported only.", "", ""},
    {"health.clean_period_s", "",
     "A warning or isolation ends after this many seconds of counters under every threshold (or `ibsmctl "
     "health release PORT`).",
     "", ""},
    {"partitions", "a list of maps {name, pkey, membership, members, ipoib}",
     "Partitions (IBA 10.9): each a name, a P_Key (0x0001..0x7fff, unique), members and optionally IPoIB. "
     "Members are port GUIDs, ALL (every CA port and switch port 0), ALL_CAS, ALL_SWITCHES, ALL_ROUTERS, "
     "SELF "
     "(the SM's port) or node:PATTERN (the ports of the nodes whose NodeDescription matches, '*' and '?' "
     "wildcards), each with =full, =limited or =both (taken as full); without one, `membership` (default "
     "full). ibsm writes each partition's P_Key into the P_Key table of its member CA ports and switch port "
     "0, "
     "and into the table of the switch port facing each CA port (with partition enforcement where the switch "
     "has PartitionEnforcementCap); only blocks that differ are written. PathRecords are given only between "
     "ports sharing a partition (one of them a full member), with its P_Key; MCMemberRecord joins only to "
     "groups of the member's partitions. `ipoib: true` (or a map of mtu 1..5, rate 2..22, sl 0..15, scope, "
     "q_key) creates the partition's IPoIB broadcast group ff12:401b:<pkey>::ffff:ffff. Without a rule for "
     "P_Key 0x7fff the default partition has every port as a full member, with IPoIB; the SM's own port "
     "always stays a full member of it. Partitions added at run time with `ibsmctl partition add` are kept "
     "in "
     "<state_dir>/partitions, not here.",
     "[{name: tenant-a, pkey: 0x0001, members: [0x0002c903000b2241, \"node:gpu-a*\"], ipoib: {mtu: 5, rate: "
     "7}}]",
     "none (the default partition only)"}};

// One `partitions` entry: a map of name, pkey, membership, members, ipoib.
MaybeProblem parsePartition(const RawValue& v, fabric::Partition& out) {
  if (v.kind != RawValue::Kind::kMap)
    return problem(v, "expected a partition (a map of name, pkey, members, ...), got " + describe(v));
  fabric::Partition p;
  const RawValue* members = nullptr;
  fabric::Membership def = fabric::Membership::kFull;
  bool haveName = false, haveKey = false;
  for (size_t i = 0; i < v.fieldKeys.size(); ++i) {
    const std::string& key = v.fieldKeys[i];
    const RawValue& f = v.fieldValues[i];
    Location at = v.fieldKeyAt[i];
    if (key == "name") {
      if (auto pr = parseString(f, "a partition name", p.name)) return pr;
      if (p.name.find_first_of(":,=;#\n") != std::string::npos ||
          !std::all_of(p.name.begin(), p.name.end(), printable))
        return problem(f, shown(f) + " is not a valid partition name (printable, without : , = ; #)");
      haveName = true;
    } else if (key == "pkey") {
      uint64_t k = 0;
      if (auto pr = parseUint(f, 1, 0x7FFF, k)) return pr;
      p.pkey = static_cast<uint16_t>(k);
      haveKey = true;
    } else if (key == "membership") {
      auto m = f.kind == RawValue::Kind::kScalar ? fabric::parseMembership(f.text) : std::nullopt;
      if (!m) return problem(f, "expected full, limited or both, got " + describe(f));
      def = *m;
    } else if (key == "members") {
      members = &f;
    } else if (key == "ipoib") {
      if (f.kind == RawValue::Kind::kMap) {
        fabric::IpoibGroup g;
        for (size_t j = 0; j < f.fieldKeys.size(); ++j) {
          const RawValue& x = f.fieldValues[j];
          uint64_t n = 0;
          const std::string& k = f.fieldKeys[j];
          if (k == "mtu") {
            if (auto pr = parseUint(x, 1, 5, n)) return pr;
            g.mtu = static_cast<uint8_t>(n);
          } else if (k == "rate") {
            if (auto pr = parseUint(x, 2, 22, n)) return pr;
            g.rate = static_cast<uint8_t>(n);
          } else if (k == "sl") {
            if (auto pr = parseUint(x, 0, 15, n)) return pr;
            g.sl = static_cast<uint8_t>(n);
          } else if (k == "scope") {
            if (auto pr = parseUint(x, 1, 15, n)) return pr;
            g.scope = static_cast<uint8_t>(n);
          } else if (k == "q_key") {
            if (auto pr = parseUint(x, 0, 0xFFFFFFFF, n)) return pr;
            g.qkey = static_cast<uint32_t>(n);
          } else {
            return Problem{f.fieldKeyAt[j], "unknown ipoib key " + quoteForMessage(k) +
                                                " (known: mtu, rate, sl, scope, q_key)"};
          }
        }
        p.ipoib = g;
      } else {
        bool on = false;
        if (auto pr = parseBool(f, on))
          return problem(f,
                         "expected true, false or a map of mtu, rate, sl, scope, q_key, got " + describe(f));
        if (on) p.ipoib = fabric::IpoibGroup{};
      }
    } else {
      return Problem{at, "unknown partition key " + quoteForMessage(key) +
                             " (known: name, pkey, membership, members, ipoib)"};
    }
  }
  if (!haveName) return problem(v, "a partition needs a name");
  if (!haveKey) return problem(v, "partition " + quoteForMessage(p.name) + " needs a pkey (0x0001..0x7fff)");
  if (members) {
    std::vector<RawValue> items;
    if (auto pr = splitList(*members, "a list of members", items)) return pr;
    for (const RawValue& item : items) {
      if (item.kind != RawValue::Kind::kScalar)
        return problem(item, "expected a member, got " + describe(item));
      auto m = fabric::parsePartitionMember(item.text, def);
      if (!m) return problem(item, m.error().message);
      p.members.push_back(std::move(m).value());
    }
  }
  p.origin = v.where.str();
  out = std::move(p);
  return std::nullopt;
}

// metrics.listen: "" (off), or an IPv4 address, a colon and a port 0..65535. No host names (civetweb binds
// what it is given and resolves nothing) and no IPv6: Debian's civetweb is built without it.
MaybeProblem checkListenAddress(const RawValue& v, const std::string& text) {
  if (text.empty()) return std::nullopt;
  auto bad = [&](const std::string& why) {
    std::string m = quoteForMessage(text);
    m += " is not ADDR:PORT (";
    m += why;
    m += "), e.g. 127.0.0.1:9464";
    return problem(v, std::move(m));
  };
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos) return bad("no port");
  const std::string host = text.substr(0, colon), port = text.substr(colon + 1);
  if (host.find(':') != std::string::npos || host.find('[') != std::string::npos)
    return bad("IPv6 is not supported: the HTTP server (civetweb) is built without it");
  unsigned long n = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), n);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || n > 65535)
    return bad("the port must be a number from 0 to 65535");
  in_addr addr;
  if (inet_pton(AF_INET, host.c_str(), &addr) != 1)
    return bad("the address must be an IPv4 address such as 127.0.0.1 or 0.0.0.0");
  return std::nullopt;
}

std::string formatPartition(const fabric::Partition& p) {
  std::string out =
      "{name: " + doubleQuoted(p.name, true) + ", pkey: " + std::to_string(p.pkey) + ", members: [";
  for (size_t i = 0; i < p.members.size(); ++i)
    out += (i ? ", " : "") + doubleQuoted(fabric::toString(p.members[i]) + "=" +
                                              std::string(fabric::toString(p.members[i].membership)),
                                          true);
  out += "]";
  if (p.ipoib) {
    const fabric::IpoibGroup& g = *p.ipoib;
    out += ", ipoib: {mtu: " + std::to_string(g.mtu) + ", rate: " + std::to_string(g.rate) +
           (g.sl ? ", sl: " + std::to_string(*g.sl) : std::string()) + ", scope: " + std::to_string(g.scope) +
           ", q_key: " + std::to_string(g.qkey) + "}";
  }
  return out + "}";
}

std::string_view rebalanceName(RoutingConfig::Rebalance r) {
  using R = RoutingConfig::Rebalance;
  return r == R::kOff ? "off" : r == R::kFull ? "full" : "incremental";
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
      "routing.threads", false, nullptr, 1, kMaxRoutingThreads,
      [](auto& c) -> auto& { return c.routing.threads; }));
  t.push_back({"routing.rebalance", true, &ConfigDiff::rebalance,
               [](const RawValue& v, Config& c) -> MaybeProblem {
                 using R = RoutingConfig::Rebalance;
                 for (R r : {R::kOff, R::kIncremental, R::kFull})
                   if (v.kind == RawValue::Kind::kScalar && v.text == rebalanceName(r))
                     return c.routing.rebalance = r, std::nullopt;
                 return problem(v, "expected off, incremental or full, got " + describe(v));
               },
               [](const Config& c) { return std::string(rebalanceName(c.routing.rebalance)); }});
  t.push_back(uintOption(
      "routing.rebalance_min_gain_pct", true, &ConfigDiff::rebalance, 0, 100,
      [](auto& c) -> auto& { return c.routing.rebalanceMinGainPct; }));
  t.push_back({"routing.dfly_spread", true, &ConfigDiff::reroute,
               [](const RawValue& v, Config& c) { return parseBool(v, c.routing.dflySpread); },
               [](const Config& c) { return std::string(c.routing.dflySpread ? "true" : "false"); }});
  t.push_back(uintOption(
      "sweep.interval_s", true, &ConfigDiff::sweepTimer, 0, 86400,
      [](auto& c) -> auto& { return c.sweep.intervalS; }));
  t.push_back(uintOption(
      "sm.priority", true, &ConfigDiff::sm, 0, 15, [](auto& c) -> auto& { return c.sm.priority; }));
  t.push_back(keyOption(
      "sm.key", [](auto& c) -> auto& { return c.sm.key; }));
  t.push_back(keyOption(
      "sm.sa_key", [](auto& c) -> auto& { return c.sm.saKey; }));
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
  t.push_back({"paths.partitions_conf", true, &ConfigDiff::partitions,
               [](const RawValue& v, Config& c) -> MaybeProblem {
                 if (v.kind == RawValue::Kind::kNull) return c.paths.partitionsConf.reset(), std::nullopt;
                 std::string path;
                 if (auto p = parseString(v, "a path", path)) return p;
                 c.paths.partitionsConf = std::move(path);
                 return std::nullopt;
               },
               [](const Config& c) {
                 return c.paths.partitionsConf ? yamlString(*c.paths.partitionsConf) : std::string("~");
               }});
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
  t.push_back({"metrics.listen", false, nullptr,
               [](const RawValue& v, Config& c) -> MaybeProblem {
                 if (v.kind == RawValue::Kind::kNull || (v.kind == RawValue::Kind::kScalar && v.text.empty()))
                   return c.metrics.listen.clear(), std::nullopt;
                 std::string text;
                 if (auto p = parseString(v, "ADDR:PORT", text)) return p;
                 if (auto p = checkListenAddress(v, text)) return p;
                 c.metrics.listen = std::move(text);
                 return std::nullopt;
               },
               [](const Config& c) { return yamlString(c.metrics.listen); }});
  t.push_back({"ar.enable", true, &ConfigDiff::reroute,
               [](const RawValue& v, Config& c) { return parseBool(v, c.ar.enable); },
               [](const Config& c) { return std::string(c.ar.enable ? "true" : "false"); }});
  t.push_back(uintOption(
      "ar.group_cap", true, &ConfigDiff::reroute, 1, 4096, [](auto& c) -> auto& { return c.ar.groupCap; }));
  t.push_back({"qos.vls", true, &ConfigDiff::reroute,
               [](const RawValue& v, Config& c) -> MaybeProblem {
                 if (v.kind == RawValue::Kind::kScalar && v.text == "auto") {
                   c.qos.vls = QosConfig::kAuto;
                   return std::nullopt;
                 }
                 uint64_t n = 0;
                 if (v.kind == RawValue::Kind::kScalar && !v.quoted && !v.text.empty() &&
                     !std::isdigit(static_cast<unsigned char>(v.text[0])) && v.text[0] != '-' &&
                     v.text[0] != '+')
                   return problem(v, "expected auto or an integer 1..15, got " + describe(v));
                 if (auto p = parseUint(v, 1, 15, n)) return p;
                 c.qos.vls = static_cast<uint32_t>(n);
                 return std::nullopt;
               },
               [](const Config& c) {
                 return c.qos.vls == QosConfig::kAuto ? std::string("auto") : std::to_string(c.qos.vls);
               }});
  t.push_back(uintOption(
      "qos.vl_arb_weight", true, &ConfigDiff::reroute, 1, 255,
      [](auto& c) -> auto& { return c.qos.vlArbWeight; }));
  t.push_back(uintOption(
      "flap.hold_down_ms", true, &ConfigDiff::flap, 0, 600000,
      [](auto& c) -> auto& { return c.flap.holdDownMs; }));
  t.push_back(uintOption(
      "flap.max_backoff_ms", true, &ConfigDiff::flap, 0, 86400000,
      [](auto& c) -> auto& { return c.flap.maxBackoffMs; }));
  t.push_back(uintOption(
      "perfmgr.interval_s", true, &ConfigDiff::health, 0, 86400,
      [](auto& c) -> auto& { return c.perfmgr.intervalS; }));
  t.push_back({"health.action", true, &ConfigDiff::health,
               [](const RawValue& v, Config& c) -> MaybeProblem {
                 for (HealthAction a : {HealthAction::kReport, HealthAction::kIsolate}) {
                   if (v.kind == RawValue::Kind::kScalar && v.text == toString(a))
                     return c.health.action = a, std::nullopt;
                 }
                 return problem(v, "expected report or isolate, got " + describe(v));
               },
               [](const Config& c) { return std::string(toString(c.health.action)); }});
  t.push_back({"health.thresholds", true, &ConfigDiff::health,
               [](const RawValue& v, Config& c) -> MaybeProblem {
                 c.health.thresholds = HealthConfig{}.thresholds;
                 if (v.kind == RawValue::Kind::kNull) return std::nullopt;
                 if (v.kind != RawValue::Kind::kMap)
                   return problem(
                       v, "expected a map of counter names to increases per minute, got " + describe(v));
                 for (size_t f = 0; f < v.fieldKeys.size(); ++f) {
                   size_t i = 0;
                   while (i < kHealthCounterCount && kHealthCounters[i].name != v.fieldKeys[f]) ++i;
                   if (i == kHealthCounterCount)
                     return Problem{v.fieldKeyAt[f], "unknown counter " + quoteForMessage(v.fieldKeys[f]) +
                                                         " (known: symbol_error, link_error_recovery, "
                                                         "link_downed, port_rcv_errors, ...)"};
                   uint64_t n = 0;
                   if (auto p = parseUint(v.fieldValues[f], 0, 1000000000, n)) return p;
                   c.health.thresholds[i] = static_cast<uint32_t>(n);
                 }
                 return std::nullopt;
               },
               [](const Config& c) {
                 std::string out = "{";
                 for (size_t i = 0; i < kHealthCounterCount && i < c.health.thresholds.size(); ++i) {
                   if (i) out += ", ";
                   out += kHealthCounters[i].name;
                   out += ": ";
                   out += std::to_string(c.health.thresholds[i]);
                 }
                 return out + "}";
               }});
  t.push_back(uintOption(
      "health.start_threshold", true, &ConfigDiff::health, 0, 1000000000,
      [](auto& c) -> auto& { return c.health.startThreshold; }));
  t.push_back(uintOption(
      "health.max_isolated", true, &ConfigDiff::health, 0, 1000000,
      [](auto& c) -> auto& { return c.health.maxIsolated; }));
  t.push_back(uintOption(
      "health.clean_period_s", true, &ConfigDiff::health, 1, 30 * 86400,
      [](auto& c) -> auto& { return c.health.cleanPeriodS; }));
  Option partitions{
      "partitions", true, &ConfigDiff::partitions,
      [](const RawValue& v, Config& c) -> MaybeProblem {
        c.partitions.clear();
        if (v.kind == RawValue::Kind::kNull) return std::nullopt;
        if (v.kind != RawValue::Kind::kList)
          return problem(v, "expected a list of partitions, got " + describe(v));
        for (const RawValue& item : v.items) {
          fabric::Partition p;
          if (auto pr = parsePartition(item, p)) return pr;
          c.partitions.push_back(std::move(p));
        }
        return std::nullopt;
      },
      [](const Config& c) { return yamlList<fabric::Partition>(c.partitions, formatPartition); }};
  partitions.depth = 3;  // list -> partition map -> members list / ipoib map
  t.push_back(std::move(partitions));
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

std::string_view toString(HealthAction action) {
  return action == HealthAction::kIsolate ? "isolate" : "report";
}

std::string_view toString(LftDumps when) {
  return when == LftDumps::kOnChange ? "on_change" : "on_request";
}

std::string Location::str() const {
  if (line <= 0) return origin;
  return origin + ":" + std::to_string(line) + ":" + std::to_string(column);
}

const std::vector<Option>& optionTable() {
  static const std::vector<Option> table = [] {
    std::vector<Option> t = makeTable();
    for (Option& o : t) {
      for (const OptionDoc& d : kDocs) {
        if (d.key != o.key) continue;
        o.values = d.values;
        o.description = d.description;
        o.example = d.example;
        o.defaultText = d.defaultText;
      }
    }
    return t;
  }();
  return table;
}

const std::vector<OptionDoc>& optionDocs() {
  return kDocs;
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
