#include "tools/ibsmctl/ctl_format.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

namespace ibsm::ctl {

using nlohmann::json;

namespace {

// Missing keys read as null (operator[] on a const json with a missing key is undefined).
const json& at(const json& o, const char* key) {
  static const json kNull;
  if (!o.is_object()) return kNull;
  auto it = o.find(key);
  return it == o.end() ? kNull : *it;
}

std::string str(const json& v) {
  if (v.is_null()) return "-";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

// A string field, dflt when the field or the object is missing (json::value throws on null).
std::string text(const json& o, const char* key, const char* dflt = "?") {
  return o.is_object() ? o.value(key, dflt) : dflt;
}

std::string num(const json& v, const char* key) {
  auto it = v.find(key);
  return it == v.end() ? "-" : str(*it);
}

std::string fixed1(double d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", d);
  return buf;
}

std::string localTime(int64_t ms) {
  std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string name(const json& ref) {
  if (!ref.is_object()) return "-";
  std::string d = ref.value("description", "");
  return d.empty() ? ref.value("guid", "?") : d;
}

std::vector<unsigned> uints(const json& v) {
  std::vector<unsigned> out;
  if (v.is_array())
    for (const auto& x : v)
      if (x.is_number_integer() && x.get<int64_t>() >= 0) out.push_back(x.get<unsigned>());
  return out;
}

std::string portList(const json& v) {
  std::string out;
  for (unsigned p : uints(v)) {
    if (!out.empty()) out += ',';
    out += std::to_string(p);
  }
  return out;
}

std::string sweepLine(const json& s) {
  if (!s.is_object()) return "no sweep result in the answer";
  std::string line = "sweep " + num(s, "number") + " (" + s.value("cause", "?") + ")";
  if (!s.value("ok", false)) return line + ": failed: " + s.value("error", "?");
  line += std::string(": ") + (s.value("subnet_up", false) ? "SUBNET UP" : "SUBNET NOT UP") + " in " +
          fixed1(s.value("duration_ms", 0.0)) + " ms, " + num(s, "smps") + " SMPs, " +
          num(s, "lft_blocks_sent") + " LFT blocks written, " + num(s, "routes_changed") +
          " routes changed, " + num(s, "lids_changed") + " LIDs changed";
  return line;
}

Formatted status(const json& r, int64_t now) {
  std::string out;
  auto row = [&](const std::string& k, const std::string& v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%-12s ", k.c_str());
    out += buf + v + "\n";
  };
  row("SM", r.value("state", "?") + " (priority " + num(r, "priority") + "), pid " + num(r, "pid") +
                ", running " + duration(now - r.value("started_ms", now)));
  if (r.value("subnet_up", false)) {
    int64_t since = r.value("subnet_up_since_ms", now);
    row("Subnet", "SUBNET UP since " + localTime(since) + " (" + duration(now - since) + ")");
  } else {
    row("Subnet", "SUBNET NOT UP");
  }
  std::string sweeps = num(r, "sweeps");
  if (r.value("sweeping", false)) sweeps += ", sweeping now (" + r.value("sweep_cause", "?") + ")";
  uint64_t interval = r.value("sweep_interval_s", 0u);
  sweeps += interval ? ", light sweep every " + std::to_string(interval) + " s" : ", no light sweeps";
  row("Sweeps", sweeps);
  if (const json& s = at(r, "last_sweep"); s.is_object())
    row("Last sweep", localTime(s.value("time_ms", int64_t{0})) + ": " + sweepLine(s));
  if (const json& f = at(r, "fabric"); f.is_object()) {
    row("Fabric", num(f, "switches") + " switches, " + num(f, "cas") + " CAs (" + num(f, "ca_ports") +
                      " linked ports), " + num(f, "links") + " links, " + num(f, "endports_with_lid") +
                      " LIDs (max " + num(f, "max_lid") + ", LMC " + num(f, "lmc") + ")");
  }
  if (const json& rt = at(r, "routing"); rt.is_object())
    row("Routing", rt.value("engine", "?") + ", adaptive routing " + (rt.value("ar", false) ? "on" : "off"));
  if (const json& p = at(r, "sm_port"); p.is_object())
    row("SM port", name(p) + " (" + p.value("port_guid", p.value("guid", "?")) + ") LID " + num(p, "lid"));
  if (const json& m = at(r, "mad"); m.is_object())
    row("MADs", "sent " + num(m, "sent") + ", received " + num(m, "received") + ", timeouts " +
                    num(m, "timeouts") + ", retries " + num(m, "retries") + ", failed " + num(m, "failed") +
                    ", dropped " + num(m, "dropped") + ", unsolicited " + num(m, "unsolicited"));
  if (const json& t = at(r, "traps"); t.is_object())
    row("Traps", "received " + num(t, "received") + ", malformed " + num(t, "malformed") + ", duplicates " +
                     num(t, "duplicates") + ", bad M_Key " + num(t, "bad_mkey"));
  if (const json& a = at(r, "ar"); a.is_object())
    row("AR switches", num(a, "capable") + " capable, " + num(a, "incapable") + " not (" + num(a, "probes") +
                           " probes sent)");
  if (const json& m = at(r, "master_guid"); m.is_string()) row("Master", m.get<std::string>());
  if (const json& o = at(r, "other_sms"); o.is_array()) {
    if (o.empty()) row("Other SMs", "none seen");
    for (const auto& sm : o)
      row("Other SM",
          sm.value("guid", "?") + " LID " + num(sm, "lid") + " priority " + num(sm, "priority") + " " +
              (sm.value("answered", false) ? sm.value("state", "?") : std::string("not answering")) +
              (sm.value("sm_key_ok", true) ? "" : " (wrong SM_Key)"));
  }
  if (r.value("sm_key_mismatches", 0u))
    row("SM_Key", num(r, "sm_key_mismatches") + " SMInfo with a wrong SM_Key");
  row("Log level", r.value("log_level", "?"));
  row("Config", r.value("config", "?"));
  return {out, 0};
}

Formatted nodes(const json& r) {
  Table t({"TYPE", "NODE-GUID", "LID", "PORTS", "DESCRIPTION"}, {false, false, true, true, false});
  for (const auto& n : at(r, "nodes"))
    t.add({n.value("type", "?"), n.value("guid", "?"), num(n, "lid"),
           num(n, "linked_ports") + "/" + num(n, "ports"), n.value("description", "")});
  return {t.str(), 0};
}

Formatted switches(const json& r) {
  Table t({"GUID", "LID", "PORTS", "LFT-TOP", "ROUTES", "AR-GROUPS", "DESCRIPTION"},
          {false, true, true, true, true, true, false});
  for (const auto& s : at(r, "switches"))
    t.add({s.value("guid", "?"), num(s, "lid"), num(s, "linked_ports") + "/" + num(s, "ports"),
           num(s, "lft_top"), num(s, "lft_entries"), num(s, "ar_groups"), s.value("description", "")});
  return {t.str(), 0};
}

Formatted lids(const json& r) {
  Table t({"LID", "TYPE", "PORT", "PORT-GUID", "DESCRIPTION"}, {true, false, true, false, false});
  for (const auto& l : at(r, "lids")) {
    std::string lid = num(l, "lid");
    if (l.value("lmc", 0) > 0) {
      lid += '-';  // not "-" + a temporary: GCC 12 at -O3 reports a false -Wrestrict
      lid += num(l, "last_lid");
    }
    t.add({lid, l.value("type", "?"), num(l, "port"), l.value("guid", "?"), l.value("description", "")});
  }
  return {t.str(), 0};
}

Formatted links(const json& r) {
  Table t({"FROM", "PORT", "TO", "PORT", "WIDTH", "SPEED", "STATE"},
          {false, true, false, true, false, false, false});
  for (const auto& l : at(r, "links")) {
    std::string state = l.value("state", "?");
    if (l.value("state_a", state) != l.value("state_b", state))
      state += " (" + l.value("state_a", "?") + "/" + l.value("state_b", "?") + ")";
    t.add({name(at(l, "a")), num(at(l, "a"), "port"), name(at(l, "b")), num(at(l, "b"), "port"),
           l.value("width", "?"), l.value("speed", "?"), state});
  }
  return {t.str(), 0};
}

Formatted routes(const json& r) {
  const json& sw = at(r, "switch");
  std::string out = "Routes of " + name(sw) + " (" + text(sw, "guid") + ", LID " + num(sw, "lid") +
                    "), engine " + r.value("engine", "?") + "\n";
  Table t({"LID", "PORT", "AR-PORTS", "DESTINATION"}, {true, true, false, false});
  int code = 0;
  for (const auto& e : at(r, "routes")) {
    const json& d = at(e, "destination");
    std::string dest = d.is_object() ? d.value("type", "?") + " " + name(d) : "(no endport has this LID)";
    if (at(e, "port").is_null()) code = 1;
    t.add({num(e, "lid"), at(e, "port").is_null() ? "none" : num(e, "port"),
           portList(e.value("ar_ports", json::array())), dest});
  }
  return {out + t.str(), code};
}

Formatted path(const json& r) {
  const json& src = at(r, "source");
  const json& dst = at(r, "destination");
  std::string out = name(src) + " (LID " + num(src, "lid") + ", port " + num(src, "port") + ") -> " +
                    name(dst) + " (LID " + num(r, "lid") + "), engine " + r.value("engine", "?");
  // With VL layers (dfsp) the pair's SL and each hop's VL; otherwise everything is on SL 0 / VL 0.
  const bool layered = r.value("vl_layers", 1) > 1;
  if (layered) out += ", SL " + std::to_string(r.value("sl", 0));
  out += "\n";
  std::vector<std::string> heads{"HOP", "SWITCH", "LID", "IN", "OUT", "AR-PORTS"};
  std::vector<bool> right{true, false, true, true, true, false};
  if (layered) {
    heads.insert(heads.begin() + 5, "VL");
    right.insert(right.begin() + 5, true);
  }
  Table t(heads, right);
  int hop = 0;
  for (const auto& h : at(r, "hops")) {
    std::vector<std::string> row{std::to_string(++hop),
                                 name(at(h, "switch")),
                                 num(at(h, "switch"), "lid"),
                                 num(h, "in_port"),
                                 at(h, "out_port").is_null() ? "none" : num(h, "out_port"),
                                 portList(h.value("ar_ports", json::array()))};
    if (layered) row.insert(row.begin() + 5, std::to_string(h.value("vl", 0)));
    t.add(row);
  }
  out += t.str();
  if (r.value("reached", false)) {
    out +=
        "reached " + name(dst) + " port " + num(dst, "port") + " in " + std::to_string(hop + 1) + " links\n";
    return {out, 0};
  }
  out += "NOT REACHED: " + r.value("problem", "?") + "\n";
  return {out, 1};
}

Formatted ar(const json& r) {
  const json& sw = at(r, "switch");
  std::string out =
      "Adaptive-routing groups of " + name(sw) + " (" + text(sw, "guid") + ", LID " + num(sw, "lid") + "): ";
  if (!r.value("enabled", false)) return {out + "adaptive routing is off\n", 0};
  size_t groups = at(r, "groups").size();
  out += std::to_string(groups) + (groups == 1 ? " group" : " groups") +
         (r.value("capped", false) ? " (cap reached)" : "") + "\n";
  Table t({"GROUP", "PORTS", "LIDS"}, {true, false, false});
  for (const auto& g : at(r, "groups"))
    t.add({num(g, "group"), portList(at(g, "ports")), ranges(uints(at(g, "lids")))});
  return {out + t.str(), 0};
}

Formatted events(const json& r) {
  Table t({"SEQ", "TIME", "KIND", "EVENT"}, {true, false, false, false});
  for (const auto& e : at(r, "events"))
    t.add({num(e, "seq"), localTime(e.value("time_ms", int64_t{0})), e.value("kind", "?"),
           e.value("message", "")});
  return {t.rows() ? t.str() : "no events\n", 0};
}

}  // namespace

Table::Table(std::vector<std::string> header, std::vector<bool> rightAligned)
    : header_(std::move(header)), right_(std::move(rightAligned)) {
  right_.resize(header_.size(), false);
}

void Table::add(std::vector<std::string> row) {
  row.resize(header_.size());
  rows_.push_back(std::move(row));
}

std::string Table::str() const {
  std::vector<size_t> width(header_.size());
  for (size_t c = 0; c < header_.size(); ++c) width[c] = header_[c].size();
  for (const auto& r : rows_)
    for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l;
    for (size_t c = 0; c < cells.size(); ++c) {
      bool last = c + 1 == cells.size();
      std::string pad(width[c] - cells[c].size(), ' ');
      if (right_[c])
        l += pad + cells[c];
      else
        l += cells[c] + (last ? "" : pad);
      if (!last) l += "  ";
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  };
  line(header_);
  for (const auto& r : rows_) line(r);
  return out;
}

std::string ranges(const std::vector<unsigned>& v) {
  std::string out;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(v[i]);
    if (j > i) {
      out += '-';
      out += std::to_string(v[j]);
    }
    i = j + 1;
  }
  return out;
}

std::string duration(int64_t ms) {
  if (ms < 0) ms = 0;
  int64_t s = ms / 1000;
  char buf[32];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(s));
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  else if (s < 86400)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60));
  else
    std::snprintf(buf, sizeof buf, "%lldd%02lldh", static_cast<long long>(s / 86400),
                  static_cast<long long>(s / 3600 % 24));
  return buf;
}

