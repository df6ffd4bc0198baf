#include "daemon/perf/health_policy.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ibsm::daemon {

namespace {

std::string portName(const fabric::Topology& topo, fabric::NodeIndex n, unsigned port) {
  const fabric::Node& node = topo.node(n);
  std::string name = node.description.empty() ? fabric::toString(node.guid) : node.description;
  name += '/';
  name += std::to_string(port);
  return name;
}

std::string perMinute(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, v >= 100 ? "%.0f" : "%.1f", v);
  return buf;
}

}  // namespace

const char* HealthDecision::id() const {
  switch (kind) {
    case Kind::kWarning:
      return "HLTH001";
    case Kind::kIsolated:
      return "HLTH002";
    case Kind::kRefused:
      return "HLTH003";
    case Kind::kRestored:
      return "HLTH004";
  }
  return "HLTH000";
}

std::string HealthPolicy::wouldDisconnect(const fabric::Topology& topo, fabric::NodeIndex node,
                                          uint8_t port) const {
  // Nodes the SM reaches over usable links (not down, not isolated), with and without this link; CAs do not
  // forward.
  const fabric::Port& cut = topo.node(node).ports[port];
  auto isCut = [&](fabric::NodeIndex n, unsigned p) {
    if ((n == node && p == port) || (n == cut.peerNode && p == cut.peerPort.value)) return true;
    const fabric::Guid g = topo.node(n).guid;
    for (const Link& l : links_)
      if ((l.bad == PortId{g, p}) || (l.peer == PortId{g, p})) return true;
    return false;
  };
  const fabric::NodeIndex root = topo.smNode() == fabric::kNoNode ? 0 : topo.smNode();
  auto reach = [&](bool withCut) {
    std::vector<char> seen(topo.size(), 0);
    std::vector<fabric::NodeIndex> todo{root};
    seen[root] = 1;
    size_t count = 1;
    while (!todo.empty()) {
      const fabric::NodeIndex n = todo.back();
      todo.pop_back();
      const fabric::Node& nd = topo.node(n);
      if (!nd.isSwitch() && n != root) continue;
      for (unsigned p = 1; p <= nd.numPorts && p < nd.ports.size(); ++p) {
        const fabric::Port& pt = nd.ports[p];
        if (!pt.connected() || seen[pt.peerNode] || pt.attrs.down()) continue;
        if (topo.node(pt.peerNode).ports[pt.peerPort.value].attrs.down()) continue;
        if (withCut && isCut(n, p)) continue;
        seen[pt.peerNode] = 1;
        ++count;
        todo.push_back(pt.peerNode);
      }
    }
    return count;
  };
  const size_t before = reach(false), after = reach(true);
  if (after >= before) return {};
  return "its loss would cut " + std::to_string(before - after) + " node(s) off";
}

