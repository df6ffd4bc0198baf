// Loading, validating and reloading the ibsmd configuration (YAML). Every error names where and what:
//   "ibsm.yaml:7:12: routing.lmc: 9 is out of range 0..7"
//   "command line: sm.priority: 16 is out of range 0..15"
// The loader never throws or aborts, whatever the input (it is fuzzed).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "fabric/result.h"

namespace ibsm::config {

using fabric::Error;
using fabric::Result;

// One command-line override of a config key, parsed and validated exactly like the YAML value would be, and
// applied on top of the file. Lists are comma strings ("updn,minhop"). Overriding routing.roots or
// routing.roots_file drops the other one from the file.
struct Override {
  std::string key;    // dotted, "routing.lmc"
  std::string value;  // "2"
};
// "routing.lmc=2" -> {"routing.lmc", "2"}.
Result<Override> parseOverride(std::string_view keyEqualsValue);

// `fileName` is only used in messages and to resolve a relative routing.roots_file. No I/O: roots_file is
// recorded but not read. Empty text (or only comments) = defaults.
Result<Config> parseConfig(std::string_view text, std::string_view fileName,
                           std::span<const Override> overrides = {});

enum class IfMissing { kError, kUseDefaults };
// Reads and parses `path`, then reads routing.roots_file (one GUID per line, '#' comments) into
// routing.roots and paths.partitions_conf (OpenSM's partitions.conf) into partitionsFile. A missing file is
// an error unless `ifMissing` is kUseDefaults (use that for the default path only).
Result<Config> loadConfigFile(const std::string& path, IfMissing ifMissing = IfMissing::kError,
                              std::span<const Override> overrides = {});
// The roots file format; messages are "file:line:column: ...".
Result<std::vector<Guid>> parseRootsFile(std::string_view text, std::string_view fileName);

// The effective config as YAML that parseConfig reads back to an equal Config (when rootsFile is unset).
std::string toYaml(const Config& config);

struct OptionInfo {
  std::string key;           // dotted: "routing.lmc"
  bool reloadable = false;   // may change on SIGHUP without a restart
  std::string defaultValue;  // YAML text: "0", "[ftree, updn, minhop]", "~"
};
// Every option, in the order of the example config.
std::vector<OptionInfo> optionInfos();

// What changed between two configs, and what the daemon has to redo for it.
struct ConfigDiff {
  std::vector<std::string> changed;        // "routing.lmc: 0 -> 2", in option order
  std::vector<std::string> notReloadable;  // the subset of `changed` that needs a restart
  bool reroute = false;       // routing.engines/roots/roots_file/dfly_spread, ar.*: route and program again
  bool reassignLids = false;  // routing.lmc
  bool sweepTimer = false;    // sweep.interval_s
  bool logLevel = false;      // log.level
  bool mad = false;           // mad.*: transaction parameters
  bool sm = false;            // sm.priority, sm.poll_*
  bool rebalance = false;     // routing.rebalance*: the next rebalancing run's policy
  bool flap = false;          // flap.*
  bool health = false;        // perfmgr.*, health.*: the performance manager and the health policy
  bool partitions = false;    // partitions, paths.partitions_conf or that file's contents: re-program P_Keys
  bool empty() const { return changed.empty(); }
};
ConfigDiff diffConfig(const Config& old, const Config& next);

// A reload: replaces `current` with `next` when `next` loaded fine and changes only reloadable options, and
// returns what changed. Otherwise `current` is left as it was and the Error says why, e.g.
// "reload refused: not reloadable (restart ibsmd to change): port_guid: ~ -> 0x0000000000000002".
Result<ConfigDiff> applyReload(std::shared_ptr<const Config>& current, Result<Config> next);

}  // namespace ibsm::config
