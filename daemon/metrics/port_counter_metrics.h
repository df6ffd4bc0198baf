// Port counters as Prometheus metrics, with the names and labels of treydock/infiniband_exporter (the
// community exporter that runs perfquery from cron), so that dashboards and alerts written for it work on
// ibsmd's endpoint unchanged:
//   infiniband_switch_port_symbol_error_total{guid="0x...",port="3"}   (switch ports)
//   infiniband_hca_port_symbol_error_total{guid="0x...",port="1"}      (CA ports)
// guid is the node GUID, port the port number. The performance manager (daemon/perf) owns the counters; it
// publishes an immutable PortCounterSnapshot after each counter sweep (loop thread) and the collector serves
// the last one from the exposer's threads. Until a snapshot is published the families are absent.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

#include "fabric/ids.h"

namespace prometheus {
struct MetricFamily;
}

namespace ibsm::daemon {

// The PortCounters / PortCountersExtended fields the exporter publishes, in its order.
enum class PortCounter : uint8_t {
  kXmitData,  // PortXmitData: published x4, in bytes (as the exporter does)
  kRcvData,   // PortRcvData: x4, bytes
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

// Holds the last published snapshot; collect() builds the families from it. publish() and collect() may run
// on different threads.
class PortCounterCollector {
 public:
  void publish(std::shared_ptr<const PortCounterSnapshot> snapshot);
  std::vector<prometheus::MetricFamily> collect() const;

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const PortCounterSnapshot> snapshot_;
};

}  // namespace ibsm::daemon
