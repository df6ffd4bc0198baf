// Configuration of the SM daemon ibsmd, as validated values with their defaults. A Config is built once by
// the loader (config_loader.h) and then published as std::shared_ptr<const Config>: nothing changes it
// afterwards; a reload builds a new one. This header is free of yaml-cpp on purpose.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "fabric/ids.h"
#include "fabric/partition.h"

namespace ibsm::config {

using fabric::Guid;

inline constexpr std::string_view kDefaultConfigPath = "/etc/ibsm/ibsm.yaml";

// routing.threads: at most this many; by default the online cores (at least 1).
inline constexpr unsigned kMaxRoutingThreads = 1024;
inline unsigned defaultRoutingThreads() {
  return std::clamp(std::thread::hardware_concurrency(), 1u, kMaxRoutingThreads);
}

enum class LogLevel { kError, kWarn, kInfo, kDebug };
std::string_view toString(LogLevel level);  // "error", "warn", "info", "debug"

struct RoutingConfig {
  // Engine names ("minhop", "updn", "ftree", "dfsp", "dor") tried in order; never empty, no duplicates. An
  // element may name alternatives, "dor|dfsp": each is computed and the lowest max link load wins.
  // The default: ftree on fat trees; otherwise the better of dor and dfsp that is deadlock-free within the
  // VLs the fabric offers (lowest max link load, then fewer VLs); then updn, then minhop.
  std::vector<std::string> engines{"ftree", "dfly", "dor|dfsp", "updn", "minhop"};
  // Root switch node GUIDs for updn/ftree; empty = auto-detect. When rootsFile is set, loadConfigFile fills
  // this from the file (parseConfig does no I/O and leaves it empty).
  std::vector<Guid> roots;
  std::optional<std::string> rootsFile;  // exclusive with a non-default `roots`
  uint8_t lmc = 0;                       // 0..7: 2^lmc LIDs per port
  // Workers for routing, route checks and link loads; the results are the same for any number.
  unsigned threads = defaultRoutingThreads();
  // After a repair: move single routes off the most loaded links (incremental), route from scratch (full),
  // or leave the repaired routes (off); a rebalance lowering the max link load by less than
  // rebalanceMinGainPct percent writes nothing.
  enum class Rebalance { kOff, kIncremental, kFull };
  Rebalance rebalance = Rebalance::kIncremental;
  uint32_t rebalanceMinGainPct = 1;
  // dfly: also route through third groups (non-minimal, on 3 VLs; needs 4 offered), for collective traffic
  // (routing/dfly_engine.cc). With 2 or 3 VLs dfly stays minimal.
  bool dflySpread = false;
  bool operator==(const RoutingConfig&) const = default;
};

struct SweepConfig {
  uint32_t intervalS = 10;  // light sweep period; 0 = only sweep on traps and requests
  bool operator==(const SweepConfig&) const = default;
};

struct SmConfig {
  uint8_t priority = 0;  // 0..15, SMInfo priority
  uint64_t key = 0;      // SM_Key
  uint64_t saKey = 1;    // SA_Key: SA requests carrying it are trusted (OpenSM's sa_key and its default)
  // Standby: how often to poll the master, and unanswered polls before taking over. Each poll waits at most
  // one interval for its answer, so a dead master is noticed within (pollRetries + 1) * pollIntervalMs:
  // 800 ms with the defaults (IBA 14.4.1 leaves both to the SM; the target is 1 s).
  uint32_t pollIntervalMs = 200;
  uint32_t pollRetries = 3;
  // M_Key protection of the managed ports (IBA 14.2.4): one key for the whole subnet, 0 = off. With
  // mKeyRandom the key is generated once and kept in <state_dir>/mkey (mKey stays 0 here; the daemon resolves
  // it).
  uint64_t mKey = 0;
  bool mKeyRandom = false;
  uint8_t mKeyProtectBits = 0;  // 0..3: PortInfo MKeyProtectBits
  uint16_t mKeyLeaseS = 0;      // PortInfo MKeyLeasePeriod in seconds, 0 = never expires
  bool operator==(const SmConfig&) const = default;
};

struct MadConfig {
  uint32_t window = 32;      // MADs in flight
  uint32_t timeoutMs = 100;  // per attempt
  uint32_t retries = 7;      // resends after the first attempt (config/ibsm.yaml.example says why 7)
  bool operator==(const MadConfig&) const = default;
};

struct PathsConfig {
  // Absolute paths. guid2lid and dumpDir default to places inside stateDir, whatever stateDir is.
  std::string stateDir = "/var/lib/ibsm";
  std::string guid2lid = "/var/lib/ibsm/guid2lid";
  std::string dumpDir = "/var/lib/ibsm";
  // OpenSM's partitions.conf, read as it is (config/partitions_conf.h); relative to the config file. When
  // set, loadConfigFile reads it into Config::partitionsFile (parseConfig does no I/O).
  std::optional<std::string> partitionsConf;
  bool operator==(const PathsConfig&) const = default;
};

struct LogConfig {
  LogLevel level = LogLevel::kInfo;
  bool operator==(const LogConfig&) const = default;
};

struct ControlConfig {
  std::string socket = "/run/ibsm/ibsm.sock";
  std::optional<std::string> group;  // members may change state; none = root only
  bool operator==(const ControlConfig&) const = default;
};

// The Prometheus endpoint (GET /metrics): "ADDR:PORT" with an IPv4 address, e.g. "127.0.0.1:9464" (port 0:
// any free port, logged); empty = off.
struct MetricsConfig {
  std::string listen;
  bool operator==(const MetricsConfig&) const = default;
};

struct ArConfig {
  bool enable = true;        // compute and program adaptive-routing groups
  uint32_t groupCap = 2048;  // 1..4096 AR groups per switch
  bool operator==(const ArConfig&) const = default;
};

// Virtual lanes (issue 15's VL layer). Engines such as dfsp keep their routes deadlock-free by spreading
// paths over VL layers; they may use at most `vls` data VLs (and never more than every link offers), and the
// SM then programs the SL-to-VL and VL arbitration tables where the paths need them. 1 uses VL 0 only and
// programs none; the default, auto, is what every link offers (VLCap), at most kAutoVls.
struct QosConfig {
  static constexpr uint32_t kAuto = 0;
  static constexpr uint32_t kAutoVls = 8;
  uint32_t vls = kAuto;       // kAuto or 1..15
  uint32_t vlArbWeight = 64;  // 1..255: low-priority VL arbitration weight of every used VL
  bool operator==(const QosConfig&) const = default;
};

struct FlapConfig {
  uint32_t holdDownMs = 2000;     // a port that went down stays out of routing at least this long
  uint32_t maxBackoffMs = 60000;  // cap of the doubling hold-down of a flapping port; >= holdDownMs
  bool operator==(const FlapConfig&) const = default;
};

struct PerfMgrConfig {
  uint32_t intervalS = 60;  // seconds between counter sweeps; 0 = no counter sweeps
  bool operator==(const PerfMgrConfig&) const = default;
};

enum class HealthAction { kReport, kIsolate };
std::string_view toString(HealthAction action);  // "report", "isolate"

// The error counters the health policy may watch, by their config names (as infiniband_exporter names
// them, without the _total), in PortCounters order, with their default thresholds in increases per minute
// (0: not watched).
struct ThresholdDefault {
  std::string_view name;
  uint32_t perMinute;
};
inline constexpr ThresholdDefault kHealthCounters[] = {
    {"symbol_error", 10},
    {"link_error_recovery", 2},
    {"link_downed", 2},
    {"port_rcv_errors", 10},
    {"port_rcv_remote_physical_errors", 10},
    {"port_rcv_switch_relay_errors", 0},
    {"port_xmit_discards", 100},
    {"port_xmit_constraint_errors", 0},
    {"port_rcv_constraint_errors", 0},
    {"local_link_integrity_errors", 2},
    {"excessive_buffer_overrun_errors", 2},
    {"vl15_dropped", 0},
    {"port_xmit_wait", 0},
};
inline constexpr size_t kHealthCounterCount = sizeof kHealthCounters / sizeof kHealthCounters[0];

struct HealthConfig {
  HealthAction action = HealthAction::kReport;
  std::vector<uint32_t> thresholds = [] {  // per kHealthCounters entry, increases per minute
    std::vector<uint32_t> t;
    for (const auto& c : kHealthCounters) t.push_back(c.perMinute);
    return t;
  }();
  uint32_t startThreshold = 1000;  // counts found at the first read past it isolate; 0: never
  uint32_t maxIsolated = 8;
  uint32_t cleanPeriodS = 600;
  bool operator==(const HealthConfig&) const = default;
};

// When opensm-lfts.dump (every switch's LFT) is written. It grows with switches x LIDs: 1.58 GB on an
// 11,664-host Clos, so by default only when asked for (ibsmctl dump lfts); OpenSM does not write it by
// default either. The other dumps are small and always follow the fabric.
enum class LftDumps { kOnRequest, kOnChange };
std::string_view toString(LftDumps when);  // "on_request", "on_change"

struct DumpsConfig {
  LftDumps lfts = LftDumps::kOnRequest;
  bool operator==(const DumpsConfig&) const = default;
};

struct Config {
  std::optional<Guid> portGuid;  // local port to bind; none = first active port
  RoutingConfig routing;
  SweepConfig sweep;
  SmConfig sm;
  MadConfig mad;
  PathsConfig paths;
  DumpsConfig dumps;
  LogConfig log;
  ControlConfig control;
  MetricsConfig metrics;
  ArConfig ar;
  QosConfig qos;
  FlapConfig flap;
  PerfMgrConfig perfmgr;
  HealthConfig health;
  // Partitions: the YAML `partitions` list, then those of paths.partitions_conf (each names where it was
  // defined). Without any, every endport is a full member of the default partition 0x7fff.
  std::vector<fabric::Partition> partitions;
  std::vector<fabric::Partition> partitionsFile;
  std::vector<fabric::Partition> allPartitions() const {
    std::vector<fabric::Partition> all = partitions;
    all.insert(all.end(), partitionsFile.begin(), partitionsFile.end());
    return all;
  }
  bool operator==(const Config&) const = default;
};

}  // namespace ibsm::config
