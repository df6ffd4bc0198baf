// ibsmctl against ibsmd (daemon mode) on ibsim: what ibsmctl shows must be what the fabric's own tools show
// (ibnetdiscover for nodes and LIDs, ibroute for every switch's routes, ibtracert for a path); errors are one
// line with a meaningful exit code (no daemon, bad arguments, a bad name, a user who may not); fifty clients
// at once during sweeps all get correct answers; systemd's notify protocol: READY=1 only after SUBNET UP,
// then WATCHDOG=1; the OpenSM-format dumps agree with the switches (the LFT dump after every change with
// dumps.lfts: on_change, or written by `ibsmctl dump lfts` with the default on_request).
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "routing/lft_dump.h"
#include "routing/lid_assignment.h"
#include "routing/pattern_checker.h"
#include "tests/ibsim/ibsim_fabric.h"

namespace ibsm::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

constexpr const char* kDiagHost =
    "H-0000000000100000";  // where the diags tools attach (ibsmd is on a switch)

size_t lineCount(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

struct Daemon {
  std::unique_ptr<Ibsim> sim;
  std::string net, sock;
  pid_t sm = -1;

  Daemon(const std::string& fabricArgs, std::vector<std::string> extra = {},
         std::map<std::string, std::string> env = {}, bool waitUp = true) {
    sim = startFabric(fabricArgs, &net);
    sock = sim->dir() + "/ibsm.sock";
    std::vector<std::string> argv = {binPath("ibsmd"), "--state-dir", sim->dir() + "/state", "--socket",
                                     sock};
    argv.insert(argv.end(), extra.begin(), extra.end());
    RunOptions o;
    o.env = std::move(env);
    sm = sim->spawn(argv, o);
    if (waitUp) waitForSubnetUp();
  }
  RunResult ctl(std::vector<std::string> args, std::chrono::milliseconds timeout = 30s) {
    std::vector<std::string> argv = {binPath("ibsmctl"), "--socket", sock};
    argv.insert(argv.end(), args.begin(), args.end());
    RunOptions o;
    o.preload = false;
    o.timeout = timeout;
    return sim->run(argv, o);
  }
  json ctlJson(std::vector<std::string> args) {
    args.insert(args.begin(), "--json");
    RunResult r = ctl(args);
    EXPECT_EQ(r.exitCode, 0) << r.err;
    json j = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out;
    return j;
  }
  void waitForSubnetUp(std::chrono::milliseconds limit = 60s) {
    EXPECT_TRUE(waitUntil(
        [&] {
          RunResult r = ctl({"status"}, 5s);
          return r.exitCode == 0 && r.out.find("SUBNET UP") != std::string::npos;
        },
        limit, "SUBNET UP in ibsmctl status", 50ms, [&] { return !sim->running(sm); }))
        << sim->output(sm);
  }
  RunResult diag(const std::vector<std::string>& argv) {
    RunOptions o;
    o.simHost = kDiagHost;
    o.timeout = 30s;
    return sim->run(argv, o);
  }
};

TEST(Ibsmctl, NodesLidsRoutesAndPathsMatchTheFabricTools) {
  // on_change: the LFT dump is written after the sweep, as OpenSM-format scripts that poll for it expect.
  Daemon d("--kary-ntree 4,3", {"--sweep-interval", "0", "--set", "dumps.lfts=on_change"});
  RunResult disc = d.diag({"ibnetdiscover"});
  ASSERT_EQ(disc.exitCode, 0) << disc.err;
  auto topo = parseOrFail(disc.out, "ibnetdiscover");
  ASSERT_TRUE(topo);

  // Nodes: same GUIDs, types and descriptions.
  std::set<std::tuple<std::string, std::string, std::string>> theirs, ours;
  for (const auto& n : topo->nodes())
    theirs.insert({fabric::toString(n.guid), n.isSwitch() ? "SW" : "CA", n.description});
  json nodes = d.ctlJson({"nodes"});  // kept: a range-for over a temporary's member would dangle
  for (const auto& n : nodes["nodes"])
    ours.insert(
        {n["guid"].get<std::string>(), n["type"].get<std::string>(), n["description"].get<std::string>()});
  EXPECT_EQ(ours, theirs);
  EXPECT_EQ(ours.size(), 64u + 48u);

  // LIDs: every endport's LID as the fabric reports it.
  routing::LidAssignment reported = routing::LidAssignment::fromTopology(*topo);
  std::map<std::string, unsigned> theirLids, ourLids;
  for (fabric::NodeIndex n = 0; n < topo->size(); ++n) {
    const auto& node = topo->node(n);
    for (unsigned p = node.isSwitch() ? 0 : 1; p <= (node.isSwitch() ? 0u : node.numPorts); ++p)
      if (node.ports[p].connected() || node.isSwitch())
        theirLids[fabric::toString(node.ports[p].guid)] =
            reported.base(n, fabric::PortNum{static_cast<uint8_t>(p)}).value;
  }
  json lids = d.ctlJson({"lids"});
  for (const auto& l : lids["lids"]) ourLids[l["guid"].get<std::string>()] = l["lid"].get<unsigned>();
  EXPECT_EQ(ourLids, theirLids);
  RunResult table = d.ctl({"lids"});
  EXPECT_EQ(lineCount(table.out), 1 + theirLids.size());  // header + one line per endport

  // Routes: every switch's table as ibroute reads it from the switch.
  size_t compared = 0;
  json switches = d.ctlJson({"switches"});
  for (const auto& sw : switches["switches"]) {
    std::string lid = std::to_string(sw["lid"].get<unsigned>());
    RunResult ib = d.diag({"ibroute", lid});
    ASSERT_EQ(ib.exitCode, 0) << ib.err;
    auto real = routing::parseLftDump(ib.out, *topo, "ibroute");
    ASSERT_TRUE(real.ok()) << real.error().message << "\n" << ib.out;
    auto node = topo->findNode(*fabric::parseGuid(sw["guid"].get<std::string>()));
    ASSERT_TRUE(node);
    json routes = d.ctlJson({"routes", sw["guid"].get<std::string>()})["routes"];
    size_t realEntries = 0;
    for (size_t l = 1; l < real->lft[*node].size(); ++l)
      realEntries += real->lft[*node][l] != routing::kNoPort;
    EXPECT_EQ(routes.size(), realEntries) << sw["description"];
    for (const auto& e : routes) {
      EXPECT_EQ(e["port"], real->port(*node, fabric::Lid{e["lid"].get<uint16_t>()}))
          << sw["description"] << " LID " << e["lid"];
      ++compared;
    }
  }
  EXPECT_GE(compared, 48u * 112u);

  // A path, hop by hop, as ibtracert walks it through the switches.
  json ca = json::array();
  for (const auto& l : lids["lids"])
    if (l["type"] == "CA") ca.push_back(l);
  ASSERT_GE(ca.size(), 2u);
  std::string src = std::to_string(ca.front()["lid"].get<unsigned>()),
              dst = std::to_string(ca.back()["lid"].get<unsigned>());
  json path = d.ctlJson({"path", src, dst});
  EXPECT_TRUE(path["reached"].get<bool>()) << path.dump();
  RunResult trace = d.diag({"ibtracert", src, dst});
  ASSERT_EQ(trace.exitCode, 0) << trace.err;
  std::vector<std::string> traced, walked;
  std::regex sw(R"(switch port \{(0x[0-9a-f]+)\})");
  for (std::sregex_iterator it(trace.out.begin(), trace.out.end(), sw), end; it != end; ++it) {
    std::string g = (*it)[1];
    traced.push_back(fabric::toString(*fabric::parseGuid(g)));
  }
  for (const auto& h : path["hops"]) walked.push_back(h["switch"]["guid"].get<std::string>());
  EXPECT_EQ(walked, traced) << trace.out;
  RunResult human = d.ctl({"path", src, dst});
  EXPECT_EQ(human.exitCode, 0);
  EXPECT_NE(human.out.find("reached"), std::string::npos) << human.out;

  // The route checker on the live tables, and the dumps written after the sweep agree with ibroute.
  RunResult check = d.ctl({"check"});
  EXPECT_EQ(check.exitCode, 0) << check.out;
  EXPECT_NE(check.out.find("result: OK"), std::string::npos) << check.out;
  auto dumped =
      routing::parseLftDump(readFile(d.sim->dir() + "/state/opensm-lfts.dump"), *topo, "opensm-lfts.dump");
  ASSERT_TRUE(dumped.ok()) << dumped.error().message;
  std::string lst = readFile(d.sim->dir() + "/state/opensm-subnet.lst");
  EXPECT_EQ(lineCount(lst), 2 * topo->links().size());
  EXPECT_NE(lst.find("LOG=ACT"), std::string::npos);
  EXPECT_EQ(lst.find("LOG=INI"), std::string::npos);
  EXPECT_FALSE(readFile(d.sim->dir() + "/state/ibsm-ar-groups.dump").empty());
}

// Every switch's table in an LFT dump file equals what ibroute reads from the switch; returns the entries
// compared.
size_t expectLftDumpMatchesIbroute(Daemon& d, const fabric::Topology& topo, const std::string& path) {
  auto dumped = routing::parseLftDump(readFile(path), topo, path);
  EXPECT_TRUE(dumped.ok()) << dumped.error().message;
  if (!dumped.ok()) return 0;
  size_t compared = 0;
  for (fabric::NodeIndex sw : topo.switches()) {
    std::string lid = std::to_string(topo.node(sw).ports[0].attrs.lid.value);
    RunResult ib = d.diag({"ibroute", lid});
    EXPECT_EQ(ib.exitCode, 0) << ib.err;
    auto real = routing::parseLftDump(ib.out, topo, "ibroute");
    EXPECT_TRUE(real.ok()) << (real.ok() ? "" : real.error().message) << "\n" << ib.out;
    if (!real.ok()) continue;
    size_t top = std::max(real->lft[sw].size(), dumped->lft[sw].size());
    EXPECT_GT(top, 1u) << topo.node(sw).description << ": no table";
    for (size_t l = 1; l < top; ++l) {
      fabric::Lid dlid{static_cast<uint16_t>(l)};
      EXPECT_EQ(dumped->port(sw, dlid), real->port(sw, dlid)) << topo.node(sw).description << " LID " << l;
      compared += real->port(sw, dlid) != routing::kNoPort;
    }
  }
  return compared;
}

// dumps.lfts: on_request (the default): no LFT dump after SUBNET UP, the small dumps as always; `ibsmctl dump
// lfts` writes it for the current routes and prints its path, and every switch's table in it is what ibroute
// reads from the switch.
TEST(Ibsmctl, DumpLftsWritesTheTablesTheSwitchesHold) {
  Daemon d("--kary-ntree 4,3", {"--sweep-interval", "0"});
  const std::string state = d.sim->dir() + "/state";
  RunResult disc = d.diag({"ibnetdiscover"});
  ASSERT_EQ(disc.exitCode, 0) << disc.err;
  auto topo = parseOrFail(disc.out, "ibnetdiscover");
  ASSERT_TRUE(topo);
  EXPECT_TRUE(waitUntil([&] { return !readFile(state + "/opensm-subnet.lst").empty(); }, 10s,
                        "opensm-subnet.lst after SUBNET UP"));
  EXPECT_FALSE(std::filesystem::exists(state + "/opensm-lfts.dump"));

  RunResult dump = d.ctl({"dump", "lfts"});
  ASSERT_EQ(dump.exitCode, 0) << dump.err;
  EXPECT_EQ(dump.out, state + "/opensm-lfts.dump\n");
  EXPECT_EQ(dump.err, "");
  EXPECT_GE(expectLftDumpMatchesIbroute(d, *topo, state + "/opensm-lfts.dump"), 48u * 112u);

  // --json: the path as an object; the file is written again, complete.
  ASSERT_TRUE(std::filesystem::remove(state + "/opensm-lfts.dump"));
  json j = d.ctlJson({"dump", "lfts"});
  EXPECT_EQ(j, json({{"path", state + "/opensm-lfts.dump"}}));
  EXPECT_GE(expectLftDumpMatchesIbroute(d, *topo, state + "/opensm-lfts.dump"), 48u * 112u);
  for (const auto& p : std::filesystem::directory_iterator(state))
    EXPECT_FALSE(p.path().string().ends_with(".tmp")) << p.path();
}

// `ibsmctl check --pattern` scores the routes ibsmd holds; the same figures must come out of the switches'
// own tables (dump_lfts, with ibnetdiscover's LIDs and host names), for the default rank order and a rank
// file. A dragonfly, whose minimal routes share a group pair's global link, so the figures are not all 1.
TEST(Ibsmctl, CheckPatternMatchesTheMetricOfTheSwitchesTables) {
  Daemon d("--dragonfly 3,2 --hosts-per-switch 2", {"--sweep-interval", "0"});  // 63 LIDs: see ibsim.md
  RunResult disc = d.diag({"ibnetdiscover"});
  ASSERT_EQ(disc.exitCode, 0) << disc.err;
  auto topo = parseOrFail(disc.out, "ibnetdiscover");
  ASSERT_TRUE(topo);
  RunResult lfts = d.diag({"dump_lfts"});
  ASSERT_EQ(lfts.exitCode, 0) << lfts.err;
  std::string text = lftTables(lfts.out);
  auto tables = routing::parseLftDump(text, *topo, "dump_lfts");
  ASSERT_TRUE(tables.ok()) << tables.error().message;
  const routing::LidAssignment lids = routing::LidAssignment::fromTopology(*topo);

  // The rank file: every other host first, by name (ibnetdiscover's descriptions), then the rest.
  std::vector<std::string> hosts;
  for (const auto& n : topo->nodes())
    if (!n.isSwitch()) hosts.push_back(n.description.substr(0, n.description.find(' ')));
  std::sort(hosts.begin(), hosts.end());
  std::string ranksText = "# every other host first\n";
  for (size_t k = 0; k < 2; ++k)
    for (size_t i = k; i < hosts.size(); i += 2) ranksText += hosts[i] + "\n";
  const std::string ranksFile = d.sim->dir() + "/job.ranks";
  writeFile(ranksFile, ranksText);

  for (const std::string pattern : {"shift", "ring", "all2all", "file"}) {
    SCOPED_TRACE(pattern);
    routing::PatternOptions po;
    std::vector<routing::Rank> ranks;
    std::vector<std::string> args{"check", "--pattern", pattern == "file" ? "shift" : pattern};
    po.pattern = *routing::parsePattern(args[2]);
    if (pattern == "file") {
      args.insert(args.end(), {"--ranks", ranksFile});
      auto parsed = routing::parseRanks(*topo, lids, ranksText, "job.ranks");
      ASSERT_TRUE(parsed.ok()) << parsed.error().message;
      ranks = *parsed;
    }
    const routing::PatternReport want = routing::checkPattern(*topo, lids, *tables, ranks, po);
    EXPECT_EQ(want.ranks, 42u);
    EXPECT_EQ(want.unrouted, 0u);
    json j = d.ctlJson(args);
    ASSERT_TRUE(j.contains("pattern")) << j.dump();
    const json& got = j["pattern"];
    EXPECT_EQ(got["pattern"], args[2]);
    EXPECT_EQ(got["ranksFromFile"], pattern == "file");
    EXPECT_EQ(got["ranks"], want.ranks);
    EXPECT_EQ(got["shifts"], want.shifts);
    EXPECT_EQ(got["flows"], want.flows);
    EXPECT_EQ(got["unrouted"], 0u);
    EXPECT_EQ(got["maxCongestion"], want.maxCongestion);
    EXPECT_NEAR(got["meanBandwidth"].get<double>(), want.meanBandwidth, 1e-6);
    EXPECT_EQ(got["congestionFreeShifts"], want.congestionFreeShifts);
    EXPECT_EQ(got["worstShift"], want.worstShift);
    EXPECT_EQ(got["worstCongestion"], want.worstCongestion);
    EXPECT_EQ(got["worstLink"]["from"], fabric::toString(want.worstLink.from));
    EXPECT_EQ(got["worstLink"]["port"], want.worstLink.port);
    if (pattern == "shift") {
      EXPECT_GT(want.maxCongestion, 1u);
    }
  }
  RunResult table = d.ctl({"check", "--pattern", "shift"});
  EXPECT_EQ(table.exitCode, 0) << table.err;
  EXPECT_NE(table.out.find("result: OK"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("mean flow bandwidth: "), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("worst shift: "), std::string::npos) << table.out;
  // A bad rank file: a usage error naming the line, and a bad pattern name.
  writeFile(ranksFile, hosts[0] + "\nnosuchhost\n");
  RunResult bad = d.ctl({"check", "--ranks", ranksFile});
  EXPECT_EQ(bad.exitCode, 2) << bad.out << bad.err;
  EXPECT_NE(bad.err.find("job.ranks:2: no CA 'nosuchhost'"), std::string::npos) << bad.err;
  EXPECT_EQ(d.ctl({"check", "--pattern", "bogus"}).exitCode, 2);
}

// One line on stderr, nothing else, and the exit code.
void expectOneLineError(const RunResult& r, int code, const std::string& contains) {
  EXPECT_EQ(r.exitCode, code) << r.out << r.err;
  EXPECT_EQ(lineCount(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find(contains), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

std::string rawRequest(const std::string& path, const std::string& bytes) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return "";
  }
  std::thread writer([&] {
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return;
      done += static_cast<size_t>(n);
    }
  });
  std::string in;
  char buf[4096];
  // No reply line (a timeout or the daemon closing first) comes back as "": the callers' checks say so.
  (void)waitUntil(
      [&] {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0) return false;
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) return true;  // closed: nothing more will come
        in.append(buf, static_cast<size_t>(n));
        return in.find('\n') != std::string::npos;
      },
      10s, "a reply line", 0ms);
  ::shutdown(fd, SHUT_RDWR);
  writer.join();
  ::close(fd);
  return in.substr(0, in.find('\n'));
}

