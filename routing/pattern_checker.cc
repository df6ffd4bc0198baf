#include "routing/pattern_checker.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "fabric/text.h"
#include "routing/parallel.h"
#include "routing/switch_graph.h"

namespace ibsm::routing {

namespace {

// Natural order: digit runs compare as numbers (host-2 < host-10), everything else byte by byte.
bool naturalLess(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      size_t ie = i, je = j;
      while (ie < a.size() && digit(a[ie])) ++ie;
      while (je < b.size() && digit(b[je])) ++je;
      std::string_view x = a.substr(i, ie - i), y = b.substr(j, je - j);
      while (x.size() > 1 && x[0] == '0') x.remove_prefix(1);
      while (y.size() > 1 && y[0] == '0') y.remove_prefix(1);
      if (x.size() != y.size()) return x.size() < y.size();
      if (x != y) return x < y;
      i = ie, j = je;
      continue;
    }
    if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
    ++i, ++j;
  }
  return a.size() - i < b.size() - j;
}

// A CA port that can be a rank: it has a LID and a usable link to a switch.
bool rankable(const Topology& topo, const SwitchGraph& g, const LidAssignment& lids, NodeIndex n, PortNum p) {
  const fabric::Node& node = topo.node(n);
  if (node.isSwitch() || p.value == 0 || p.value > node.numPorts) return false;
  return lids.base(n, p).value != 0 && lidExit(topo, g, n, p).sw != kNoSwitch;
}

std::vector<Rank> defaultRanksOf(const Topology& topo, const SwitchGraph& g, const LidAssignment& lids) {
  std::vector<Rank> ranks;
  for (NodeIndex n = 0; n < topo.size(); ++n) {
    const fabric::Node& node = topo.node(n);
    if (node.isSwitch()) continue;
    for (unsigned p = 1; p <= node.numPorts; ++p) {
      const PortNum port{static_cast<uint8_t>(p)};
      if (rankable(topo, g, lids, n, port)) ranks.push_back(Rank{n, port});
    }
  }
  std::stable_sort(ranks.begin(), ranks.end(), [&](const Rank& x, const Rank& y) {
    const std::string &a = topo.node(x.node).description, &b = topo.node(y.node).description;
    if (naturalLess(a, b)) return true;
    if (naturalLess(b, a)) return false;
    return x.port.value < y.port.value;
  });
  return ranks;
}

// One shift's outcome.
struct ShiftResult {
  double sumBandwidth = 0;
  uint32_t maxCongestion = 0;
  uint32_t busiestArc = kNoArc;
  size_t unrouted = 0;
};

class PatternChecker {
 public:
  PatternChecker(const Topology& topo, const LidAssignment& lids, const RoutingTables& tables,
                 std::vector<Rank> ranks, const PatternOptions& opt)
      : topo_(topo), g_(topo), opt_(opt), ranks_(std::move(ranks)) {
    if (ranks_.empty()) ranks_ = defaultRanksOf(topo, g_, lids);
    const size_t S = g_.size(), N = ranks_.size();
    for (SwitchIndex x = 0; x < S; ++x) {
      const fabric::Node& node = topo.node(g_.node(x));
      portBase_.push_back(static_cast<uint32_t>(hops_.size()));
      hops_.resize(hops_.size() + node.numPorts + 1u);
      for (unsigned q = 1; q <= node.numPorts; ++q) {
        const uint32_t a = g_.arcOfPort(x, q);
        if (a != kNoArc) hops_[portBase_[x] + q] = Hop{a, g_.arcs()[a].to};
      }
    }
    portEnd_.resize(S);
    for (SwitchIndex x = 0; x < S; ++x)
      portEnd_[x] = x + 1 < S ? portBase_[x + 1] : static_cast<uint32_t>(hops_.size());
    src_.resize(N);
    exitPort_.resize(N);
    lft_.assign(N * S, kNoPort);
    for (size_t r = 0; r < N; ++r) {
      const LidExit e = lidExit(topo, g_, ranks_[r].node, ranks_[r].port);
      src_[r] = e.sw;
      exitPort_[r] = e.port;
      const Lid lid = lids.base(ranks_[r].node, ranks_[r].port);
      if (e.sw == kNoSwitch || lid.value == 0) continue;
      for (SwitchIndex x = 0; x < S; ++x) lft_[x * N + r] = tables.port(g_.node(x), lid);
    }
  }

