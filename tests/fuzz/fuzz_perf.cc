// libFuzzer target: the performance manager reading a fabric whose PMAs answer with arbitrary bytes. The
// input is split into 192-byte attribute blocks; each PerfMgt GMP the manager sends is answered (as a
// well-formed GetResp with the request's TID, class and attribute, so the engine hands it on) with the next
// block as its data; the first byte of a block, when 0xFF, drops the GMP instead. Three sweeps run (master,
// master, standby). Every sweep must end, no running total may ever go down, and a port is only ever counted
// once.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "daemon/perf/perf_manager.h"
#include "mad/fake_mad_port.h"
#include "mad/smp.h"

using namespace ibsm;

namespace {

//   host-a --1[ sw ]2-- host-b      (sw LID 1, hosts LID 2 and 3)
std::shared_ptr<const daemon::SubnetSnapshot> snapshot() {
  fabric::TopologyBuilder b;
  auto add = [&](fabric::NodeType t, uint64_t guid, uint8_t ports, uint16_t lid) {
    fabric::Node n;
    n.type = t;
    n.guid = fabric::Guid{guid};
    n.numPorts = ports;
    n.ports.resize(ports + 1u);
    const unsigned lp = t == fabric::NodeType::kSwitch ? 0 : 1;
    n.ports[lp].attrs.lid = fabric::Lid{lid};
    n.ports[lp].attrs.valid = true;
    if (t != fabric::NodeType::kSwitch) n.ports[1].guid = fabric::Guid{guid + 1};
    return *b.addNode(std::move(n));
  };
  auto a = add(fabric::NodeType::kCa, 0x100000, 1, 2);
  auto sw = add(fabric::NodeType::kSwitch, 0x200000, 4, 1);
  auto c = add(fabric::NodeType::kCa, 0x100002, 1, 3);
  (void)b.connect(a, fabric::PortNum{1}, sw, fabric::PortNum{1});
  (void)b.connect(sw, fabric::PortNum{2}, c, fabric::PortNum{1});
  b.setSmPort(a, fabric::PortNum{1});
  auto snap = std::make_shared<daemon::SubnetSnapshot>();
  snap->topology = *std::move(b).build();
  snap->lids = routing::LidAssignment::fromTopology(*snap->topology);
  return snap;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto snap = snapshot();
  constexpr size_t kBlock = 192;
  mad::FakeClock clock;
  mad::FakeMadPort port(clock);
  size_t off = 0;
  port.setResponder([&](const mad::MadPacket& req) -> std::vector<mad::MadPacket> {
    if (off >= size) return {};
    const size_t n = std::min(kBlock, size - off);
    const uint8_t* block = data + off;
    off += n;
    if (block[0] == 0xFF) return {};
    mad::MadPacket resp = mad::makeResponse(req);
    std::memset(mad::perfData(resp), 0, kBlock);
    std::memcpy(mad::perfData(resp), block, n);
    return {resp};
  });
  mad::MadEngineOptions opt;
  opt.retries = 1;
  mad::MadEngine engine(port, clock, opt);
  daemon::PerfManager perf(engine, clock, {std::chrono::seconds(60), 2});
  std::vector<daemon::PortRecord> before;
  for (bool clear : {true, true, false}) {
    perf.sweepNow();
    bool finished = false;
    for (int i = 0; i < 10000 && !finished; ++i) {
      finished = perf.tick(snap, clear).has_value();
      if (!finished) engine.poll(std::chrono::milliseconds(1));
    }
    if (!finished) __builtin_trap();
    const auto& ports = perf.ports();
    if (ports.size() != 4) __builtin_trap();  // every linked port once: 2 CA ports, 2 switch ports
    for (size_t r = 0; r < before.size(); ++r)
      for (size_t i = 0; i < mad::kPerfCounters; ++i)
        if (ports[r].errors[i] < before[r].errors[i]) __builtin_trap();
    before = ports;
    clock.advance(std::chrono::seconds(60));
  }
  return 0;
}