namespace {

std::string portName(const json& p, const char* desc, const char* guid, const char* port) {
  std::string d = text(p, desc, "");
  return (d.empty() ? text(p, guid, "?") : d) + "/" + num(p, port);
}

// ibsmctl health: the last counter sweep, then the ports by state with what put them there.
Formatted health(const json& r, int64_t nowMs) {
  std::string out;
  const json& counts = at(r, "counts");
  const json& at0 = at(r, "swept_at_ms");
  out += "Counter sweep " + num(r, "sweeps") +
         (at0.is_number() ? " at " + localTime(at0.get<int64_t>()) : std::string()) + ": " + num(r, "gmps") +
         " GMPs, " + num(r, "failed") + " port(s) not read, " + fixed1(r.value("duration_ms", 0.0)) + " ms" +
         (r.value("clearing", false) ? " (master: error counters cleared)" : " (reading only)") + "\n";
  out += "Policy        " + text(r, "action") + ", at most " + num(r, "max_isolated") + " isolated\n";
  out += "Ports         " + num(counts, "isolated") + " isolated, " + num(counts, "warning") + " warning, " +
         num(counts, "ok") + " ok\n";
  const json& ports = at(r, "ports");
  if (ports.is_array() && !ports.empty()) {
    Table t({"STATE", "PORT", "LID", "PEER", "SINCE", "ERRORS", "REASON"}, {false, false, true});
    for (const json& p : ports) {
      std::string errors;
      const json& e = at(p, "errors");
      if (e.is_object())
        for (auto it = e.begin(); it != e.end(); ++it)
          if (it->is_number() && it->get<uint64_t>() > 0)
            errors += (errors.empty() ? "" : ",") + it.key() + "=" + it->dump();
      const json& since = at(p, "since_ms");
      t.add({text(p, "state"), portName(p, "description", "node_guid", "port"), num(p, "lid"),
             at(p, "peer_guid").is_null() ? "-" : portName(p, "peer_description", "peer_guid", "peer_port"),
             since.is_number() ? duration(nowMs - since.get<int64_t>()) + " ago" : "-",
             errors.empty() ? "-" : errors, text(p, "reason", "").empty() ? "-" : text(p, "reason", "")});
    }
    out += "\n" + t.str();
  }
  const json& held = at(r, "held_down");
  if (held.is_array() && !held.empty()) {
    out += "\nHeld down by flap damping:\n";
    for (const json& h : held)
      out += "  " + portName(h, "description", "node_guid", "port") + ", " +
             fixed1(h.value("remaining_s", 0.0)) + " s left\n";
  }
  return {out, 0};
}

}  // namespace

