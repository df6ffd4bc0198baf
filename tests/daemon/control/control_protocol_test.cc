// The control protocol as pure functions: request parsing (malformed, oversized, unknown), the access rule,
// node names, and the read-only answers on a small routed fabric (tests/daemon/control/control_fixture.h).
#include "daemon/control/control_protocol.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "tests/daemon/control/control_fixture.h"

namespace ibsm::daemon {
namespace {

using testing::makeSnapshot;

RequestError parseError(std::string_view line) {
  auto r = parseRequest(line);
  EXPECT_TRUE(std::holds_alternative<RequestError>(r)) << line;
  return std::holds_alternative<RequestError>(r) ? std::get<RequestError>(r) : RequestError{};
}

TEST(ControlProtocolParse, AcceptsAWellFormedRequest) {
  auto r = parseRequest(R"({"id": 7, "command": "routes", "args": {"switch": "leafA", "lid": 3}})");
  ASSERT_TRUE(std::holds_alternative<Request>(r));
  const Request& req = std::get<Request>(r);
  EXPECT_EQ(req.id, 7);
  EXPECT_EQ(req.command, "routes");
  EXPECT_EQ(req.args["switch"], "leafA");
  auto bare = parseRequest(R"({"command":"status"})");
  ASSERT_TRUE(std::holds_alternative<Request>(bare));
  EXPECT_TRUE(std::get<Request>(bare).id.is_null());
  EXPECT_TRUE(std::get<Request>(bare).args.is_object());
  auto dump = parseRequest(R"({"id": 8, "command": "dump", "args": {"file": "lfts"}})");
  ASSERT_TRUE(std::holds_alternative<Request>(dump));
  EXPECT_EQ(std::get<Request>(dump).args["file"], "lfts");
  EXPECT_EQ(parseError(R"({"command": "dump", "args": {"what": "lfts"}})").message,
            "dump: unknown argument 'what'");
}

TEST(ControlProtocolParse, RejectsMalformedRequestsWithTheReason) {
  EXPECT_EQ(parseError("status").code, ErrorCode::kBadRequest);
  EXPECT_EQ(parseError("{\"command\": \"status\"").code, ErrorCode::kBadRequest);
  EXPECT_EQ(parseError("[\"status\"]").message, "request must be a JSON object");
  EXPECT_EQ(parseError("{}").message, "'command' must be a non-empty string");
  EXPECT_EQ(parseError(R"({"command": 5})").code, ErrorCode::kBadRequest);
  EXPECT_EQ(parseError(R"({"command": "status", "args": [1]})").message, "'args' must be an object");
  EXPECT_EQ(parseError(R"({"command": "status", "verbose": true})").message, "unknown field 'verbose'");
  EXPECT_EQ(parseError(R"({"id": {"a": 1}, "command": "status"})").code, ErrorCode::kBadRequest);
  auto unknownArg = parseError(R"({"id": 3, "command": "routes", "args": {"switch": "x", "bogus": 1}})");
  EXPECT_EQ(unknownArg.message, "routes: unknown argument 'bogus'");
  EXPECT_EQ(unknownArg.id, 3);  // echoed once known
  EXPECT_EQ(parseError(std::string("{\"command\":\"st\xff\xfe\"}")).code, ErrorCode::kBadRequest);
  EXPECT_EQ(parseError(std::string("\0\0\0", 3)).code, ErrorCode::kBadRequest);
}

TEST(ControlProtocolParse, UnknownCommandIsItsOwnError) {
  RequestError e = parseError(R"({"id": "a", "command": "frobnicate"})");
  EXPECT_EQ(e.code, ErrorCode::kUnknownCommand);
  EXPECT_EQ(e.message, "unknown command 'frobnicate'");
  EXPECT_EQ(e.id, "a");
  // Control characters in echoed text are neutralised and long text is cut.
  RequestError long_ = parseError("{\"command\": \"" + std::string(500, 'x') + "\\n\"}");
  EXPECT_LT(long_.message.size(), 80u);
}

TEST(ControlProtocolParse, OversizedAndDeeplyNestedRequestsAreRefused) {
  std::string big = R"({"command": "status", "id": ")" + std::string(kMaxRequestBytes, 'a') + "\"}";
  EXPECT_EQ(parseError(big).code, ErrorCode::kTooLarge);
  std::string deep =
      R"({"command": "status", "args": {"x": )" + std::string(1000, '[') + std::string(1000, ']') + "}}";
  EXPECT_EQ(parseError(deep).code, ErrorCode::kBadRequest);
  // Brackets inside strings do not count as nesting.
  auto ok = parseRequest(R"({"id": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[", "command": "status"})");
  EXPECT_TRUE(std::holds_alternative<Request>(ok));
}

