#include "daemon/metrics/sm_metrics.h"

#include <prometheus/text_serializer.h>

#include <cstdio>

namespace ibsm::daemon {

namespace {

using prometheus::Histogram;

// From 1 ms (a targeted update of one switch) to 5 minutes (a heavy sweep of a large fabric on a busy host).
const Histogram::BucketBoundaries kSecondsBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                                     1,     2.5,    5,     10,   30,    60,   120, 300};

constexpr std::array<std::string_view, 4> kRoles = {"not_active", "discovering", "standby", "master"};
constexpr std::array<std::string_view, 5> kTriggers = {"trap", "light_sweep", "rebalance", "hold_down",
                                                       "other"};

std::string hex4(uint16_t v) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%04x", v);
  return buf;
}

}  // namespace

// The registry's families followed by the port counters' and the fabric's.
class SmMetrics::All : public prometheus::Collectable {
 public:
  All(std::shared_ptr<prometheus::Registry> registry, std::shared_ptr<Published<PortCounterSnapshot>> ports,
      std::shared_ptr<Published<FabricInfo>> fabric)
      : registry_(std::move(registry)), ports_(std::move(ports)), fabric_(std::move(fabric)) {}
  std::vector<prometheus::MetricFamily> Collect() const override {
    std::vector<prometheus::MetricFamily> out = registry_->Collect();
    auto append = [&](std::vector<prometheus::MetricFamily> more) {
      for (auto& f : more) out.push_back(std::move(f));
    };
    if (auto ports = ports_->get()) append(portCounterFamilies(*ports));
    if (auto fabric = fabric_->get()) append(fabricInfoFamilies(*fabric));
    return out;
  }

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  std::shared_ptr<Published<PortCounterSnapshot>> ports_;
  std::shared_ptr<Published<FabricInfo>> fabric_;
};

prometheus::Counter& SmMetrics::counter(const std::string& name, const std::string& help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(*registry_).Add({});
}

SmMetrics::SmMetrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      ports_(std::make_shared<Published<PortCounterSnapshot>>()),
      fabric_(std::make_shared<Published<FabricInfo>>()),
      all_(std::make_shared<All>(registry_, ports_, fabric_)) {
  using prometheus::BuildCounter;
  using prometheus::BuildGauge;
  using prometheus::BuildHistogram;
  prometheus::Registry& r = *registry_;
  state_ = &BuildGauge()
                .Name("ibsm_sm_state")
                .Help("SM state as SMInfo encodes it: 0 not active, 1 discovering, 2 standby, 3 master")
                .Register(r)
                .Add({});
  auto& roles =
      BuildGauge().Name("ibsm_sm_role").Help("1 for the SM's current role, 0 for the others").Register(r);
  for (size_t i = 0; i < kRoles.size(); ++i) roles_[i] = &roles.Add({{"role", std::string(kRoles[i])}});
  subnetUp_ = &BuildGauge()
                   .Name("ibsm_subnet_up")
                   .Help("1 while the subnet is up: the last sweep or update programmed everything")
                   .Register(r)
                   .Add({});
  isolated_ = &BuildGauge()
                   .Name("ibsm_isolated_ports")
                   .Help("Ports the health policy isolated (their links are routed around)")
                   .Register(r)
                   .Add({});
  sweeps_ = &BuildCounter().Name("ibsm_sweeps_total").Help("Sweeps run, by kind (heavy, light)").Register(r);
  sweepSeconds_ = &BuildHistogram()
                       .Name("ibsm_sweep_duration_seconds")
                       .Help("Wall time of a sweep, by kind (heavy, light)")
                       .Register(r);
  for (std::string kind : {"heavy", "light"}) {
    sweeps_->Add({{"kind", kind}});
    sweepSeconds_->Add({{"kind", kind}}, kSecondsBuckets);
  }
  convergence_ = &BuildHistogram()
                      .Name("ibsm_event_convergence_seconds")
                      .Help(
                          "From a topology event (trap, light sweep finding a change, ...) to the last "
                          "changed forwarding-table block acknowledged, by trigger")
                      .Register(r);
  for (std::string_view t : kTriggers) convergence_->Add({{"trigger", std::string(t)}}, kSecondsBuckets);
  routesChanged_ =
      &counter("ibsm_routes_changed_total", "(switch, LID) routes changed by sweeps and updates");
  lftBlocks_ =
      &counter("ibsm_lft_blocks_written_total", "Linear forwarding table blocks written to switches");
  mad_.sent = &counter("ibsm_mads_sent_total", "MADs sent, retries included");
  mad_.received = &counter("ibsm_mads_received_total", "MADs received, of any kind");
  mad_.responses = &counter("ibsm_mad_responses_total", "Responses matched to a request");
  mad_.timeouts = &counter("ibsm_mad_timeouts_total", "MAD attempts that timed out");
  mad_.retries = &counter("ibsm_mad_retries_total", "MAD attempts resent after a timeout");
  mad_.failed = &counter("ibsm_mad_failures_total", "MAD requests that ran out of retries");
  mad_.dropped = &counter("ibsm_mads_dropped_total", "Malformed MADs dropped");
  mad_.unexpected =
      &counter("ibsm_mads_unexpected_total", "Responses with no request waiting (late or unknown)");
  mad_.unsolicited =
      &counter("ibsm_mads_unsolicited_total", "Requests and traps received (SA, SMInfo, traps)");
  mad_.sendErrors = &counter("ibsm_mad_send_errors_total", "MADs the port refused to send");
  traps_ = &BuildCounter()
                .Name("ibsm_traps_received_total")
                .Help("Traps received and decoded, by trap number (duplicates included)")
                .Register(r);
  trapsMalformed_ = &counter("ibsm_traps_malformed_total", "Traps that could not be decoded");
  trapsDuplicate_ = &counter("ibsm_traps_duplicate_total", "Traps repeated within the de-duplication window");
  saRequests_ = &BuildCounter()
                     .Name("ibsm_sa_requests_total")
                     .Help("SA requests answered, by attribute and status")
                     .Register(r);
  saMalformed_ = &counter("ibsm_sa_malformed_total", "SA MADs dropped as malformed");
}

