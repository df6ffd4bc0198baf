// The set-up of the perf room's tests: a small fabric built in code, its snapshot, and a fake PMA answering
// PerfMgt GMPs (ClassPortInfo, PortCounters Get/Set, PortCountersExtended) from counters the test sets.
//
//   host-a (CA, LID 3) --1[ sw0 LID 1 ]2-- ==== --2[ sw1 LID 2 ]1-- host-b (CA, LID 4)
//                                      3-- ==== --3
// (sw0 and sw1 are joined by two parallel links, ports 2 and 3.)
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>

#include "daemon/state/subnet_snapshot.h"
#include "mad/fake_mad_port.h"
#include "mad/mad_engine.h"
#include "mad/perf.h"
#include "mad/smp.h"

namespace ibsm::daemon::testing {

using namespace std::chrono_literals;

inline constexpr fabric::Guid kSw0{0x200000}, kSw1{0x200001}, kHostA{0x100000}, kHostB{0x100002};

inline std::shared_ptr<const SubnetSnapshot> twoSwitchSnapshot() {
  fabric::TopologyBuilder b;
  auto node = [&](fabric::NodeType t, fabric::Guid g, uint8_t ports, const char* desc, uint16_t lid) {
    fabric::Node n;
    n.type = t;
    n.guid = g;
    n.numPorts = ports;
    n.description = desc;
    n.ports.resize(ports + 1u);
    for (auto& port : n.ports) {
      port.attrs.valid = true;
      port.attrs.state = fabric::PortState::kActive;
    }
    const unsigned lidPort = t == fabric::NodeType::kSwitch ? 0 : 1;
    n.ports[lidPort].attrs.lid = fabric::Lid{lid};
    if (t != fabric::NodeType::kSwitch) n.ports[1].guid = fabric::Guid{g.value + 1};
    return *b.addNode(std::move(n));
  };
  auto hostA = node(fabric::NodeType::kCa, kHostA, 1, "host-a", 3);
  auto sw0 = node(fabric::NodeType::kSwitch, kSw0, 4, "sw0", 1);
  auto sw1 = node(fabric::NodeType::kSwitch, kSw1, 4, "sw1", 2);
  auto hostB = node(fabric::NodeType::kCa, kHostB, 1, "host-b", 4);
  using fabric::PortNum;
  EXPECT_TRUE(b.connect(hostA, PortNum{1}, sw0, PortNum{1}).ok());
  EXPECT_TRUE(b.connect(sw0, PortNum{2}, sw1, PortNum{2}).ok());
  EXPECT_TRUE(b.connect(sw0, PortNum{3}, sw1, PortNum{3}).ok());
  EXPECT_TRUE(b.connect(sw1, PortNum{1}, hostB, PortNum{1}).ok());
  b.setSmPort(hostA, PortNum{1});
  auto snap = std::make_shared<SubnetSnapshot>();
  snap->topology = *std::move(b).build();
  snap->lids = routing::LidAssignment::fromTopology(*snap->topology);
  return snap;
}

// Answers PerfMgt GMPs by (LID, PortSelect) as a PMA does: a Set resets the selected counters (and answers
// with the values after the reset, as ibsim does).
struct FakePma {
  std::map<uint16_t, uint16_t> capMask;  // by LID; missing: 0
  std::map<std::pair<uint16_t, uint8_t>, mad::PortCounters> counters;
  std::map<std::pair<uint16_t, uint8_t>, mad::PortCountersExtended> extended;
  std::set<uint16_t> silent;                     // LIDs that never answer
  std::set<std::pair<uint16_t, uint8_t>> liars;  // answer about another port
  size_t gets = 0, sets = 0, cpis = 0, exts = 0;

  uint64_t& error(uint16_t lid, uint8_t port, mad::PerfCounter c) {
    return counters[{lid, port}].errors[static_cast<size_t>(c)];
  }
  std::vector<mad::MadPacket> operator()(const mad::MadPacket& req) {
    auto h = mad::parseHeader(req);
    if (!h || h->mgmtClass != mad::kClassPerf || silent.count(req.addr.lid)) return {};
    mad::MadPacket resp = mad::makeResponse(req);
    uint8_t* d = mad::perfData(resp);
    const uint16_t lid = req.addr.lid;
    if (h->attrId == mad::kAttrClassPortInfo) {
      ++cpis;
      mad::encodePerfClassPortInfo({1, 1, capMask.count(lid) ? capMask[lid] : uint16_t{0}}, d);
    } else if (h->attrId == mad::kAttrPortCounters) {
      const uint8_t port = mad::decodePortCounters(mad::perfData(req)).portSelect;
      mad::PortCounters& pc = counters[{lid, port}];
      if (h->method == mad::kSet) {
        ++sets;
        const uint16_t select = static_cast<uint16_t>(mad::perfData(req)[2] << 8 | mad::perfData(req)[3]);
        for (size_t i = 0; i < mad::kPerfCounters; ++i)
          if (select & mad::counterSelectBit(static_cast<mad::PerfCounter>(i))) pc.errors[i] = 0;
        for (size_t i = 0; i < mad::kPerfDataCounters; ++i)
          if (select & mad::counterSelectBit(static_cast<mad::PerfData>(i))) pc.data[i] = 0;
      } else {
        ++gets;
      }
      pc.portSelect = liars.count({lid, port}) ? static_cast<uint8_t>(port + 1) : port;
      mad::encodePortCounters(pc, d);
    } else if (h->attrId == mad::kAttrPortCountersExtended) {
      ++exts;
      const uint8_t port = mad::decodePortCountersExtended(mad::perfData(req)).portSelect;
      mad::PortCountersExtended& pc = extended[{lid, port}];
      pc.portSelect = port;
      mad::encodePortCountersExtended(pc, d);
    } else {
      return {};
    }
    return {resp};
  }
};

}  // namespace ibsm::daemon::testing
