#include "routing/sl_to_vl.h"

#include <algorithm>

namespace ibsm::routing {

uint8_t offeredDataVls(const fabric::Topology& topo) {
  // PortInfo.VLCap: 1 = VL0, 2 = VL0-1, 3 = VL0-3, 4 = VL0-7, 5 = VL0-14.
  static constexpr uint8_t kVls[] = {0, 1, 2, 4, 8, 15};
  uint8_t vls = 15;
  bool any = false;
  for (const fabric::Link& l : topo.links()) {
    const fabric::PortAttrs& a = topo.node(l.a).ports[l.portA.value].attrs;
    const fabric::PortAttrs& b = topo.node(l.b).ports[l.portB.value].attrs;
    if (!a.valid || !b.valid) continue;
    uint8_t cap = std::min(a.vlCap, b.vlCap);
    vls = std::min(vls, cap < 6 ? std::max<uint8_t>(kVls[cap], 1) : uint8_t{15});
    any = true;
  }
  return any ? vls : 1;
}

}  // namespace ibsm::routing
