// Command line of ibsm-fabric, parsed into a request (kept out of main.cc so it can be unit-tested).
#pragma once

#include <string>
#include <vector>

#include "fabric/result.h"
#include "tools/fabric_gen/generator.h"

namespace ibsm::tools {

struct CliRequest {
  enum class Mode { kGenerate, kCompare, kIbsimFlags, kHelp };
  Mode mode = Mode::kGenerate;
  FabricSpec spec;
  std::string output = "-";        // kGenerate: file, or "-" for stdout
  bool quiet = false;              // kGenerate: no summary line on stderr
  std::vector<std::string> files;  // kCompare: expected, actual; kIbsimFlags: the file
};

// args without argv[0]. The error is one line naming the offending option.
fabric::Result<CliRequest> parseCommandLine(const std::vector<std::string>& args);

std::string usage();

}  // namespace ibsm::tools
