#include "config/config_loader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

namespace ibsm::config {
namespace {

namespace fs = std::filesystem;

// The example ships next to the sources; __FILE__ is absolute in CMake builds.
const fs::path kExample = fs::path(__FILE__).parent_path() / "../../config/ibsm.yaml.example";

std::string readText(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string errorOf(std::string_view text, std::span<const Override> overrides = {}) {
  auto r = parseConfig(text, "ibsm.yaml", overrides);
  return r.ok() ? "(parsed fine)" : r.error().message;
}

// Every key set to something other than its default.
constexpr std::string_view kFull = R"(port_guid: 0x0002c903000b2240
routing:
  engines: updn, minhop
  roots: [0x10, 0x20]
  lmc: 2
  threads: 1024
  rebalance: full
  rebalance_min_gain_pct: 100
  dfly_spread: true
sweep:
  interval_s: 0
sm:
  priority: 15
  key: 0xdeadbeef00000001
  m_key: 0x1122334455667788
  m_key_protection_level: 3
  m_key_lease_period: 65535
  poll_interval_ms: 250
  poll_retries: 5
mad:
  window: 1024
  timeout_ms: 60000
  retries: 0
paths:
  state_dir: /srv/ibsm
  guid2lid: /srv/lids
  dump_dir: /tmp/dumps
dumps:
  lfts: on_change
log:
  level: debug
control:
  socket: /tmp/ibsm.sock
  group: ibadmin
ar:
  enable: false
  group_cap: 1
qos:
  vls: 8
  vl_arb_weight: 255
flap:
  hold_down_ms: 0
  max_backoff_ms: 86400000
perfmgr:
  interval_s: 5
health:
  action: isolate
  thresholds: {symbol_error: 3, port_xmit_wait: 1000}
  max_isolated: 2
  clean_period_s: 30
)";

// qos.vls: auto (the default: what the links offer, at most 8) or an explicit number of VLs.
TEST(ConfigLoader, QosVlsIsAutoOrANumber) {
  auto a = parseConfig("qos:\n  vls: auto\n", "ibsm.yaml");
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->qos.vls, QosConfig::kAuto);
  auto one = parseConfig("qos:\n  vls: 1\n", "ibsm.yaml");
  ASSERT_TRUE(one.ok()) << one.error().message;
  EXPECT_EQ(one->qos.vls, 1u);
  auto back = parseConfig(toYaml(*one), "dump.yaml");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->qos.vls, 1u);
}

TEST(ConfigLoader, EmptyAndCommentOnlyTextGiveDefaults) {
  for (std::string_view text : {"", "# nothing here\n", "---\n", "routing:\n# lmc: 3\n"}) {
    auto r = parseConfig(text, "ibsm.yaml");
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(*r, Config{}) << text;
  }
  Config d;
  EXPECT_FALSE(d.portGuid);
  EXPECT_EQ(d.routing.engines, (std::vector<std::string>{"ftree", "dfly", "dor|dfsp", "updn", "minhop"}));
  EXPECT_EQ(d.qos.vls, QosConfig::kAuto);
  EXPECT_EQ(d.routing.lmc, 0);
  EXPECT_EQ(d.routing.threads, std::max(1u, std::thread::hardware_concurrency()));  // the online cores
  EXPECT_EQ(d.sweep.intervalS, 10u);
  EXPECT_EQ(d.mad.window, 32u);
  EXPECT_EQ(d.paths.guid2lid, "/var/lib/ibsm/guid2lid");
  EXPECT_EQ(d.control.socket, "/run/ibsm/ibsm.sock");
  EXPECT_EQ(d.log.level, LogLevel::kInfo);
  EXPECT_EQ(d.dumps.lfts, LftDumps::kOnRequest);  // opensm-lfts.dump grows with switches x LIDs
}

