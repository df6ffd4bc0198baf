#include "daemon/subnet_manager.h"

#include "daemon/state_store.h"
#include "mad/smp.h"

namespace ibsm::daemon {

const char* toString(SmState s) {
  switch (s) {
    case SmState::kNotActive: return "NOTACTIVE";
    case SmState::kDiscovering: return "DISCOVERING";
    case SmState::kStandby: return "STANDBY";
    case SmState::kMaster: return "MASTER";
  }
  return "?";
}

SubnetManager::SubnetManager(mad::MadEngine& engine, const mad::Clock& clock, SmOptions options)
    : engine_(engine), clock_(clock), options_(std::move(options)), discoverer_(engine, clock),
      programmer_(engine, clock) {}

fabric::Result<SweepReport> SubnetManager::sweep() {
  const mad::TimePoint start = clock_.now();
  SweepReport report;
  auto found = discoverer_.discover();
  if (!found) return fabric::makeError("discovery failed: " + found.error().message);
  report.discovery = found->stats;
  const fabric::Topology& topo = *found->topology;
  if (topo.smNode() != fabric::kNoNode) portGuid_ = topo.node(topo.smNode()).port(topo.smPort()).guid;

  LoadedGuid2Lid persistent;
  if (!options_.guid2lidPath.empty()) persistent = loadGuid2Lid(options_.guid2lidPath);
  for (auto& w : persistent.warnings) report.warnings.push_back(std::move(w));
  auto assigned = routing::assignLids(topo, persistent.map, options_.lmc);
  if (!assigned) return fabric::makeError("LID assignment failed: " + assigned.error().message);
  for (auto& w : assigned->warnings) report.warnings.push_back(std::move(w));
  report.lidsChanged = assigned->changed;
  // Saved before programming: if we die half-way, the next start hands out the same LIDs.
  if (!options_.guid2lidPath.empty()) {
    auto saved = saveGuid2Lid(options_.guid2lidPath, assigned->guid2lid);
    if (!saved) report.warnings.push_back("STATE002 " + saved.error().message);
  }

  const mad::TimePoint routeStart = clock_.now();
  auto routed = routing::computeChain(options_.engines, topo, assigned->lids, options_.routing);
  if (!routed) return fabric::makeError("routing failed: " + routed.error().message);
  report.routingTime = clock_.now() - routeStart;
  report.engine = routed->tables.engine;
  report.fallbacks = routed->fallbacks;

  report.program = programmer_.program(*found, assigned->lids, routed->tables, cache_, options_.program);
  report.subnetUp = report.program.errors.empty();
  if (state_ != SmState::kMaster) ++actCount_;
  state_ = SmState::kMaster;
  ++sweeps_;
  auto snap = std::make_shared<SubnetSnapshot>();
  snap->topology = found->topology;
  snap->lids = std::move(assigned->lids);
  snap->tables = std::move(routed->tables);
  snapshot_ = std::move(snap);
  report.total = clock_.now() - start;
  return report;
}

void SubnetManager::onUnsolicited(const mad::MadPacket& mad, const mad::MadHeader& h) {
  bool smi = h.mgmtClass == mad::kClassSmiLid || h.mgmtClass == mad::kClassSmiDirected;
  if (!smi || h.attrId != mad::kAttrSmInfo || h.method != mad::kGet) return;
  mad::MadPacket reply = mad::makeResponse(mad);
  mad::SmInfo info;
  info.guid = portGuid_;
  // SM_Key is returned only to a requester that presents it (IBA 14.4.1); others see zero.
  uint64_t presented = mad::decodeSmInfo(mad::smpData(mad)).smKey;
  info.smKey = presented == options_.smKey ? options_.smKey : 0;
  info.actCount = actCount_;
  info.priority = options_.priority;
  info.state = static_cast<uint8_t>(state_);
  mad::encodeSmInfo(info, mad::smpData(reply));
  reply.addr = mad.addr;
  if (h.mgmtClass == mad::kClassSmiDirected) reply.addr.lid = 0xFFFF;
  (void)engine_.sendUnmatched(reply);
}

}  // namespace ibsm::daemon
