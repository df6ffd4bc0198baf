#include "daemon/program/ar_programmer.h"

#include <algorithm>
#include <functional>
#include <unordered_set>

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
  auto it = switches_.find(sw);
  return it == switches_.end() ? ArCapability::kUnknown : it->second.capability;
}

bool ArProgrammer::enabled(fabric::Guid sw) const {
  auto it = switches_.find(sw);
  return it != switches_.end() && it->second.enabled;
}

void ArProgrammer::forgetTables() {
  for (auto& [guid, st] : switches_) {
    st.groupKnown.assign(st.groupKnown.size(), false);
    st.lftKnown.assign(st.lftKnown.size(), false);
    st.plainLft.clear();
    st.enableUnknown = st.capability == ArCapability::kCapable;
    st.failures = 0;
    st.parked = false;
  }
}

namespace {

// What one capable switch should hold after this run.
struct Plan {
  NodeIndex node = fabric::kNoNode;
  bool wantAr = false;
  bool failed = false;  // an AR block was rejected or not answered in this run
  uint16_t groupTop = 0;
  std::vector<mad::ArGroupBlock> groups;
  std::vector<mad::ArLftBlock> lft;
};

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

}  // namespace

size_t ArProgrammer::count(ArCapability c) const {
  size_t n = 0;
  for (const auto& [guid, st] : switches_) n += st.capability == c;
  return n;
}

