// The SM's Prometheus metrics (ibsm_*) and the port counters' families (infiniband_*), served by
// MetricsEndpoint. The daemon feeds it through narrow calls on the event-loop thread: the Service after each
// sweep and topology event, and the loop's idle pass with the running totals the rooms already keep (MAD
// engine, trap handler, SA server), mirrored as they are. The exposer reads from its own threads:
// prometheus-cpp's counters and gauges are atomic, its families and histograms lock, and the port counters
// are an immutable snapshot behind a mutex. The metric names are an interface (README "Metrics").
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/metrics/port_counter_metrics.h"

namespace ibsm::daemon {

class SmMetrics {
 public:
  enum class SweepKind { kHeavy, kLight };

  // Running totals the daemon keeps; published as they are (a value below the last one is ignored).
  struct MadTotals {
    uint64_t sent = 0, received = 0, responses = 0, timeouts = 0, retries = 0, failed = 0, dropped = 0,
             unexpected = 0, unsolicited = 0, sendErrors = 0;
  };
  struct TrapTotals {
    uint64_t malformed = 0, duplicates = 0;
    std::map<uint16_t, uint64_t> byNumber;  // decoded traps by trap number
    uint64_t otherNumbers = 0;              // numbers past the handler's cap (label trap="other")
  };
  struct SaTotals {
    uint64_t malformed = 0;
    std::map<std::pair<uint16_t, uint16_t>, uint64_t> byAttrStatus;  // (attribute id, MAD status) -> requests
    uint64_t other = 0;  // pairs past the server's cap (labels attribute="other", status="other")
  };

  SmMetrics();
  SmMetrics(const SmMetrics&) = delete;
  SmMetrics& operator=(const SmMetrics&) = delete;

  // ibsm_sm_state (IBA SMInfo state 0..3) and ibsm_sm_role{role}.
  void setState(uint8_t ibaState);
  void setSubnetUp(bool up);
  // ibsm_isolated_ports: ports the health policy keeps out of the routes (daemon/perf sets it).
  void setIsolatedPorts(uint64_t ports);
  // One sweep done: its kind and wall time; routes changed and LFT blocks written by it.
  void sweepDone(SweepKind kind, double seconds, uint64_t routesChanged, uint64_t lftBlocksWritten);
  // A topology event handled (trap, light sweep's PortStateChange, rebalance, ...): from the event to the
  // last changed block acknowledged. trigger is one of the values eventTrigger() returns.
  void topologyEvent(std::string_view trigger, double convergenceSeconds, uint64_t routesChanged,
                     uint64_t lftBlocksWritten);
  void setMad(const MadTotals& totals);
  void setTraps(const TrapTotals& totals);
  void setSa(const SaTotals& totals);
  // The performance manager's counters (any thread; the snapshot is never changed after).
  void publishPortCounters(std::shared_ptr<const PortCounterSnapshot> snapshot);
  // The fabric's switches, CAs and cables as infiniband_exporter's info metrics (after each new snapshot).
  void publishFabric(std::shared_ptr<const FabricInfo> info);

  // Everything, for the exposer (registry and port counters in one).
  std::shared_ptr<prometheus::Collectable> collectable() const;
  // The text exposition format, as GET /metrics returns it.
  std::string exposition() const;

  // "trap", "light_sweep", "rebalance", "hold_down" or "other", from a TopologyEvent's cause.
  static std::string_view eventTrigger(std::string_view cause);
  // "PathRecord", ... or "0x00ab" for an attribute without a name; "ok", "no_records", ... or "0x0123".
  static std::string saAttributeName(uint16_t attrId);
  static std::string saStatusName(uint16_t status);

 private:
  class All;
  static void mirror(prometheus::Counter& c, uint64_t value);
  prometheus::Counter& counter(const std::string& name, const std::string& help);

  std::shared_ptr<prometheus::Registry> registry_;
  std::shared_ptr<Published<PortCounterSnapshot>> ports_;
  std::shared_ptr<Published<FabricInfo>> fabric_;
  std::shared_ptr<All> all_;

  prometheus::Gauge* state_;
  std::array<prometheus::Gauge*, 4> roles_{};
  prometheus::Gauge* subnetUp_;
  prometheus::Gauge* isolated_;
  prometheus::Family<prometheus::Counter>* sweeps_;
  prometheus::Family<prometheus::Histogram>* sweepSeconds_;
  prometheus::Family<prometheus::Histogram>* convergence_;
  prometheus::Counter* routesChanged_;
  prometheus::Counter* lftBlocks_;
  struct {
    prometheus::Counter *sent, *received, *responses, *timeouts, *retries, *failed, *dropped, *unexpected,
        *unsolicited, *sendErrors;
  } mad_{};
  prometheus::Family<prometheus::Counter>* traps_;
  prometheus::Counter* trapsMalformed_;
  prometheus::Counter* trapsDuplicate_;
  prometheus::Family<prometheus::Counter>* saRequests_;
  prometheus::Counter* saMalformed_;
};

}  // namespace ibsm::daemon
