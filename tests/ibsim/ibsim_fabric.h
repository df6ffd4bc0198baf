// Helpers shared by the ibsim integration tests: generate a fabric with ibsm-fabric and start ibsim on it.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "fabric/topology_file.h"
#include "tests/ibsim/ibsim_harness.h"

namespace ibsm::testing {

// Splits "--kary-ntree 4,3 --seed 2" into arguments.
inline std::vector<std::string> splitArgs(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> v;
  for (std::string w; in >> w;) v.push_back(w);
  return v;
}

// Generates the fabric described by generatorArgs into a net file and starts ibsim on it.
inline std::unique_ptr<Ibsim> startFabric(const std::string& generatorArgs, std::string* netText = nullptr) {
  char tmpl[] = "/tmp/ibsm-net-XXXXXX";
  int fd = mkstemp(tmpl);
  if (fd < 0) throw std::runtime_error("mkstemp failed");
  close(fd);
  std::string cmd = binPath("ibsm-fabric") + " -q " + generatorArgs + " -o " + tmpl;
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("ibsm-fabric failed: " + cmd);
  if (netText) *netText = readFile(tmpl);
  auto sim = Ibsim::start(tmpl);
  std::remove(tmpl);
  return sim;
}

inline fabric::TopologyPtr parseOrFail(const std::string& text, const std::string& what) {
  auto t = fabric::parseTopology(text, what);
  if (!t) ADD_FAILURE() << what << ": " << t.error().message;
  return t ? *t : nullptr;
}

// dump_lfts' output without its deprecation banner ("*** WARNING ***: ... replaced by dump_fts"): the tables
// as routing::parseLftDump reads them.
inline std::string lftTables(const std::string& dumpLftsOut) {
  std::string text;
  std::istringstream in(dumpLftsOut);
  for (std::string line; std::getline(in, line);)
    if (!line.starts_with("***")) text += line + "\n";
  return text;
}

}  // namespace ibsm::testing