ArReport ArProgrammer::program(const fabric::Topology& topo, const routing::RoutingTables& tables) {
  ArReport report;
  // A switch that left the fabric is forgotten: when it comes back (maybe rebooted) it is probed and
  // programmed from scratch.
  std::unordered_set<fabric::Guid> present;
  for (NodeIndex n : topo.switches()) present.insert(topo.node(n).guid);
  for (auto it = switches_.begin(); it != switches_.end();)
    it = present.count(it->first) ? std::next(it) : switches_.erase(it);

  const bool routingHasAr = !tables.ar.empty();
  // Runs one phase: `issue` submits SMPs through `send`; the engine runs until they are all answered.
  using OnDone = std::function<void(bool ok)>;
  using Sender = std::function<void(NodeIndex, mad::MadPacket, const std::string& what, OnDone)>;
  auto phase = [&](const char* name, const std::function<void(const Sender&)>& issue) {
    PhaseStats st;
    st.name = name;
    mad::TimePoint t0 = clock_.now();
    size_t sent0 = engine_.counters().sent;
    Sender send = [&](NodeIndex n, mad::MadPacket smp, const std::string& what, OnDone done) {
      std::string where = describe(topo.node(n));
      engine_.submit(std::move(smp), [&, what, where, done = std::move(done)](const MadResult& r) {
        bool ok = r.ok() && r.header.status == 0;
        if (!ok) {
          ++st.errors;
          report.errors.push_back(
              "AR002 " + what + " on " + where +
              (r.ok() ? ": MAD status " + std::to_string(r.header.status) : ": no answer"));
        }
        done(ok);
      });
    };
    issue(send);
    engine_.runUntilIdle();
    st.smps = engine_.counters().sent - sent0;
    st.elapsed = clock_.now() - t0;
    report.phases.push_back(st);
  };

  // Phase 1: one short probe of every switch never probed (only when routing produced AR groups at all).
  size_t noAnswer = 0;
  phase("ar-probe", [&](const Sender&) {
    if (!routingHasAr) return;
    for (NodeIndex n : topo.switches()) {
      const fabric::Node& node = topo.node(n);
      SwitchState& st = switches_[node.guid];  // references stay valid: unordered_map nodes do not move
      if (st.capability != ArCapability::kUnknown) continue;
      ++report.probed;
      mad::MadPacket smp = mad::makeDirectedSmp(mad::kGet, mad::kAttrArInfo, 0, node.route);
      engine_.submit(
          std::move(smp),
          [&, n](const MadResult& r) {
            const fabric::Node& nd = topo.node(n);
            st.capability = ArCapability::kIncapable;
            if (!r.ok()) {
              ++noAnswer;  // timeout or transport drop: the switch does not implement the attribute
              return;
            }
            if (r.header.status != 0) {
              report.warnings.push_back("AR001 " + describe(nd) +
                                        " answers AdaptiveRoutingInfo with status " +
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
          },
          mad::RequestOptions{options_.probeTimeout, 0u});
    }
  });
  probesSent_ += report.probed;
  if (noAnswer)
    report.warnings.push_back("AR001 " + std::to_string(noAnswer) +
                              " switch(es) do not answer AdaptiveRoutingInfo " +
                              "(one short attempt each): plain LFTs only");

  // What each capable switch should hold.
  std::vector<Plan> plans;
  for (NodeIndex n : topo.switches()) {
    const fabric::Node& node = topo.node(n);
    auto it = switches_.find(node.guid);
    if (it == switches_.end()) continue;
    SwitchState& st = it->second;
    if (st.capability == ArCapability::kCapable) ++report.capable;
    if (st.capability == ArCapability::kIncapable) ++report.incapable;
    if (st.capability != ArCapability::kCapable) continue;
    Plan p;
    p.node = n;
    if (st.parked) {
      report.fellBack.push_back(node.guid);
    } else if (routingHasAr && n < tables.ar.size() && !tables.ar[n].groups.empty() &&
               n < tables.lft.size()) {
      const routing::ArTable& ar = tables.ar[n];
      if (std::string why = checkGroups(ar, node, st.info); !why.empty()) {
        report.warnings.push_back("AR003 " + describe(node) + ": " + why + "; plain LFTs on this switch");
        report.fellBack.push_back(node.guid);
      } else {
        p.wantAr = true;
        const size_t groups = ar.groups.size();
        p.groupTop = static_cast<uint16_t>(groups - 1);
        p.groups.resize((groups + mad::kArGroupsPerBlock - 1) / mad::kArGroupsPerBlock);
        for (size_t g = 0; g < groups; ++g)
          p.groups[g / mad::kArGroupsPerBlock].groups[g % mad::kArGroupsPerBlock] = ar.groups[g];
        const std::vector<uint8_t>& lft = tables.lft[n];
        p.lft.resize((lft.size() + mad::kArLftEntriesPerBlock - 1) / mad::kArLftEntriesPerBlock);
        for (size_t lid = 0; lid < lft.size(); ++lid) {
          uint16_t g = lid < ar.lidToGroup.size() ? ar.lidToGroup[lid] : routing::ArTable::kNoGroup;
          mad::ArLftEntry& e = p.lft[lid / mad::kArLftEntriesPerBlock][lid % mad::kArLftEntriesPerBlock];
          e.defaultPort = lft[lid];
          if (g != routing::ArTable::kNoGroup && g < groups) {
            e.group = g;
            e.state = options_.mode;
          } else {
            e.group = lft[lid];  // a static LID's GroupNumber holds its port
            e.state = mad::ArLidState::kStatic;
          }
        }
      }
    }
    plans.push_back(std::move(p));
  }

  // Phase 2: group tables (before the ARLFT refers to them).
  phase("ar-groups", [&](const Sender& send) {
    for (Plan& p : plans) {
      if (!p.wantAr) continue;
      const fabric::Node& node = topo.node(p.node);
      SwitchState& st = switches_[node.guid];
      if (st.groups.size() < p.groups.size()) {
        st.groups.resize(p.groups.size());
        st.groupKnown.resize(p.groups.size(), false);
      }
      for (size_t b = 0; b < p.groups.size(); ++b) {
        if (st.groupKnown[b] && st.groups[b] == p.groups[b]) {
          ++report.groupBlocksSkipped;
          continue;
        }
        mad::MadPacket smp =
            mad::makeDirectedSmp(mad::kSet, mad::kAttrArGroupTable,
                                 mad::arGroupTableAttrMod(static_cast<uint32_t>(b)), node.route);
        mad::encodeArGroupBlock(p.groups[b], mad::smpData(smp));
        send(p.node, std::move(smp), "ARGroupTable block " + std::to_string(b),
             [&, b, block = p.groups[b]](bool ok) {
               st.groupKnown[b] = ok;
               if (!ok) return void(p.failed = true);
               st.groups[b] = block;
               ++report.groupBlocksSent;
             });
      }
    }
  });

  // Phase 3: ARLFT blocks, on switches whose group tables are all in place.
  phase("ar-lft", [&](const Sender& send) {
    for (Plan& p : plans) {
      if (!p.wantAr || p.failed) continue;
      const fabric::Node& node = topo.node(p.node);
      SwitchState& st = switches_[node.guid];
      if (st.lft.size() < p.lft.size()) {
        st.lft.resize(p.lft.size());
        st.lftKnown.resize(p.lft.size(), false);
      }
      for (size_t b = 0; b < p.lft.size(); ++b) {
        if (st.lftKnown[b] && st.lft[b] == p.lft[b]) {
          ++report.lftBlocksSkipped;
          continue;
        }
        mad::MadPacket smp = mad::makeDirectedSmp(mad::kSet, mad::kAttrArLft,
                                                  mad::arLftAttrMod(static_cast<uint32_t>(b)), node.route);
        mad::encodeArLftBlock(p.lft[b], mad::smpData(smp));
        send(p.node, std::move(smp), "ARLinearForwardingTable block " + std::to_string(b),
             [&, b, block = p.lft[b]](bool ok) {
               st.lftKnown[b] = ok;
               if (!ok) return void(p.failed = true);
               st.lft[b] = block;
               ++report.lftBlocksSent;
             });
      }
    }
  });

  // Phase 4: AR on where everything is in place (again after a plain LFT change, which turned it off); off
  // where a block failed or no AR is wanted any more.
  phase("ar-enable", [&](const Sender& send) {
    for (Plan& p : plans) {
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
        const std::vector<uint8_t>& plain = tables.lft[p.node];
        if (st.enabled && !st.enableUnknown && want == st.info && st.plainLft == plain) continue;
        mad::MadPacket smp = mad::makeDirectedSmp(mad::kSet, mad::kAttrArInfo, 0, node.route);
        mad::encodeArInfo(want, mad::smpData(smp));
        send(p.node, std::move(smp), "AdaptiveRoutingInfo enable", [&, want, plain](bool ok) {
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
        mad::MadPacket smp = mad::makeDirectedSmp(mad::kSet, mad::kAttrArInfo, 0, node.route);
        mad::encodeArInfo(want, mad::smpData(smp));
        send(p.node, std::move(smp), "AdaptiveRoutingInfo disable", [&, want](bool ok) {
          if (!ok) return void(st.enableUnknown = true);
          st.info = want;
          st.enabled = false;
          st.enableUnknown = false;
          ++report.disableSets;
        });
      }
    }
  });
  for (NodeIndex n : topo.switches())
    if (enabled(topo.node(n).guid)) ++report.enabled;
  return report;
}

}  // namespace ibsm::daemon