TEST(ConfigLoader, ParsesEveryKey) {
  auto r = parseConfig(kFull, "ibsm.yaml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Config& c = *r;
  EXPECT_EQ(c.portGuid, Guid{0x0002c903000b2240});
  EXPECT_EQ(c.routing.engines, (std::vector<std::string>{"updn", "minhop"}));
  EXPECT_EQ(c.routing.roots, (std::vector<Guid>{Guid{0x10}, Guid{0x20}}));
  EXPECT_FALSE(c.routing.rootsFile);
  EXPECT_EQ(c.routing.lmc, 2);
  EXPECT_EQ(c.routing.threads, 1024u);
  EXPECT_EQ(c.routing.rebalance, RoutingConfig::Rebalance::kFull);
  EXPECT_EQ(c.routing.rebalanceMinGainPct, 100u);
  EXPECT_TRUE(c.routing.dflySpread);
  EXPECT_EQ(c.sweep.intervalS, 0u);
  EXPECT_EQ(c.sm.priority, 15);
  EXPECT_EQ(c.sm.key, 0xdeadbeef00000001u);
  EXPECT_EQ(c.sm.mKey, 0x1122334455667788u);
  EXPECT_FALSE(c.sm.mKeyRandom);
  EXPECT_EQ(c.sm.mKeyProtectBits, 3);
  EXPECT_EQ(c.sm.mKeyLeaseS, 65535);
  EXPECT_EQ(c.sm.pollIntervalMs, 250u);
  EXPECT_EQ(c.sm.pollRetries, 5u);
  EXPECT_EQ(c.mad.window, 1024u);
  EXPECT_EQ(c.mad.timeoutMs, 60000u);
  EXPECT_EQ(c.mad.retries, 0u);
  EXPECT_EQ(c.paths.stateDir, "/srv/ibsm");
  EXPECT_EQ(c.paths.guid2lid, "/srv/lids");
  EXPECT_EQ(c.paths.dumpDir, "/tmp/dumps");
  EXPECT_EQ(c.dumps.lfts, LftDumps::kOnChange);
  EXPECT_EQ(c.log.level, LogLevel::kDebug);
  EXPECT_EQ(c.control.socket, "/tmp/ibsm.sock");
  EXPECT_EQ(c.control.group, "ibadmin");
  EXPECT_FALSE(c.ar.enable);
  EXPECT_EQ(c.ar.groupCap, 1u);
  EXPECT_EQ(c.qos.vls, 8u);
  EXPECT_EQ(c.qos.vlArbWeight, 255u);
  EXPECT_EQ(c.flap.holdDownMs, 0u);
  EXPECT_EQ(c.flap.maxBackoffMs, 86400000u);
  EXPECT_EQ(c.perfmgr.intervalS, 5u);
  EXPECT_EQ(c.health.action, HealthAction::kIsolate);
  EXPECT_EQ(c.health.thresholds[0], 3u);                           // symbol_error
  EXPECT_EQ(c.health.thresholds[1], 2u);                           // link_error_recovery: default kept
  EXPECT_EQ(c.health.thresholds[kHealthCounterCount - 1], 1000u);  // port_xmit_wait
  EXPECT_EQ(c.health.maxIsolated, 2u);
  EXPECT_EQ(c.health.cleanPeriodS, 30u);
}

TEST(ConfigLoader, MkeyIsOffAFixedValueOrRandom) {
  EXPECT_EQ(Config{}.sm.mKey, 0u);
  EXPECT_FALSE(Config{}.sm.mKeyRandom);
  auto r = parseConfig("sm:\n  m_key: \"random\"\n", "ibsm.yaml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->sm.mKeyRandom);
  r = parseConfig("sm:\n  m_key: random\n", "ibsm.yaml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->sm.mKeyRandom);
  EXPECT_EQ(r->sm.mKey, 0u);
  EXPECT_NE(toYaml(*r).find("  m_key: random\n"), std::string::npos);
  // The command line wins, in either direction.
  const Override fixed[] = {{"sm.m_key", "0x42"}};
  r = parseConfig("sm:\n  m_key: random\n", "ibsm.yaml", fixed);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->sm.mKeyRandom);
  EXPECT_EQ(r->sm.mKey, 0x42u);
  // Not reloadable: the ports hold the old key.
  auto current = std::make_shared<const Config>();
  auto refused = applyReload(current, parseConfig("sm:\n  m_key: 0x42\n", "ibsm.yaml"));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("sm.m_key"), std::string::npos);
}

TEST(ConfigLoader, ListsAndScalarsInTheirOtherForms) {
  auto r =
      parseConfig("routing:\n  engines: [minhop]\n  roots: 0x10, 0x20\n  roots_file: ~\nar:\n  enable: off\n",
                  "ibsm.yaml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->routing.engines, std::vector<std::string>{"minhop"});
  EXPECT_EQ(r->routing.roots, (std::vector<Guid>{Guid{0x10}, Guid{0x20}}));
  EXPECT_FALSE(r->ar.enable);
  // A flat dotted key is the same key as the nested one.
  auto flat = parseConfig("routing.lmc: 3\n", "ibsm.yaml");
  ASSERT_TRUE(flat.ok()) << flat.error().message;
  EXPECT_EQ(flat->routing.lmc, 3);
  EXPECT_EQ(errorOf("routing.lmc: 3\nrouting:\n  lmc: 4\n"),
            "ibsm.yaml:3:3: routing.lmc: duplicate key (first given at line 1)");
}

TEST(ConfigLoader, DerivedPathsFollowStateDir) {
  auto r = parseConfig("paths:\n  state_dir: /srv/ibsm/\n", "ibsm.yaml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->paths.guid2lid, "/srv/ibsm/guid2lid");
  EXPECT_EQ(r->paths.dumpDir, "/srv/ibsm/");
}

struct BadCase {
  std::string text;
  std::string_view error;
};

TEST(ConfigLoader, BadConfigsNameFileLineColumnAndKey) {
  const BadCase cases[] = {
      {"routing:\n  foo: 1\n", "ibsm.yaml:2:3: routing.foo: unknown key"},
      {"routing:\n  lcm: 2\n", "ibsm.yaml:2:3: routing.lcm: unknown key (did you mean routing.lmc?)"},
      {"sweep:\n  lmc: 2\n", "ibsm.yaml:2:3: sweep.lmc: unknown key (did you mean routing.lmc?)"},
      {"rooting:\n  lmc: 1\n", "ibsm.yaml:1:1: rooting: unknown key (did you mean routing?)"},
      {"sweep:\n  interval_s: ten\n", "ibsm.yaml:2:15: sweep.interval_s: expected an integer, got \"ten\""},
      {"mad:\n  window: \"32\"\n", "ibsm.yaml:2:11: mad.window: expected an integer, got the string \"32\""},
      {"routing:\n  lmc:\n", "ibsm.yaml:2:3: routing.lmc: expected an integer, got nothing"},
      {"routing:\n  lmc: [1]\n", "ibsm.yaml:2:8: routing.lmc: expected an integer, got a list"},
      {"# header\nrouting:\n  engines: [ftree]\n  lmc: 9\n",
       "ibsm.yaml:4:8: routing.lmc: 9 is out of range 0..7"},
      {"sm:\n  priority: 16\n", "ibsm.yaml:2:13: sm.priority: 16 is out of range 0..15"},
      {"routing:\n  threads: 0\n", "ibsm.yaml:2:12: routing.threads: 0 is out of range 1..1024"},
      {"routing:\n  threads: -4\n", "ibsm.yaml:2:12: routing.threads: -4 is out of range 1..1024"},
      {"routing:\n  threads: all\n", "ibsm.yaml:2:12: routing.threads: expected an integer, got \"all\""},
      {"routing:\n  rebalance: sometimes\n",
       "ibsm.yaml:2:14: routing.rebalance: expected off, incremental or full, got \"sometimes\""},
      {"sm:\n  m_key_protection_level: 4\n",
       "ibsm.yaml:2:27: sm.m_key_protection_level: 4 is out of range 0..3"},
      {"sm:\n  m_key_lease_period: 65536\n",
       "ibsm.yaml:2:23: sm.m_key_lease_period: 65536 is out of range 0..65535"},
      {"sm:\n  m_key: secret\n",
       "ibsm.yaml:2:10: sm.m_key: expected a 64-bit M_Key (0 = off) or random, got \"secret\""},
      {"sm:\n  m_key: -1\n",
       "ibsm.yaml:2:10: sm.m_key: expected a 64-bit M_Key (0 = off) or random, got \"-1\""},
      {"mad:\n  window: 0\n", "ibsm.yaml:2:11: mad.window: 0 is out of range 1..1024"},
      {"mad:\n  window: 1025\n", "ibsm.yaml:2:11: mad.window: 1025 is out of range 1..1024"},
      {"health:\n  action: disable\n",
       "ibsm.yaml:2:11: health.action: expected report or isolate, got \"disable\""},
      {"health:\n  thresholds:\n    symbol_errors: 5\n",
       "ibsm.yaml:3:5: health.thresholds: unknown counter \"symbol_errors\" (known: symbol_error, "
       "link_error_recovery, link_downed, port_rcv_errors, ...)"},
      {"health:\n  thresholds: {link_downed: -1}\n",
       "ibsm.yaml:2:29: health.thresholds: -1 is out of range 0..1000000000"},
      {"health:\n  thresholds: 5\n",
       "ibsm.yaml:2:15: health.thresholds: expected a map of counter names to increases per minute, got "
       "\"5\""},
      {"health:\n  clean_period_s: 0\n",
       "ibsm.yaml:2:19: health.clean_period_s: 0 is out of range 1..2592000"},
      {"mad:\n  retries: -1\n", "ibsm.yaml:2:12: mad.retries: -1 is out of range 0..20"},
      {"sweep:\n  interval_s: 99999999999999999999999\n",
       "ibsm.yaml:2:15: sweep.interval_s: 99999999999999999999999 is out of range 0..86400"},
      {"port_guid: 0xZZ\n",
       "ibsm.yaml:1:12: port_guid: 0xZZ is not a GUID (expected 0x and up to 16 hex digits)"},
      {"port_guid: 0x0\n", "ibsm.yaml:1:12: port_guid: 0x0 is not a valid GUID (zero)"},
      {"routing:\n  roots: [0x1, bogus]\n",
       "ibsm.yaml:2:16: routing.roots: bogus is not a GUID (expected 0x and up to 16 hex digits)"},
      {"routing:\n  roots: [0x1, 0x01]\n",
       "ibsm.yaml:2:16: routing.roots: GUID 0x0000000000000001 listed twice"},
      {"routing:\n  engines: [ftree, ftre]\n",
       "ibsm.yaml:2:20: routing.engines: unknown engine \"ftre\" (known: minhop, updn, ftree, dfsp, dor, "
       "dfly)"},
      {"routing:\n  engines: updn,,minhop\n",
       "ibsm.yaml:2:12: routing.engines: empty item in \"updn,,minhop\""},
      {"routing:\n  engines: [updn, updn]\n",
       "ibsm.yaml:2:19: routing.engines: engine \"updn\" listed twice"},
      {"routing:\n  engines: []\n",
       "ibsm.yaml:2:12: routing.engines: empty engine list: name at least one of minhop, updn, ftree, dfsp, "
       "dor, dfly"},
      {"sm:\n  priority: 1\n  priority: 2\n",
       "ibsm.yaml:3:3: sm.priority: duplicate key (first given at line 2)"},
      {"log:\n  level: info\nlog:\n  level: warn\n",
       "ibsm.yaml:3:1: log: duplicate key (first given at line 1)"},
      {"routing:\n  engines: [ftree\nsweep: 1\n",
       "ibsm.yaml:3:6: invalid YAML: end of sequence flow not found"},
      {"routing:\n\tlmc: 1\n", "ibsm.yaml:2:5: invalid YAML: illegal map value"},
      {"routing:\n  roots: [0x1]\n  roots_file: /etc/ibsm/roots\n",
       "ibsm.yaml:3:15: routing.roots_file: cannot be combined with routing.roots (given at ibsm.yaml:2:3); "
       "give "
       "only one of them"},
      {"- port_guid: 0x1\n", "ibsm.yaml:1:1: the top level must be a map of keys, got a list"},
      {"just a string\n", "ibsm.yaml:1:1: the top level must be a map of keys, got a value"},
      {"routing: 5\n", "ibsm.yaml:1:10: routing: expected a section of keys, got a value"},
      {"[a]: 1\n", "ibsm.yaml:1:1: keys must be names, got a list"},
      {"ar:\n  enable: maybe\n", "ibsm.yaml:2:11: ar.enable: expected true or false, got \"maybe\""},
      {"routing:\n  dfly_spread: 1\n",
       "ibsm.yaml:2:16: routing.dfly_spread: expected true or false, got \"1\""},
      {"routing:\n  dfly_spread: [true]\n",
       "ibsm.yaml:2:16: routing.dfly_spread: expected true or false, got a list"},
      {"dumps:\n  lfts: always\n",
       "ibsm.yaml:2:9: dumps.lfts: expected on_request or on_change, got \"always\""},
      {"# the LFT dump\ndumps:\n  lfts: [on_change]\n",
       "ibsm.yaml:3:9: dumps.lfts: expected on_request or on_change, got a list"},
      {"dumps:\n  lfts:\n", "ibsm.yaml:2:3: dumps.lfts: expected on_request or on_change, got nothing"},
      {"dumps:\n  lft: on_change\n", "ibsm.yaml:2:3: dumps.lft: unknown key (did you mean dumps.lfts?)"},
      {"log:\n  level: verbose\n",
       "ibsm.yaml:2:10: log.level: expected error, warn, info or debug, got \"verbose\""},
      {"paths:\n  state_dir: var/lib\n",
       "ibsm.yaml:2:14: paths.state_dir: expected an absolute path, got \"var/lib\""},
      {"control:\n  group: 9wheel\n", "ibsm.yaml:2:10: control.group: 9wheel is not a valid group name"},
      {"metrics:\n  listen: localhost:9464\n",
       "ibsm.yaml:2:11: metrics.listen: \"localhost:9464\" is not ADDR:PORT (the address must be an IPv4 "
       "address such as 127.0.0.1 or 0.0.0.0), e.g. 127.0.0.1:9464"},
      {"metrics:\n  listen: 127.0.0.1\n",
       "ibsm.yaml:2:11: metrics.listen: \"127.0.0.1\" is not ADDR:PORT (no port), e.g. 127.0.0.1:9464"},
      {"metrics:\n  listen: 127.0.0.1:65536\n",
       "ibsm.yaml:2:11: metrics.listen: \"127.0.0.1:65536\" is not ADDR:PORT (the port must be a number "
       "from 0 to 65535), e.g. 127.0.0.1:9464"},
      {"metrics:\n  listen: 10.0.0.1:x\n",
       "ibsm.yaml:2:11: metrics.listen: \"10.0.0.1:x\" is not ADDR:PORT (the port must be a number from 0 to "
       "65535), e.g. 127.0.0.1:9464"},
      {"metrics:\n  listen: \"[::1]:9464\"\n",
       "ibsm.yaml:2:11: metrics.listen: \"[::1]:9464\" is not ADDR:PORT (IPv6 is not supported: the HTTP "
       "server (civetweb) is built without it), e.g. 127.0.0.1:9464"},
      {"metrics:\n  listen: [a, b]\n", "ibsm.yaml:2:11: metrics.listen: expected ADDR:PORT, got a list"},
      {"control:\n  socket: /" + std::string(120, 's') + "\n",
       "ibsm.yaml:2:11: control.socket: socket path is 121 bytes, longer than 107"},
      {"flap:\n  hold_down_ms: 5000\n  max_backoff_ms: 1000\n",
       "ibsm.yaml:3:19: flap.max_backoff_ms: flap.max_backoff_ms (1000) must not be less than "
       "flap.hold_down_ms "
       "(5000)"},
      {"qos:\n  vls: 16\n", "ibsm.yaml:2:8: qos.vls: 16 is out of range 1..15"},
      {"qos:\n  vls: many\n", "ibsm.yaml:2:8: qos.vls: expected auto or an integer 1..15, got \"many\""},
      {"routing:\n  engines: [ftree, dor|lash]\n",
       "ibsm.yaml:2:20: routing.engines: unknown engine \"lash\" (known: minhop, updn, ftree, dfsp, dor, "
       "dfly)"},
      {"flap:\n  hold_down_ms: 70000\n",
       "ibsm.yaml:2:17: flap.hold_down_ms: flap.max_backoff_ms (60000) must not be less than "
       "flap.hold_down_ms "
       "(70000)"},
      {"sweep:\n  interval_s: 5\n---\nsweep:\n  interval_s: 6\n",
       "ibsm.yaml:3:1: more than one YAML document"},
  };
  for (const BadCase& c : cases) EXPECT_EQ(errorOf(c.text), c.error) << c.text;
}

TEST(ConfigLoader, MetricsListenIsOffByDefaultAndTakesAnIpv4AddressAndPort) {
  auto off = parseConfig("", "ibsm.yaml");
  ASSERT_TRUE(off) << off.error().message;
  EXPECT_EQ(off->metrics.listen, "");
  for (std::string v : {"127.0.0.1:9464", "0.0.0.0:0", "\"10.1.2.3:65535\"", "\"\"", "~"}) {
    auto c = parseConfig("metrics:\n  listen: " + v + "\n", "ibsm.yaml");
    ASSERT_TRUE(c) << v << ": " << c.error().message;
    std::string want = v == "~" ? "" : v;
    if (want.size() >= 2 && want.front() == '"') want = want.substr(1, want.size() - 2);
    EXPECT_EQ(c->metrics.listen, want);
  }
}

TEST(ConfigLoader, HostileInputIsAnErrorNotACrash) {
  std::string deep(100000, '[');
  std::string nul = std::string("control:\n  group: \"a\\0b\"\n");
  EXPECT_EQ(errorOf(nul), "ibsm.yaml:2:10: control.group: contains a NUL character");
  EXPECT_EQ(errorOf("routing:\n  engines: &e [*e]\n"),
            "ibsm.yaml:2:12: routing.engines: expected an engine name, got a list");
  EXPECT_EQ(errorOf("\"\\x01\": 1\n"), "ibsm.yaml:1:1: \"\\x01\": unknown key");
  EXPECT_NE(errorOf(deep).find("ibsm.yaml"), std::string::npos);
  EXPECT_EQ(errorOf(std::string(2 << 20, ' ')), "ibsm.yaml: larger than 1048576 bytes");
  // yaml-cpp 0.7's LoadAll loops forever, allocating, on these; YAML::Load takes the first as empty.
  EXPECT_EQ(errorOf(","), "ibsm.yaml:1:1: invalid YAML: unexpected character");
  EXPECT_EQ(errorOf("- ftree\n,\n"), "ibsm.yaml:2:1: invalid YAML: unexpected character");
}

// Random byte edits of the example: every outcome is a Config or a printable error that names the file.
TEST(ConfigLoader, MutatedExampleNeverThrows) {
  const std::string example = readText(kExample);
  ASSERT_FALSE(example.empty());
  std::mt19937 rng(12345);
  const std::string alphabet = ":-[]{},&*!|>'\"#%@` \n\t0x9azZ";
  for (int i = 0; i < 2000; ++i) {
    std::string text = example;
    for (int edits = 1 + static_cast<int>(rng() % 4); edits > 0; --edits) {
      size_t at = rng() % text.size();
      char c = rng() % 2 ? alphabet[rng() % alphabet.size()] : static_cast<char>(rng() % 256);
      if (rng() % 3 == 0)
        text.erase(at, 1 + rng() % 8);
      else
        text.insert(at, 1, c);
    }
    auto r = parseConfig(text, "ibsm.yaml");
    if (!r.ok()) {
      const std::string& m = r.error().message;
      EXPECT_TRUE(m.starts_with("ibsm.yaml")) << m;
      EXPECT_TRUE(std::all_of(m.begin(), m.end(), [](char c) { return c >= 0x20 && c < 0x7f; })) << m;
    }
  }
}

// yaml-cpp's own message quotes the offending byte as it is; the error shows it escaped.
TEST(ConfigLoader, YamlErrorWithAControlByteIsPrintable) {
  auto r = parseConfig(std::string("sm:\n  m_key: \"\\\x01\"\n"), "ibsm.yaml");
  ASSERT_FALSE(r.ok());
  const std::string& m = r.error().message;
  EXPECT_TRUE(m.starts_with("ibsm.yaml:2:")) << m;
  EXPECT_NE(m.find("invalid YAML: unknown escape character: \\x01"), std::string::npos) << m;
  EXPECT_TRUE(std::all_of(m.begin(), m.end(), [](char c) { return c >= 0x20 && c < 0x7f; })) << m;
}

TEST(ConfigLoader, ExampleParsesToDefaultsAndMentionsEveryKey) {
  const std::string example = readText(kExample);
  auto r = parseConfig(example, "ibsm.yaml.example");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, Config{});
  for (const OptionInfo& info : optionInfos()) {
    std::string leaf = info.key.substr(info.key.find('.') + 1);
    EXPECT_NE(example.find(" " + leaf + ": "), std::string::npos) << info.key;
  }
}

TEST(ConfigLoader, ToYamlRoundTrips) {
  auto full = parseConfig(kFull, "ibsm.yaml");
  ASSERT_TRUE(full.ok());
  Config odd;  // strings that need YAML quoting
  odd.control.socket = "/tmp/a b\"c: #d\\";
  odd.paths.dumpDir = "/tmp/\xc3\xbc\x01";
  odd.routing.rootsFile = "roots list.txt";
  for (const Config& c : {Config{}, *full, odd}) {
    auto back = parseConfig(toYaml(c), "dump.yaml");
    ASSERT_TRUE(back.ok()) << back.error().message << "\n" << toYaml(c);
    EXPECT_EQ(*back, c) << toYaml(c);
  }
}

TEST(ConfigLoader, OptionInfosCarryReloadableFlagsAndDefaults) {
  std::map<std::string, OptionInfo> byKey;
  for (const OptionInfo& info : optionInfos()) byKey[info.key] = info;
  EXPECT_EQ(byKey.size(), 43u);
  EXPECT_EQ(byKey["routing.dfly_spread"].defaultValue, "false");
  EXPECT_TRUE(byKey["routing.dfly_spread"].reloadable);
  EXPECT_EQ(byKey["sm.sa_key"].defaultValue, "0x0000000000000001");
  EXPECT_FALSE(byKey["sm.sa_key"].reloadable);
  EXPECT_EQ(byKey["health.start_threshold"].defaultValue, "1000");
  EXPECT_TRUE(byKey["health.start_threshold"].reloadable);
  EXPECT_TRUE(byKey["routing.rebalance"].reloadable);
  EXPECT_EQ(byKey["routing.rebalance"].defaultValue, "incremental");
  EXPECT_EQ(byKey["routing.rebalance_min_gain_pct"].defaultValue, "1");
  EXPECT_FALSE(byKey["routing.threads"].reloadable);
  EXPECT_TRUE(byKey["health.action"].reloadable);
  EXPECT_EQ(byKey["health.action"].defaultValue, "report");
  EXPECT_EQ(byKey["perfmgr.interval_s"].defaultValue, "60");
  EXPECT_TRUE(byKey["partitions"].reloadable);
  EXPECT_EQ(byKey["partitions"].defaultValue, "[]");
  EXPECT_TRUE(byKey["qos.vls"].reloadable);
  EXPECT_EQ(byKey["qos.vls"].defaultValue, "auto");
  EXPECT_FALSE(byKey["port_guid"].reloadable);
  EXPECT_FALSE(byKey["control.socket"].reloadable);
  EXPECT_FALSE(byKey["paths.state_dir"].reloadable);
  EXPECT_TRUE(byKey["routing.engines"].reloadable);
  EXPECT_TRUE(byKey["routing.lmc"].reloadable);
  EXPECT_TRUE(byKey["log.level"].reloadable);
  EXPECT_TRUE(byKey["dumps.lfts"].reloadable);
  EXPECT_EQ(byKey["dumps.lfts"].defaultValue, "on_request");
  EXPECT_EQ(byKey["routing.engines"].defaultValue, "[ftree, dfly, dor|dfsp, updn, minhop]");
  EXPECT_EQ(byKey["port_guid"].defaultValue, "~");
  EXPECT_EQ(byKey["mad.timeout_ms"].defaultValue, "100");
}

TEST(ConfigOverrides, AppliedOnTopAndValidatedTheSameWay) {
  auto lmc = parseOverride("routing.lmc=2");
  ASSERT_TRUE(lmc.ok());
  EXPECT_EQ(lmc->key, "routing.lmc");
  EXPECT_EQ(lmc->value, "2");
  EXPECT_EQ(parseOverride("routing.lmc").error().message, "command line: routing.lmc: expected key=value");

  const Override ok[] = {{"routing.lmc", "2"},
                         {"routing.engines", "updn,minhop"},
                         {"log.level", "debug"},
                         {"log.level", "warn"}};
  auto r = parseConfig("routing:\n  lmc: 1\n", "ibsm.yaml", ok);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->routing.lmc, 2);
  EXPECT_EQ(r->routing.engines, (std::vector<std::string>{"updn", "minhop"}));
  EXPECT_EQ(r->log.level, LogLevel::kWarn);  // the last one wins

  const Override range[] = {{"sm.priority", "16"}};
  EXPECT_EQ(errorOf("", range), "command line: sm.priority: 16 is out of range 0..15");
  const Override threads[] = {{"routing.threads", "0"}};  // ibsmd --threads 0
  EXPECT_EQ(errorOf("routing:\n  threads: 2\n", threads),
            "command line: routing.threads: 0 is out of range 1..1024");
  const Override typo[] = {{"sm.prority", "1"}};
  EXPECT_EQ(errorOf("", typo), "command line: sm.prority: unknown key (did you mean sm.priority?)");
  // ibsmd --set dumps.lfts=on_change, over a file that asks for the default.
  auto set = parseOverride("dumps.lfts=on_change");
  ASSERT_TRUE(set.ok()) << set.error().message;
  const Override lfts[] = {*set};
  auto d = parseConfig("dumps:\n  lfts: on_request\n", "ibsm.yaml", lfts);
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->dumps.lfts, LftDumps::kOnChange);
  const Override badLfts[] = {{"dumps.lfts", "yes"}};
  EXPECT_EQ(errorOf("", badLfts), "command line: dumps.lfts: expected on_request or on_change, got \"yes\"");
  // A file value that the override replaces is not validated.
  EXPECT_EQ(errorOf("routing:\n  lmc: 9\n", ok), "(parsed fine)");
}

