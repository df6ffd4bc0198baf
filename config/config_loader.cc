#include "config/config_loader.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "config/options.h"
#include "config/partitions_conf.h"
#include "fabric/text.h"

namespace ibsm::config {

using fabric::trim;
namespace {

constexpr size_t kMaxFileBytes = 1 << 20;
constexpr std::string_view kCommandLine = "command line";

// One value given for an option, by the file or the command line.
struct Given {
  const Option* option;
  RawValue value;
  Location keyAt;
};

Error errorAt(const Location& where, std::string_view key, std::string_view message) {
  std::string text = where.str() + ": ";
  if (!key.empty()) text += printableKey(key) + ": ";
  return Error{text + std::string(message)};
}

// yaml-cpp marks are 0-based; messages are 1-based. A null mark (no position) prints as the file alone.
Location locationOf(std::string_view file, const YAML::Mark& mark) {
  if (mark.is_null() || mark.line < 0) return Location{std::string(file)};
  return Location{std::string(file), mark.line + 1, mark.column + 1};
}

std::string kindName(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Scalar:
      return "a value";
    default:
      return "nothing";
  }
}

// Copies a yaml-cpp node into a RawValue, `depth` levels of children (see RawValue), at most kMaxValues
// values in all: aliases cannot make the copy explode.
constexpr size_t kMaxValues = 200000;
RawValue toRaw(const YAML::Node& n, std::string_view file, const Location& keyAt, int depth, size_t& budget) {
  if (budget == 0) throw std::length_error("more than " + std::to_string(kMaxValues) + " values");
  --budget;
  RawValue v;
  v.where = locationOf(file, n.Mark());
  switch (n.Type()) {
    case YAML::NodeType::Scalar:
      v.kind = RawValue::Kind::kScalar;
      v.text = n.Scalar();
      v.quoted = n.Tag() == "!" || n.Tag() == "tag:yaml.org,2002:str";
      break;
    case YAML::NodeType::Sequence:
      v.kind = RawValue::Kind::kList;
      if (depth > 0) {
        for (auto it = n.begin(); it != n.end(); ++it)
          v.items.push_back(toRaw(*it, file, keyAt, depth - 1, budget));
      }
      break;
    case YAML::NodeType::Map:
      v.kind = RawValue::Kind::kMap;
      if (depth > 0) {
        for (auto it = n.begin(); it != n.end(); ++it) {
          Location at = locationOf(file, it->first.Mark());
          v.fieldKeys.push_back(it->first.IsScalar() ? it->first.Scalar() : std::string());
          v.fieldKeyAt.push_back(at);
          v.fieldValues.push_back(toRaw(it->second, file, at, depth - 1, budget));
        }
      }
      break;
    default:
      // An empty value's mark is that of the next token, often on the next line: point at the key instead.
      v.kind = RawValue::Kind::kNull;
      v.where = keyAt;
      break;
  }
  return v;
}

// Walks the document by the schema (top-level keys and sections of keys): never deeper, so aliases that refer
// to themselves cannot make it loop.
Result<std::vector<Given>> collect(const YAML::Node& root, std::string_view file) {
  std::vector<Given> given;
  size_t budget = kMaxValues;
  if (root.IsNull()) return given;
  if (!root.IsMap()) {
    return errorAt(locationOf(file, root.Mark()), "",
                   "the top level must be a map of keys, got " + kindName(root));
  }
  std::map<std::string, Location> seen;
  auto addKey = [&](const YAML::Node& keyNode, const std::string& prefix) -> Result<std::string> {
    Location at = locationOf(file, keyNode.Mark());
    if (!keyNode.IsScalar()) return errorAt(at, prefix, "keys must be names, got " + kindName(keyNode));
    std::string key = prefix.empty() ? keyNode.Scalar() : prefix + "." + keyNode.Scalar();
    if (auto [it, inserted] = seen.emplace(key, at); !inserted) {
      return errorAt(at, key, "duplicate key (first given at line " + std::to_string(it->second.line) + ")");
    }
    if (!findOption(key) && !(prefix.empty() && isSection(key))) {
      std::string suggestion = suggestKey(key);
      return errorAt(at, key,
                     "unknown key" + (suggestion.empty() ? "" : " (did you mean " + suggestion + "?)"));
    }
    return key;
  };
  for (auto it = root.begin(); it != root.end(); ++it) {
    auto key = addKey(it->first, "");
    if (!key) return key.error();
    Location keyAt = locationOf(file, it->first.Mark());
    if (const Option* option = findOption(*key)) {
      given.push_back(Given{option, toRaw(it->second, file, keyAt, option->depth, budget), keyAt});
      continue;
    }
    const YAML::Node section = it->second;  // a copy: it-> yields a temporary
    if (section.IsNull()) continue;         // a section with every key commented out
    if (!section.IsMap()) {
      return errorAt(locationOf(file, section.Mark()), *key,
                     "expected a section of keys, got " + kindName(section));
    }
    for (auto inner = section.begin(); inner != section.end(); ++inner) {
      auto full = addKey(inner->first, *key);
      if (!full) return full.error();
      Location innerAt = locationOf(file, inner->first.Mark());
      const Option* option = findOption(*full);
      given.push_back(Given{option, toRaw(inner->second, file, innerAt, option->depth, budget), innerAt});
    }
  }
  return given;
}

// Command-line values replace file values of the same key (the last one on the command line wins). roots and
// roots_file are one choice, so overriding either drops both from the file.
Result<std::vector<Given>> applyOverrides(std::vector<Given> given, std::span<const Override> overrides) {
  const Location cli{std::string(kCommandLine)};
  for (const Override& o : overrides) {
    const Option* option = findOption(o.key);
    if (!option) {
      std::string suggestion = suggestKey(o.key);
      return errorAt(cli, o.key,
                     "unknown key" + (suggestion.empty() ? "" : " (did you mean " + suggestion + "?)"));
    }
    bool isRoots = o.key == "routing.roots" || o.key == "routing.roots_file";
    std::erase_if(given, [&](const Given& g) {
      bool fromFile = g.keyAt.origin != kCommandLine;
      return g.option == option ||
             (isRoots && fromFile &&
              (g.option->key == "routing.roots" || g.option->key == "routing.roots_file"));
    });
    RawValue value;
    value.kind = RawValue::Kind::kScalar;
    value.text = o.value;
    value.where = cli;
    given.push_back(Given{option, std::move(value), cli});
  }
  return given;
}

const Given* findGiven(const std::vector<Given>& given, std::string_view key) {
  for (const Given& g : given) {
    if (g.option->key == key) return &g;
  }
  return nullptr;
}

bool later(const Location& a, const Location& b) {
  if (a.origin != b.origin) return a.origin == kCommandLine;
  return a.line != b.line ? a.line > b.line : a.column > b.column;
}

struct FileText {
  std::string text;
  bool missing = false;
  std::string error;  // "" = read fine
};

// Reads a regular file of at most kMaxFileBytes; FIFOs and devices are refused rather than read (they could
// block or never end).
FileText readSmallFile(const std::string& path) {
  FileText out;
  std::error_code ec;
  auto status = std::filesystem::status(path, ec);
  if (status.type() == std::filesystem::file_type::not_found) {
    out.missing = true;
    out.error = "cannot open: " + std::string(std::strerror(ENOENT));
    return out;
  }
  if (ec) return out.error = "cannot open: " + ec.message(), out;
  if (!std::filesystem::is_regular_file(status)) return out.error = "not a regular file", out;
  std::ifstream in(path, std::ios::binary);
  if (!in) return out.error = "cannot open: " + std::string(std::strerror(errno)), out;
  out.text.resize(kMaxFileBytes + 1);
  in.read(out.text.data(), static_cast<std::streamsize>(out.text.size()));
  if (in.bad()) return out.error = "read error", out;
  out.text.resize(static_cast<size_t>(in.gcount()));
  if (out.text.size() > kMaxFileBytes) out.error = "larger than " + std::to_string(kMaxFileBytes) + " bytes";
  return out;
}

std::string joinPath(const std::string& dir, std::string_view name) {
  return dir.ends_with('/') ? dir + std::string(name) : dir + "/" + std::string(name);
}

// Validates every given value into a Config, then the rules that span several keys.
Result<Config> build(const std::vector<Given>& given, bool readRootsFile) {
  Config c;
  for (const Given& g : given) {
    if (auto p = g.option->parse(g.value, c)) return errorAt(p->where, g.option->key, p->message);
  }

  const Given* roots = findGiven(given, "routing.roots");
  const Given* rootsFile = findGiven(given, "routing.roots_file");
  if (c.routing.rootsFile && !c.routing.roots.empty()) {
    const Given* second = later(roots->keyAt, rootsFile->keyAt) ? roots : rootsFile;
    const Given* first = second == roots ? rootsFile : roots;
    return errorAt(second->value.where, second->option->key,
                   "cannot be combined with " + std::string(first->option->key) + " (given at " +
                       first->keyAt.str() + "); give only one of them");
  }
  if (c.routing.rootsFile && rootsFile->keyAt.origin != kCommandLine) {
    // Relative to the config file, so that a config and its roots file can move together.
    std::filesystem::path path(*c.routing.rootsFile);
    std::filesystem::path dir = std::filesystem::path(rootsFile->keyAt.origin).parent_path();
    if (path.is_relative() && !dir.empty()) c.routing.rootsFile = (dir / path).string();
  }
  if (c.routing.rootsFile && readRootsFile) {
    FileText file = readSmallFile(*c.routing.rootsFile);
    if (!file.error.empty()) {
      return errorAt(rootsFile->value.where, "routing.roots_file", *c.routing.rootsFile + ": " + file.error);
    }
    auto guids = parseRootsFile(file.text, *c.routing.rootsFile);
    if (!guids) return guids.error();
    c.routing.roots = std::move(guids).value();
  }

  if (const Given* conf = findGiven(given, "paths.partitions_conf"); conf && c.paths.partitionsConf) {
    std::filesystem::path path(*c.paths.partitionsConf);
    std::filesystem::path dir = std::filesystem::path(conf->keyAt.origin).parent_path();
    if (path.is_relative() && !dir.empty() && conf->keyAt.origin != kCommandLine)
      c.paths.partitionsConf = (dir / path).string();
    if (readRootsFile) {
      FileText file = readSmallFile(*c.paths.partitionsConf);
      if (!file.error.empty())
        return errorAt(conf->value.where, "paths.partitions_conf",
                       *c.paths.partitionsConf + ": " + file.error);
      auto parts = parsePartitionsConf(file.text, *c.paths.partitionsConf);
      if (!parts) return parts.error();
      c.partitionsFile = std::move(parts).value();
    }
  }
  if (auto bad = fabric::checkPartitions(c.allPartitions(), nullptr)) {
    const Given* g = findGiven(given, "partitions");
    if (!g) g = findGiven(given, "paths.partitions_conf");
    return errorAt(g ? g->value.where : Location{}, g ? g->option->key : "", *bad);
  }

  if (c.flap.maxBackoffMs < c.flap.holdDownMs) {
    const Given* g = findGiven(given, "flap.max_backoff_ms");
    if (!g) g = findGiven(given, "flap.hold_down_ms");
    return errorAt(g->value.where, g->option->key,
                   "flap.max_backoff_ms (" + std::to_string(c.flap.maxBackoffMs) +
                       ") must not be less than flap.hold_down_ms (" + std::to_string(c.flap.holdDownMs) +
                       ")");
  }

  if (!findGiven(given, "paths.guid2lid")) c.paths.guid2lid = joinPath(c.paths.stateDir, "guid2lid");
  if (!findGiven(given, "paths.dump_dir")) c.paths.dumpDir = c.paths.stateDir;
  return c;
}

// Records where each document starts; the events themselves are not needed.
class DocumentStarts : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> starts;
  void OnDocumentStart(const YAML::Mark& mark) override { starts.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
  }
  void OnMapEnd() override {}
};