TEST(Ibsmctl, ErrorsAreOneLineWithMeaningfulExitCodes) {
  Daemon d("--kary-ntree 2,2", {"--sweep-interval", "0"});
  // No daemon at that path.
  RunOptions plain;
  plain.preload = false;
  expectOneLineError(
      d.sim->run({binPath("ibsmctl"), "--socket", d.sim->dir() + "/none.sock", "status"}, plain), 3,
      "cannot reach ibsmd");
  // Bad arguments.
  expectOneLineError(d.ctl({"frobnicate"}), 2, "unknown command 'frobnicate'");
  expectOneLineError(d.ctl({"routes"}), 2, "missing argument");
  expectOneLineError(d.ctl({"path", "a", "b", "c"}), 2, "too many arguments");
  expectOneLineError(d.ctl({"--timeout", "soon", "status"}), 2, "--timeout");
  expectOneLineError(d.ctl({"loglevel", "loud"}), 2, "LEVEL must be");
  expectOneLineError(d.ctl({"status", "--bogus"}), 2, "unknown option");
  expectOneLineError(d.ctl({"dump"}), 2, "missing argument");
  expectOneLineError(d.ctl({"dump", "subnet"}), 2, "the only dump on request is lfts");
  // Names that are not in the fabric.
  expectOneLineError(d.ctl({"routes", "no-such-switch"}), 1, "no node 'no-such-switch'");
  expectOneLineError(d.ctl({"routes", "host-0"}), 1, "not a switch");
  expectOneLineError(d.ctl({"path", "host-0", "0x00000000deadbeef"}), 1, "no node or port has GUID");
  expectOneLineError(d.ctl({"ar", "999"}), 1, "no endport has LID 999");
  // Help works everywhere, without a daemon.
  for (const char* c : {"status", "routes", "path", "resweep", "topology", "dump"}) {
    RunResult h = d.sim->run({binPath("ibsmctl"), "--socket", "/nonexistent", c, "--help"}, plain);
    EXPECT_EQ(h.exitCode, 0) << c;
    EXPECT_NE(h.out.find(std::string("usage: ibsmctl")), std::string::npos) << c;
  }
  // Malformed and oversized requests straight on the socket: an error each, and the daemon carries on.
  json bad = json::parse(rawRequest(d.sock, "{not json\n"), nullptr, false);
  EXPECT_EQ(bad["error"]["code"], "bad_request");
  json big = json::parse(rawRequest(d.sock, std::string((1 << 20) + 1000, 'x')), nullptr, false);
  EXPECT_EQ(big["error"]["code"], "too_large");
  EXPECT_EQ(d.ctl({"status"}).exitCode, 0);

  // A user who is neither root nor in control.group: cannot connect to the 0660 socket at all...
  if (geteuid() != 0) GTEST_SKIP() << "the permission checks need root to act as nobody";
  ASSERT_EQ(::chmod(d.sim->dir().c_str(), 0711), 0);
  struct stat st {};
  ASSERT_EQ(::stat(d.sock.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0660u);
  auto asNobody = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {
        "setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", binPath("ibsmctl"), "--socket",
        d.sock};
    argv.insert(argv.end(), args.begin(), args.end());
    return d.sim->run(argv, plain);
  };
  expectOneLineError(asNobody({"status"}), 4, "permission denied");
  // ...and with the socket opened to everyone, may read but not change state (SO_PEERCRED).
  ASSERT_EQ(::chmod(d.sock.c_str(), 0666), 0);
  RunResult read = asNobody({"status"});
  EXPECT_EQ(read.exitCode, 0) << read.err;
  EXPECT_NE(read.out.find("SUBNET UP"), std::string::npos);
  expectOneLineError(asNobody({"resweep"}), 4, "only root may");
  expectOneLineError(asNobody({"loglevel", "debug"}), 4, "permission denied");
  expectOneLineError(asNobody({"dump", "lfts"}), 4, "only root may");
  expectOneLineError(asNobody({"partition", "remove", "job"}), 4, "only root may");
  EXPECT_EQ(asNobody({"partition", "list"}).exitCode, 0);
  EXPECT_FALSE(std::filesystem::exists(d.sim->dir() + "/state/opensm-lfts.dump"));
  // Root still may.
  RunResult resweep = d.ctl({"resweep"});
  EXPECT_EQ(resweep.exitCode, 0) << resweep.err;
  EXPECT_NE(resweep.out.find("SUBNET UP"), std::string::npos) << resweep.out;
  EXPECT_TRUE(d.sim->running(d.sm));
}

