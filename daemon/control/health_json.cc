// The `health` answer (control_protocol.h): HealthSnapshot to JSON.
#include <algorithm>

#include "daemon/control/control_protocol.h"
#include "daemon/control/protocol_helpers.h"

namespace ibsm::daemon {

namespace {

Json errorsJson(const std::array<uint64_t, mad::kPerfCounters>& v) {
  Json o = Json::object();
  for (size_t i = 0; i < v.size(); ++i) o[mad::perfCounterName(static_cast<mad::PerfCounter>(i))] = v[i];
  return o;
}

Json ratesJson(const std::optional<std::array<double, mad::kPerfCounters>>& v) {
  if (!v) return nullptr;
  Json o = Json::object();
  for (size_t i = 0; i < v->size(); ++i) o[mad::perfCounterName(static_cast<mad::PerfCounter>(i))] = (*v)[i];
  return o;
}

template <typename T>
Json dataJson(const std::array<T, mad::kPerfDataCounters>& v) {
  Json o = Json::object();
  for (size_t i = 0; i < v.size(); ++i) o[mad::perfDataName(static_cast<mad::PerfData>(i))] = v[i];
  return o;
}

Json portJson(const PortHealth& p) {
  Json j = {{"node_guid", fabric::toString(p.node)},
            {"port", p.port},
            {"switch", p.isSwitch},
            {"lid", p.lid},
            {"description", detail::printable(p.description, 64)},
            {"state", toString(p.state)},
            {"reason", p.reason},
            {"since", p.since ? Json(detail::isoTime(*p.since)) : Json(nullptr)},
            {"since_ms", p.since ? Json(detail::unixMs(*p.since)) : Json(nullptr)},
            {"extended", p.extended},
            {"errors", errorsJson(p.errors)},
            {"error_rates_per_min", ratesJson(p.errorRates)},
            {"data", dataJson(p.data)},
            {"data_rates_per_s", p.dataRates ? dataJson(*p.dataRates) : Json(nullptr)}};
  if (p.peerNode.value) {
    j["peer_guid"] = fabric::toString(p.peerNode);
    j["peer_port"] = p.peerPort;
    j["peer_description"] = detail::printable(p.peerDescription, 64);
  } else {
    j["peer_guid"] = nullptr;
  }
  return j;
}

}  // namespace

Json healthJson(const HealthSnapshot& h, bool all) {
  size_t counts[3] = {0, 0, 0};
  std::vector<const PortHealth*> shown;
  for (const PortHealth& p : h.ports) {
    ++counts[static_cast<size_t>(p.state)];
    if (all || p.state != PortHealthState::kOk) shown.push_back(&p);
  }
  // Isolated first, then warnings, then ok; within a state by node and port.
  std::stable_sort(shown.begin(), shown.end(), [](const PortHealth* a, const PortHealth* b) {
    if (a->state != b->state) return a->state > b->state;
    return std::pair{a->node, a->port} < std::pair{b->node, b->port};
  });
  Json ports = Json::array();
  for (const PortHealth* p : shown) ports.push_back(portJson(*p));
  Json held = Json::array();
  for (const HeldDownPort& d : h.heldDown)
    held.push_back({{"node_guid", fabric::toString(d.node)},
                    {"port", d.port},
                    {"description", detail::printable(d.description, 64)},
                    {"remaining_s", d.remainingS}});
  return {{"sweeps", h.sweeps},
          {"swept_at", h.sweeps ? Json(detail::isoTime(h.sweptAt)) : Json(nullptr)},
          {"swept_at_ms", h.sweeps ? Json(detail::unixMs(h.sweptAt)) : Json(nullptr)},
          {"gmps", h.gmps},
          {"failed", h.failed},
          {"duration_ms", h.durationMs},
          {"clearing", h.clearing},
          {"action", h.action},
          {"max_isolated", h.maxIsolated},
          {"counts", {{"ok", counts[0]}, {"warning", counts[1]}, {"isolated", counts[2]}}},
          {"ports", std::move(ports)},
          {"held_down", std::move(held)}};
}

}  // namespace ibsm::daemon
