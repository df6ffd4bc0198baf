// ibsmctl's human output: aligned tables, the status report with "SUBNET UP", paths that do or do not arrive,
// and exit codes carried by the result.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "tools/ibsmctl/ctl_format.h"

namespace ibsm::ctl {
namespace {

using nlohmann::json;

TEST(IbsmctlFormat, TablesAlignColumnsAndRightAlignNumbers) {
  Table t({"LID", "TYPE", "DESCRIPTION"}, {true, false, false});
  t.add({"1", "SW", "leaf-0"});
  t.add({"1234", "CA", "host-0 HCA-1"});
  EXPECT_EQ(t.str(),
            " LID  TYPE  DESCRIPTION\n"
            "   1  SW    leaf-0\n"
            "1234  CA    host-0 HCA-1\n");
}

TEST(IbsmctlFormat, RangesAndDurations) {
  EXPECT_EQ(ranges({1, 2, 3, 5, 7, 8}), "1-3,5,7-8");
  EXPECT_EQ(ranges({}), "");
  EXPECT_EQ(duration(59'000), "59s");
  EXPECT_EQ(duration(192'000), "3m12s");
  EXPECT_EQ(duration(2 * 3600'000 + 5 * 60'000), "2h05m");
  EXPECT_EQ(duration(-5), "0s");
}

// Help text: whole descriptions, reflowed to the width, never cut mid-sentence (issue 19: "status  SM state
// and role, ..., fabric" lost the rest).
TEST(IbsmctlFormat, WrapKeepsEveryWordWithinTheWidth) {
  EXPECT_EQ(wrap("one two three four", 9, 2), "one two\n  three\n  four\n");
  EXPECT_EQ(wrap("joined\nlines  reflow", 80, 0), "joined lines reflow\n");
  EXPECT_EQ(wrap("a longerthanwidth b", 6, 0), "a\nlongerthanwidth\nb\n");  // long words are not cut
  EXPECT_EQ(wrap("", 10, 0), "\n");
}

TEST(IbsmctlFormat, HelpEntryAlignsTextAndMovesItBelowALongHead) {
  EXPECT_EQ(helpEntry("status", "SM state and role, sweep count", 12, 30),
            "  status    SM state and role,\n"
            "            sweep count\n");
  EXPECT_EQ(helpEntry("events [--limit N]", "Recent events", 12, 30),
            "  events [--limit N]\n"
            "            Recent events\n");
  const std::string text =
      "SM state and role, sweep count, last sweep time and duration, SUBNET UP since, fabric counts and MAD "
      "counters.";
  for (size_t width : {40u, 80u, 120u}) {
    std::string out = helpEntry("status", text, 28, width);
    size_t start = 0;
    while (start < out.size()) {
      size_t end = out.find('\n', start);
      EXPECT_LE(end - start, width) << out;
      start = end + 1;
    }
    std::string words;  // every word, in order
    for (char c : out) {
      if (c != ' ' && c != '\n')
        words += c;
      else if (!words.empty() && words.back() != ' ')
        words += ' ';
    }
    EXPECT_EQ(words, "status " + text + " ") << out;
  }
}

TEST(IbsmctlFormat, StatusSaysSubnetUpOnlyWhenItIs) {
  json st = {{"state", "MASTER"},
             {"priority", 3},
             {"pid", 42},
             {"started_ms", 1000},
             {"subnet_up", true},
             {"subnet_up_since_ms", 61000},
             {"sweeps", 2},
             {"sweep_interval_s", 10},
             {"log_level", "info"},
             {"config", "(defaults)"},
             {"fabric",
              {{"switches", 4},
               {"cas", 4},
               {"ca_ports", 4},
               {"links", 8},
               {"endports_with_lid", 8},
               {"max_lid", 8},
               {"lmc", 0}}},
             {"mad", {{"sent", 10}, {"received", 10}}}};
  Formatted up = formatResult("status", st, 121000);
  EXPECT_EQ(up.exitCode, 0);
  EXPECT_NE(up.text.find("SUBNET UP since"), std::string::npos) << up.text;
  EXPECT_NE(up.text.find("(1m00s)"), std::string::npos) << up.text;
  EXPECT_NE(up.text.find("4 switches, 4 CAs"), std::string::npos);
  st["subnet_up"] = false;
  Formatted down = formatResult("status", st, 121000);
  EXPECT_EQ(down.text.find("SUBNET UP"), std::string::npos) << down.text;
  EXPECT_NE(down.text.find("SUBNET NOT UP"), std::string::npos);
}

TEST(IbsmctlFormat, PathExitCodeTellsWhetherItArrived) {
  json hop = {{"switch", {{"description", "leaf-0"}, {"lid", 1}}},
              {"in_port", 1},
              {"out_port", 4},
              {"ar_ports", {3, 4}}};
  json p = {{"source", {{"description", "host-0 HCA-1"}, {"lid", 5}, {"port", 1}}},
            {"destination", {{"description", "host-3 HCA-1"}, {"lid", 8}, {"port", 1}}},
            {"lid", 8},
            {"engine", "ftree"},
            {"hops", {hop}},
            {"reached", true}};
  Formatted ok = formatResult("path", p, 0);
  EXPECT_EQ(ok.exitCode, 0);
  EXPECT_NE(ok.text.find("  1  leaf-0    1   1    4  3,4\n"), std::string::npos) << ok.text;
  p["reached"] = false;
  p["problem"] = "leaf-0 has no route to LID 8";
  Formatted bad = formatResult("path", p, 0);
  EXPECT_EQ(bad.exitCode, 1);
  EXPECT_NE(bad.text.find("NOT REACHED: leaf-0 has no route to LID 8"), std::string::npos);
}

// With VL layers (dfsp) the path names the pair's SL and each hop's VL; without, no VL column.
TEST(IbsmctlFormat, PathShowsSlAndVlWithVlLayers) {
  json hop = {
      {"switch", {{"description", "dfly-0-1"}, {"lid", 2}}}, {"in_port", 1}, {"out_port", 5}, {"vl", 1}};
  json p = {{"source", {{"description", "host-2 HCA-1"}, {"lid", 39}, {"port", 1}}},
            {"destination", {{"description", "host-9 HCA-1"}, {"lid", 46}, {"port", 1}}},
            {"lid", 46},
            {"engine", "dfsp"},
            {"sl", 1},
            {"vl_layers", 2},
            {"hops", {hop}},
            {"reached", true}};
  Formatted f = formatResult("path", p, 0);
  EXPECT_NE(f.text.find("engine dfsp, SL 1\n"), std::string::npos) << f.text;
  EXPECT_NE(f.text.find("VL"), std::string::npos) << f.text;
  EXPECT_NE(f.text.find("    5   1"), std::string::npos) << f.text;
  p["vl_layers"] = 1;
  Formatted one = formatResult("path", p, 0);
  EXPECT_EQ(one.text.find("VL"), std::string::npos) << one.text;
  EXPECT_EQ(one.text.find("SL"), std::string::npos) << one.text;
}

// An answer without the fields a command expects (an empty object, or null) is formatted, or refused in one
// line, without throwing; the text ends with its newline, and nothing missing reads as success: no "SUBNET
// UP", no "reached", and exit code 1 from the commands whose exit code is their outcome.
TEST(IbsmctlFormat, MissingFieldsDoNotCrash) {
  const std::set<std::string> lists = {"nodes", "switches", "lids", "links"};
  const std::set<std::string> judged = {"path", "check", "resweep", "reroute", "dump"};
  for (const char* c :
       {"status", "nodes", "switches", "lids", "links", "routes", "path", "ar", "events", "check", "topology",
        "resweep", "reroute", "loglevel", "dump", "health", "health-release"}) {
    for (const json& result : {json::object(), json(nullptr)}) {
      SCOPED_TRACE(std::string(c) + " " + result.dump());
      Formatted f;
      ASSERT_NO_THROW(f = formatResult(c, result, 0));
      EXPECT_TRUE(f.exitCode == 0 || f.exitCode == 1) << f.exitCode;
      EXPECT_TRUE(f.text.empty() || f.text.back() == '\n') << f.text;
      EXPECT_EQ(f.text.find("SUBNET UP"), std::string::npos) << f.text;
      EXPECT_EQ(f.text.find("reached "), std::string::npos) << f.text;
      if (f.text.starts_with("unexpected answer from ibsmd: ")) {
        EXPECT_EQ(f.exitCode, 1);
        EXPECT_EQ(std::count(f.text.begin(), f.text.end(), '\n'), 1) << f.text;
      }
      if (judged.count(c)) {
        EXPECT_EQ(f.exitCode, 1) << f.text;
      }
      if (lists.count(c)) {  // the header line alone
        EXPECT_EQ(f.exitCode, 0);
        EXPECT_EQ(std::count(f.text.begin(), f.text.end(), '\n'), 1) << f.text;
      }
    }
  }
  Formatted status = formatResult("status", json::object(), 0);
  EXPECT_EQ(status.exitCode, 0);
  EXPECT_NE(status.text.find("SUBNET NOT UP"), std::string::npos) << status.text;
  EXPECT_EQ(formatResult("events", json::object(), 0).text, "no events\n");
}

TEST(IbsmctlFormat, HealthListsPortsByStateWithWhatPutThemThere) {
  json r = {
      {"sweeps", 6},
      {"swept_at_ms", 0},
      {"gmps", 256},
      {"failed", 0},
      {"duration_ms", 4.7},
      {"clearing", true},
      {"action", "isolate"},
      {"max_isolated", 8},
      {"counts", {{"ok", 127}, {"warning", 0}, {"isolated", 1}}},
      {"ports",
       {{{"state", "isolated"},
         {"description", "spine-1"},
         {"node_guid", "0x0000000000200009"},
         {"port", 4},
         {"lid", 10},
         {"peer_guid", "0x0000000000200003"},
         {"peer_description", "leaf-3"},
         {"peer_port", 6},
         {"since_ms", 1000},
         {"errors", {{"symbol_error", 1000}, {"link_downed", 0}}},
         {"reason", "symbol_error +29875/min (threshold 10.0/min)"}}}},
      {"held_down", {{{"description", "leaf-0"}, {"node_guid", "0x1"}, {"port", 3}, {"remaining_s", 1.5}}}}};
  Formatted f = formatResult("health", r, 3000);
  EXPECT_EQ(f.exitCode, 0);
  EXPECT_NE(f.text.find("256 GMPs, 0 port(s) not read, 4.7 ms (master: error counters cleared)"),
            std::string::npos)
      << f.text;
  EXPECT_NE(f.text.find("1 isolated, 0 warning, 127 ok"), std::string::npos) << f.text;
  EXPECT_NE(
      f.text.find("isolated  spine-1/4   10  leaf-3/6  2s ago  symbol_error=1000  symbol_error +29875/min"),
      std::string::npos)
      << f.text;
  EXPECT_NE(f.text.find("leaf-0/3, 1.5 s left"), std::string::npos) << f.text;
}

// `dump lfts` prints the path alone, so that less "$(ibsmctl dump lfts)" works.
TEST(IbsmctlFormat, DumpPrintsThePathOfTheWrittenFile) {
  Formatted f = formatResult("dump", {{"path", "/var/lib/ibsm/opensm-lfts.dump"}}, 0);
  EXPECT_EQ(f.text, "/var/lib/ibsm/opensm-lfts.dump\n");
  EXPECT_EQ(f.exitCode, 0);
  Formatted empty = formatResult("dump", {{"path", ""}}, 0);
  EXPECT_EQ(empty.exitCode, 1);
  EXPECT_EQ(empty.text, "unexpected answer from ibsmd: no path of the written file\n");
  EXPECT_EQ(formatResult("dump", {{"path", 5}}, 0).exitCode, 1);
}

TEST(IbsmctlFormat, SweepResultsAndLists) {
  json sweep = {{"sweep",
                 {{"number", 3},
                  {"cause", "resweep"},
                  {"ok", true},
                  {"subnet_up", true},
                  {"duration_ms", 12.34},
                  {"smps", 40},
                  {"lft_blocks_sent", 0},
                  {"routes_changed", 0},
                  {"lids_changed", 0}}}};
  Formatted f = formatResult("resweep", sweep, 0);
  EXPECT_EQ(f.text,
            "sweep 3 (resweep): SUBNET UP in 12.3 ms, 40 SMPs, 0 LFT blocks written, 0 routes changed, 0 "
            "LIDs changed\n");
  sweep["sweep"]["subnet_up"] = false;
  EXPECT_EQ(formatResult("resweep", sweep, 0).exitCode, 1);
  json lids = {
      {"lids",
       {{{"lid", 1}, {"lmc", 0}, {"type", "SW"}, {"port", 0}, {"guid", "0x1"}, {"description", "sw"}},
        {{"lid", 4},
         {"lmc", 2},
         {"last_lid", 7},
         {"type", "CA"},
         {"port", 1},
         {"guid", "0x2"},
         {"description", "h"}}}}};
  std::string text = formatResult("lids", lids, 0).text;
  EXPECT_NE(text.find("4-7  CA"), std::string::npos) << text;
}

}  // namespace
}  // namespace ibsm::ctl
