// The control socket's protocol, as pure functions: parsing one request line, building responses, the access
// rule, and answering read-only requests from a published view of the SM (snapshot + status + event log).
// No I/O and no clock here, so all of it is unit-tested and fuzzable; the socket, threads and credentials
// live in control_server.h. Implemented in control_protocol.cc (parsing, responses, access rule),
// node_names.cc (resolveNode, state names), read_handler.cc (ReadHandler) and fabric_dot.cc (linkLoads,
// formatDot). The wire format is described in docs/CONTROL_PROTOCOL.md:
//   request:  {"id": 7, "command": "routes", "args": {"switch": "leaf-0", "lid": 12}}\n
//   response: {"id": 7, "ok": true, "result": {...}}\n   or   {"id": 7, "ok": false, "error": {"code":
//             "not_found", "message": "no node 'leaf-9' (give a node description, GUID or LID)"}}\n
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "daemon/control/event_log.h"
#include "daemon/state/health_snapshot.h"
#include "daemon/state/subnet_snapshot.h"
#include "mad/mad_engine.h"

namespace ibsm::daemon {

using Json = nlohmann::json;

// One request line, newline excluded: a rank file of tens of thousands of hosts (`check`) fits.
inline constexpr size_t kMaxRequestBytes = 1024 * 1024;
inline constexpr int kProtocolVersion = 1;

enum class ErrorCode {
  kBadRequest,  // not JSON, not an object, wrong field types, unknown fields or arguments
  kTooLarge,    // the line exceeded kMaxRequestBytes
  kUnknownCommand,
  kNotFound,          // a node, GUID or LID that the fabric does not have (or a name matching several nodes)
  kPermissionDenied,  // a state-changing request from a peer that is neither root nor in control.group
  kUnavailable,       // no sweep has completed yet, or the daemon is stopping
  kBusy,              // too many clients
  kFailed,            // the request ran but did not succeed (e.g. a resweep whose discovery failed)
  kInternal,
};
const char* toString(ErrorCode code);  // "bad_request", "too_large", ...

struct Request {
  Json id;  // echoed in the response; null when absent
  std::string command;
  Json args = Json::object();
};
struct RequestError {
  ErrorCode code;
  std::string message;
  Json id;  // when the line parsed far enough to have one
};
// Never throws, whatever the bytes.
std::variant<Request, RequestError> parseRequest(std::string_view line);

enum class Access { kRead, kChange };
struct CommandInfo {
  std::string_view name;
  Access access;
  std::vector<std::string_view> args;  // accepted argument names
  std::string_view summary;
};
const std::vector<CommandInfo>& commands();
const CommandInfo* findCommand(std::string_view name);

Json okResponse(const Json& id, Json result);
Json errorResponse(const Json& id, ErrorCode code, std::string_view message);
// One compact line with its newline; bytes that are not UTF-8 (node descriptions are untrusted) are replaced.
std::string toLine(const Json& response);

// Who may change state: root, the daemon's own user, and members of control.group (primary or supplementary
// group of the peer, as SO_PEERCRED / SO_PEERGROUPS report them at connect time).
struct PeerCredentials {
  uid_t uid = static_cast<uid_t>(-1);
  gid_t gid = static_cast<gid_t>(-1);
  pid_t pid = 0;
  std::vector<gid_t> groups;  // supplementary groups
};
struct AccessPolicy {
  uid_t daemonUid = 0;
  std::optional<gid_t> group;  // control.group, resolved
};
bool mayChangeState(const PeerCredentials& peer, const AccessPolicy& policy);

// What one sweep did, for `status`, `events` and the responses of resweep/reroute.
struct SweepSummary {
  uint64_t number = 0;  // sweeps completed, this one included
  std::chrono::system_clock::time_point start;
  double durationMs = 0;
  std::string cause;  // "start", "timer", "resweep", "reroute", "reload", ...
  bool heavy = false;
  bool ok = false;        // the cycle ran to the end (no discovery/routing/LID error)
  bool subnetUp = false;  // and programmed everything
  std::string error;      // when !ok
  size_t smps = 0, timeouts = 0;
  size_t lidsChanged = 0, lftBlocksSent = 0, lftBlocksSkipped = 0, routesChanged = 0;
  size_t programErrors = 0;
  std::string engine;
  std::vector<std::string> fallbacks;
  double discoveryMs = 0, routingMs = 0;
};
Json toJson(const SweepSummary& s);

// The daemon's state as the event loop last published it.
struct StatusInfo {
  std::string state = "DISCOVERING";  // SmState
  uint8_t priority = 0;
  uint64_t sweeps = 0;
  bool sweeping = false;  // a sweep is running now (the snapshot is the previous one)
  std::string sweepCause;
  bool subnetUp = false;
  std::optional<std::chrono::system_clock::time_point> subnetUpSince;
  std::optional<SweepSummary> lastSweep;
  mad::MadCounters mad;
  struct Traps {
    uint64_t received = 0, malformed = 0, duplicates = 0;
    uint64_t badMkey = 0;  // Trap 256 (Bad M_Key)
  } traps;
  struct Ar {
    uint64_t probes = 0;  // AdaptiveRoutingInfo probes sent since start (one per switch lifetime)
    size_t capable = 0, incapable = 0;
  } ar;
  // High availability: the other SMs seen (SMInfo), SMInfo Sets / SM_Key mismatches, polls of the master.
  struct OtherSm {
    fabric::Guid guid;
    uint16_t lid = 0;
    uint8_t priority = 0;
    std::string state;  // as it answered last
    bool answered = false, keyOk = true;
  };
  std::vector<OtherSm> otherSms;
  std::optional<fabric::Guid> master;  // STANDBY: the SM polled
  uint64_t smBadKeys = 0;
  uint64_t saBusy = 0;  // SA requests answered Busy while not master
  uint32_t actCount = 0;
  std::string logLevel = "info";
  std::chrono::system_clock::time_point started;
  int pid = 0;
  std::string configPath;
  uint32_t sweepIntervalS = 0;
};

struct ControlView {
  std::shared_ptr<const SubnetSnapshot> snapshot;  // null before the first sweep
  bool portsActivated = false;                     // the snapshot's sweep brought every linked port to ACTIVE
  StatusInfo status;
  const EventLog* events = nullptr;
  std::shared_ptr<const HealthSnapshot> health;  // null before the first counter sweep
};

// A node named in a request: a NodeDescription (exactly, or its first word, e.g. the host name of
// "node17 HCA-1", when that is unique), a GUID ("0x..." or 16 hex digits; node or port GUID) or a LID (a JSON
// number or decimal digits). Errors say which and why ("no node 'x'", "'x' matches 3 nodes: ...").
struct Endport {
  fabric::NodeIndex node = fabric::kNoNode;
  fabric::PortNum port;  // 0 for a switch
};
fabric::Result<fabric::NodeIndex> resolveNode(const fabric::Topology& topo,
                                              const routing::LidAssignment& lids, const Json& name);
// As resolveNode, then the endport: the port a port GUID or LID names, a switch's port 0, or a CA's first
// linked port that has a LID.
fabric::Result<Endport> resolveEndport(const fabric::Topology& topo, const routing::LidAssignment& lids,
                                       const Json& name);

// A port's link state after the snapshot's sweep: the discovered state, except that a sweep that brought
// every link up (portsActivated) moved linked INIT/ARMED ports to ACTIVE.
fabric::PortState effectivePortState(const fabric::Port& port, bool portsActivated);
const char* portStateName(fabric::PortState state);  // "DOWN", "INIT", "ARMED", "ACTIVE"
const char* physStateName(uint8_t physState);        // "LinkUp", "Polling", ...
const char* nodeTypeName(fabric::NodeType type);     // "SW", "CA", "RT", "?"

// The `health` answer: the ports by state (isolated, warning; ok ones too with all), with the counters and
// rates that put them there, and the ports flap damping holds down.
Json healthJson(const HealthSnapshot& health, bool all);

// Routes (CA port -> endport LID pairs, base LIDs) that cross each egress port: loads[node][port].
std::vector<std::vector<uint64_t>> linkLoads(const SubnetSnapshot& snap);
// Graphviz of the fabric: switches as boxes, CAs as ellipses, each link labelled with its ports and the route
// load in both directions; line width grows with the load.
std::string formatDot(const SubnetSnapshot& snap, const std::vector<std::vector<uint64_t>>& loads);

// Answers read-only requests. Keeps results that are costly to compute (route check, link loads) for the
// snapshot they belong to, so fifty clients asking `check` cost one check. Not thread-safe: one per thread.
class ReadHandler {
 public:
  explicit ReadHandler(unsigned checkThreads = 1) : checkThreads_(checkThreads) {}
  // A complete response (ok or error), never throws.
  Json handle(const Request& request, const ControlView& view);

 private:
  Json dispatch(const Request& request, const ControlView& view);
  Json check(const SubnetSnapshot& snap, const Request& request);
  Json topology(const SubnetSnapshot& snap, const Request& request);
  unsigned checkThreads_;
  const SubnetSnapshot* cachedFor_ = nullptr;
  std::weak_ptr<const SubnetSnapshot> cachedSnap_;
  std::optional<Json> check_;
  std::optional<std::pair<std::string, Json>> pattern_;  // (pattern and rank list, its report)
  std::optional<std::vector<std::vector<uint64_t>>> loads_;
  void resetCacheFor(const std::shared_ptr<const SubnetSnapshot>& snap);
};

}  // namespace ibsm::daemon