// Refuses a stream of several documents. Not YAML::LoadAll: yaml-cpp 0.7 loops forever there, allocating, on
// a token it cannot start a node with (a stray ',', jbeder/yaml-cpp#1040): it reports an empty document
// without consuming the token, again and again. So at most three documents are parsed here, and a document
// starting where the previous one did is that stuck token. YAML::Load alone would silently take it as empty.
std::optional<Error> checkDocuments(const std::string& input, std::string_view fileName) {
  std::istringstream in(input);
  YAML::Parser parser(in);
  DocumentStarts docs;
  for (int i = 0; i < 3 && parser.HandleNextDocument(docs); ++i) {
    size_t n = docs.starts.size();
    if (n >= 2 && docs.starts[n - 1].pos == docs.starts[n - 2].pos) {
      return errorAt(locationOf(fileName, docs.starts[n - 1]), "", "invalid YAML: unexpected character");
    }
  }
  if (docs.starts.size() > 1)
    return errorAt(locationOf(fileName, docs.starts[1]), "", "more than one YAML document");
  return std::nullopt;
}

Result<Config> parseImpl(std::string_view text, std::string_view fileName,
                         std::span<const Override> overrides, bool readRootsFile) {
  const Location whole{std::string(fileName)};
  // yaml-cpp reports bad input by throwing; nothing may escape this boundary.
  try {
    if (text.size() > kMaxFileBytes) {
      return errorAt(whole, "", "larger than " + std::to_string(kMaxFileBytes) + " bytes");
    }
    const std::string input(text);
    if (auto bad = checkDocuments(input, fileName)) return *bad;
    auto given = collect(YAML::Load(input), fileName);
    if (!given) return given.error();
    auto all = applyOverrides(std::move(given).value(), overrides);
    if (!all) return all.error();
    return build(*all, readRootsFile);
  } catch (const YAML::Exception& e) {
    // yaml-cpp quotes the offending input byte as it is (e.g. "unknown escape character: \x01").
    return errorAt(locationOf(fileName, e.mark), "", "invalid YAML: " + printableText(e.msg));
  } catch (const std::exception& e) {
    return errorAt(whole, "", std::string("cannot load: ") + e.what());
  } catch (...) {
    return errorAt(whole, "", "cannot load: unknown error");
  }
}

}  // namespace