void SmMetrics::mirror(prometheus::Counter& c, uint64_t value) {
  const double v = static_cast<double>(value);
  const double now = c.Value();
  if (v > now) c.Increment(v - now);
}

void SmMetrics::setState(uint8_t ibaState) {
  state_->Set(ibaState);
  for (size_t i = 0; i < roles_.size(); ++i) roles_[i]->Set(i == ibaState ? 1 : 0);
}

void SmMetrics::setSubnetUp(bool up) {
  subnetUp_->Set(up ? 1 : 0);
}

void SmMetrics::setIsolatedPorts(uint64_t ports) {
  isolated_->Set(static_cast<double>(ports));
}

void SmMetrics::sweepDone(SweepKind kind, double seconds, uint64_t routesChanged, uint64_t lftBlocksWritten) {
  const std::string k = kind == SweepKind::kHeavy ? "heavy" : "light";
  sweeps_->Add({{"kind", k}}).Increment();
  sweepSeconds_->Add({{"kind", k}}, kSecondsBuckets).Observe(seconds);
  routesChanged_->Increment(static_cast<double>(routesChanged));
  lftBlocks_->Increment(static_cast<double>(lftBlocksWritten));
}

void SmMetrics::topologyEvent(std::string_view trigger, double convergenceSeconds, uint64_t routesChanged,
                              uint64_t lftBlocksWritten) {
  convergence_->Add({{"trigger", std::string(trigger)}}, kSecondsBuckets).Observe(convergenceSeconds);
  routesChanged_->Increment(static_cast<double>(routesChanged));
  lftBlocks_->Increment(static_cast<double>(lftBlocksWritten));
}

void SmMetrics::setMad(const MadTotals& t) {
  mirror(*mad_.sent, t.sent);
  mirror(*mad_.received, t.received);
  mirror(*mad_.responses, t.responses);
  mirror(*mad_.timeouts, t.timeouts);
  mirror(*mad_.retries, t.retries);
  mirror(*mad_.failed, t.failed);
  mirror(*mad_.dropped, t.dropped);
  mirror(*mad_.unexpected, t.unexpected);
  mirror(*mad_.unsolicited, t.unsolicited);
  mirror(*mad_.sendErrors, t.sendErrors);
}

