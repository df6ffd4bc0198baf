// ibsm-config-doc: writes the documentation generated from the option table, at build time (not installed).
//   ibsm-config-doc example [-o FILE]            the example config (config/ibsm.yaml.example)
//   ibsm-config-doc man TEMPLATE [-o FILE]       TEMPLATE (scdoc) with its line @OPTIONS@ replaced by the
//   options
// Fails (exit 1) when an option has no description, so an undocumented key breaks the build.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "config/config_doc.h"
#include "config/options.h"

namespace {

int usage() {
  std::fputs("usage: ibsm-config-doc example [-o FILE]\n       ibsm-config-doc man TEMPLATE [-o FILE]\n",
             stderr);
  return 2;
}

bool readFile(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return !in.bad();
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode, templatePath, outPath;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-o" && i + 1 < argc)
      outPath = argv[++i];
    else if (mode.empty())
      mode = a;
    else if (mode == "man" && templatePath.empty())
      templatePath = a;
    else
      return usage();
  }
  if (mode != "example" && !(mode == "man" && !templatePath.empty())) return usage();
  for (const ibsm::config::Option& o : ibsm::config::optionTable()) {
    if (o.description.empty()) {
      std::fprintf(stderr,
                   "ibsm-config-doc: option %s has no description (add it to kDocs in config/options.cc)\n",
                   std::string(o.key).c_str());
      return 1;
    }
  }
  std::string text;
  if (mode == "example") {
    text = ibsm::config::exampleConfig();
  } else {
    if (!readFile(templatePath, text)) {
      std::fprintf(stderr, "ibsm-config-doc: cannot read %s\n", templatePath.c_str());
      return 1;
    }
    const std::string marker = "@OPTIONS@\n";
    size_t at = text.find(marker);
    if (at == std::string::npos) {
      std::fprintf(stderr, "ibsm-config-doc: %s has no line @OPTIONS@\n", templatePath.c_str());
      return 1;
    }
    text.replace(at, marker.size(), ibsm::config::manPageOptions());
  }
  if (outPath.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return std::fflush(stdout) == 0 ? 0 : 1;
  }
  std::ofstream out(outPath, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    std::fprintf(stderr, "ibsm-config-doc: cannot write %s\n", outPath.c_str());
    return 1;
  }
  return 0;
}