Result<Override> parseOverride(std::string_view keyEqualsValue) {
  size_t eq = keyEqualsValue.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return errorAt(Location{std::string(kCommandLine)}, keyEqualsValue, "expected key=value");
  }
  return Override{std::string(keyEqualsValue.substr(0, eq)), std::string(keyEqualsValue.substr(eq + 1))};
}

Result<Config> parseConfig(std::string_view text, std::string_view fileName,
                           std::span<const Override> overrides) {
  return parseImpl(text, fileName, overrides, false);
}

Result<Config> loadConfigFile(const std::string& path, IfMissing ifMissing,
                              std::span<const Override> overrides) {
  try {
    FileText file = readSmallFile(path);
    if (file.missing && ifMissing == IfMissing::kUseDefaults) return parseImpl("", path, overrides, true);
    if (!file.error.empty()) return errorAt(Location{path}, "", file.error);
    return parseImpl(file.text, path, overrides, true);
  } catch (const std::exception& e) {
    return errorAt(Location{path}, "", std::string("cannot load: ") + e.what());
  }
}

Result<std::vector<Guid>> parseRootsFile(std::string_view text, std::string_view fileName) {
  std::vector<Guid> guids;
  int lineNo = 0;
  while (!text.empty()) {
    ++lineNo;
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    std::string_view content = trim(line.substr(0, line.find('#')));
    if (content.empty()) continue;
    Location at{std::string(fileName), lineNo, static_cast<int>(content.data() - line.data()) + 1};
    auto guid = fabric::parseGuid(content);
    if (!guid || guid->value == 0) {
      return errorAt(at, "", printableKey(content) + " is not a GUID (expected 0x and up to 16 hex digits)");
    }
    if (std::find(guids.begin(), guids.end(), *guid) != guids.end()) {
      return errorAt(at, "", "GUID " + fabric::toString(*guid) + " listed twice");
    }
    guids.push_back(*guid);
  }
  return guids;
}