  PatternReport run();

 private:
  static constexpr unsigned kMaxArcs = 64;  // a longer walk loops
  struct Hop {
    uint32_t arc = kNoArc;
    SwitchIndex next = kNoSwitch;
  };
  // The switch-to-switch arcs of the flow from rank a to rank b into out; their number, or -1 when the walk
  // does not arrive (no entry, a dead or non-switch port other than the destination's, a loop).
  int walk(size_t a, size_t b, uint32_t* out) const {
    const size_t N = ranks_.size();
    SwitchIndex sw = src_[a];
    const SwitchIndex target = src_[b];
    if (sw == kNoSwitch || target == kNoSwitch) return -1;
    const uint8_t* column = lft_.data() + b;
    for (int n = 0; n < static_cast<int>(kMaxArcs); ++n) {
      const uint8_t p = column[sw * N];
      if (sw == target && p == exitPort_[b]) return n;
      if (p == kNoPort || portBase_[sw] + p >= portEnd_[sw]) return -1;
      const Hop& h = hops_[portBase_[sw] + p];
      if (h.arc == kNoArc) return -1;
      out[n] = h.arc;
      sw = h.next;
    }
    return -1;
  }
  ShiftResult evaluateShift(size_t shift, std::vector<uint32_t>& count, std::vector<uint32_t>& arcs,
                            std::vector<int8_t>& len) const;
  void all2all(PatternReport& r) const;

  const Topology& topo_;
  SwitchGraph g_;
  const PatternOptions& opt_;
  std::vector<Rank> ranks_;
  std::vector<uint32_t> portBase_, portEnd_;  // switch -> its ports' range in hops_
  std::vector<Hop> hops_;
  std::vector<SwitchIndex> src_;   // rank -> the switch its port is cabled to (also where it is delivered)
  std::vector<uint8_t> exitPort_;  // rank -> that switch's port to it
  // [switch][rank] -> egress port towards the rank's base LID: the flows of a shift from one switch's
  // ranks go to consecutive ranks, so they read neighbouring entries of its row.
  std::vector<uint8_t> lft_;
};

ShiftResult PatternChecker::evaluateShift(size_t shift, std::vector<uint32_t>& count,
                                          std::vector<uint32_t>& arcs, std::vector<int8_t>& len) const {
  const size_t N = ranks_.size();
  ShiftResult res;
  // The flows' arcs one after the other (a flow's walk writes at most kMaxArcs past the end).
  arcs.resize(N * 8 + kMaxArcs);
  len.resize(N);
  uint32_t most = 0;
  size_t used = 0;
  for (size_t i = 0; i < N; ++i) {
    if (arcs.size() < used + kMaxArcs) arcs.resize(2 * arcs.size());
    uint32_t* out = arcs.data() + used;
    const int n = walk(i, (i + shift) % N, out);
    len[i] = static_cast<int8_t>(n);
    for (int h = 0; h < n; ++h)
      if (++count[out[h]] > most) most = count[out[h]], res.busiestArc = out[h];
    used += static_cast<size_t>(std::max(n, 0));
  }
  const uint32_t* out = arcs.data();
  for (size_t i = 0; i < N; ++i) {
    if (len[i] < 0) {
      ++res.unrouted;
      continue;
    }
    uint32_t k = 1;
    for (int h = 0; h < len[i]; ++h) k = std::max(k, count[out[h]]);
    out += len[i];
    res.sumBandwidth += 1.0 / k;
    res.maxCongestion = std::max(res.maxCongestion, k);
  }
  for (size_t j = 0; j < used; ++j) count[arcs[j]] = 0;
  return res;
}

