#include "daemon/program/ar_programmer.h"

#include <algorithm>
#include <functional>

#include "mad/smp.h"

namespace ibsm::daemon {

using fabric::NodeIndex;
using mad::MadResult;

const char* toString(ArCapability c) {
  switch (c) {
    case ArCapability::kUnknown:
      return "unknown";
    case ArCapability::kCapable:
      return "capable";
    case ArCapability::kIncapable:
      return "incapable";
  }
  return "?";
}

size_t ArReport::smps() const {
  size_t n = 0;
  for (const auto& p : phases) n += p.smps;
  return n;
}

ArProgrammer::ArProgrammer(mad::MadEngine& engine, const mad::Clock& clock, ArOptions options)
    : engine_(engine), clock_(clock), options_(options) {}

ArCapability ArProgrammer::capability(fabric::Guid sw) const {
  const SwitchState* st = switches_.find(sw);
  return st ? st->capability : ArCapability::kUnknown;
}

bool ArProgrammer::enabled(fabric::Guid sw) const {
  const SwitchState* st = switches_.find(sw);
  return st && st->enabled;
}

void ArProgrammer::forgetTables() {
  for (auto& [guid, st] : switches_) {
    st.groups.forgetAll();
    st.lft.forgetAll();
    st.plainLft.clear();
    st.enableUnknown = st.capability == ArCapability::kCapable;
    st.failures = 0;
    st.parked = false;
  }
}

void ArProgrammer::recount() {
  counts_ = {};
  for (const auto& [guid, st] : switches_) ++counts_[static_cast<size_t>(st.capability)];
}

struct ArProgrammer::Plan {
  NodeIndex node = fabric::kNoNode;
  bool wantAr = false;
  bool failed = false;  // an AR block was rejected or not answered in this run
  uint16_t groupTop = 0;
  std::vector<mad::ArGroupBlock> groups;
  std::vector<mad::ArLftBlock> lft;
};

namespace {

std::string describe(const fabric::Node& n) {
  return fabric::toString(n.guid) + " (" + n.description + ")";
}

// "" when the switch can hold these groups, else why not.
std::string checkGroups(const routing::ArTable& ar, const fabric::Node& node, const mad::ArInfo& info) {
  if (ar.groups.size() > info.groupCap)
    return "routing uses " + std::to_string(ar.groups.size()) + " AR groups, the switch holds " +
           std::to_string(info.groupCap);
  for (size_t g = 0; g < ar.groups.size(); ++g)
    for (unsigned p = 0; p < ar.groups[g].size(); ++p)
      if (ar.groups[g][p] && (p == 0 || p > node.numPorts))
        return "group " + std::to_string(g) + " holds port " + std::to_string(p) + " of a " +
               std::to_string(node.numPorts) + "-port switch";
  return {};
}

// The group table and ARLFT blocks for routing's AR table of one switch.
void fillBlocks(const routing::ArTable& ar, const routing::LftRow& lft, mad::ArLidState mode,
                uint16_t& groupTop, std::vector<mad::ArGroupBlock>& groupBlocks,
                std::vector<mad::ArLftBlock>& lftBlocks) {
  const size_t groups = ar.groups.size();
  groupTop = static_cast<uint16_t>(groups - 1);
  groupBlocks.resize((groups + mad::kArGroupsPerBlock - 1) / mad::kArGroupsPerBlock);
  for (size_t g = 0; g < groups; ++g)
    groupBlocks[g / mad::kArGroupsPerBlock].groups[g % mad::kArGroupsPerBlock] = ar.groups[g];
  lftBlocks.resize((lft.size() + mad::kArLftEntriesPerBlock - 1) / mad::kArLftEntriesPerBlock);
  for (size_t lid = 0; lid < lft.size(); ++lid) {
    uint16_t g = ar.groupOf(lid);
    mad::ArLftEntry& e = lftBlocks[lid / mad::kArLftEntriesPerBlock][lid % mad::kArLftEntriesPerBlock];
    e.defaultPort = lft[lid];
    if (g != routing::ArTable::kNoGroup && g < groups) {
      e.group = g;
      e.state = mode;
    } else {
      e.group = lft[lid];  // a static LID's GroupNumber holds its port
      e.state = mad::ArLidState::kStatic;
    }
  }
}

// Submits an AR Set; done(ok) runs with its outcome, a failure becomes an AR002 error.
void sendSet(PhaseRunner& phase, const fabric::Node& node, mad::MadPacket smp, const std::string& what,
             ArReport& report, std::function<void(bool ok)> done) {
  phase.submit(std::move(smp),
               [&report, what, where = describe(node), done = std::move(done)](const SmpAnswer& a) {
                 if (!a.ok) report.errors.push_back("AR002 " + what + " on " + where + a.failure());
                 done(a.ok);
               });
}

}  // namespace

// Phase 1: one short probe of every switch never probed.
void ArProgrammer::probe(PhaseRunner& phase, const fabric::Topology& topo, ArReport& report,
                         size_t& noAnswer) {
  for (NodeIndex n : topo.switches()) {
    const fabric::Node& node = topo.node(n);
    SwitchState& st = switches_[node.guid];  // references stay valid: unordered_map nodes do not move
    if (st.capability != ArCapability::kUnknown) continue;
    ++report.probed;
    mad::MadPacket smp = mad::makeDirectedSmp(mad::kGet, mad::kAttrArInfo, 0, topo.route(n));
    auto done = [&, n](const SmpAnswer& a) {
      const mad::MadResult& r = a.result;
      const fabric::Node& nd = topo.node(n);
      st.capability = ArCapability::kIncapable;
      if (!r.ok()) {
        ++noAnswer;  // timeout or transport drop: the switch does not implement the attribute
        return;
      }
      if (r.header.status != 0) {
        report.warnings.push_back("AR001 " + describe(nd) + " answers AdaptiveRoutingInfo with status " +
                                  std::to_string(r.header.status) + ": no adaptive routing");
        return;
      }
      auto info = mad::decodeArInfo(mad::smpData(r.response));
      if (!info) {
        report.warnings.push_back("AR001 " + describe(nd) + ": " + info.error().message +
                                  ": no adaptive routing");
        return;
      }
      if (info->groupCap == 0) {
        report.warnings.push_back("AR001 " + describe(nd) + " reports GroupCap 0: no adaptive routing");
        return;
      }
      st.capability = ArCapability::kCapable;
      st.info = *info;
      st.enabled = info->enabled;  // AR left on by a previous SM counts as on
      st.enableUnknown = false;
    };
    // A failed probe is an answer (no AR), not an error of the phase.
    phase.submit(std::move(smp), std::move(done), mad::RequestOptions{options_.probeTimeout, 0u}, false);
  }
}

// What each capable switch should hold.
std::vector<ArProgrammer::Plan> ArProgrammer::plan(const fabric::Topology& topo,
                                                   const routing::RoutingTables& tables, ArReport& report) {
  const bool routingHasAr = !tables.ar.empty();
  std::vector<Plan> plans;
  for (NodeIndex n : topo.switches()) {
    const fabric::Node& node = topo.node(n);
    SwitchState* st = switches_.find(node.guid);
    if (!st) continue;
    if (st->capability == ArCapability::kCapable) ++report.capable;
    if (st->capability == ArCapability::kIncapable) ++report.incapable;
    if (st->capability != ArCapability::kCapable) continue;
    Plan p;
    p.node = n;
    if (st->parked) {
      report.fellBack.push_back(node.guid);
    } else if (routingHasAr && n < tables.ar.size() && !tables.ar[n].groups.empty() &&
               n < tables.lft.size()) {
      const routing::ArTable& ar = tables.ar[n];
      if (std::string why = checkGroups(ar, node, st->info); !why.empty()) {
        report.warnings.push_back("AR003 " + describe(node) + ": " + why + "; plain LFTs on this switch");
        report.fellBack.push_back(node.guid);
      } else {
        p.wantAr = true;
        fillBlocks(ar, tables.lft[n], options_.mode, p.groupTop, p.groups, p.lft);
      }
    }
    plans.push_back(std::move(p));
  }
  return plans;
}

// Phase 2: group tables (before the ARLFT refers to them).
void ArProgrammer::sendGroups(PhaseRunner& phase, const fabric::Topology& topo, std::vector<Plan>& plans,
                              ArReport& report) {
  for (Plan& p : plans) {
    if (!p.wantAr) continue;
    const fabric::Node& node = topo.node(p.node);
    SwitchState& st = switches_[node.guid];
    st.groups.grow(p.groups.size());
    for (size_t b = 0; b < p.groups.size(); ++b) {
      if (st.groups.holds(b, p.groups[b])) {
        ++report.groupBlocksSkipped;
        continue;
      }
      mad::MadPacket smp =
          mad::makeDirectedSmp(mad::kSet, mad::kAttrArGroupTable,
                               mad::arGroupTableAttrMod(static_cast<uint32_t>(b)), topo.route(p.node));
      mad::encodeArGroupBlock(p.groups[b], mad::smpData(smp));
      sendSet(phase, node, std::move(smp), "ARGroupTable block " + std::to_string(b), report,
              [&, b, block = p.groups[b]](bool ok) {
                if (!ok) {
                  st.groups.markUnknown(b);
                  p.failed = true;
                  return;
                }
                st.groups.store(b, block);
                ++report.groupBlocksSent;
              });
    }
  }
}

// Phase 3: ARLFT blocks, on switches whose group tables are all in place.
void ArProgrammer::sendLft(PhaseRunner& phase, const fabric::Topology& topo, std::vector<Plan>& plans,
                           ArReport& report) {
  for (Plan& p : plans) {
    if (!p.wantAr || p.failed) continue;
    const fabric::Node& node = topo.node(p.node);
    SwitchState& st = switches_[node.guid];
    st.lft.grow(p.lft.size());
    for (size_t b = 0; b < p.lft.size(); ++b) {
      if (st.lft.holds(b, p.lft[b])) {
        ++report.lftBlocksSkipped;
        continue;
      }
      mad::MadPacket smp = mad::makeDirectedSmp(
          mad::kSet, mad::kAttrArLft, mad::arLftAttrMod(static_cast<uint32_t>(b)), topo.route(p.node));
      mad::encodeArLftBlock(p.lft[b], mad::smpData(smp));
      sendSet(phase, node, std::move(smp), "ARLinearForwardingTable block " + std::to_string(b), report,
              [&, b, block = p.lft[b]](bool ok) {
                if (!ok) {
                  st.lft.markUnknown(b);
                  p.failed = true;
                  return;
                }
                st.lft.store(b, block);
                ++report.lftBlocksSent;
              });
    }
  }
}

// Phase 4, one switch: AR on where everything is in place (again after a plain LFT change, which turned it
// off); off where a block failed or no AR is wanted any more.
void ArProgrammer::sendEnable(PhaseRunner& phase, const fabric::Topology& topo,
                              const routing::RoutingTables& tables, Plan& p, ArReport& report) {
  const fabric::Node& node = topo.node(p.node);
  SwitchState& st = switches_[node.guid];
  if (p.failed) {
    ++st.failures;
    report.fellBack.push_back(node.guid);
    std::string what = "AR003 " + describe(node) + ": AR tables not accepted; plain LFTs on this switch";
    if (st.failures >= options_.maxFailures) {
      st.parked = true;
      what += " until it is reset (failed " + std::to_string(st.failures) + " times in a row)";
    }
    report.warnings.push_back(what);
  }
  mad::ArInfo want = st.info;
  if (p.wantAr && !p.failed) {
    want.enabled = true;
    want.groupTop = p.groupTop;
    want.subGroupsActive = 0;  // one port mask per group: two groups per ARGroupTable block
    want.bySlEnabled = false;  // AR on every SL
    want.ageingTimeUs = options_.ageingTimeUs;
    const routing::LftRow& plain = tables.lft[p.node];
    if (st.enabled && !st.enableUnknown && want == st.info && st.plainLft == plain) return;
    mad::MadPacket smp = mad::makeDirectedSmp(mad::kSet, mad::kAttrArInfo, 0, topo.route(p.node));
    mad::encodeArInfo(want, mad::smpData(smp));
    sendSet(phase, node, std::move(smp), "AdaptiveRoutingInfo enable", report, [&, want, plain](bool ok) {
      if (!ok) {
        // Whether AR went on is unknown; the next run sends the enable again.
        st.enableUnknown = true;
        report.fellBack.push_back(node.guid);
        return;
      }
      st.info = want;
      st.enabled = true;
      st.enableUnknown = false;
      st.plainLft = plain;
      st.failures = 0;
      ++report.enableSets;
    });
  } else if (st.enabled || st.enableUnknown) {
    want.enabled = false;
    mad::MadPacket smp = mad::makeDirectedSmp(mad::kSet, mad::kAttrArInfo, 0, topo.route(p.node));
    mad::encodeArInfo(want, mad::smpData(smp));
    sendSet(phase, node, std::move(smp), "AdaptiveRoutingInfo disable", report, [&, want](bool ok) {
      if (!ok) return void(st.enableUnknown = true);
      st.info = want;
      st.enabled = false;
      st.enableUnknown = false;
      ++report.disableSets;
    });
  }
}

ArReport ArProgrammer::program(const fabric::Topology& topo, const routing::RoutingTables& tables) {
  ArReport report;
  // A switch that left the fabric is forgotten: when it comes back (maybe rebooted) it is probed and
  // programmed from scratch.
  switches_.retain([&](fabric::Guid guid) {
    auto n = topo.findNode(guid);
    return n && topo.node(*n).isSwitch();
  });

  auto phase = [&](const char* name, const std::function<void(PhaseRunner&)>& issue) {
    report.phases.push_back(runPhase(engine_, clock_, name, PhaseOptions{}, issue));
  };
  // The probe only when routing produced AR groups at all.
  size_t noAnswer = 0;
  phase("ar-probe", [&](PhaseRunner& runner) {
    if (!tables.ar.empty()) probe(runner, topo, report, noAnswer);
  });
  probesSent_ += report.probed;
  if (noAnswer)
    report.warnings.push_back("AR001 " + std::to_string(noAnswer) +
                              " switch(es) do not answer AdaptiveRoutingInfo " +
                              "(one short attempt each): plain LFTs only");

  std::vector<Plan> plans = plan(topo, tables, report);
  phase("ar-groups", [&](PhaseRunner& runner) { sendGroups(runner, topo, plans, report); });
  phase("ar-lft", [&](PhaseRunner& runner) { sendLft(runner, topo, plans, report); });
  phase("ar-enable", [&](PhaseRunner& runner) {
    for (Plan& p : plans) sendEnable(runner, topo, tables, p, report);
  });
  for (NodeIndex n : topo.switches())
    if (enabled(topo.node(n).guid)) ++report.enabled;
  recount();
  return report;
}

}  // namespace ibsm::daemon