TEST(Ibsmctl, FiftyConcurrentClientsDuringSweepsGetCorrectAnswers) {
  Daemon d("--kary-ntree 4,3", {"--sweep-interval", "1"});
  const size_t kEndports = 64 + 48;
  // Fifty clients at once, five of them asking for heavy sweeps while the others read.
  RunOptions o;
  o.preload = false;
  std::vector<std::pair<pid_t, int>> clients;  // pid, kind
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 50; ++i) {
    int kind = i % 10 == 0 ? 0 : i % 3;  // 0 resweep, 1 lids, 2 path
    std::vector<std::string> argv = {binPath("ibsmctl"), "--socket", d.sock, "--json", "--timeout", "60"};
    if (kind == 0)
      argv.insert(argv.end(), {"resweep", "--heavy"});
    else if (kind == 1)
      argv.push_back("lids");
    else
      argv.insert(argv.end(), {"path", "host-0", "host-63"});
    clients.emplace_back(d.sim->spawn(argv, o), kind);
  }
  std::vector<double> loaded;
  size_t good = 0;
  for (auto [pid, kind] : clients) {
    RunResult r = d.sim->wait(pid, 90s);
    ASSERT_FALSE(r.timedOut);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    json j = json::parse(r.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << r.out;
    if (kind == 0) {
      loaded.push_back(j["sweep"]["duration_ms"].get<double>());
      good += j["sweep"]["subnet_up"].get<bool>();
    } else if (kind == 1) {
      good += j["lids"].size() == kEndports;
    } else {
      good += j["reached"].get<bool>() && j["hops"].size() == 5u;
    }
  }
  double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(good, 50u);
  std::printf("50 ibsmctl processes answered in %.0f ms; their heavy sweeps took at most %.1f ms\n", wall,
              *std::max_element(loaded.begin(), loaded.end()));

  // Is the sweep delayed by readers? Heavy sweeps alone, then the same while 50 client threads keep asking
  // (1,000 requests in all): compare the medians. Readers are served on the control socket's thread from the
  // published snapshot, so only CPU sharing (two cores) slows the sweep down.
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  auto heavySweep = [&] {
    json r = json::parse(rawRequest(d.sock, "{\"command\":\"resweep\",\"args\":{\"heavy\":true}}\n"), nullptr,
                         false);
    EXPECT_TRUE(r.is_object() && r["ok"].get<bool>()) << r.dump();
    return r.is_object() && r["ok"].get<bool>() ? r["result"]["sweep"]["duration_ms"].get<double>() : 0.0;
  };
  std::vector<double> quiet, busy;
  for (int i = 0; i < 5; ++i) quiet.push_back(heavySweep());
  std::atomic<size_t> answered{0}, wrong{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 50; ++t)
    readers.emplace_back([&, t] {
      for (int k = 0; k < 20; ++k) {
        json r =
            json::parse(rawRequest(d.sock, t % 2 ? "{\"command\":\"lids\"}\n" : "{\"command\":\"status\"}\n"),
                        nullptr, false);
        bool ok =
            r.is_object() && r["ok"].get<bool>() && (t % 2 == 0 || r["result"]["lids"].size() == kEndports);
        ok ? ++answered : ++wrong;
      }
    });
  while (answered + wrong < 1000 && busy.size() < 20) busy.push_back(heavySweep());
  for (auto& t : readers) t.join();
  EXPECT_EQ(answered.load(), 1000u);
  EXPECT_EQ(wrong.load(), 0u);
  double quietMs = median(quiet), busyMs = median(busy);
  std::printf("heavy sweep median: %.1f ms alone, %.1f ms with 50 readers (%zu sweeps)\n", quietMs, busyMs,
              busy.size());
  RecordProperty("sweep_alone_ms", std::to_string(quietMs));
  RecordProperty("sweep_with_readers_ms", std::to_string(busyMs));
  EXPECT_LT(busyMs, 3 * quietMs + 200) << "sweeps alone: " << quietMs << " ms";

  // Reads are answered while a sweep runs (they see "sweeping": true and the previous snapshot), not after
  // it.
  size_t duringSweep = 0, reads = 0;
  double slowestMs = 0;
  for (int attempt = 0; attempt < 5 && duringSweep == 0; ++attempt) {
    pid_t sweeper = d.sim->spawn({binPath("ibsmctl"), "--socket", d.sock, "resweep", "--heavy"}, o);
    while (d.sim->running(sweeper)) {
      auto t = std::chrono::steady_clock::now();
      json st = json::parse(rawRequest(d.sock, "{\"command\":\"status\"}\n"), nullptr, false);
      json ls = json::parse(rawRequest(d.sock, "{\"command\":\"lids\"}\n"), nullptr, false);
      slowestMs = std::max(
          slowestMs, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count());
      ASSERT_TRUE(st.is_object() && ls.is_object());
      ++reads;
      if (st["result"]["sweeping"].get<bool>()) {
        ++duringSweep;
        EXPECT_EQ(ls["result"]["lids"].size(), kEndports);
      }
    }
    EXPECT_EQ(d.sim->wait(sweeper, 60s).exitCode, 0);
  }
  std::printf("%zu of %zu status+lids reads were answered during a heavy sweep; slowest pair %.1f ms\n",
              duringSweep, reads, slowestMs);
  EXPECT_GT(duringSweep, 0u);
  EXPECT_TRUE(d.sim->running(d.sm));
}