// Whatever the bytes, parseRequest returns (never throws) either a request the handler can rely on (a known
// command, an id that is not an object or array, only that command's arguments; sent again it parses the
// same) or an error a response can be made of (a request-level code, a short message without control
// characters, an id that is not an object or array; the response is one line of JSON).
TEST(ControlProtocolParse, RandomBytesNeverThrow) {
  std::mt19937 rng(1);
  const std::string seed = R"({"id": 1, "command": "path", "args": {"src": "h0", "dst": 5}})";
  size_t requests = 0, errors = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string s = seed;
    int edits = 1 + static_cast<int>(rng() % 8);
    for (int e = 0; e < edits; ++e) s[rng() % s.size()] = static_cast<char>(rng() % 256);
    SCOPED_TRACE(::testing::PrintToString(s));
    std::variant<Request, RequestError> r;
    ASSERT_NO_THROW(r = parseRequest(s));
    if (const Request* req = std::get_if<Request>(&r)) {
      ++requests;
      const CommandInfo* info = findCommand(req->command);
      ASSERT_NE(info, nullptr) << req->command;
      EXPECT_FALSE(req->id.is_structured()) << req->id.dump();
      ASSERT_TRUE(req->args.is_object()) << req->args.dump();
      for (auto it = req->args.begin(); it != req->args.end(); ++it)
        EXPECT_NE(std::find(info->args.begin(), info->args.end(), it.key()), info->args.end()) << it.key();
      auto again = parseRequest(Json{{"id", req->id}, {"command", req->command}, {"args", req->args}}.dump());
      ASSERT_TRUE(std::holds_alternative<Request>(again));
      EXPECT_EQ(std::get<Request>(again).id, req->id);
      EXPECT_EQ(std::get<Request>(again).command, req->command);
      EXPECT_EQ(std::get<Request>(again).args, req->args);
    } else {
      ++errors;
      const RequestError& e = std::get<RequestError>(r);
      EXPECT_TRUE(e.code == ErrorCode::kBadRequest || e.code == ErrorCode::kUnknownCommand)
          << toString(e.code);  // never too large: the line is far below kMaxRequestBytes
      EXPECT_FALSE(e.message.empty());
      EXPECT_LT(e.message.size(), 80u) << e.message;
      EXPECT_TRUE(std::none_of(e.message.begin(), e.message.end(), [](char c) {
        return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
      })) << e.message;
      EXPECT_FALSE(e.id.is_structured()) << e.id.dump();
      std::string line = toLine(errorResponse(e.id, e.code, e.message));
      EXPECT_EQ(line.find('\n'), line.size() - 1) << line;
      Json back = Json::parse(line, nullptr, false);
      ASSERT_TRUE(back.is_object()) << line;
      EXPECT_FALSE(back["ok"].get<bool>());
      EXPECT_EQ(back["error"]["code"], toString(e.code));
      EXPECT_EQ(back["id"], e.id);
    }
  }
  // The edits left some requests valid and broke others: both paths were taken.
  EXPECT_GT(requests, 0u);
  EXPECT_GT(errors, 0u);
}

TEST(ControlProtocolResponse, LinesAreCompactAndSurviveInvalidUtf8) {
  Json resp = okResponse(4, {{"description", std::string("bad \xff\xfe utf8")}});
  std::string line = toLine(resp);
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  Json back = Json::parse(line);
  EXPECT_EQ(back["id"], 4);
  EXPECT_TRUE(back["ok"].get<bool>());
  Json err = errorResponse(nullptr, ErrorCode::kNotFound, "no node 'x'");
  EXPECT_EQ(err["error"]["code"], "not_found");
  EXPECT_FALSE(err["ok"].get<bool>());
}