Formatted formatResult(const std::string& command, const json& r, int64_t nowMs) {
  try {
    if (command == "status") return status(r, nowMs);
    if (command == "nodes") return nodes(r);
    if (command == "switches") return switches(r);
    if (command == "lids") return lids(r);
    if (command == "links") return links(r);
    if (command == "routes") return routes(r);
    if (command == "path") return path(r);
    if (command == "ar") return ar(r);
    if (command == "events") return events(r);
    if (command == "check") return {r.value("text", ""), r.value("ok", false) ? 0 : 1};
    if (command == "topology") return {r.value("text", ""), 0};
    if (command == "resweep" || command == "reroute") {
      const json& s = at(r, "sweep");
      bool up = s.value("ok", false) && s.value("subnet_up", false);
      return {sweepLine(s) + "\n", up ? 0 : 1};
    }
    if (command == "partitions") {
      std::string out;
      const json& list = at(r, "partitions");
      char buf[512];
      if (list.size() == 1 && list[0].contains("members")) {
        const json& p = list[0];
        std::snprintf(buf, sizeof buf, "Partition %s, P_Key %s, %s (%s): %zu full, %zu limited\n",
                      p.value("name", "?").c_str(), p.value("pkey", "?").c_str(),
                      p.value("source", "?").c_str(), p.value("origin", "?").c_str(),
                      p.value("full", size_t{0}), p.value("limited", size_t{0}));
        out += buf;
        out += "TYPE  PORT-GUID           PORT  MEMBERSHIP  NODE\n";
        for (const json& m : at(p, "members")) {
          std::snprintf(buf, sizeof buf, "%-4s  %-18s  %4u  %-10s  %s\n", m.value("type", "?").c_str(),
                        m.value("port_guid", "?").c_str(), m.value("port", 0u),
                        m.value("membership", "?").c_str(), m.value("node", "").c_str());
          out += buf;
        }
        return {out, 0};
      }
      out += "NAME              PKEY    FULL  LIMITED  IPOIB             SOURCE   ORIGIN\n";
      for (const json& p : list) {
        std::string ipoib = "-";
        if (p.contains("ipoib")) {
          const json& g = p["ipoib"];
          ipoib = "mtu " + std::to_string(g.value("mtu", 0)) + " rate " + std::to_string(g.value("rate", 0)) +
                  " sl " + std::to_string(g.value("sl", 0));
        }
        std::snprintf(buf, sizeof buf, "%-16s  %-6s  %4zu  %7zu  %-16s  %-7s  %s\n",
                      p.value("name", "?").c_str(), p.value("pkey", "?").c_str(), p.value("full", size_t{0}),
                      p.value("limited", size_t{0}), ipoib.c_str(), p.value("source", "?").c_str(),
                      p.value("origin", "?").c_str());
        out += buf;
      }
      return {out, 0};
    }
    if (command == "partition" || command == "health-release") return {r.value("message", "") + "\n", 0};
    if (command == "health") return health(r, nowMs);
    if (command == "handover") {
      const std::string state = r.value("state", "?");
      return {"handover to " + r.value("to", "?") + ": this SM is " + state + " after " +
                  std::to_string(r.value("ms", int64_t{0})) + " ms (priority now " +
                  std::to_string(r.value("priority", 0)) + ")\n",
              state == "STANDBY" ? 0 : 1};
    }
    if (command == "loglevel")
      return {"log level: " + r.value("previous", "?") + " -> " + r.value("level", "?") + "\n", 0};
    if (command == "dump") {
      // The path alone, so that scripts can use it: less "$(ibsmctl dump lfts)".
      const json& path = at(r, "path");
      if (!path.is_string() || path.get_ref<const std::string&>().empty())
        return {"unexpected answer from ibsmd: no path of the written file\n", 1};
      return {path.get<std::string>() + "\n", 0};
    }
  } catch (const json::exception& e) {
    return {std::string("unexpected answer from ibsmd: ") + e.what() + "\n", 1};
  }
  return {r.dump(2) + "\n", 0};
}