// Every pair at once: link counts summed over workers (by source rank), then each flow scored against them.
void PatternChecker::all2all(PatternReport& r) const {
  const size_t N = ranks_.size(), A = g_.arcs().size();
  const unsigned workers = workerCount(N, opt_.threads);
  std::vector<std::vector<uint64_t>> counts(workers, std::vector<uint64_t>(A, 0));
  parallelFor(N, opt_.threads, [&](unsigned w, size_t i) {
    uint32_t out[kMaxArcs];
    for (size_t j = 0; j < N; ++j) {
      if (j == i) continue;
      const int n = walk(i, j, out);
      for (int h = 0; h < n; ++h) ++counts[w][out[h]];
    }
  });
  std::vector<uint64_t> count(A, 0);
  for (const auto& c : counts)
    for (size_t a = 0; a < A; ++a) count[a] += c[a];
  std::vector<double> sum(N, 0);
  std::vector<uint64_t> maxK(N, 0);
  std::vector<size_t> unrouted(N, 0);
  parallelFor(N, opt_.threads, [&](unsigned, size_t i) {
    uint32_t out[kMaxArcs];
    for (size_t j = 0; j < N; ++j) {
      if (j == i) continue;
      const int n = walk(i, j, out);
      if (n < 0) {
        ++unrouted[i];
        continue;
      }
      uint64_t k = 1;
      for (int h = 0; h < n; ++h) k = std::max(k, count[out[h]]);
      sum[i] += 1.0 / static_cast<double>(k);
      maxK[i] = std::max(maxK[i], k);
    }
  });
  ShiftResult res;
  for (size_t i = 0; i < N; ++i) {
    res.sumBandwidth += sum[i];
    res.maxCongestion = static_cast<uint32_t>(std::max<uint64_t>(res.maxCongestion, maxK[i]));
    res.unrouted += unrouted[i];
  }
  // Of the busiest links the one with the lowest (GUID, port), whatever order the topology lists them in.
  auto key = [&](uint32_t a) {
    return std::pair{topo_.node(g_.node(g_.arcs()[a].from)).guid.value, g_.arcs()[a].port};
  };
  for (uint32_t a = 0; a < A; ++a)
    if (res.busiestArc == kNoArc || count[a] > count[res.busiestArc] ||
        (count[a] == count[res.busiestArc] && key(a) < key(res.busiestArc)))
      res.busiestArc = a;
  r.shifts = 1;
  r.flows = N * (N - 1);
  r.unrouted = res.unrouted;
  r.maxCongestion = res.maxCongestion;
  r.meanBandwidth = res.sumBandwidth / static_cast<double>(r.flows);
  r.congestionFreeShifts = res.maxCongestion <= 1 ? 1 : 0;
  r.shiftsByCongestion.assign(res.maxCongestion + 1u, 0);
  r.shiftsByCongestion[res.maxCongestion] = 1;
  r.worstBandwidth = r.meanBandwidth;
  r.worstCongestion = res.maxCongestion;
  if (res.busiestArc != kNoArc && count[res.busiestArc] > 0) {
    r.worstLink = linkRefOf(topo_, g_, res.busiestArc);
    r.hasWorstLink = true;
  }
}

PatternReport PatternChecker::run() {
  PatternReport r;
  r.pattern = opt_.pattern;
  const size_t N = ranks_.size();
  r.ranks = N;
  if (N < 2) return r;
  if (opt_.pattern == Pattern::kAll2All) {
    all2all(r);
    return r;
  }
  std::vector<size_t> shifts;
  if (opt_.pattern == Pattern::kRing) {
    shifts.push_back(1);
    if (N > 2) shifts.push_back(N - 1);
  } else {
    for (size_t s = 1; s < N; ++s) shifts.push_back(s);
  }
  const unsigned workers = workerCount(shifts.size(), opt_.threads);
  std::vector<std::vector<uint32_t>> count(workers, std::vector<uint32_t>(g_.arcs().size(), 0));
  std::vector<std::vector<uint32_t>> arcs(workers);
  std::vector<std::vector<int8_t>> len(workers);
  std::vector<ShiftResult> results(shifts.size());
  parallelFor(shifts.size(), opt_.threads, [&](unsigned w, size_t i) {
    results[i] = evaluateShift(shifts[i], count[w], arcs[w], len[w]);
  });

  r.shifts = shifts.size();
  r.flows = shifts.size() * N;
  double sum = 0;
  size_t worst = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    const ShiftResult& s = results[i];
    sum += s.sumBandwidth;
    r.unrouted += s.unrouted;
    r.maxCongestion = std::max(r.maxCongestion, s.maxCongestion);
    if (s.maxCongestion <= 1) ++r.congestionFreeShifts;
    if (r.shiftsByCongestion.size() <= s.maxCongestion) r.shiftsByCongestion.resize(s.maxCongestion + 1u, 0);
    ++r.shiftsByCongestion[s.maxCongestion];
    const ShiftResult& w = results[worst];
    if (s.sumBandwidth < w.sumBandwidth ||
        (s.sumBandwidth == w.sumBandwidth && s.maxCongestion > w.maxCongestion))
      worst = i;
  }
  r.meanBandwidth = sum / static_cast<double>(r.flows);
  r.worstShift = static_cast<uint32_t>(shifts[worst]);
  r.worstBandwidth = results[worst].sumBandwidth / static_cast<double>(N);
  r.worstCongestion = results[worst].maxCongestion;
  if (results[worst].busiestArc != kNoArc) {
    r.worstLink = linkRefOf(topo_, g_, results[worst].busiestArc);
    r.hasWorstLink = true;
  }
  return r;
}

}  // namespace