TEST(ControlProtocolAccess, RootDaemonUserAndGroupMembersMayChangeState) {
  AccessPolicy rootOnly{1000, std::nullopt};
  EXPECT_TRUE(mayChangeState({0, 0, 1, {}}, rootOnly));
  EXPECT_TRUE(mayChangeState({1000, 1000, 1, {}}, rootOnly));  // the daemon's own user
  EXPECT_FALSE(mayChangeState({65534, 65534, 1, {}}, rootOnly));
  AccessPolicy group{0, gid_t{600}};
  EXPECT_TRUE(mayChangeState({1001, 600, 1, {}}, group));           // primary group
  EXPECT_TRUE(mayChangeState({1001, 100, 1, {5, 600, 7}}, group));  // supplementary
  EXPECT_FALSE(mayChangeState({1001, 100, 1, {5, 7}}, group));
  EXPECT_FALSE(mayChangeState({}, group));  // credentials unknown
  for (const CommandInfo& c : commands()) {
    // dump writes a file that grows with switches x LIDs into paths.dump_dir: only for those who may resweep.
    // partition (add/remove/members) reprograms P_Key tables; partitions (list/show) only reads.
    // health-release routes an isolated link again; health only reads. handover gives mastership away.
    bool changes = c.name == "resweep" || c.name == "reroute" || c.name == "loglevel" || c.name == "dump" ||
                   c.name == "partition" || c.name == "health-release" || c.name == "handover";
    EXPECT_EQ(c.access == Access::kChange, changes) << c.name;
  }
}

TEST(ControlProtocolNames, DescriptionsGuidsAndLidsNameNodes) {
  auto s = makeSnapshot();
  const auto& t = *s->topology;
  auto name = [&](const Json& n) { return resolveNode(t, s->lids, n); };
  ASSERT_TRUE(name("leafA").ok());
  EXPECT_EQ(t.node(*name("leafA")).description, "leafA");
  EXPECT_EQ(t.node(*name("h2 HCA-1")).description, "h2 HCA-1");
  EXPECT_EQ(t.node(*name("h2")).description, "h2 HCA-1");  // first word: the host name
  EXPECT_EQ(*name("0x0000000000005001"), *name("leafB"));
  EXPECT_EQ(*name("0000000000005001"), *name("leafB"));  // 16 hex digits
  EXPECT_EQ(*name("0xca011"), *name("h1"));              // a port GUID names its node
  fabric::Lid h3 = s->lids.base(*name("h3"), fabric::PortNum{1});
  EXPECT_EQ(*name(h3.value), *name("h3"));
  EXPECT_EQ(*name(std::to_string(h3.value)), *name("h3"));
  EXPECT_EQ(name("nosuch").error().message, "no node 'nosuch' (give a node description, GUID or LID)");
  EXPECT_EQ(name("0x1234").error().message, "no node or port has GUID 0x0000000000001234");
  EXPECT_FALSE(name(40000).ok());
  EXPECT_FALSE(name(0).ok());
  EXPECT_FALSE(name(-3).ok());
  EXPECT_FALSE(name(Json::array()).ok());
  EXPECT_FALSE(name("").ok());
  auto ep = resolveEndport(t, s->lids, "h0");
  ASSERT_TRUE(ep.ok());
  EXPECT_EQ(ep->port.value, 1);
  EXPECT_EQ(resolveEndport(t, s->lids, "spine")->port.value, 0);
}

TEST(ControlProtocolNames, AmbiguousNamesListTheCandidates) {
  routing::testing::FabricSketch f;
  auto a = f.addSwitch("sw", 4), b = f.addSwitch("sw", 4);
  f.link(a, b);
  auto topo = f.build();
  routing::LidAssignment lids(*topo);
  auto r = resolveNode(*topo, lids, "sw");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("matches 2 nodes"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("0x0000000000005000"), std::string::npos);
}

class ControlProtocolHandler : public ::testing::Test {
 protected:
  Json ask(const std::string& line) {
    auto parsed = parseRequest(line);
    if (auto* e = std::get_if<RequestError>(&parsed)) return errorResponse(e->id, e->code, e->message);
    return handler.handle(std::get<Request>(parsed), view);
  }
  Json result(const std::string& line) {
    Json r = ask(line);
    EXPECT_TRUE(r["ok"].get<bool>()) << r.dump();
    return r["result"];
  }
  std::string errorCode(const std::string& line) {
    Json r = ask(line);
    EXPECT_FALSE(r["ok"].get<bool>()) << r.dump();
    return r["error"]["code"];
  }
  void SetUp() override {
    snap = makeSnapshot();
    view.snapshot = snap;
    view.portsActivated = true;
    view.status.state = "MASTER";
    view.status.subnetUp = true;
    view.events = &events;
  }
  std::shared_ptr<SubnetSnapshot> snap;
  SystemWallClock wallClock;
  EventLog events{wallClock};
  ControlView view;
  ReadHandler handler;
};

