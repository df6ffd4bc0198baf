// ibsmctl: the command line for a running ibsmd, over its control socket. Tables for people, --json for
// scripts. Exit codes: 0 ok, 1 the request failed or found nothing, 2 usage, 3 ibsmd unreachable (or no
// answer in time), 4 permission denied.
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "config/config_loader.h"
#include "tools/ibsmctl/ctl_client.h"
#include "tools/ibsmctl/ctl_format.h"

namespace {

using nlohmann::json;
using namespace ibsm;

constexpr int kOk = 0, kFailed = 1, kUsage = 2, kUnreachable = 3, kDenied = 4;

struct CommandSpec {
  const char* name;
  const char* usage;  // after "ibsmctl NAME"
  const char* help;
};

const std::vector<CommandSpec> kCommands = {
    {"status", "",
     "SM state and role, sweep count, last sweep time and duration, SUBNET UP since, fabric counts and MAD "
     "counters."},
    {"nodes", "[--type SW|CA|RT]", "Every node: type, node GUID, LID, linked/all ports, description."},
    {"switches", "", "Every switch: GUID, LID, ports, LFT top, routes, AR groups, description."},
    {"lids", "", "Every endport LID (a range with LMC > 0): type, port, port GUID, description."},
    {"links", "", "Every link: both ends, width, speed and state (after the last sweep)."},
    {"routes", "SWITCH [LID|NODE]",
     "The forwarding table of SWITCH as ibsmd programmed it: destination LID, egress port, AR alternatives. "
     "With LID (or a node) only those LIDs."},
    {"path", "SRC DST",
     "The route from SRC to DST hop by hop through ibsmd's own tables, with the adaptive-routing "
     "alternatives at each switch. DST may be a LID (then exactly that LID)."},
    {"ar", "SWITCH", "The adaptive-routing groups of SWITCH: ports and the LIDs that use each group."},
    {"events", "[--limit N] [--since SEQ] [--kind KIND]",
     "Recent events, oldest first: sweeps (cause, routes changed, LFT blocks, SMPs, duration), config "
     "reloads, control requests."},
    {"check", "[--pattern shift|ring|all2all] [--ranks FILE]",
     "Runs the route checker on the live tables: reachability, loops, hops, link load, deadlock freedom. "
     "Exit 1 when it finds a problem. --pattern also scores collective traffic over the ranks: shift (rank i "
     "to rank i+s mod N for each s = 1..N-1, one permutation at a time), ring (shifts 1 and N-1) or all2all "
     "(every pair at once): max congestion (most flows on one switch-to-switch link), mean flow bandwidth "
     "(each flow gets 1/congestion of its busiest link), share of congestion-free shifts, the worst shift "
     "and its busiest link. --ranks FILE gives the rank order, one host name, node description or port GUID "
     "per line (default: every host in natural name order, as a job scheduler numbers them); it implies "
     "--pattern shift."},
    {"topology", "[--dot]",
     "The fabric in ibnetdiscover format, or with --dot as Graphviz with the route load of every link "
     "(ibsmctl topology --dot | dot -Tsvg > fabric.svg)."},
    {"resweep", "[--heavy]",
     "Sweep now and wait for the result. --heavy forgets what the switches are believed to hold and writes "
     "every LFT block again. Root or control.group only."},
    {"reroute", "", "Recompute and reprogram the routes now. Root or control.group only."},
    {"loglevel", "LEVEL", "Set ibsmd's log level: error, warn, info or debug. Root or control.group only."},
    {"partition",
     "list | show NAME | add NAME PKEY PORT... | remove NAME | add-member NAME PORT... | remove-member NAME "
     "PORT...",
     "Partitions. list: every partition with its P_Key, IPoIB group, members (full/limited) and where\n"
     "it is defined; show NAME: one with its member ports. The changes are for root or control.group:\n"
     "add a run-time partition, remove it, or add/remove members (PORT: a port GUID or NODE/PORTNUM,\n"
     "optionally =limited or =full, default full). Only the P_Key blocks that change are written; run-time\n"
     "partitions are kept in the state directory (a restart and a config reload keep them). Partitions\n"
     "of the config file are changed there. A change that would name an unknown port, reuse a P_Key,\n"
     "overfill a port's P_Key table or take the SM's port out of the default partition is refused."},
    {"health", "[--all] | release PORT",
     "Port health from the counter sweeps (perfmgr.interval_s): the isolated and warning ports (--all: every "
     "port) with their peer, since when, their error counter totals and the rates over the thresholds that "
     "put them there, and the ports flap damping holds down. release PORT (NODE/PORTNUM; root or "
     "control.group) routes an isolated link again before its clean period is over."},
    {"handover", "[GUID]",
     "Hand the subnet to a standby SM (GUID: its port GUID; default the best standby that answered this "
     "master) and wait until this SM is STANDBY. The new master keeps every LID and route. This SM's "
     "priority drops to 0 until sm.priority is configured anew, so the subnet is not handed back; refused "
     "when the standby would not be better than this SM at priority 0. Root or control.group only."},
    {"dump", "lfts",
     "Write opensm-lfts.dump into paths.dump_dir now and print its path once written. The file holds every "
     "switch's LFT as ibsmd programmed it (the format dump_lfts prints). With dumps.lfts: on_request (the "
     "default) ibsmd writes it only when asked, as it grows with switches x LIDs. Root or control.group "
     "only."},
};

// Global options: {name and value, help}.
const std::vector<std::pair<const char*, const char*>> kOptions = {
    {"--socket PATH",
     "the control socket (default: $IBSM_SOCKET, else control.socket of the config file, else "
     "/run/ibsm/ibsm.sock)"},
    {"--config FILE", "read control.socket from FILE (default /etc/ibsm/ibsm.yaml when readable)"},
    {"--json", "print the daemon's answer as JSON (one object) instead of a table"},
    {"--timeout SECONDS", "how long to wait for an answer (default 10; 120 for resweep, reroute, dump)"},
    {"--help", "this text, or a command's help after the command"},
    {"--version", "print ibsmctl's version"},
};

constexpr size_t kOptionColumn = 21, kCommandColumn = 28;

const CommandSpec* findSpec(const std::string& name) {
  for (const auto& c : kCommands)
    if (name == c.name) return &c;
  return nullptr;
}

// Help is wrapped to the terminal (80 columns when stdout is not one, at least 40).
size_t helpWidth() {
  winsize ws{};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    return std::max<size_t>(ws.ws_col, 40);
  if (const char* columns = std::getenv("COLUMNS")) {
    char* end = nullptr;
    long n = std::strtol(columns, &end, 10);
    if (end && !*end && n > 0 && n <= 1000) return std::max<size_t>(static_cast<size_t>(n), 40);
  }
  return 80;
}

std::string globalHelp(size_t width) {
  std::string out =
      "usage: ibsmctl [--socket PATH] [--json] [--timeout SECONDS] [--config FILE] COMMAND [ARGS]\n"
      "       ibsmctl COMMAND --help\n\n";
  out += ctl::wrap("Talks to a running ibsmd over its control socket.", width, 0) +
         "\noptions (anywhere on the line):\n";
  for (const auto& [name, help] : kOptions) out += ctl::helpEntry(name, help, kOptionColumn, width);
  out += "\n" +
         ctl::wrap(
             "A node (SWITCH, SRC, DST, NODE) is a node description (or its first word, such as a host "
             "name), a node or port GUID (0x...), or a LID.",
             width, 0) +
         "\ncommands:\n";
  for (const auto& c : kCommands) {
    std::string head = std::string(c.name) + (c.usage[0] ? std::string(" ") + c.usage : "");
    out += ctl::helpEntry(head, c.help, kCommandColumn, width);
  }
  out += "\n" +
         ctl::wrap(
             "exit codes: 0 ok, 1 request failed or not found, 2 usage, 3 ibsmd unreachable, 4 permission "
             "denied",
             width, 0);
  return out;
}

std::string commandHelp(const CommandSpec& c, size_t width) {
  return std::string("usage: ibsmctl [--socket PATH] [--json] ") + c.name + (c.usage[0] ? " " : "") +
         c.usage + "\n\n" + ctl::wrap(c.help, width, 0);
}

[[noreturn]] void usage(const std::string& message) {
  std::fprintf(stderr, "ibsmctl: %s (see ibsmctl --help)\n", message.c_str());
  std::exit(kUsage);
}

// A node argument: digits become a LID number, everything else goes as text.
json nodeArg(const std::string& s) {
  if (!s.empty() && s.size() <= 6 && s.find_first_not_of("0123456789") == std::string::npos)
    return json(std::stoul(s));
  return json(s);
}

uint64_t numberArg(const std::string& opt, const std::string& v) {
  if (v.empty() || v.size() > 18 || v.find_first_not_of("0123456789") != std::string::npos)
    usage(opt + " needs a non-negative number, not '" + v + "'");
  return std::stoull(v);
}

std::string defaultSocket(const std::string& configPath, bool configGiven) {
  if (const char* env = std::getenv("IBSM_SOCKET"); env && *env) return env;
  auto cfg = config::loadConfigFile(configPath, config::IfMissing::kUseDefaults);
  if (cfg) return cfg->control.socket;
  if (configGiven) {
    std::fprintf(stderr, "ibsmctl: %s\n", cfg.error().message.c_str());
    std::exit(kUsage);
  }
  return config::Config{}.control.socket;  // an unreadable default config: the built-in default
}

}  // namespace

