// What the rooms count, as the metrics room takes it: the MAD engine's, the trap handler's and the SA
// server's running totals, the fabric of a snapshot and the performance manager's counters, turned into
// SmMetrics' plain structs (the metrics room knows none of those rooms).
#pragma once

#include "daemon/metrics/sm_metrics.h"
#include "daemon/sa/sa_server.h"
#include "daemon/sm/trap_handler.h"
#include "daemon/state/health_snapshot.h"
#include "daemon/state/subnet_snapshot.h"
#include "mad/mad_engine.h"

namespace ibsm::daemon {

SmMetrics::MadTotals madTotals(const mad::MadCounters& c);
SmMetrics::TrapTotals trapTotals(const TrapHandler::Counters& c);
SmMetrics::SaTotals saTotals(const SaCounters& c);
// The switches, CAs and cables of a snapshot, for infiniband_exporter's info metrics.
std::shared_ptr<const FabricInfo> fabricInfo(const SubnetSnapshot& snapshot);
// The performance manager's running totals, for infiniband_exporter's port-counter metrics.
std::shared_ptr<const PortCounterSnapshot> portCounters(const HealthSnapshot& health);
// Ports the health policy isolated (the port over threshold; its link is routed around), as `ibsmctl
// health` counts them.
uint64_t isolatedPorts(const HealthSnapshot& health);

}  // namespace ibsm::daemon