TEST_F(ControlProtocolHandler, BeforeTheFirstSweepOnlyStatusAndEventsAnswer) {
  view.snapshot = nullptr;
  Json st = result(R"({"command":"status"})");
  EXPECT_TRUE(st["fabric"].is_null());
  EXPECT_EQ(errorCode(R"({"command":"nodes"})"), "unavailable");
  EXPECT_TRUE(result(R"({"command":"events"})")["events"].empty());
}

TEST_F(ControlProtocolHandler, StatusCountsTheFabric) {
  Json st = result(R"({"id": 9, "command":"status"})");
  EXPECT_EQ(st["state"], "MASTER");
  EXPECT_EQ(st["role"], "master");
  EXPECT_EQ(st["fabric"]["switches"], 3);
  EXPECT_EQ(st["fabric"]["cas"], 4);
  EXPECT_EQ(st["fabric"]["links"], 6);
  EXPECT_EQ(st["fabric"]["endports_with_lid"], 7);
  EXPECT_EQ(st["routing"]["engine"], "minhop");
  EXPECT_EQ(st["traps"]["received"], 0);
  EXPECT_EQ(ask(R"({"id": 9, "command":"status"})")["id"], 9);
}

TEST_F(ControlProtocolHandler, ListsNodesSwitchesLidsAndLinks) {
  Json nodes = result(R"({"command":"nodes"})")["nodes"];
  EXPECT_EQ(nodes.size(), 7u);
  EXPECT_EQ(result(R"({"command":"nodes","args":{"type":"CA"}})")["nodes"].size(), 4u);
  EXPECT_EQ(errorCode(R"({"command":"nodes","args":{"type":"XX"}})"), "bad_request");
  Json sw = result(R"({"command":"switches"})")["switches"];
  ASSERT_EQ(sw.size(), 3u);
  EXPECT_EQ(sw[0]["description"], "leafA");
  EXPECT_EQ(sw[0]["linked_ports"], 3);
  Json lids = result(R"({"command":"lids"})")["lids"];
  ASSERT_EQ(lids.size(), 7u);
  for (size_t i = 1; i < lids.size(); ++i) EXPECT_LT(lids[i - 1]["lid"], lids[i]["lid"]);
  size_t cas = 0;
  for (const auto& l : lids) cas += l["type"] == "CA";
  EXPECT_EQ(cas, 4u);
  Json links = result(R"({"command":"links"})")["links"];
  ASSERT_EQ(links.size(), 6u);
  EXPECT_EQ(links[0]["width"], "4x");
  EXPECT_EQ(links[0]["speed"], "QDR");
  EXPECT_EQ(links[0]["state"], "ACTIVE");  // INIT as discovered, ACTIVE after a sweep that brought it up
  view.portsActivated = false;
  EXPECT_EQ(result(R"({"command":"links"})")["links"][0]["state"], "INIT");
}

TEST_F(ControlProtocolHandler, RoutesOfASwitchFollowItsLft) {
  Json r = result(R"({"command":"routes","args":{"switch":"leafA"}})");
  EXPECT_EQ(r["switch"]["description"], "leafA");
  EXPECT_EQ(r["routes"].size(), 7u);
  const auto& t = *snap->topology;
  for (const auto& e : r["routes"]) {
    fabric::Lid lid{e["lid"].get<uint16_t>()};
    EXPECT_EQ(e["port"], snap->tables.port(0, lid));
    EXPECT_FALSE(e["destination"].is_null());
  }
  Json one = result(R"({"command":"routes","args":{"switch":"leafA","lid":"h3"}})");
  ASSERT_EQ(one["routes"].size(), 1u);
  EXPECT_EQ(one["routes"][0]["port"], 3);  // up to the spine
  EXPECT_EQ(one["routes"][0]["destination"]["description"], "h3 HCA-1");
  EXPECT_EQ(errorCode(R"({"command":"routes","args":{"switch":"h0"}})"), "not_found");
  EXPECT_EQ(errorCode(R"({"command":"routes","args":{}})"), "bad_request");
  EXPECT_EQ(errorCode(R"({"command":"routes","args":{"switch":"leafA","lid":70000}})"), "bad_request");
  (void)t;
}