TEST(Ibsmd, SighupReloadKeepsTheOldConfigOnErrorAndAppliesAGoodOne) {
  auto sim = startFabric("--kary-ntree 2,2");
  std::string cfg = sim->dir() + "/ibsm.yaml", sock = sim->dir() + "/ibsm.sock";
  writeFile(cfg, "log:\n  level: info\nrouting:\n  engines: [ftree, minhop]\n");
  pid_t sm = sim->spawn({binPath("ibsmd"), "--config", cfg, "--state-dir", sim->dir() + "/state", "--socket",
                         sock, "--sweep-interval", "0"});
  RunOptions plain;
  plain.preload = false;
  auto status = [&] {
    RunResult r = sim->run({binPath("ibsmctl"), "--socket", sock, "--json", "status"}, plain);
    json j = r.exitCode == 0 ? json::parse(r.out, nullptr, false) : json();
    return j.is_object() ? j : json::object();
  };
  EXPECT_TRUE(waitUntil([&] { return status().value("subnet_up", false); }, 30s, "SUBNET UP"))
      << sim->output(sm);
  EXPECT_EQ(status()["routing"]["engine"], "ftree");
  // A broken file: refused with the reason, the running config stays.
  writeFile(cfg, "log:\n  level: loud\n");
  ASSERT_EQ(::kill(sm, SIGHUP), 0);
  EXPECT_TRUE(sim->waitForOutput(sm, "CFG002", 30s)) << sim->output(sm);
  EXPECT_NE(sim->output(sm).find("log.level"), std::string::npos) << sim->output(sm);
  EXPECT_EQ(status()["log_level"], "info");
  EXPECT_TRUE(sim->running(sm));
  // A good one: the log level at once, a new engine chain by a new sweep.
  writeFile(cfg, "log:\n  level: debug\nrouting:\n  engines: [minhop]\n");
  ASSERT_EQ(::kill(sm, SIGHUP), 0);
  EXPECT_TRUE(waitUntil([&] { return status()["routing"].value("engine", "") == "minhop"; }, 30s,
                        "the minhop routes"))
      << sim->output(sm);
  json st = status();
  EXPECT_EQ(st["log_level"], "debug");
  EXPECT_EQ(st["last_sweep"]["cause"], "reload");
  EXPECT_TRUE(st["subnet_up"].get<bool>());
  RunResult ev = sim->run({binPath("ibsmctl"), "--socket", sock, "events", "--kind", "config"}, plain);
  EXPECT_NE(ev.out.find("reload refused"), std::string::npos) << ev.out;
  EXPECT_NE(ev.out.find("routing.engines"), std::string::npos) << ev.out;
  // dumps.lfts: on_request by default, so no LFT dump yet; switched to on_change it is written at once for
  // the current routes (no change needed), exactly what `ibsmctl dump lfts` writes for them.
  const std::string lfts = sim->dir() + "/state/opensm-lfts.dump";
  EXPECT_FALSE(std::filesystem::exists(lfts));
  writeFile(cfg, "log:\n  level: debug\nrouting:\n  engines: [minhop]\ndumps:\n  lfts: on_change\n");
  ASSERT_EQ(::kill(sm, SIGHUP), 0);
  EXPECT_TRUE(
      waitUntil([&] { return std::filesystem::exists(lfts); }, 30s, "opensm-lfts.dump after the reload"))
      << sim->output(sm);
  std::string onChange = readFile(lfts);
  EXPECT_NE(onChange.find("Unicast lids"), std::string::npos) << onChange;
  RunResult dump = sim->run({binPath("ibsmctl"), "--socket", sock, "dump", "lfts"}, plain);
  EXPECT_EQ(dump.exitCode, 0) << dump.err;
  EXPECT_EQ(dump.out, lfts + "\n");
  EXPECT_EQ(readFile(lfts), onChange);
  EXPECT_EQ(sim->stop(sm).exitCode, 0);
}