std::optional<Pattern> parsePattern(std::string_view name) {
  if (name == "shift") return Pattern::kShift;
  if (name == "ring") return Pattern::kRing;
  if (name == "all2all") return Pattern::kAll2All;
  return std::nullopt;
}

std::string_view patternName(Pattern p) {
  switch (p) {
    case Pattern::kShift:
      return "shift";
    case Pattern::kRing:
      return "ring";
    case Pattern::kAll2All:
      return "all2all";
  }
  return "shift";
}

std::vector<Rank> defaultRanks(const Topology& topo, const LidAssignment& lids) {
  SwitchGraph g(topo);
  return defaultRanksOf(topo, g, lids);
}

fabric::Result<std::vector<Rank>> parseRanks(const Topology& topo, const LidAssignment& lids,
                                             std::string_view text, std::string_view fileName) {
  SwitchGraph g(topo);
  // Host names (first words of CA descriptions) -> node; kNoNode when several nodes share one.
  std::map<std::string, NodeIndex, std::less<>> hosts;
  for (NodeIndex n = 0; n < topo.size(); ++n) {
    const fabric::Node& node = topo.node(n);
    if (node.isSwitch()) continue;
    std::string first = node.description.substr(0, node.description.find(' '));
    auto [it, added] = hosts.emplace(first, n);
    if (!added) it->second = fabric::kNoNode;
  }
  auto firstPort = [&](NodeIndex n) -> std::optional<Rank> {
    const fabric::Node& node = topo.node(n);
    for (unsigned p = 1; p <= node.numPorts; ++p)
      if (rankable(topo, g, lids, n, PortNum{static_cast<uint8_t>(p)}))
        return Rank{n, PortNum{static_cast<uint8_t>(p)}};
    return std::nullopt;
  };
  std::vector<Rank> ranks;
  std::map<std::pair<NodeIndex, uint8_t>, size_t> seen;
  size_t lineNo = 0;
  for (size_t pos = 0; pos <= text.size();) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++lineNo;
    if (size_t h = line.find('#'); h != std::string_view::npos) line = line.substr(0, h);
    const std::string item(fabric::trim(line));
    if (item.empty()) continue;
    auto fail = [&](const std::string& what) {
      return fabric::makeError(std::string(fileName) + ":" + std::to_string(lineNo) + ": " + what);
    };
    std::optional<Rank> rank;
    if (auto guid = fabric::parseGuid(item)) {
      if (auto port = topo.findPort(*guid); port && !topo.node(port->first).isSwitch()) {
        if (!rankable(topo, g, lids, port->first, port->second))
          return fail("port " + item + " has no LID or no link to a switch");
        rank = Rank{port->first, port->second};
      } else if (auto node = topo.findNode(*guid); node && !topo.node(*node).isSwitch()) {
        rank = firstPort(*node);
      }
      if (!rank) return fail("no CA port with a LID and a link for GUID " + item);
    } else {
      std::optional<NodeIndex> node = topo.findByDescription(item);
      if (node && topo.node(*node).isSwitch()) node.reset();
      if (!node) {
        auto it = hosts.find(item);
        if (it != hosts.end() && it->second == fabric::kNoNode)
          return fail("host name '" + item +
                      "' names several CAs (give the node description or a port GUID)");
        if (it != hosts.end()) node = it->second;
      }
      if (!node) return fail("no CA '" + item + "' (give a host name, node description or port GUID)");
      rank = firstPort(*node);
      if (!rank) return fail("'" + item + "' has no port with a LID and a link to a switch");
    }
    auto [it, added] = seen.emplace(std::pair{rank->node, rank->port.value}, ranks.size());
    if (!added) return fail("'" + item + "' is already rank " + std::to_string(it->second));
    ranks.push_back(*rank);
  }
  if (ranks.empty()) return fabric::makeError(std::string(fileName) + ": no ranks");
  return ranks;
}