TEST_F(ControlProtocolHandler, PathWalksHopByHop) {
  Json p = result(R"({"command":"path","args":{"src":"h0","dst":"h3"}})");
  EXPECT_TRUE(p["reached"].get<bool>()) << p.dump();
  ASSERT_EQ(p["hops"].size(), 3u);
  EXPECT_EQ(p["hops"][0]["switch"]["description"], "leafA");
  EXPECT_EQ(p["hops"][0]["in_port"], 1);
  EXPECT_EQ(p["hops"][0]["out_port"], 3);
  EXPECT_EQ(p["hops"][1]["switch"]["description"], "spine");
  EXPECT_EQ(p["hops"][2]["switch"]["description"], "leafB");
  EXPECT_EQ(p["hops"][2]["out_port"], 2);
  EXPECT_EQ(p["destination"]["description"], "h3 HCA-1");
  // To a switch: delivered at port 0.
  Json toSwitch = result(R"({"command":"path","args":{"src":"h0","dst":"leafB"}})");
  EXPECT_TRUE(toSwitch["reached"].get<bool>());
  EXPECT_EQ(toSwitch["hops"].back()["out_port"], 0);
}

TEST_F(ControlProtocolHandler, PathReportsBrokenRoutes) {
  auto broken = std::make_shared<SubnetSnapshot>(*snap);
  fabric::Lid h3 = broken->lids.base(6, fabric::PortNum{1});
  broken->tables.lft[2][h3.value] = routing::kNoPort;  // the spine forgets h3
  view.snapshot = broken;
  Json p = result(R"({"command":"path","args":{"src":"h0","dst":"h3"}})");
  EXPECT_FALSE(p["reached"].get<bool>());
  EXPECT_EQ(p["problem"], "spine has no route to LID " + std::to_string(h3.value));
  // A loop: the spine sends h3's traffic back down to leafA.
  broken->tables.lft[2][h3.value] = 1;
  Json loop = result(R"({"command":"path","args":{"src":"h0","dst":"h3"}})");
  EXPECT_FALSE(loop["reached"].get<bool>());
  EXPECT_EQ(loop["problem"], "loop: the route returns to leafA");
  EXPECT_EQ(errorCode(R"({"command":"path","args":{"src":"h0"}})"), "bad_request");
  EXPECT_EQ(errorCode(R"({"command":"path","args":{"src":"h0","dst":"nosuch"}})"), "not_found");
}

TEST_F(ControlProtocolHandler, ArGroupsEventsCheckAndTopology) {
  Json ar = result(R"({"command":"ar","args":{"switch":"leafA"}})");
  EXPECT_EQ(ar["enabled"], !snap->tables.ar.empty());
  events.add("sweep", "sweep 1 (start): SUBNET UP", {{"cause", "start"}});
  events.add("config", "reloaded");
  Json ev = result(R"({"command":"events"})");
  ASSERT_EQ(ev["events"].size(), 2u);
  EXPECT_EQ(ev["events"][0]["fields"]["cause"], "start");
  EXPECT_EQ(result(R"({"command":"events","args":{"since":1}})")["events"].size(), 1u);
  EXPECT_EQ(result(R"({"command":"events","args":{"kind":"config"}})")["events"][0]["message"], "reloaded");
  EXPECT_EQ(errorCode(R"({"command":"events","args":{"limit":-1}})"), "bad_request");
  Json check = result(R"({"command":"check"})");
  EXPECT_TRUE(check["ok"].get<bool>()) << check["text"];
  EXPECT_EQ(check["report"]["unreachable"], 0);
  Json dot = result(R"({"command":"topology","args":{"format":"dot"}})");
  std::string text = dot["text"];
  EXPECT_EQ(text.rfind("graph ibsm {", 0), 0u);
  EXPECT_NE(text.find("\"0x0000000000005000\" -- \"0x00000000000ca000\""), std::string::npos) << text;
  EXPECT_NE(result(R"({"command":"topology"})")["text"].get<std::string>().find("leafA"), std::string::npos);
  EXPECT_EQ(errorCode(R"({"command":"topology","args":{"format":"png"}})"), "bad_request");
}

