// Port counters as Prometheus metrics, with the names and labels of treydock/infiniband_exporter (the
// community exporter that runs perfquery from cron), so that dashboards and alerts written for it work on
// ibsmd's endpoint unchanged:
//   infiniband_switch_port_symbol_error_total{guid="0x...",port="3"}   (switch ports)
//   infiniband_hca_port_symbol_error_total{guid="0x...",port="1"}      (CA ports)
// guid is the node GUID, port the port number. The performance manager (daemon/perf) owns the counters; it
// publishes an immutable PortCounterSnapshot after each counter sweep (SmMetrics::publishPortCounters, loop
// thread) and scrapes format the last one on the exposer's threads. Until one is published the families are
// absent.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fabric/ids.h"

namespace prometheus {
struct MetricFamily;
}

namespace ibsm::daemon {

// The PortCounters / PortCountersExtended fields the exporter publishes, in its order.
enum class PortCounter : uint8_t {
  kXmitData,  // PortXmitData in bytes (the port counts 4-byte words; the totals are kept in bytes, as the
  kRcvData,   // exporter publishes them)
  kXmitPkts,
  kRcvPkts,
  kUnicastXmitPkts,
  kUnicastRcvPkts,
  kMulticastXmitPkts,
  kMulticastRcvPkts,
  kSymbolError,
  kLinkErrorRecovery,
  kLinkDowned,
  kRcvErrors,
  kRcvRemotePhysicalErrors,
  kRcvSwitchRelayErrors,
  kXmitDiscards,
  kXmitConstraintErrors,
  kRcvConstraintErrors,
  kLocalLinkIntegrityErrors,
  kExcessiveBufferOverrunErrors,
  kVl15Dropped,
  kXmitWait,
};
inline constexpr size_t kPortCounterCount = static_cast<size_t>(PortCounter::kXmitWait) + 1;

// "port_symbol_error_total": the name after "infiniband_switch_" / "infiniband_hca_".
std::string_view metricSuffix(PortCounter c);
// "SymbolErrorCounter": the IBA field name (the help text).
std::string_view ibaName(PortCounter c);

// One port's running totals (64-bit, as the performance manager keeps them across read-and-clear).
struct PortCounterRow {
  bool isSwitch = true;  // infiniband_switch_* or infiniband_hca_*
  fabric::Guid guid;     // node GUID
  uint8_t port = 0;
  std::array<std::optional<uint64_t>, kPortCounterCount> values{};  // nullopt: not read (not supported)
  void set(PortCounter c, uint64_t v) { values[static_cast<size_t>(c)] = v; }
};

struct PortCounterSnapshot {
  std::vector<PortCounterRow> rows;
};

// The families of a snapshot (absent counters left out; a family without samples too).
std::vector<prometheus::MetricFamily> portCounterFamilies(const PortCounterSnapshot& snapshot);

// The fabric as infiniband_exporter's "base" metrics describe it, which its dashboards and recording rules
// join the counters with (`* on(guid, port) group_left(...) infiniband_switch_uplink_info`):
//   infiniband_switch_info{guid, switch, lid} 1           infiniband_hca_info{guid, hca, lid} 1
//   infiniband_switch_uplink_info{guid, port, switch, uplink, uplink_guid, uplink_type, uplink_port,
//                                 uplink_lid} 1           (and infiniband_hca_uplink_info with hca)
// The service builds one from each new subnet snapshot; it is formatted only when scraped.
struct FabricInfo {
  struct Node {
    bool isSwitch = true;
    fabric::Guid guid;
    std::string name;  // NodeDescription
    uint16_t lid = 0;  // a switch's port 0 LID, a CA's first connected port's
  };
  struct Link {                 // one direction of a cable: node's port -> peer's peerPort
    size_t node = 0, peer = 0;  // indices into nodes
    uint8_t port = 0, peerPort = 0;
    uint16_t peerLid = 0;
  };
  std::vector<Node> nodes;
  std::vector<Link> links;
};

std::vector<prometheus::MetricFamily> fabricInfoFamilies(const FabricInfo& info);

// The last value published by the loop thread, read by the exposer's threads: an immutable snapshot swapped
// under a mutex (a scrape keeps the one it took).
template <typename T>
class Published {
 public:
  void set(std::shared_ptr<const T> value) {
    std::lock_guard<std::mutex> lock(mutex_);
    value_ = std::move(value);
  }
  std::shared_ptr<const T> get() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return value_;
  }

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const T> value_;
};

}  // namespace ibsm::daemon