TEST(ConfigOverrides, RootsOverrideReplacesRootsFileOfTheFile) {
  const Override roots[] = {{"routing.roots", "0x5"}};
  auto r = parseConfig("routing:\n  roots_file: /etc/ibsm/roots\n", "ibsm.yaml", roots);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->routing.roots, std::vector<Guid>{Guid{5}});
  EXPECT_FALSE(r->routing.rootsFile);
  const Override both[] = {{"routing.roots", "0x5"}, {"routing.roots_file", "/r"}};
  EXPECT_EQ(
      errorOf("", both),
      "command line: routing.roots_file: cannot be combined with routing.roots (given at command line); give "
      "only one of them");
}

// Files in a fresh directory, removed afterwards.
class ConfigFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "ibsm_config_test.XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, std::string_view text) {
    std::ofstream(dir_ / name) << text;
    return (dir_ / name).string();
  }
  fs::path dir_;
};

TEST_F(ConfigFiles, MissingFileIsDefaultsOnlyWhenItIsTheDefaultPath) {
  std::string path = (dir_ / "absent.yaml").string();
  auto defaults = loadConfigFile(path, IfMissing::kUseDefaults);
  ASSERT_TRUE(defaults.ok()) << defaults.error().message;
  EXPECT_EQ(*defaults, Config{});
  auto explicitPath = loadConfigFile(path, IfMissing::kError);
  ASSERT_FALSE(explicitPath.ok());
  EXPECT_EQ(explicitPath.error().message, path + ": cannot open: No such file or directory");
  EXPECT_EQ(loadConfigFile(dir_.string()).error().message, dir_.string() + ": not a regular file");
}