std::vector<HealthDecision> HealthPolicy::evaluate(const std::vector<PortRecord>& ports, uint64_t sweep,
                                                   const fabric::Topology& topo, mad::TimePoint now) {
  std::vector<HealthDecision> out;
  if (status_.size() < ports.size()) status_.resize(ports.size());
  // A reload to `report`: what was isolated is routed again (and stays a warning until clean).
  if (options_.action != HealthAction::kIsolate)
    while (!links_.empty()) out.push_back(restore(links_.size() - 1, "health.action is report", now));
  for (uint32_t r = 0; r < ports.size(); ++r) {
    const PortRecord& rec = ports[r];
    if (rec.sweep != sweep) continue;
    PortStatus& st = status_[r];
    // Why the port is bad in this sample, and whether that asks for isolation. The first read has no
    // interval: its counts are of unknown age (a bad cable for a year or a burst a second ago), so watched
    // counters found above zero are reported, and only counts past start_threshold isolate.
    std::string over;
    bool isolating = false;
    const bool first = rec.lastInterval.count() <= 0;
    const double minutes = std::chrono::duration<double>(rec.lastInterval).count() / 60.0;
    for (size_t i = 0; i < mad::kPerfCounters; ++i) {
      const double threshold = options_.thresholds[i];
      if (threshold <= 0) continue;
      const std::string counter = mad::perfCounterName(static_cast<mad::PerfCounter>(i));
      if (first) {
        if (rec.found[i] == 0) continue;
        isolating = isolating || (options_.startThreshold && rec.found[i] > options_.startThreshold);
        over += (over.empty() ? "found at start, interval unknown: " : ", ") + counter + " " +
                std::to_string(rec.found[i]);
        continue;
      }
      const double rate = static_cast<double>(rec.lastErrors[i]) / minutes;
      if (rate <= threshold) continue;
      isolating = true;
      if (!over.empty()) over += ", ";
      over += counter + " +" + perMinute(rate) + "/min (threshold " + perMinute(threshold) + "/min)";
    }
    auto node = topo.findNode(rec.node);
    const fabric::Port* port =
        node && rec.port < topo.node(*node).ports.size() ? &topo.node(*node).ports[rec.port] : nullptr;
    const bool linked = port && port->connected();
    const std::string name = node ? portName(topo, *node, rec.port) : fabric::toString(rec.node);
    const PortId self{rec.node, rec.port};
    const PortId peer = linked ? PortId{topo.node(port->peerNode).guid, port->peerPort.value} : PortId{};
    if (!over.empty()) {
      st.lastBad = now;
      st.reason = over;
      if (st.state == PortHealthState::kOk) {
        st.state = PortHealthState::kWarning;
        st.since = now;
        st.refusedReported = false;
        out.push_back({HealthDecision::Kind::kWarning, self, peer,
                       name + (first ? " counters " : " over threshold: ") + over});
      }
      st.isolateFound = st.isolateFound || (first && isolating);
    } else if (st.state != PortHealthState::kOk && now - st.lastBad >= options_.cleanPeriod) {
      auto link = std::find_if(links_.begin(), links_.end(), [&](const Link& l) { return l.record == r; });
      if (link != links_.end()) {
        out.push_back(restore(static_cast<size_t>(link - links_.begin()), "clean period over", now));
        continue;
      }
      st = PortStatus{};
      out.push_back({HealthDecision::Kind::kRestored, self, peer, name + ": clean period over, ok again"});
      continue;
    }
    // A port found bad at start is isolated as soon as it can be, with no further increase needed.
    if (!(isolating || st.isolateFound) || st.state != PortHealthState::kWarning ||
        options_.action != HealthAction::kIsolate || !linked)
      continue;
    std::string refusal;
    if (links_.size() >= options_.maxIsolated)
      refusal =
          "health.max_isolated (" + std::to_string(options_.maxIsolated) + ") links are isolated already";
    else
      refusal = wouldDisconnect(topo, *node, rec.port);
    const std::string link = name + " <-> " + portName(topo, port->peerNode, peer.second);
    if (!refusal.empty()) {
      if (!st.refusedReported)
        out.push_back({HealthDecision::Kind::kRefused, self, peer, "not isolating " + link + ": " + refusal});
      st.refusedReported = true;
      continue;
    }
    st.state = PortHealthState::kIsolated;
    st.since = now;
    links_.push_back(Link{self, peer, r, link});
    out.push_back({HealthDecision::Kind::kIsolated, self, peer, "isolating " + link + ": " + st.reason});
  }
  // An isolated port whose counters cannot be read (routing around its link may leave its switch without a
  // LID route from the SM, as up/down forbids the detour) gets its link back after the clean period without
  // a bad sample; if it is still bad, the next sweep sees it and isolates it again.
  for (size_t i = links_.size(); i-- > 0;) {
    const uint32_t r = links_[i].record;
    if (r < ports.size() && ports[r].sweep != sweep && now - status_[r].lastBad >= options_.cleanPeriod)
      out.push_back(restore(i, "clean period over (its counters could not be read meanwhile)", now));
  }
  return out;
}

HealthDecision HealthPolicy::restore(size_t link, const std::string& why, mad::TimePoint now) {
  const Link l = links_[link];
  links_.erase(links_.begin() + static_cast<std::ptrdiff_t>(link));
  PortStatus& st = status_[l.record];
  const bool clean = now - st.lastBad >= options_.cleanPeriod;
  st.state = clean ? PortHealthState::kOk : PortHealthState::kWarning;
  st.since = now;
  if (clean) st.reason.clear();
  return {HealthDecision::Kind::kRestored, l.bad, l.peer, l.name + " routed again: " + why};
}

fabric::Result<HealthDecision> HealthPolicy::release(const PortId& port, mad::TimePoint now) {
  for (size_t i = 0; i < links_.size(); ++i) {
    if (links_[i].bad != port && links_[i].peer != port) continue;
    const uint32_t record = links_[i].record;
    HealthDecision d = restore(i, "released by an operator", now);
    status_[record] = PortStatus{};  // judged afresh from the next sweep
    return d;
  }
  return fabric::makeError("port " + fabric::toString(port.first) + "/" + std::to_string(port.second) +
                           " is not isolated");
}

std::vector<PortId> HealthPolicy::isolatedPorts() const {
  std::vector<PortId> out;
  for (const Link& l : links_) {
    out.push_back(l.bad);
    if (l.peer.first.value) out.push_back(l.peer);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace ibsm::daemon
