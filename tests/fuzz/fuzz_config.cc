// libFuzzer target: the YAML config loader (parseConfig, parseRootsFile, parseOverride). Never throws; a
// config that loads must print (formatConfig) to YAML that loads again.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "config/config_loader.h"

using namespace ibsm::config;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto cfg = parseConfig(text, "fuzz.yaml");
  if (cfg.ok() && !cfg->routing.rootsFile) {
    auto again = parseConfig(toYaml(*cfg), "again.yaml");
    if (!again.ok() || !(*again == *cfg)) __builtin_trap();
  }
  (void)parseRootsFile(text, "roots");
  size_t nl = text.find('\n');
  auto ov = parseOverride(text.substr(0, nl));
  if (ov.ok()) {
    Override o = *ov;
    (void)parseConfig("", "empty.yaml", std::span<const Override>(&o, 1));
  }
  return 0;
}