TEST_F(ConfigFiles, LoadsFileAndRelativeRootsFile) {
  write("roots.txt", "# spine switches\n0x10\n  0x20  # second\n\n");
  std::string path = write("ibsm.yaml", "routing:\n  roots_file: roots.txt\n  lmc: 1\n");
  auto r = loadConfigFile(path);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->routing.roots, (std::vector<Guid>{Guid{0x10}, Guid{0x20}}));
  EXPECT_EQ(r->routing.rootsFile, (dir_ / "roots.txt").string());
  EXPECT_EQ(r->routing.lmc, 1);
  // parseConfig does no I/O: the file is recorded, not read.
  auto pure = parseConfig("routing:\n  roots_file: roots.txt\n", path);
  ASSERT_TRUE(pure.ok());
  EXPECT_TRUE(pure->routing.roots.empty());
}

TEST_F(ConfigFiles, RootsFileErrorsNameTheirFileAndLine) {
  std::string roots = write("roots.txt", "0x10\n\n  nonsense\n");
  std::string path = write("ibsm.yaml", "routing:\n  roots_file: roots.txt\n");
  EXPECT_EQ(loadConfigFile(path).error().message,
            roots + ":3:3: nonsense is not a GUID (expected 0x and up to 16 hex digits)");
  std::string missing = write("ibsm2.yaml", "routing:\n  roots_file: none.txt\n");
  EXPECT_EQ(loadConfigFile(missing).error().message,
            missing + ":2:15: routing.roots_file: " + (dir_ / "none.txt").string() +
                ": cannot open: No such file or directory");
  EXPECT_EQ(parseRootsFile("0x1\n0x01\n", "r").error().message,
            "r:2:1: GUID 0x0000000000000001 listed twice");
}