TEST(ControlProtocolLoads, EveryRouteIsCountedOnEachLinkItCrosses) {
  auto s = makeSnapshot();
  auto loads = linkLoads(*s);
  // Each CA port sends to the 6 other endport LIDs (3 CAs and 3 switches).
  for (fabric::NodeIndex ca : s->topology->cas()) EXPECT_EQ(loads[ca][1], 6u);
  // leafA -> spine carries h0 and h1 to leafB, spine, h2 and h3: 2 sources x 4 destinations.
  EXPECT_EQ(loads[0][3], 8u);
  // leafA -> h0 carries every other CA's route to h0: 3.
  EXPECT_EQ(loads[0][1], 3u);
}

TEST(ControlProtocolChanges, RouteChangesAreCountedPerLftEntry) {
  auto a = makeSnapshot();
  EXPECT_EQ(countRouteChanges(a.get(), *a), 0u);
  size_t all = countRouteChanges(nullptr, *a);
  EXPECT_EQ(all, 3u * 7u);  // every switch has an entry for every LID
  auto b = std::make_shared<SubnetSnapshot>(*a);
  b->tables.lft[0][5] = b->tables.lft[0][5] == 1 ? 2 : 1;
  b->tables.lft[1][2] = routing::kNoPort;
  EXPECT_EQ(countRouteChanges(a.get(), *b), 2u);
}

// `health`: isolated ports first, then warnings; ok ports only with all; rates null before a second read.
TEST(ControlProtocolHealth, PortsByStateWithTheirCounters) {
  HealthSnapshot h;
  h.sweeps = 3;
  h.gmps = 12;
  h.action = "isolate";
  h.maxIsolated = 8;
  auto port = [](uint64_t node, uint8_t p, PortHealthState st, const char* desc) {
    PortHealth x;
    x.node = fabric::Guid{node};
    x.port = p;
    x.state = st;
    x.description = desc;
    return x;
  };
  h.ports.push_back(port(1, 1, PortHealthState::kOk, "sw-a"));
  h.ports.push_back(port(2, 3, PortHealthState::kWarning, "sw-b"));
  PortHealth iso = port(3, 4, PortHealthState::kIsolated, "spine-1");
  iso.peerNode = fabric::Guid{2};
  iso.peerPort = 6;
  iso.peerDescription = "leaf-3";
  iso.reason = "symbol_error +3000/min (threshold 10.0/min)";
  iso.errors[static_cast<size_t>(mad::PerfCounter::kSymbolError)] = 1000;
  std::array<double, mad::kPerfCounters> rates{};
  rates[static_cast<size_t>(mad::PerfCounter::kSymbolError)] = 3000;
  iso.errorRates = rates;
  h.ports.push_back(iso);
  h.heldDown.push_back({fabric::Guid{5}, 2, "leaf-9", 1.5});

  Json j = healthJson(h, false);
  EXPECT_EQ(j["counts"], (Json{{"ok", 1}, {"warning", 1}, {"isolated", 1}}));
  ASSERT_EQ(j["ports"].size(), 2u);
  EXPECT_EQ(j["ports"][0]["state"], "isolated");
  EXPECT_EQ(j["ports"][0]["peer_description"], "leaf-3");
  EXPECT_EQ(j["ports"][0]["peer_port"], 6);
  EXPECT_EQ(j["ports"][0]["errors"]["symbol_error"], 1000);
  EXPECT_EQ(j["ports"][0]["error_rates_per_min"]["symbol_error"], 3000.0);
  EXPECT_EQ(j["ports"][1]["state"], "warning");
  EXPECT_TRUE(j["ports"][1]["error_rates_per_min"].is_null());
  EXPECT_TRUE(j["ports"][1]["peer_guid"].is_null());
  EXPECT_EQ(j["held_down"][0]["description"], "leaf-9");
  EXPECT_EQ(healthJson(h, true)["ports"].size(), 3u);
  EXPECT_EQ(healthJson(h, true)["ports"][2]["state"], "ok");

  ReadHandler rh;
  ControlView v;
  Request r{1, "health", Json::object()};
  EXPECT_EQ(rh.handle(r, v)["error"]["code"], "unavailable");  // no counter sweep yet
  v.health = std::make_shared<HealthSnapshot>(h);
  EXPECT_EQ(rh.handle(r, v)["result"]["counts"]["isolated"], 1);
  r.args = {{"all", "yes"}};
  EXPECT_EQ(rh.handle(r, v)["error"]["code"], "bad_request");
}

}  // namespace
}  // namespace ibsm::daemon
