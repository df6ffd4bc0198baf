#include "routing/scheme_repair.h"

#include <algorithm>
#include <utility>

namespace ibsm::routing {

SchemeRepair::SchemeRepair(std::string name, const Topology& oldTopo, const RoutingTables& old,
                           const Topology& topo, RepairResult& out)
    : name_(std::move(name)),
      oldTopo_(oldTopo),
      old_(old),
      topo_(topo),
      out_(out),
      og_(oldTopo),
      g_(topo),
      maxHops_(g_.size()) {}

std::string SchemeRepair::prepare(const LidAssignment& oldLids, const LidAssignment& lids) {
  const size_t S = g_.size();
  if (og_.size() != S) return name_ + ": switches came or went";
  newOfOld_.assign(S, kNoSwitch);
  oldOfNew_.assign(S, kNoSwitch);
  for (SwitchIndex s = 0; s < S; ++s) {
    const auto o = topo_.findIn(oldTopo_, g_.node(s));
    const SwitchIndex os = o ? og_.index(*o) : kNoSwitch;
    if (os == kNoSwitch)
      return name_ + ": switch " + fabric::toString(topo_.node(g_.node(s)).guid) + " is new";
    oldOfNew_[s] = os;
    newOfOld_[os] = s;
  }
  // The CA ports of each switch, now and before.
  caBase_.assign(S + 1, 0);
  oldHosts_.assign(S, 0);
  for (SwitchIndex s = 0; s < S; ++s) {
    caBase_[s] = static_cast<uint32_t>(caPorts_.size());
    const fabric::NodeIndex n = g_.node(s);
    const fabric::Node& node = topo_.node(n);
    for (unsigned q = 1; q <= node.numPorts; ++q) {
      const fabric::Port& p = node.ports[q];
      if (p.connected() && !topo_.node(p.peerNode).isSwitch() &&
          portUsable(topo_, n, fabric::PortNum{static_cast<uint8_t>(q)}))
        caPorts_.push_back(static_cast<uint8_t>(q));
    }
    const fabric::NodeIndex o = og_.node(oldOfNew_[s]);
    const fabric::Node& was = oldTopo_.node(o);
    for (unsigned q = 1; q <= was.numPorts; ++q) {
      const fabric::Port& p = was.ports[q];
      oldHosts_[oldOfNew_[s]] += p.connected() && !oldTopo_.node(p.peerNode).isSwitch() &&
                                 portUsable(oldTopo_, o, fabric::PortNum{static_cast<uint8_t>(q)});
    }
  }
  caBase_[S] = static_cast<uint32_t>(caPorts_.size());
  // Where each LID leaves the fabric, before and now: a LID that is new or moved is not a repair's.
  const size_t maxLid = std::max(lids.maxLid().value, oldLids.maxLid().value);
  exit_.assign(maxLid + 1u, LidExit{});
  oldExit_.assign(maxLid + 1u, LidExit{});
  for (size_t l = 1; l <= maxLid; ++l) {
    const fabric::Lid lid{static_cast<uint16_t>(l)};
    if (l <= lids.maxLid().value) {
      const LidOwner o = lids.owner(lid);
      exit_[l] = lidExit(topo_, g_, o.node, o.port);
    }
    if (l <= oldLids.maxLid().value) {
      const LidOwner o = oldLids.owner(lid);
      oldExit_[l] = lidExit(oldTopo_, og_, o.node, o.port);
    }
    const LidExit &e = exit_[l], &o = oldExit_[l];
    if (e.sw == kNoSwitch) continue;
    if (o.sw == kNoSwitch || newOfOld_[o.sw] != e.sw || o.port != e.port || o.toCa != e.toCa)
      return name_ + ": LID " + std::to_string(l) + " is new or moved";
  }
  // Lost and new switch-to-switch arcs.
  for (SwitchIndex os = 0; os < og_.size(); ++os)
    for (uint32_t a = og_.arcBegin(os); a < og_.arcEnd(os); ++a) {
      const auto& arc = og_.arcs()[a];
      const uint32_t na = g_.arcOfPort(newOfOld_[os], arc.port);
      if (na == kNoArc || g_.arcs()[na].to != newOfOld_[arc.to]) dead_.push_back(a);
    }
  for (SwitchIndex s = 0; s < S; ++s)
    for (uint32_t a = g_.arcBegin(s); a < g_.arcEnd(s); ++a) {
      const auto& arc = g_.arcs()[a];
      const uint32_t oa = og_.arcOfPort(oldOfNew_[s], arc.port);
      if (oa == kNoArc || og_.arcs()[oa].to != oldOfNew_[arc.to]) ++born_;
    }
  return {};
}

void SchemeRepair::takeFresh(RoutingTables fresh, const LidAssignment& lids, std::string note) {
  size_t moved = 0;
  for (SwitchIndex s = 0; s < g_.size(); ++s) {
    const auto& was = old_.lft[og_.node(oldOfNew_[s])];
    const auto& now = fresh.lft[g_.node(s)];
    for (size_t l = 1; l < now.size(); ++l) moved += now[l] != (l < was.size() ? was[l] : kNoPort);
  }
  out_.tables = std::move(fresh);
  out_.moved = moved;
  out_.destinations = exit_.size() - 1;
  out_.loads = computePortLoads(topo_, lids, out_.tables);
  out_.note = std::move(note);
}

void SchemeRepair::copyTables(const PortLoads& oldLoads) {
  RoutingTables& t = out_.tables;
  t.engine = old_.engine;
  t.slLayers = old_.slLayers;
  t.arStretch = old_.arStretch;
  t.lft.resize(topo_.size());
  if (!old_.ar.empty()) t.ar.resize(topo_.size());
  out_.loads.assign(topo_.size(), {});
  bool sameNodes = topo_.size() == oldTopo_.size();
  for (SwitchIndex s = 0; s < g_.size(); ++s) {
    const fabric::NodeIndex n = g_.node(s), o = og_.node(oldOfNew_[s]);
    sameNodes = sameNodes && n == o;
    t.lft.share(n, old_.lft, o);
    if (!old_.ar.empty() && o < old_.ar.size()) t.ar.share(n, old_.ar, o);
    out_.loads[n].assign(topo_.node(n).numPorts + 1u, 0);
    if (o < oldLoads.size())
      for (size_t p = 0; p < oldLoads[o].size() && p < out_.loads[n].size(); ++p)
        out_.loads[n][p] = oldLoads[o][p];
    if (o < old_.sl.size() && !old_.sl[o].empty()) {
      if (t.sl.empty()) t.sl.resize(topo_.size());
      t.sl.share(n, old_.sl, o);
    }
  }
  if (sameNodes) {
    t.slToVl = old_.slToVl;
  } else {
    for (SwitchIndex s = 0; s < g_.size(); ++s) {
      const fabric::NodeIndex n = g_.node(s), o = og_.node(oldOfNew_[s]);
      const unsigned ports = topo_.node(n).numPorts;
      for (unsigned in = 0; in <= ports; ++in)
        for (unsigned outPort = 0; outPort <= ports; ++outPort)
          if (const uint64_t v = old_.slToVl.packed(o, in, outPort))
            t.slToVl.setPacked(n, ports, in, outPort, v);
    }
  }
}

std::string SchemeRepair::run(uint32_t arGroupCap) {
  arCap_ = arGroupCap;
  std::vector<std::pair<uint16_t, SwitchIndex>> seeds;  // (LID, new switch) whose entry took a lost link
  for (uint32_t a : dead_) {
    const auto& arc = og_.arcs()[a];
    const SwitchIndex s = newOfOld_[arc.from];
    dropArMember(g_.node(s), arc.port);
    const auto& row = old_.lft[og_.node(arc.from)];
    for (size_t l = 1; l < row.size() && l < exit_.size(); ++l)
      if (row[l] == arc.port && exit_[l].sw != kNoSwitch) seeds.emplace_back(static_cast<uint16_t>(l), s);
  }
  std::sort(seeds.begin(), seeds.end());
  seeds.erase(std::unique(seeds.begin(), seeds.end()), seeds.end());
  // LIDs that no longer leave the fabric anywhere: no routes at all.
  for (size_t l = 1; l < exit_.size(); ++l)
    if (exit_[l].sw == kNoSwitch && oldExit_[l].sw != kNoSwitch) dropDestination(static_cast<uint16_t>(l));
  inB_.assign(g_.size(), 0);
  static_.assign(g_.size(), 0);
  for (size_t i = 0; i < seeds.size();) {
    size_t j = i;
    seed_.clear();
    while (j < seeds.size() && seeds[j].first == seeds[i].first) seed_.push_back(seeds[j++].second);
    lid_ = seeds[i].first;
    repairOne();
    if (std::string why = repairDestination(); !why.empty()) return why;
    for (SwitchIndex s : b_) {
      if (dest_.toCa && hosts(s) > 0) bookNew(s, lid_, hosts(s));
      updateGroup(s);
    }
    // The detours that switches outside the broken set offer (dfly's, RoutingTables::arStretch) rose over
    // routes that may have changed: back to the LFT port's parallel links. Tables without such members (the
    // minimal dfly's, dor's) hold parallel links only: no switch to look at.
    if (out_.tables.arStretch > 0)
      for (SwitchIndex s = 0; s < g_.size(); ++s)
        if (inB_[s] != serial_ && offersElsewhere(s)) updateGroup(s);
    ++out_.destinations;
    i = j;
  }
  for (uint32_t a : dead_) {
    const auto& arc = og_.arcs()[a];
    out_.loads[g_.node(newOfOld_[arc.from])][arc.port] = 0;  // what the old routes had booked there
  }
  return {};
}

// The broken set of lid_: the seeds and every switch whose route runs into one (upstream closure); their
// old routes leave the loads.
void SchemeRepair::repairOne() {
  ++serial_;
  dest_ = exit_[lid_];
  b_.clear();
  for (SwitchIndex s : seed_)
    if (inB_[s] != serial_) inB_[s] = serial_, b_.push_back(s);
  for (size_t i = 0; i < b_.size(); ++i) {
    const SwitchIndex x = b_[i];
    for (uint32_t a = g_.arcBegin(x); a < g_.arcEnd(x); ++a) {
      const SwitchIndex q = g_.arcs()[a].to;  // q -> x over the reverse link
      if (inB_[q] == serial_) continue;
      const uint8_t p = entry(q, lid_);
      const uint32_t qa = p == kNoPort ? kNoArc : g_.arcOfPort(q, p);
      if (qa == kNoArc || g_.arcs()[qa].to != x) continue;
      inB_[q] = serial_;
      b_.push_back(q);
    }
  }
  if (dest_.toCa)
    for (SwitchIndex x : b_)
      if (oldHosts_[oldOfNew_[x]] > 0) bookOld(oldOfNew_[x], lid_, oldHosts_[oldOfNew_[x]]);
}

uint8_t SchemeRepair::entry(SwitchIndex s, uint16_t lid) const {
  const auto& row = std::as_const(out_.tables.lft)[g_.node(s)];
  return lid < row.size() ? row[lid] : kNoPort;
}

void SchemeRepair::setEntry(SwitchIndex s, uint16_t lid, uint8_t port) {
  if (entry(s, lid) == port) return;
  auto& row = out_.tables.lft[g_.node(s)];
  if (row.size() <= lid) row.resize(lid + 1u, kNoPort);
  row[lid] = port;
  ++out_.moved;
}

void SchemeRepair::setSl(SwitchIndex s, uint16_t lid, uint8_t sl) {
  auto& t = out_.tables.sl;
  const fabric::NodeIndex n = g_.node(s);
  // Read without writing: the row stays shared with the old tables unless the SL changes.
  if (n < t.size()) {
    const auto& row = std::as_const(t)[n];
    if ((lid < row.size() ? row[lid] : 0) == sl) return;
  } else if (sl == 0) {
    return;
  }
  if (t.size() < topo_.size()) t.resize(topo_.size());
  auto& row = t[n];
  if (row.size() <= lid) row.resize(std::max<size_t>(exit_.size(), lid + 1u), 0);
  row[lid] = sl;
}

void SchemeRepair::bookOld(SwitchIndex os, uint16_t lid, uint64_t w) {
  for (size_t hops = 0; hops < maxHops_; ++hops) {
    const auto& row = old_.lft[og_.node(os)];
    const uint8_t p = lid < row.size() ? row[lid] : kNoPort;
    const uint32_t a = p == kNoPort ? kNoArc : og_.arcOfPort(os, p);
    if (a == kNoArc) return;
    auto& l = out_.loads[g_.node(newOfOld_[os])];
    if (p < l.size()) l[p] -= std::min(l[p], w);
    os = og_.arcs()[a].to;
  }
}

void SchemeRepair::bookNew(SwitchIndex s, uint16_t lid, uint64_t w) {
  for (size_t hops = 0; hops < maxHops_; ++hops) {
    const uint8_t p = entry(s, lid);
    const uint32_t a = p == kNoPort ? kNoArc : g_.arcOfPort(s, p);
    if (a == kNoArc) return;
    out_.loads[g_.node(s)][p] += w;
    s = g_.arcs()[a].to;
  }
}

void SchemeRepair::dropDestination(uint16_t lid) {
  if (oldExit_[lid].toCa)
    for (SwitchIndex os = 0; os < og_.size(); ++os)
      if (oldHosts_[os] > 0) bookOld(os, lid, oldHosts_[os]);
  for (SwitchIndex s = 0; s < g_.size(); ++s) {
    setEntry(s, lid, kNoPort);
    setGroup(s, lid, {});
  }
}

// AR groups (the parallel links to the LFT port's neighbour) of a switch that chose again; none for an entry
// kept static.
void SchemeRepair::updateGroup(SwitchIndex s) {
  if (out_.tables.ar.empty()) return;
  PortMask mask;
  const uint8_t p = entry(s, lid_);
  const uint32_t a = p == kNoPort || static_[s] == serial_ ? kNoArc : g_.arcOfPort(s, p);
  if (a != kNoArc)
    for (uint32_t b = g_.arcBegin(s); b < g_.arcEnd(s); ++b)
      if (g_.arcs()[b].to == g_.arcs()[a].to) mask.set(g_.arcs()[b].port);
  setGroup(s, lid_, mask);
}

bool SchemeRepair::offersElsewhere(SwitchIndex s) const {
  if (out_.tables.ar.empty()) return false;
  const ArTable& ar = std::as_const(out_.tables.ar)[g_.node(s)];
  const uint16_t group = ar.groupOf(lid_);
  const uint8_t p = entry(s, lid_);
  const uint32_t a = p == kNoPort ? kNoArc : g_.arcOfPort(s, p);
  if (group == ArTable::kNoGroup || a == kNoArc) return group != ArTable::kNoGroup;
  for (uint32_t b = g_.arcBegin(s); b < g_.arcEnd(s); ++b)
    if (ar.groups[group].test(g_.arcs()[b].port) && g_.arcs()[b].to != g_.arcs()[a].to) return true;
  return false;
}

// An AR port that no longer leads anywhere leaves every group of its switch.
void SchemeRepair::dropArMember(fabric::NodeIndex n, uint8_t port) {
  if (out_.tables.ar.empty()) return;
  const ArTable& now = std::as_const(out_.tables.ar)[n];
  if (std::none_of(now.groups.begin(), now.groups.end(), [&](const PortMask& m) { return m.test(port); }))
    return;
  for (PortMask& m : out_.tables.ar[n].groups) m.reset(port);
}

// Gives (s, lid) the group of `mask` (no group for fewer than two ports or past the cap).
void SchemeRepair::setGroup(SwitchIndex s, uint16_t lid, const PortMask& mask) {
  if (out_.tables.ar.empty()) return;
  const fabric::NodeIndex n = g_.node(s);
  const ArTable& now = std::as_const(out_.tables.ar)[n];
  const uint16_t current = now.groupOf(lid);
  if (current == ArTable::kNoGroup ? mask.count() < 2 : now.groups[current] == mask) return;
  ArTable& ar = out_.tables.ar[n];
  if (ar.lidToGroup.size() <= lid) ar.lidToGroup.resize(lid + 1u, ArTable::kNoGroup);
  uint16_t group = ArTable::kNoGroup;
  if (mask.count() >= 2) {
    auto it = std::find(ar.groups.begin(), ar.groups.end(), mask);
    if (it != ar.groups.end()) {
      group = static_cast<uint16_t>(it - ar.groups.begin());
    } else if (ar.groups.size() < std::min<uint32_t>(arCap_, ArTable::kNoGroup)) {
      group = static_cast<uint16_t>(ar.groups.size());
      ar.groups.push_back(mask);
    } else {
      ar.capped = true;
    }
  }
  ar.lidToGroup[lid] = group;
}

}  // namespace ibsm::routing