std::string toYaml(const Config& config) {
  std::string out;
  std::string_view section;
  for (const Option& o : optionTable()) {
    size_t dot = o.key.find('.');
    std::string_view name = o.key;
    if (dot != std::string_view::npos) {
      if (o.key.substr(0, dot) != section) {
        section = o.key.substr(0, dot);
        out += std::string(section) + ":\n";
      }
      name = o.key.substr(dot + 1);
      out += "  ";
    }
    // Roots read from roots_file are not written out: the file stays the source.
    bool fromFile = o.key == "routing.roots" && config.routing.rootsFile;
    out += std::string(name) + ": " + (fromFile ? "[]" : o.format(config)) + "\n";
  }
  return out;
}

std::vector<OptionInfo> optionInfos() {
  std::vector<OptionInfo> infos;
  const Config defaults;
  for (const Option& o : optionTable())
    infos.push_back({std::string(o.key), o.reloadable, o.format(defaults)});
  return infos;
}

ConfigDiff diffConfig(const Config& old, const Config& next) {
  ConfigDiff diff;
  for (const Option& o : optionTable()) {
    std::string a = o.format(old);
    std::string b = o.format(next);
    if (a == b) continue;
    std::string change = std::string(o.key) + ": " + a + " -> " + b;
    if (a.size() + b.size() > 400) change = std::string(o.key) + ": changed";
    if (!o.reloadable) diff.notReloadable.push_back(change);
    if (o.effect) diff.*o.effect = true;
    diff.changed.push_back(std::move(change));
  }
  // The partitions.conf file may change under the same path.
  if (old.partitionsFile != next.partitionsFile && !diff.partitions) {
    diff.partitions = true;
    diff.changed.push_back("paths.partitions_conf: " + next.paths.partitionsConf.value_or("~") + " changed");
  }
  return diff;
}

Result<ConfigDiff> applyReload(std::shared_ptr<const Config>& current, Result<Config> next) {
  assert(current);
  const std::string refused = "reload refused, keeping the running config: ";
  if (!next) return Error{refused + next.error().message};
  ConfigDiff diff = diffConfig(*current, *next);
  if (!diff.notReloadable.empty()) {
    std::string list;
    for (const std::string& change : diff.notReloadable) list += (list.empty() ? "" : "; ") + change;
    return Error{refused + "not reloadable (restart ibsmd to change): " + list};
  }
  current = std::make_shared<const Config>(std::move(next).value());
  return diff;
}

}  // namespace ibsm::config