TEST(ConfigReload, RefusesNonReloadableChangeAndKeepsTheOldConfig) {
  auto running = std::make_shared<const Config>();
  const Config* before = running.get();
  auto next = parseConfig("port_guid: 0x2\ncontrol:\n  socket: /tmp/s\nrouting:\n  lmc: 1\n", "ibsm.yaml");
  ASSERT_TRUE(next.ok());
  auto r = applyReload(running, next);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "reload refused, keeping the running config: not reloadable (restart ibsmd to change): "
            "port_guid: ~ -> 0x0000000000000002; control.socket: /run/ibsm/ibsm.sock -> /tmp/s");
  EXPECT_EQ(running.get(), before);
  EXPECT_EQ(*running, Config{});
}

TEST(ConfigReload, InvalidNewConfigKeepsTheOldConfig) {
  auto running = std::make_shared<const Config>();
  const Config* before = running.get();
  auto r = applyReload(running, parseConfig("routing:\n  lmc: 9\n", "ibsm.yaml"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "reload refused, keeping the running config: ibsm.yaml:2:8: routing.lmc: 9 is out of range 0..7");
  EXPECT_EQ(running.get(), before);
}

// Turning dfly's non-minimal routes off (or on) by a reload routes the fabric again.
TEST(ConfigReload, DflySpreadChangeReroutes) {
  auto running = std::make_shared<const Config>();
  EXPECT_FALSE(running->routing.dflySpread);
  auto r = applyReload(running, parseConfig("routing:\n  dfly_spread: true\n", "ibsm.yaml"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->changed, (std::vector<std::string>{"routing.dfly_spread: false -> true"}));
  EXPECT_TRUE(r->reroute);
  EXPECT_FALSE(r->reassignLids || r->sweepTimer || r->mad || r->sm || r->flap || r->rebalance);
  EXPECT_TRUE(running->routing.dflySpread);
}

TEST(ConfigReload, ReloadableChangeIsAppliedAndReportsWhatToRedo) {
  auto running = std::make_shared<const Config>();
  auto r =
      applyReload(running, parseConfig("routing:\n  engines: [updn]\nlog:\n  level: debug\n", "ibsm.yaml"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->changed,
            (std::vector<std::string>{"routing.engines: [ftree, dfly, dor|dfsp, updn, minhop] -> [updn]",
                                      "log.level: info -> debug"}));
  EXPECT_TRUE(r->reroute);
  EXPECT_TRUE(r->logLevel);
  EXPECT_FALSE(r->reassignLids || r->sweepTimer || r->mad || r->sm || r->flap);
  EXPECT_EQ(running->routing.engines, std::vector<std::string>{"updn"});

  Config lmc;
  lmc.routing.lmc = 1;
  lmc.sweep.intervalS = 0;
  ConfigDiff d = diffConfig(Config{}, lmc);
  EXPECT_TRUE(d.reassignLids);
  EXPECT_TRUE(d.sweepTimer);
  EXPECT_FALSE(d.reroute);
  EXPECT_TRUE(diffConfig(lmc, lmc).empty());

  // dumps.lfts, like paths.dump_dir, changes on SIGHUP and makes nothing else redo work.
  auto fresh = std::make_shared<const Config>();
  auto dumps = applyReload(fresh, parseConfig("dumps:\n  lfts: on_change\n", "ibsm.yaml"));
  ASSERT_TRUE(dumps.ok()) << dumps.error().message;
  EXPECT_EQ(dumps->changed, std::vector<std::string>{"dumps.lfts: on_request -> on_change"});
  EXPECT_TRUE(dumps->notReloadable.empty());
  EXPECT_FALSE(dumps->reroute || dumps->reassignLids || dumps->sweepTimer || dumps->logLevel || dumps->mad ||
               dumps->sm || dumps->flap);
  EXPECT_EQ(fresh->dumps.lfts, LftDumps::kOnChange);
}

}  // namespace
}  // namespace ibsm::config
