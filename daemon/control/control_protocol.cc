// Request parsing, the command table, responses and the access rule. Read-only answers are in
// read_handler.cc, node names in node_names.cc, link loads and Graphviz in fabric_dot.cc.
#include "daemon/control/control_protocol.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "daemon/control/protocol_helpers.h"

namespace ibsm::daemon {

using detail::isoTime;
using detail::printable;
using detail::unixMs;

namespace {

constexpr size_t kMaxNesting = 16;

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

}  // namespace

namespace detail {

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

}  // namespace detail

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
      {"check",
       Access::kRead,
       {"pattern", "ranks", "ranks_name"},
       "the route checker on the live tables (pattern: shift, ring or all2all congestion over ranks)"},
      {"topology", Access::kRead, {"format"}, "the fabric as ibnetdiscover text or Graphviz (format dot)"},
      {"partitions", Access::kRead, {"name"}, "the partitions (or one of them, with its member ports)"},
      {"health",
       Access::kRead,
       {"all"},
       "ports by health state (isolated, warning; all: ok too) with counters"},
      {"resweep",
       Access::kChange,
       {"heavy"},
       "sweep now (heavy: forget what the switches hold, rewrite all)"},
      {"reroute", Access::kChange, {}, "recompute and reprogram the routes now"},
      {"health-release", Access::kChange, {"port"}, "route an isolated link again (port: NODE/PORTNUM)"},
      {"loglevel", Access::kChange, {"level"}, "set the log level: error, warn, info or debug"},
      {"handover",
       Access::kChange,
       {"to"},
       "hand the subnet to a standby SM (to: its port GUID; default the best standby)"},
      // A change although it changes no SM state: it writes a file that grows with switches x LIDs (1.58 GB
      // on an 11,664-host Clos) into paths.dump_dir and keeps the dump writer busy, which only those who may
      // resweep should be able to cause. Readers get the same routes with `routes`.
      {"dump",
       Access::kChange,
       {"file"},
       "write a dump into paths.dump_dir now (file lfts: opensm-lfts.dump)"},
      // Run-time partitions (a job scheduler's prolog/epilog): action add, remove, add-member or
      // remove-member; ports are port GUIDs or NODE/PORTNUM, each optionally =full or =limited.
      {"partition",
       Access::kChange,
       {"action", "name", "pkey", "ports"},
       "add or remove a run-time partition, or members of one"},
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

}  // namespace ibsm::daemon
