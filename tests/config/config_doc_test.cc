// The configuration's documentation against the option table: the checked-in example config is exactly what
// the table generates, every option is documented (and every documentation entry is an option), and the
// built ibsm.yaml(5) names every key with its default. A key added to the loader without its description, or
// an example or man page that was not regenerated, fails here.
#include "config/config_doc.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "config/config_loader.h"
#include "config/options.h"

namespace ibsm::config {
namespace {

namespace fs = std::filesystem;

const fs::path kExample = fs::path(__FILE__).parent_path() / "../../config/ibsm.yaml.example";

std::string readText(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ConfigDoc, EveryOptionIsDocumentedAndEveryDocumentationIsAnOption) {
  std::set<std::string_view> keys;
  for (const Option& o : optionTable()) {
    keys.insert(o.key);
    EXPECT_FALSE(o.description.empty()) << o.key << " has no entry in kDocs (config/options.cc)";
    EXPECT_FALSE(o.range.empty() && o.values.empty()) << o.key << ": say which values it takes";
  }
  for (const OptionDoc& d : optionDocs()) EXPECT_TRUE(keys.count(d.key)) << d.key << " is not an option";
}

TEST(ConfigDoc, CheckedInExampleIsTheGeneratedOne) {
  EXPECT_EQ(readText(kExample), exampleConfig())
      << "config/ibsm.yaml.example differs from the option table: run `ninja -C build config-example`";
}

TEST(ConfigDoc, GeneratedExampleParsesToDefaultsAndHasEveryKey) {
  std::string example = exampleConfig();
  auto r = parseConfig(example, "ibsm.yaml.example");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, Config{});
  for (const Option& o : optionTable()) {
    std::string leaf(o.key.substr(o.key.find('.') + 1));
    EXPECT_NE(example.find(" " + leaf + ": "), std::string::npos) << o.key;
    if (!o.range.empty()) {
      EXPECT_NE(example.find("Values: " + o.range + "."), std::string::npos) << o.key;
    }
  }
  // Keys that need a restart say so.
  EXPECT_NE(example.find("# [restart] GUID of the local port to bind."), std::string::npos) << example;
}

TEST(ConfigDoc, ManPageSourceHasEveryKeyRangeAndDefault) {
  std::string page = manPageOptions();
  for (const Option& o : optionTable()) {
    std::string key;
    for (char c : o.key) key += c == '_' ? std::string("\\_") : std::string(1, c);
    size_t at = page.find("*" + key + "*: ");
    ASSERT_NE(at, std::string::npos) << o.key;
    std::string entry = page.substr(at, page.find("\n\n*", at) - at);
    if (!o.range.empty()) {
      EXPECT_NE(entry.find(o.range), std::string::npos) << entry;
    }
    EXPECT_NE(entry.find(o.reloadable ? "Reloadable" : "Needs a restart"), std::string::npos) << entry;
  }
  EXPECT_EQ(page.find("Default: 0..7"), std::string::npos);  // ranges are not mistaken for defaults
  EXPECT_NE(page.find("*routing.lmc*: 0..7\n\tDefault: 0. Reloadable (SIGHUP).\n"), std::string::npos)
      << page;
}

#ifdef IBSM_MAN_DIR
// The page as installed (scdoc's roff output): every key in bold.
TEST(ConfigDoc, BuiltManPageNamesEveryKey) {
  std::string roff = readText(fs::path(IBSM_MAN_DIR) / "ibsm.yaml.5");
  ASSERT_FALSE(roff.empty()) << IBSM_MAN_DIR "/ibsm.yaml.5 is missing";
  for (size_t at; (at = roff.find("\\&")) != std::string::npos;)
    roff.erase(at, 2);  // scdoc's "control.\&group"
  for (const Option& o : optionTable())
    EXPECT_NE(roff.find("\\fB" + std::string(o.key) + "\\fR"), std::string::npos) << o.key;
}
#endif

}  // namespace
}  // namespace ibsm::config
