// libFuzzer target: the topology-file parser (ibnetdiscover / ibsim net format). A topology that parses must
// be self-consistent: every link's far end links back.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fabric/topology_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto topo = ibsm::fabric::parseTopology(text, "fuzz");
  if (!topo.ok()) return 0;
  const auto& t = **topo;
  for (ibsm::fabric::NodeIndex i = 0; i < t.nodes().size(); ++i) {
    const auto& n = t.node(i);
    for (unsigned p = 1; p <= n.numPorts && p < n.ports.size(); ++p) {
      const auto& port = n.ports[p];
      if (!port.connected()) continue;
      const auto& far = t.node(port.peerNode).ports.at(port.peerPort.value);
      if (far.peerNode != i || far.peerPort.value != p) __builtin_trap();
    }
  }
  return 0;
}
