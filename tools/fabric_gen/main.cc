// ibsm-fabric: generates test fabrics as ibnetdiscover/ibsim topology files, and compares topology files.
#include <cstdio>
#include <string>
#include <vector>

#include "fabric/topology_file.h"
#include "tools/fabric_gen/cli.h"
#include "tools/fabric_gen/compare.h"
#include "tools/fabric_gen/generator.h"

namespace {

int fail(int code, const std::string& message) {
  std::fprintf(stderr, "ibsm-fabric: %s\n", message.c_str());
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  using ibsm::tools::CliRequest;
  auto req = ibsm::tools::parseCommandLine(std::vector<std::string>(argv + 1, argv + argc));
  if (!req) return fail(2, req.error().message);
  switch (req->mode) {
    case CliRequest::Mode::kHelp:
      std::fputs(ibsm::tools::usage().c_str(), stdout);
      return 0;
    case CliRequest::Mode::kIbsimFlags: {
      auto topo = ibsm::fabric::readTopologyFile(req->files[0]);
      if (!topo) return fail(2, topo.error().message);
      std::printf("%s\n", ibsm::tools::ibsimFlags(**topo).c_str());
      return 0;
    }
    case CliRequest::Mode::kCompare: {
      auto expected = ibsm::fabric::readTopologyFile(req->files[0]);
      if (!expected) return fail(2, expected.error().message);
      auto actual = ibsm::fabric::readTopologyFile(req->files[1]);
      if (!actual) return fail(2, actual.error().message);
      std::string diff = ibsm::tools::diffTopologies(**expected, **actual);
      if (!diff.empty()) {
        std::fputs(diff.c_str(), stdout);
        return 1;
      }
      std::printf("equal: %zu nodes, %zu links\n", (*expected)->size(), (*expected)->links().size());
      return 0;
    }
    case CliRequest::Mode::kGenerate:
      break;
  }
  auto topo = ibsm::tools::generateFabric(req->spec);
  if (!topo) return fail(1, topo.error().message);
  const ibsm::fabric::Topology& t = **topo;
  if (req->output == "-") {
    std::string text = ibsm::fabric::formatTopology(t);
    if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0)
      return fail(1, "write to stdout failed");
  } else if (auto r = ibsm::fabric::writeTopologyFile(t, req->output); !r) {
    return fail(1, r.error().message);
  }
  if (!req->quiet) {
    std::string flags = ibsm::tools::ibsimFlags(t);
    std::fprintf(stderr, "ibsm-fabric: %zu hosts, %zu switches, %zu links; ibsim %s\n", t.cas().size(),
                 t.switches().size(), t.links().size(),
                 flags.empty() ? "defaults suffice" : ("needs " + flags).c_str());
  }
  return 0;
}