PatternReport checkPattern(const Topology& topo, const LidAssignment& lids, const RoutingTables& tables,
                           std::vector<Rank> ranks, const PatternOptions& options) {
  const bool fromFile = !ranks.empty();
  PatternChecker c(topo, lids, tables, std::move(ranks), options);
  PatternReport r = c.run();
  r.ranksFromFile = fromFile;
  return r;
}

std::string formatPatternText(const PatternReport& r) {
  std::string s;
  auto line = [&](const std::string& k, const std::string& v) { s += k + ": " + v + "\n"; };
  line("pattern", std::string(patternName(r.pattern)) + " over " + std::to_string(r.ranks) + " ranks (" +
                      (r.ranksFromFile ? "in the order of the rank file" : "hosts in name order") + ")");
  if (r.ranks < 2) {
    line("pattern flows", "none (fewer than 2 ranks)");
    return s;
  }
  const bool all = r.pattern == Pattern::kAll2All;
  line("pattern flows",
       std::to_string(r.flows) +
           (all ? " (every pair at once)" : " in " + std::to_string(r.shifts) + " shift(s)") +
           (r.unrouted ? ", " + std::to_string(r.unrouted) + " NOT ROUTED" : ""));
  line("max congestion", std::to_string(r.maxCongestion) + " (most flows of one " +
                             (all ? "pattern" : "shift") + " on a switch-to-switch link)");
  line("mean flow bandwidth", formatFixed(r.meanBandwidth) + " (1.000: no flow shares a link)");
  if (!all) {
    line("congestion-free shifts",
         std::to_string(r.congestionFreeShifts) + " of " + std::to_string(r.shifts) + " (" +
             formatFixed(100.0 * static_cast<double>(r.congestionFreeShifts) / static_cast<double>(r.shifts),
                         1) +
             "%)");
    std::string hist;
    for (size_t k = 0; k < r.shiftsByCongestion.size(); ++k)
      if (r.shiftsByCongestion[k])
        hist +=
            (hist.empty() ? "" : ", ") + std::to_string(k) + ": " + std::to_string(r.shiftsByCongestion[k]);
    line("shifts by max congestion", hist);
    line("worst shift", std::to_string(r.worstShift) + " (mean flow bandwidth " +
                            formatFixed(r.worstBandwidth) + ", max congestion " +
                            std::to_string(r.worstCongestion) + ")");
  }
  if (r.hasWorstLink) line(all ? "busiest link" : "its busiest link", formatLinkText(r.worstLink));
  return s;
}

std::string formatPatternJson(const PatternReport& r) {
  std::string s =
      "{\"pattern\":" + jsonQuote(patternName(r.pattern)) +
      ",\"ranksFromFile\":" + (r.ranksFromFile ? "true" : "false") + ",\"ranks\":" + std::to_string(r.ranks) +
      ",\"shifts\":" + std::to_string(r.shifts) + ",\"flows\":" + std::to_string(r.flows) +
      ",\"unrouted\":" + std::to_string(r.unrouted) +
      ",\"maxCongestion\":" + std::to_string(r.maxCongestion) +
      ",\"meanBandwidth\":" + formatFixed(r.meanBandwidth, 6) +
      ",\"congestionFreeShifts\":" + std::to_string(r.congestionFreeShifts) + ",\"congestionFreeShare\":" +
      formatFixed(r.shifts ? static_cast<double>(r.congestionFreeShifts) / static_cast<double>(r.shifts) : 0,
                  6) +
      ",\"shiftsByCongestion\":{";
  bool first = true;
  for (size_t k = 0; k < r.shiftsByCongestion.size(); ++k)
    if (r.shiftsByCongestion[k]) {
      s += (first ? "\"" : ",\"") + std::to_string(k) + "\":" + std::to_string(r.shiftsByCongestion[k]);
      first = false;
    }
  s += "},\"worstShift\":" + std::to_string(r.worstShift) +
       ",\"worstBandwidth\":" + formatFixed(r.worstBandwidth, 6) +
       ",\"worstCongestion\":" + std::to_string(r.worstCongestion);
  if (r.hasWorstLink) s += ",\"worstLink\":" + formatLinkJson(r.worstLink);
  return s + "}";
}

}  // namespace ibsm::routing