void SmMetrics::setTraps(const TrapTotals& t) {
  mirror(*trapsMalformed_, t.malformed);
  mirror(*trapsDuplicate_, t.duplicates);
  for (const auto& [number, n] : t.byNumber) mirror(traps_->Add({{"trap", std::to_string(number)}}), n);
  if (t.otherNumbers) mirror(traps_->Add({{"trap", "other"}}), t.otherNumbers);
}

void SmMetrics::setSa(const SaTotals& t) {
  mirror(*saMalformed_, t.malformed);
  for (const auto& [key, n] : t.byAttrStatus)
    mirror(
        saRequests_->Add({{"attribute", saAttributeName(key.first)}, {"status", saStatusName(key.second)}}),
        n);
  if (t.other) mirror(saRequests_->Add({{"attribute", "other"}, {"status", "other"}}), t.other);
}

void SmMetrics::publishPortCounters(std::shared_ptr<const PortCounterSnapshot> snapshot) {
  ports_->set(std::move(snapshot));
}

void SmMetrics::publishFabric(std::shared_ptr<const FabricInfo> info) {
  fabric_->set(std::move(info));
}

std::shared_ptr<prometheus::Collectable> SmMetrics::collectable() const {
  return all_;
}

std::string SmMetrics::exposition() const {
  return prometheus::TextSerializer().Serialize(all_->Collect());
}

std::string_view SmMetrics::eventTrigger(std::string_view cause) {
  auto starts = [&](std::string_view p) { return cause.substr(0, p.size()) == p; };
  if (starts("trap ")) return "trap";
  if (starts("light sweep")) return "light_sweep";
  if (starts("rebalance")) return "rebalance";
  if (starts("hold-down")) return "hold_down";
  return "other";
}

std::string SmMetrics::saAttributeName(uint16_t id) {
  switch (id) {
    case 0x01:
      return "ClassPortInfo";
    case 0x02:
      return "Notice";
    case 0x03:
      return "InformInfo";
    case 0x11:
      return "NodeRecord";
    case 0x12:
      return "PortInfoRecord";
    case 0x13:
      return "SLtoVLMappingTableRecord";
    case 0x14:
      return "SwitchInfoRecord";
    case 0x15:
      return "LinearForwardingTableRecord";
    case 0x16:
      return "RandomForwardingTableRecord";
    case 0x17:
      return "MulticastForwardingTableRecord";
    case 0x18:
      return "SMInfoRecord";
    case 0x20:
      return "LinkRecord";
    case 0x30:
      return "GuidInfoRecord";
    case 0x31:
      return "ServiceRecord";
    case 0x33:
      return "P_KeyTableRecord";
    case 0x35:
      return "PathRecord";
    case 0x36:
      return "VLArbitrationTableRecord";
    case 0x38:
      return "MCMemberRecord";
    case 0x39:
      return "TraceRecord";
    case 0x3A:
      return "MultiPathRecord";
    case 0x3B:
      return "ServiceAssociationRecord";
    case 0xF3:
      return "InformInfoRecord";
    default:
      return hex4(id);
  }
}

std::string SmMetrics::saStatusName(uint16_t status) {
  switch (status) {
    case 0x0000:
      return "ok";
    case 0x0004:
      return "bad_version";
    case 0x0008:
      return "method_unsupported";
    case 0x000C:
      return "method_attr_unsupported";
    case 0x001C:
      return "invalid_field";
    case 0x0100:
      return "no_resources";
    case 0x0200:
      return "req_invalid";
    case 0x0300:
      return "no_records";
    case 0x0400:
      return "too_many_records";
    case 0x0500:
      return "invalid_gid";
    case 0x0600:
      return "insufficient_components";
    case 0x0700:
      return "denied";
    default:
      return hex4(status);
  }
}

}  // namespace ibsm::daemon
