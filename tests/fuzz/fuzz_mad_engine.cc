// libFuzzer target: the MadEngine receiving arbitrary MADs through FakeMadPort. The input is split into
// 256-byte MADs (the last one short); a few requests are in flight when they arrive, so fuzzed bytes hit the
// response matcher (TID, class, attribute, status), the unsolicited path and the short/bad-version drops.
// Every completion must run exactly once and the engine must end idle.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "mad/fake_mad_port.h"
#include "mad/mad_engine.h"
#include "mad/smp.h"

using namespace ibsm::mad;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FakeClock clock;
  FakeMadPort port(clock);
  std::vector<MadPacket> sent;
  port.setResponder([&](const MadPacket& m) {
    sent.push_back(m);
    return std::vector<MadPacket>{};
  });
  MadEngineOptions opt;
  opt.window = 2;
  opt.retries = 1;
  MadEngine engine(port, clock, opt);
  unsigned unsolicited = 0;
  engine.setUnsolicitedHandler([&](const MadPacket&, const MadHeader&) { ++unsolicited; });

  constexpr int kRequests = 3;
  int done[kRequests] = {0, 0, 0};
  const uint16_t attrs[kRequests] = {kAttrNodeInfo, kAttrPortInfo, kAttrSwitchInfo};
  for (int i = 0; i < kRequests; ++i) {
    ibsm::fabric::DrPath path;
    engine.submit(makeDirectedSmp(kGet, attrs[i], 0, path), [&done, i](const MadResult&) { ++done[i]; });
  }
  engine.poll(std::chrono::milliseconds(0));  // sends the window

  for (size_t off = 0; off < size; off += kMadSize) {
    MadPacket mad;
    size_t n = std::min(kMadSize, size - off);
    std::memcpy(mad.bytes.data(), data + off, n);
    mad.size = n;
    // Give fuzzed responses a fair chance to match: byte 0 of each chunk, when odd, copies the low TID half
    // of a request that was sent.
    if (n > 20 && (data[off] & 1) && !sent.empty()) {
      const MadPacket& req = sent[data[off + 1] % sent.size()];
      std::memcpy(mad.bytes.data() + 12, req.bytes.data() + 12, 4);
    }
    if (n > 2) mad.status = (data[off + 2] & 0x80) ? 110 : 0;
    port.inject(mad);
    engine.poll(std::chrono::milliseconds(0));
  }
  engine.runUntilIdle();
  for (int i = 0; i < kRequests; ++i)
    if (done[i] != 1) __builtin_trap();
  if (!engine.idle()) __builtin_trap();
  return 0;
}
