// Internal to config/: the table of options (key, default via Config{}, validator, reloadable flag, reload
// effect) and the yaml-free value type the validators read, so YAML and command-line overrides share them.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "config/config_loader.h"

namespace ibsm::config {

// Where a value came from: "ibsm.yaml:7:12", or "command line" (line 0 = no position).
struct Location {
  std::string origin;
  int line = 0;  // 1-based
  int column = 0;
  std::string str() const;
};

// A config value detached from yaml-cpp. List items are kept one level deep only (their own contents are not
// copied), which bounds the work even for self-referencing YAML aliases; an option with `depth` > 1 (a list
// of maps, such as `partitions`) gets that many levels, within a budget of values.
struct RawValue {
  enum class Kind { kNull, kScalar, kList, kMap };
  Kind kind = Kind::kNull;
  std::string text;             // kScalar
  bool quoted = false;          // a quoted or !!str YAML scalar: a string, never a number or bool
  std::vector<RawValue> items;  // kList
  // kMap (only where an option asks for nested values, e.g. `partitions`): keys, where each is, values.
  std::vector<std::string> fieldKeys;
  std::vector<Location> fieldKeyAt;
  std::vector<RawValue> fieldValues;
  Location where;
};

struct Problem {
  Location where;
  std::string message;  // without location and key: "9 is out of range 0..7"
};

struct Option {
  std::string_view key;  // dotted: "routing.lmc"
  bool reloadable = false;
  bool ConfigDiff::*effect = nullptr;  // what a reload must redo when this changes; nullptr = nothing
  // Validates `value` and stores it into the config.
  std::function<std::optional<Problem>(const RawValue& value, Config& config)> parse;
  std::function<std::string(const Config& config)> format;  // YAML text of the value
  std::string range = "";  // "0..7" for numbers (set by the builder from what the validator accepts), else ""
  // From the option's entry in kDocs (options.cc), for the example config and ibsm.yaml(5):
  std::string_view values = "";       // what the value may be when `range` does not say it: "true or false"
  std::string_view description = "";  // sentences, without the range
  std::string_view example = "";      // "": the example config sets the default; else this, commented out
  std::string_view defaultText =
      "";         // "": the default is format(Config{}); else in words: "<state_dir>/guid2lid"
  int depth = 1;  // levels of nested values copied into RawValue (1: a list's items, not their contents)
};

// The documentation of one option; every option has one (tests/config checks both ways).
struct OptionDoc {
  std::string_view key;
  std::string_view values;
  std::string_view description;
  std::string_view example;
  std::string_view defaultText;
};
const std::vector<OptionDoc>& optionDocs();

const std::vector<Option>& optionTable();
const Option* findOption(std::string_view key);
bool isSection(std::string_view name);  // "routing", "sm", ...
// `key` as it may appear in a message: unchanged when it is a sane identifier, else quoted and escaped.
std::string printableKey(std::string_view key);
// text with every byte outside printable ASCII written as \xNN: no input puts control bytes into a message.
std::string printableText(std::string_view text);
// The closest known key or section to a misspelt one, "" when none is close.
std::string suggestKey(std::string_view unknown);

}  // namespace ibsm::config
