#include "tools/ibsm_route/ar_dump.h"

#include <cstdio>

namespace ibsm::tools {

std::string formatArDump(const fabric::Topology& topo, const routing::LidAssignment& lids,
                         const routing::RoutingTables& tables) {
  using routing::ArTable;
  std::string out;
  char buf[128];
  for (fabric::NodeIndex sw : topo.switches()) {
    if (sw >= tables.ar.size() || tables.ar[sw].groups.empty()) continue;
    const ArTable& t = tables.ar[sw];
    const fabric::Node& n = topo.node(sw);
    std::snprintf(buf, sizeof buf, "AR groups of switch Lid %u guid 0x%016llx (",
                  lids.base(sw, fabric::PortNum{0}).value, static_cast<unsigned long long>(n.guid.value));
    out += buf;
    out += "'" + n.description + "'): " + std::to_string(t.groups.size()) + " groups" +
           (t.capped ? " (capped)" : "") + "\n";
    for (size_t g = 0; g < t.groups.size(); ++g) {
      out += "group " + std::to_string(g) + " ports ";
      bool first = true;
      for (unsigned p = 0; p < t.groups[g].size(); ++p)
        if (t.groups[g].test(p)) {
          if (!first) out += ',';  // not "," + a temporary: GCC 12 at -O3 reports a false -Wrestrict
          out += std::to_string(p);
          first = false;
        }
      out += "\n";
    }
    for (size_t l = 0; l < t.lidToGroup.size();) {
      uint16_t g = t.lidToGroup[l];
      size_t end = l + 1;
      while (end < t.lidToGroup.size() && t.lidToGroup[end] == g) ++end;
      if (g != ArTable::kNoGroup) {
        if (end - l == 1)
          std::snprintf(buf, sizeof buf, "0x%04zx group %u\n", l, g);
        else
          std::snprintf(buf, sizeof buf, "0x%04zx-0x%04zx group %u\n", l, end - 1, g);
        out += buf;
      }
      l = end;
    }
  }
  return out;
}

}  // namespace ibsm::tools