int main(int argc, char** argv) {
  std::string socketPath, configPath{config::kDefaultConfigPath};
  bool configGiven = false, asJson = false, help = false;
  double timeoutS = -1;
  std::vector<std::string> words;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--socket")
      socketPath = value();
    else if (a == "--config") {
      configPath = value();
      configGiven = true;
    } else if (a == "--json")
      asJson = true;
    else if (a == "--timeout") {
      std::string v = value();
      char* end = nullptr;
      timeoutS = std::strtod(v.c_str(), &end);
      if (!end || *end || timeoutS <= 0 || timeoutS > 86400)
        usage("--timeout needs seconds (0 < S <= 86400)");
    } else if (a == "--help" || a == "-h")
      help = true;
    else if (a == "--version") {
      std::puts("ibsmctl " IBSM_VERSION);
      return kOk;
    } else
      words.push_back(a);
  }
  if (words.empty()) {
    if (help) {
      std::fputs(globalHelp(helpWidth()).c_str(), stdout);
      return kOk;
    }
    usage("no command given");
  }
  std::string command = words[0];
  if (command == "help") {
    if (words.size() > 1)
      if (const CommandSpec* c = findSpec(words[1])) {
        std::fputs(commandHelp(*c, helpWidth()).c_str(), stdout);
        return kOk;
      }
    std::fputs(globalHelp(helpWidth()).c_str(), stdout);
    return kOk;
  }
  const CommandSpec* spec = findSpec(command);
  if (!spec) usage("unknown command '" + command + "'");
  if (help) {
    std::fputs(commandHelp(*spec, helpWidth()).c_str(), stdout);
    return kOk;
  }

  // Command arguments: positional words and the command's own options.
  std::vector<std::string> pos;
  json args = json::object();
  for (size_t i = 1; i < words.size(); ++i) {
    const std::string& w = words[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= words.size()) usage(w + " needs a value");
      return words[++i];
    };
    if (command == "resweep" && w == "--heavy")
      args["heavy"] = true;
    else if (command == "topology" && w == "--dot")
      args["format"] = "dot";
    else if (command == "nodes" && w == "--type")
      args["type"] = value();
    else if (command == "events" && w == "--limit")
      args["limit"] = numberArg(w, value());
    else if (command == "events" && w == "--since")
      args["since"] = numberArg(w, value());
    else if (command == "events" && w == "--kind")
      args["kind"] = value();
    else if (command == "health" && w == "--all")
      args["all"] = true;
    else if (command == "check" && w == "--pattern")
      args["pattern"] = value();
    else if (command == "check" && w == "--ranks") {
      const std::string file = value();
      std::ifstream in(file, std::ios::binary);
      if (!in) usage("--ranks: cannot open '" + file + "'");
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (in.bad()) usage("--ranks: cannot read '" + file + "'");
      args["ranks"] = text;
      args["ranks_name"] = file;
    } else if (w.size() > 1 && w[0] == '-' && w.find_first_not_of("0123456789", 1) != std::string::npos)
      usage(command + ": unknown option '" + w + "'");
    else
      pos.push_back(w);
  }
  auto wantPositional = [&](size_t min, size_t max) {
    if (pos.size() < min)
      usage(command + ": missing argument; usage: ibsmctl " + command + " " + spec->usage);
    if (pos.size() > max)
      usage(command + ": too many arguments; usage: ibsmctl " + command + " " + spec->usage);
  };
  if (command == "routes") {
    wantPositional(1, 2);
    args["switch"] = nodeArg(pos[0]);
    if (pos.size() > 1) args["lid"] = nodeArg(pos[1]);
  } else if (command == "path") {
    wantPositional(2, 2);
    args["src"] = nodeArg(pos[0]);
    args["dst"] = nodeArg(pos[1]);
  } else if (command == "ar") {
    wantPositional(1, 1);
    args["switch"] = nodeArg(pos[0]);
  } else if (command == "loglevel") {
    wantPositional(1, 1);
    static const char* kLevels[] = {"error", "warn", "info", "debug"};
    bool known = false;
    for (const char* l : kLevels) known = known || pos[0] == l;
    if (!known) usage("loglevel: LEVEL must be error, warn, info or debug, not '" + pos[0] + "'");
    args["level"] = pos[0];
  } else if (command == "partition") {
    if (pos.empty()) usage("partition: missing action; usage: ibsmctl partition " + std::string(spec->usage));
    const std::string action = pos[0];
    if (action == "list") {
      wantPositional(1, 1);
      command = "partitions";
    } else if (action == "show") {
      wantPositional(2, 2);
      command = "partitions";
      args["name"] = pos[1];
    } else if (action == "add" || action == "add-member" || action == "remove-member" || action == "remove") {
      bool add = action == "add";
      wantPositional(action == "remove" ? 2 : add ? 4 : 3, action == "remove" ? 2 : SIZE_MAX);
      args["action"] = action;
      args["name"] = pos[1];
      if (add) args["pkey"] = pos[2];
      json ports = json::array();
      for (size_t i = add ? 3 : 2; i < pos.size(); ++i) ports.push_back(pos[i]);
      if (action != "remove") args["ports"] = ports;
    } else {
      usage("partition: unknown action '" + action +
            "' (list, show, add, remove, add-member, remove-member)");
    }
  } else if (command == "health") {
    wantPositional(0, 2);
    if (!pos.empty()) {
      if (pos[0] != "release" || pos.size() != 2)
        usage("health: usage: ibsmctl health " + std::string(spec->usage));
      command = "health-release";
      args = json{{"port", pos[1]}};
    }
  } else if (command == "handover") {
    wantPositional(0, 1);
    if (!pos.empty()) args["to"] = pos[0];
  } else if (command == "dump") {
    wantPositional(1, 1);
    if (pos[0] != "lfts") usage("dump: the only dump on request is lfts, not '" + pos[0] + "'");
    args["file"] = pos[0];
  } else {
    wantPositional(0, 0);
  }

  if (socketPath.empty()) socketPath = defaultSocket(configPath, configGiven);
  // A sweep, or formatting and writing a file of switches x LIDs (after the writer's current round).
  bool slow = command == "resweep" || command == "reroute" || command == "dump" || command == "partition" ||
              command == "health-release";
  auto timeout = std::chrono::milliseconds(static_cast<int64_t>((timeoutS > 0 ? timeoutS
                                                                 : slow       ? 120
                                                                              : 10) *
                                                                1000));
  const auto start = std::chrono::steady_clock::now();
  ctl::Exchange ex = ctl::request(socketPath, command, args, timeout);
  switch (ex.failure) {
    case ctl::Failure::kNone:
      break;
    case ctl::Failure::kPermission:
      std::fprintf(stderr, "ibsmctl: %s\n", ex.message.c_str());
      return kDenied;
    default:
      std::fprintf(stderr, "ibsmctl: %s\n", ex.message.c_str());
      return kUnreachable;
  }
  const json& resp = ex.response;
  if (!resp.value("ok", false)) {
    json err = resp.contains("error") && resp["error"].is_object() ? resp["error"] : json::object();
    std::string code = err.value("code", "internal");
    if (asJson)
      std::printf("%s\n", json{{"error", err}}.dump(2, ' ', false, json::error_handler_t::replace).c_str());
    std::fprintf(stderr, "ibsmctl: %s\n", err.value("message", "request failed").c_str());
    if (code == "permission_denied") return kDenied;
    if (code == "bad_request" || code == "unknown_command") return kUsage;
    if (code == "busy") return kUnreachable;
    return kFailed;
  }
  json result = resp.contains("result") ? resp["result"] : json::object();
  if (command == "handover") {
    // Done when this SM is STANDBY (the new master acknowledged); its state and the time since the request
    // are added.
    std::string state;
    while (std::chrono::steady_clock::now() - start < timeout) {
      ctl::Exchange st = ctl::request(socketPath, "status", json::object(), timeout);
      if (st.failure == ctl::Failure::kNone && st.response.contains("result"))
        state = st.response["result"].value("state", "");
      if (state != "MASTER") break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    result["state"] = state;
    result["ms"] =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start)
            .count();
  }
  int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  ctl::Formatted f = ctl::formatResult(command, result, now);
  if (asJson)
    std::printf("%s\n", result.dump(2, ' ', false, json::error_handler_t::replace).c_str());
  else
    std::fputs(f.text.c_str(), stdout);
  return f.exitCode;
}