class NotifySocket {
 public:
  explicit NotifySocket(const std::string& path) : path_(path) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  }
  ~NotifySocket() { ::close(fd_); }
  std::string next(std::chrono::milliseconds timeout) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return "";
    char buf[4096];
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  }

 private:
  std::string path_;
  int fd_ = -1;
};

TEST(Ibsmd, NotifiesReadyOnlyAfterSubnetUpThenWatchdog) {
  auto sim = startFabric("--kary-ntree 2,2");
  NotifySocket notify(sim->dir() + "/notify.sock");
  // LFT Sets (attribute 0x19) to the other three switches are lost: the first sweep cannot bring the subnet
  // up.
  auto lftErrors = [&](int rate) {
    for (const char* sw : {"S-0000000000200001", "S-0000000000200002", "S-0000000000200003"})
      for (int p = 1; p <= 4; ++p)
        sim->console(std::string("Error \"") + sw + "\"[" + std::to_string(p) + "] " + std::to_string(rate) +
                     " 25");
  };
  lftErrors(100);
  std::string sock = sim->dir() + "/ibsm.sock";
  RunOptions o;
  o.env = {{"NOTIFY_SOCKET", sim->dir() + "/notify.sock"}, {"WATCHDOG_USEC", "400000"}};
  pid_t sm = sim->spawn({binPath("ibsmd"), "--state-dir", sim->dir() + "/state", "--socket", sock,
                         "--sweep-interval", "0", "--mad-timeout-ms", "20", "--mad-retries", "1"},
                        o);
  RunOptions plain;
  plain.preload = false;
  auto status = [&] {
    RunResult r = sim->run({binPath("ibsmctl"), "--socket", sock, "--json", "status"}, plain);
    return r.exitCode == 0 ? json::parse(r.out, nullptr, false) : json();
  };
  // Until the subnet is up: STATUS= and WATCHDOG=1, never READY=1.
  std::vector<std::string> before;
  ASSERT_TRUE(waitUntil(
      [&] {
        std::string m = notify.next(1000ms);  // blocks: no sleep in between
        if (m.empty()) return false;
        before.push_back(m);
        return m.find("SUBNET NOT UP") != std::string::npos;
      },
      60s, "a STATUS= with SUBNET NOT UP", 0ms))
      << sim->output(sm);
  for (const auto& m : before) EXPECT_EQ(m.find("READY=1"), std::string::npos) << m;
  json st = status();
  ASSERT_TRUE(st.is_object());
  EXPECT_FALSE(st["subnet_up"].get<bool>());
  // Repair the fabric and sweep again: now READY=1, with the status line, and WATCHDOG=1 after it.
  lftErrors(0);
  // ibsim reads its console asynchronously: sweep until the repair is seen (bounded).
  RunResult resweep;
  for (int i = 0; i < 10 && resweep.exitCode != 0; ++i)
    resweep = sim->run({binPath("ibsmctl"), "--socket", sock, "resweep"}, plain);
  EXPECT_EQ(resweep.exitCode, 0) << resweep.out << resweep.err;
  std::string ready;
  size_t watchdogsAfter = 0;
  // The checks below say what was missing.
  (void)waitUntil(
      [&] {
        std::string m = notify.next(1000ms);  // blocks: no sleep in between
        if (m.find("READY=1") != std::string::npos) {
          EXPECT_TRUE(ready.empty()) << "READY=1 twice";
          ready = m;
        } else if (!ready.empty() && m == "WATCHDOG=1") {
          ++watchdogsAfter;
        }
        return watchdogsAfter >= 2;
      },
      30s, "READY=1, then two WATCHDOG=1", 0ms);
  ASSERT_FALSE(ready.empty()) << sim->output(sm);
  EXPECT_NE(ready.find("STATUS=MASTER, SUBNET UP"), std::string::npos) << ready;
  EXPECT_EQ(watchdogsAfter, 2u);
  st = status();
  EXPECT_TRUE(st["subnet_up"].get<bool>());
  RunResult stopped = sim->stop(sm);
  EXPECT_EQ(stopped.exitCode, 0) << stopped.err;
  bool stopping = false;
  for (std::string m = notify.next(2000ms); !m.empty() && !stopping; m = notify.next(2000ms))
    stopping = m.find("STOPPING=1") != std::string::npos;
  EXPECT_TRUE(stopping);
}

}  // namespace
}  // namespace ibsm::testing