namespace {

// wrap() for a line that already holds `used` columns.
std::string wrapFrom(std::string_view text, size_t width, size_t indent, size_t used) {
  std::string out;
  size_t lineLength = used;
  bool lineEmpty = true;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t start = text.find_first_not_of(" \n", pos);
    if (start == std::string_view::npos) break;
    size_t end = std::min(text.find_first_of(" \n", start), text.size());
    std::string_view word = text.substr(start, end - start);
    pos = end;
    if (!lineEmpty && lineLength + 1 + word.size() > width) {
      out += '\n';
      out.append(indent, ' ');
      lineLength = indent;
      lineEmpty = true;
    }
    if (!lineEmpty) {
      out += ' ';
      ++lineLength;
    }
    out += word;
    lineLength += word.size();
    lineEmpty = false;
  }
  out += '\n';
  return out;
}

}  // namespace

std::string wrap(std::string_view text, size_t width, size_t indent) {
  return wrapFrom(text, width, indent, 0);
}

std::string helpEntry(std::string_view head, std::string_view text, size_t column, size_t width) {
  std::string out = "  ";
  out += head;
  if (out.size() + 1 > column) {
    out += '\n';
    out.append(column, ' ');
  } else {
    out.append(column - out.size(), ' ');
  }
  return out + wrapFrom(text, width, column, column);
}

}  // namespace ibsm::ctl
