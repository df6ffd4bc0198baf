#include "routing/route_checker.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdio>
#include <functional>
#include <tuple>

#include "routing/channel_graph.h"
#include "routing/parallel.h"
#include "routing/switch_graph.h"

namespace ibsm::routing {

using fabric::Node;

namespace {

// 256 port bits as four words (cheaper to OR and scan than std::bitset for the CDG).
struct Bits256 {
  std::array<uint64_t, 4> w{};
  void set(unsigned b) { w[b >> 6] |= uint64_t{1} << (b & 63); }
  bool test(unsigned b) const { return (w[b >> 6] >> (b & 63)) & 1; }
  Bits256& operator|=(const Bits256& o) {
    for (int i = 0; i < 4; ++i) w[i] |= o.w[i];
    return *this;
  }
  Bits256 operator&(const Bits256& o) const {
    Bits256 r;
    for (int i = 0; i < 4; ++i) r.w[i] = w[i] & o.w[i];
    return r;
  }
  bool any() const { return (w[0] | w[1] | w[2] | w[3]) != 0; }
  size_t count() const {
    return std::popcount(w[0]) + std::popcount(w[1]) + std::popcount(w[2]) + std::popcount(w[3]);
  }
  template <typename Fn>
  void forEach(Fn&& fn) const {
    for (unsigned i = 0; i < 4; ++i)
      for (uint64_t x = w[i]; x; x &= x - 1) fn(i * 64 + static_cast<unsigned>(std::countr_zero(x)));
  }
};

Bits256 fromPortMask(const PortMask& m) {
  Bits256 b;
  for (unsigned i = 0; i < 4; ++i)
    for (unsigned j = 0; j < 64; ++j)
      if (m.test(i * 64 + j)) b.w[i] |= uint64_t{1} << j;
  return b;
}

enum State : uint8_t { kUnknown = 0, kBusy, kArrive, kNoRoute, kDead, kMisdeliver, kLoop };
enum Kind : uint8_t { kKindNoRoute = 0, kKindDead, kKindMisdeliver, kKindLoop, kKindAr, kKinds };

struct Dest {
  Lid lid;
  LidOwner owner;
  SwitchIndex target = kNoSwitch;  // switch the endport is, or is attached to
  bool toCa = false;
};

struct Source {
  NodeIndex node;
  PortNum port;
};

struct Example {
  uint32_t lid;
  uint32_t sw;
  std::string text;
  bool operator<(const Example& o) const { return std::tie(lid, sw) < std::tie(o.lid, o.sw); }
};

// Everything one worker accumulates; merged in worker order at the end.
struct Partial {
  size_t pairs = 0, reachable = 0, noRoute = 0, dead = 0, misdeliver = 0, loops = 0, toSwitches = 0;
  uint64_t sumHops = 0, sumStretch = 0;
  uint32_t maxHops = 0, maxStretch = 0;
  size_t stretched = 0;
  size_t arEntries = 0, arMembers = 0, arNotShortest = 0, arMissingStatic = 0, arStretched = 0;
  std::vector<uint64_t> load;  // by arc
  std::vector<Bits256> cdg;    // by arc: egress ports at the arc's head that follow it
  std::vector<Bits256> arCdg;
  std::vector<uint64_t> vlEdges;    // VL-aware CDG: channelEdge(arc * 16 + VL, next arc * 16 + VL)
  std::vector<uint64_t> vlArEdges;  // the same with every AR alternative
  std::array<std::vector<Example>, kKinds> examples;
  // Scratch, by switch.
  std::vector<uint8_t> state;
  std::vector<uint16_t> hops;
  std::vector<SwitchIndex> next, failAt, stack, order;
  std::vector<uint32_t> nextArc;
  std::vector<uint64_t> acc;
  std::vector<uint8_t> mark;
  std::vector<uint32_t> bucket;
  std::vector<SwitchIndex> sorted;
  std::vector<Bits256> arCdgScratch;
  std::vector<uint32_t> vlArSeen;  // by channel (arc * 16 + VL): the epoch it was last reached in
  uint32_t vlArEpoch = 0;
  std::vector<uint32_t> vlArQueue;  // channels reached, in BFS order
  bool arPrevValid = false;         // arCdgScratch holds the out sets of the previous destination
  SwitchIndex arPrevTarget = kNoSwitch;
  bool arPrevToCa = false;
  std::vector<uint64_t> arKey;  // by switch: the cached AR verdict's key
  std::vector<uint32_t> arCachedMembers, arCachedBad;
  // The LID block being checked: tables[base .. base + len) as [LID - base][switch].
  uint32_t blockBase = 0;
  size_t blockLen = 0;
  std::vector<uint8_t> lftBlock;
  std::vector<uint16_t> grpBlock;
};

class Checker {
 public:
  Checker(const Topology& topo, const LidAssignment& lids, const RoutingTables& tables,
          const CheckOptions& opt)
      : topo_(topo), lids_(lids), tables_(tables), opt_(opt), g_(topo), h_(g_, opt.threads) {}

  CheckReport run();

 private:
  // The tables of the LID block being checked, transposed to [LID][switch]: a destination's walk reads one
  // contiguous row instead of one cache line per switch (see loadBlock).
  uint8_t lftPort(const Partial& p, SwitchIndex s, Lid lid) const {
    size_t i = lid.value - p.blockBase;
    return i < p.blockLen ? p.lftBlock[i * g_.size() + s] : kNoPort;
  }
  // AR group of (switch, LID); kNoGroup when none (or the number is out of range).
  uint16_t arGroup(const Partial& p, SwitchIndex s, uint32_t lid) const {
    size_t i = lid - p.blockBase;
    return i < p.blockLen && haveAr_ ? p.grpBlock[i * g_.size() + s] : ArTable::kNoGroup;
  }
  void loadBlock(Partial& p, uint32_t base) const;
  std::string endportText(NodeIndex n, PortNum p) const {
    const Node& node = topo_.node(n);
    Guid g = p.value < node.ports.size() ? node.ports[p.value].guid : Guid{};
    return "'" + node.description + "' port " + std::to_string(p.value) + " (" + fabric::toString(g) + ")";
  }
  std::string switchText(SwitchIndex s) const {
    const Node& n = topo_.node(g_.node(s));
    return "switch " + fabric::toString(n.guid) + " '" + n.description + "'";
  }
  LinkRef linkRef(uint32_t arc) const { return linkRefOf(topo_, g_, arc); }
  void addExample(Partial& p, Kind kind, uint32_t lid, uint32_t sw,
                  const std::function<std::string()>& text) {
    auto& v = p.examples[kind];
    Example probe{lid, sw, {}};
    if (v.size() >= opt_.maxExamples && !(probe < v.back())) return;
    probe.text = text();
    v.insert(std::upper_bound(v.begin(), v.end(), probe), std::move(probe));
    if (v.size() > opt_.maxExamples) v.pop_back();
  }

  void checkDest(Partial& p, const Dest& d);
  void walk(Partial& p, const Dest& d, SwitchIndex x);
  void checkAr(Partial& p, const Dest& d);
  // The egress switch ports of every switch towards d (LFT port and AR members) into p.arCdgScratch; false
  // when they equal those of this worker's previous destination (same target switch and kind).
  bool arOuts(Partial& p, const Dest& d);
  void arCdg(Partial& p, const Dest& d);
  void vlCdg(Partial& p, const Dest& d);
  void vlArCdg(Partial& p, const Dest& d);
  // The VL of a packet on `sl` that entered switch u by port `in` and leaves by `out`.
  uint8_t hopVl(SwitchIndex u, unsigned in, unsigned out, uint8_t sl) const {
    return opt_.slToVl ? opt_.slToVl->vl(g_.node(u), in, out, sl) : tables_.hopVl(g_.node(u), in, out, sl);
  }
  bool findCycle(const std::vector<Bits256>& cdg, std::vector<LinkRef>& cycle, size_t& channels,
                 size_t& edges) const;
  // The same for the VL-aware CDG (edges sorted and unique, channels arc * 16 + VL); true when acyclic.
  bool findVlCycle(const std::vector<uint64_t>& edges, std::vector<LinkRef>& cycle) const {
    for (uint32_t ch : findChannelCycle(g_.arcs().size() * 16, edges)) {
      cycle.push_back(linkRef(ch / 16));
      cycle.back().vl = static_cast<uint8_t>(ch % 16);
    }
    return cycle.empty();
  }

  const Topology& topo_;
  const LidAssignment& lids_;
  const RoutingTables& tables_;
  const CheckOptions& opt_;
  SwitchGraph g_;
  HopMatrix h_;
  std::vector<uint32_t> weight_;      // switch -> CA source ports linked to it
  std::vector<Source> firstSource_;   // switch -> one of them, for examples
  std::vector<uint8_t> ingressPort_;  // switch -> the switch port of firstSource_ (VL-aware CDG)
  bool vlAware_ = false;
  uint8_t arStretch_ = 0;              // tables_.arStretch when the VL-aware AR CDG is checked, else 0
  std::vector<Source> directSources_;  // CA ports linked to a non-switch or over a Down link
  std::vector<Bits256> switchPorts_;   // switch -> ports that are usable switch-switch links
  bool haveAr_ = false;

  // Where each switch port leads, precomputed so walks do not re-derive link usability.
  struct Hop {
    enum Kind : uint8_t { kDeadPort = 0, kToSwitch, kToEndnode } kind = kDeadPort;
    fabric::PortNum peerPort;
    SwitchIndex sw = kNoSwitch;
    NodeIndex node = fabric::kNoNode;
    uint32_t arc = kNoArc;
  };
  const Hop& hop(SwitchIndex x, unsigned q) const {
    static const Hop kDead;
    return q < portCount_[x] ? hops_[portBase_[x] + q] : kDead;
  }
  std::vector<uint32_t> portBase_;
  std::vector<uint16_t> portCount_;
  std::vector<Hop> hops_;
  std::vector<std::vector<Bits256>> arBits_;  // node -> its AR groups as bit sets
};

constexpr uint32_t kLidBlock = 64;  // LIDs checked per block: one cache line of each switch's table

void Checker::loadBlock(Partial& p, uint32_t base) const {
  const size_t S = g_.size();
  p.blockBase = base;
  p.blockLen = kLidBlock;
  p.lftBlock.assign(kLidBlock * S, kNoPort);
  if (haveAr_) p.grpBlock.assign(kLidBlock * S, ArTable::kNoGroup);
  const size_t end = size_t{base} + kLidBlock;
  for (SwitchIndex x = 0; x < S; ++x) {
    const NodeIndex n = g_.node(x);
    if (n < tables_.lft.size()) {
      const auto& lft = tables_.lft[n];
      for (size_t l = base; l < end && l < lft.size(); ++l) p.lftBlock[(l - base) * S + x] = lft[l];
    }
    if (haveAr_ && n < tables_.ar.size()) {
      const ArTable& at = tables_.ar[n];
      for (size_t l = base; l < end && l < at.lidToGroup.size(); ++l)
        if (at.lidToGroup[l] < at.groups.size()) p.grpBlock[(l - base) * S + x] = at.lidToGroup[l];
    }
  }
}

// Follows the LFT from switch x for destination d, memoizing the outcome of every switch on the way.
void Checker::walk(Partial& p, const Dest& d, SwitchIndex x) {
  auto& st = p.state;
  p.stack.clear();
  SwitchIndex cur = x;
  while (st[cur] == kUnknown) {
    st[cur] = kBusy;
    p.stack.push_back(cur);
    p.nextArc[cur] = kNoArc;
    uint8_t q = lftPort(p, cur, d.lid);
    uint8_t terminal = kUnknown;
    uint16_t hops = 0;
    if (q == kNoPort) {
      terminal = kNoRoute;
    } else if (q == 0) {
      terminal = (d.owner.node == g_.node(cur) && d.owner.port.value == 0) ? kArrive : kMisdeliver;
    } else {
      const Hop& h = hop(cur, q);
      if (h.kind == Hop::kDeadPort) {
        terminal = kDead;
      } else if (h.kind == Hop::kToEndnode) {
        terminal = (h.node == d.owner.node && h.peerPort == d.owner.port) ? kArrive : kMisdeliver;
        hops = 1;
      } else {
        p.next[cur] = h.sw;
        p.nextArc[cur] = h.arc;
        cur = h.sw;
        continue;
      }
    }
    st[cur] = terminal;
    p.hops[cur] = hops;
    p.failAt[cur] = cur;
    p.stack.pop_back();
    break;
  }
  if (st[cur] == kBusy) {  // came back to a switch of this walk: everything on it loops
    for (SwitchIndex y : p.stack) {
      st[y] = kLoop;
      p.failAt[y] = cur;
    }
    return;
  }
  while (!p.stack.empty()) {
    SwitchIndex y = p.stack.back();
    p.stack.pop_back();
    SwitchIndex z = p.next[y];
    st[y] = st[z];
    p.hops[y] = static_cast<uint16_t>(std::min<uint32_t>(p.hops[z] + 1u, UINT16_MAX));
    p.failAt[y] = p.failAt[z];
  }
}

void Checker::checkDest(Partial& p, const Dest& d) {
  const size_t S = g_.size();
  std::fill(p.state.begin(), p.state.end(), kUnknown);
  std::fill(p.mark.begin(), p.mark.end(), 0);
  const uint32_t lid = d.lid.value;
  auto own =
      [&](SwitchIndex x) -> uint64_t {  // sources at x that send to d (the destination port itself not)
    return weight_[x] - ((d.toCa && x == d.target) ? 1u : 0u);
  };

  // Outcome of every source switch, pair accounting, and the traffic closure in walk order.
  p.order.clear();
  for (SwitchIndex x = 0; x < S; ++x) {
    uint64_t n = own(x);
    if (n == 0) continue;
    if (p.state[x] == kUnknown) walk(p, d, x);
    // Mark the switches this source's traffic crosses (each once per destination).
    for (SwitchIndex y = x; !p.mark[y];) {
      p.mark[y] = 1;
      p.order.push_back(y);
      if (p.nextArc[y] == kNoArc) break;
      y = p.next[y];
    }
    p.pairs += n;
    switch (p.state[x]) {
      case kArrive: {
        p.reachable += n;
        uint32_t hops = p.hops[x] + 1u;
        p.sumHops += n * hops;
        p.maxHops = std::max(p.maxHops, hops);
        uint32_t minHops = 0;
        if (d.target != kNoSwitch && h_.at(x, d.target) != kUnreachable)
          minHops = h_.at(x, d.target) + 1u + (d.toCa ? 1u : 0u);
        if (minHops && hops > minHops) {
          uint32_t extra = hops - minHops;
          p.sumStretch += n * extra;
          p.maxStretch = std::max(p.maxStretch, extra);
          p.stretched += n;
        }
        break;
      }
      case kNoRoute:
      case kDead:
      case kMisdeliver:
      case kLoop: {
        Kind kind = p.state[x] == kNoRoute ? kKindNoRoute
                    : p.state[x] == kDead  ? kKindDead
                    : p.state[x] == kLoop  ? kKindLoop
                                           : kKindMisdeliver;
        (p.state[x] == kNoRoute ? p.noRoute
         : p.state[x] == kDead  ? p.dead
         : p.state[x] == kLoop  ? p.loops
                                : p.misdeliver) += n;
        if (!d.toCa) p.toSwitches += n;
        addExample(p, kind, lid, x, [&] {
          static const char* what[] = {"no LFT entry at", "dead or missing egress port at", "misdelivered at",
                                       "loop through"};
          SwitchIndex at = p.failAt[x];
          std::string where = switchText(at);
          if (kind != kKindLoop && kind != kKindNoRoute)
            where += " port " + std::to_string(lftPort(p, at, d.lid));
          return "LID " + std::to_string(lid) + " (" + endportText(d.owner.node, d.owner.port) + ") from " +
                 endportText(firstSource_[x].node, firstSource_[x].port) + ": " + what[kind] + " " + where;
        });
        break;
      }
      default:
        break;
    }
  }

  // Route load: accumulate the sources' counts downstream, farthest switches first.
  // Counting sort of the arriving traffic switches by remaining hops, descending (hops[x] = hops[next] + 1,
  // so every switch comes after all switches that feed it).
  uint32_t maxH = 0;
  for (SwitchIndex y : p.order)
    if (p.state[y] == kArrive) maxH = std::max<uint32_t>(maxH, p.hops[y]);
  p.bucket.assign(maxH + 2, 0);
  for (SwitchIndex y : p.order)
    if (p.state[y] == kArrive) ++p.bucket[maxH - p.hops[y] + 1];
  for (uint32_t i = 1; i < p.bucket.size(); ++i) p.bucket[i] += p.bucket[i - 1];
  p.sorted.resize(p.bucket.back());
  for (SwitchIndex y : p.order)
    if (p.state[y] == kArrive) p.sorted[p.bucket[maxH - p.hops[y]]++] = y;
  for (SwitchIndex y : p.sorted) p.acc[y] = own(y);
  // Routes to switch LIDs carry management traffic only; they would swamp the data-traffic balance (engines,
  // like OpenSM, do not balance them), so they are left out of the load.
  if (!d.toCa) p.sorted.clear();
  for (SwitchIndex y : p.sorted) {
    if (p.nextArc[y] == kNoArc) continue;
    p.load[p.nextArc[y]] += p.acc[y];
    p.acc[p.next[y]] += p.acc[y];
  }

  // Channel dependencies of the traffic: link into y, then y's egress link for d.
  if (opt_.checkCdg && vlAware_) {
    if (d.toCa) vlCdg(p, d);
  } else if (opt_.checkCdg) {
    for (SwitchIndex y : p.order) {
      uint32_t a = p.nextArc[y];
      if (a == kNoArc) continue;
      SwitchIndex z = p.next[y];
      if (p.nextArc[z] != kNoArc) p.cdg[a].set(g_.arcs()[p.nextArc[z]].port);
    }
  }
  if (haveAr_ && opt_.checkAr) checkAr(p, d);
  if (haveAr_ && opt_.checkArCdg && vlAware_) {
    if (d.toCa) vlArCdg(p, d);
  } else if (haveAr_ && opt_.checkArCdg) {
    arCdg(p, d);
  }
}

// Per source switch (its CAs share the path and the SL), the path's channels with the VL of each hop.
// Switch LIDs are left out: their traffic is SMPs on VL15, which is not flow controlled.
void Checker::vlCdg(Partial& p, const Dest& d) {
  const auto& arcs = g_.arcs();
  for (SwitchIndex x = 0; x < g_.size(); ++x) {
    if (weight_[x] - (x == d.target ? 1u : 0u) == 0 || p.state[x] != kArrive) continue;
    const uint8_t sl = tables_.pathSl(g_.node(x), d.lid);
    unsigned in = ingressPort_[x];
    uint32_t prev = UINT32_MAX;
    for (SwitchIndex u = x; p.nextArc[u] != kNoArc; u = p.next[u]) {
      const uint32_t a = p.nextArc[u];
      const uint32_t ch = a * 16 + hopVl(u, in, arcs[a].port, sl);
      if (prev != UINT32_MAX) p.vlEdges.push_back(channelEdge(prev, ch));
      prev = ch;
      in = arcs[a].peerPort;
    }
  }
  if (p.vlEdges.size() > (size_t{1} << 22)) uniqueEdges(p.vlEdges);
}

void Checker::checkAr(Partial& p, const Dest& d) {
  const uint32_t lid = d.lid.value;
  for (SwitchIndex x = 0; x < g_.size(); ++x) {
    const uint16_t grp = arGroup(p, x, lid);
    if (grp == ArTable::kNoGroup) continue;
    const NodeIndex n = g_.node(x);
    ++p.arEntries;
    const Bits256& members = arBits_[n][grp];
    uint8_t lft = lftPort(p, x, d.lid);
    if (lft != kNoPort && !members.test(lft)) ++p.arMissingStatic;
    // Away from the destination's own switch the verdict depends only on (group, target switch, CA or not),
    // and the LIDs behind one switch are usually consecutive: one cached verdict per switch. A group with a
    // member beyond the shortest depends on the LID's routes too: not cached.
    bool cacheable = x != d.target;
    const uint64_t key = (uint64_t{grp} << 34) | (uint64_t{d.target & 0x1FFFFFFFu} << 1) | (d.toCa ? 1u : 0u);
    if (cacheable && p.arKey[x] == key) {
      p.arMembers += p.arCachedMembers[x];
      if (p.arCachedBad[x]) {
        p.arNotShortest += p.arCachedBad[x];
        // Examples only from fresh evaluations; a cached verdict adds to the counts.
      }
      continue;
    }
    // Shortest remaining distance from x to the destination endport.
    uint32_t shortest = UINT32_MAX;
    if (d.target != kNoSwitch && h_.at(x, d.target) != kUnreachable)
      shortest = h_.at(x, d.target) + (d.toCa ? 1u : 0u);
    uint32_t count = 0, bad = 0;
    members.forEach([&](unsigned q) {
      ++count;
      uint32_t rem = UINT32_MAX;
      const Hop& h = hop(x, q);
      if (q == 0) {
        if (d.owner.node == n && d.owner.port.value == 0) rem = 0;
      } else if (h.kind == Hop::kToEndnode) {
        if (h.node == d.owner.node && h.peerPort == d.owner.port) rem = 1;
      } else if (h.kind == Hop::kToSwitch && d.target != kNoSwitch && h_.at(h.sw, d.target) != kUnreachable) {
        rem = 1u + h_.at(h.sw, d.target) + (d.toCa ? 1u : 0u);
      }
      if (rem != UINT32_MAX && rem == shortest) return;
      // Beyond the shortest: within the tables' stretch over the next switch's own route.
      if (rem != UINT32_MAX && arStretch_ > 0 && h.kind == Hop::kToSwitch) {
        cacheable = false;
        p.arKey[x] = UINT64_MAX;
        if (p.state[h.sw] == kUnknown) walk(p, d, h.sw);
        if (p.state[h.sw] == kArrive) rem = 1u + p.hops[h.sw];
        if (p.state[h.sw] == kArrive && rem <= shortest + arStretch_) {
          ++p.arStretched;
          return;
        }
      }
      ++bad;
      addExample(p, kKindAr, lid, x, [&] {
        return "AR group " + std::to_string(grp) + " of " + switchText(x) + " for LID " +
               std::to_string(lid) + ": port " + std::to_string(q) +
               (rem == UINT32_MAX
                    ? std::string(" does not lead to the destination")
                    : " is " + std::to_string(rem) + " hops away, shortest is " + std::to_string(shortest) +
                          (arStretch_ ? " (at most " + std::to_string(arStretch_) + " more)" : ""));
      });
    });
    p.arMembers += count;
    p.arNotShortest += bad;
    if (cacheable) {
      p.arKey[x] = key;
      p.arCachedMembers[x] = count;
      p.arCachedBad[x] = bad;
    }
  }
}

bool Checker::arOuts(Partial& p, const Dest& d) {
  const uint32_t lid = d.lid.value;
  auto outPorts = [&](SwitchIndex x) {
    Bits256 b;
    uint8_t q = lftPort(p, x, d.lid);
    if (q != kNoPort) b.set(q);
    if (uint16_t grp = arGroup(p, x, lid); grp != ArTable::kNoGroup) b |= arBits_[g_.node(x)][grp];
    return b & switchPorts_[x];
  };
  std::vector<Bits256>& outs = p.arCdgScratch;
  outs.resize(g_.size());
  bool same = p.arPrevValid && p.arPrevTarget == d.target && p.arPrevToCa == d.toCa;
  for (SwitchIndex x = 0; x < g_.size(); ++x) {
    Bits256 b = outPorts(x);
    if (same && b.w != outs[x].w) same = false;
    outs[x] = b;
  }
  p.arPrevValid = true;
  p.arPrevTarget = d.target;
  p.arPrevToCa = d.toCa;
  return !same;
}

// Dependencies when any AR alternative may be taken: the traffic set is closed over all members.
void Checker::arCdg(Partial& p, const Dest& d) {
  // The dependencies depend only on every switch's out set and on the sources. Consecutive LIDs behind one
  // switch usually have identical out sets (the AR group contains the LFT port), so their edges are added
  // once.
  if (!arOuts(p, d)) return;
  const std::vector<Bits256>& outs = p.arCdgScratch;
  std::fill(p.mark.begin(), p.mark.end(), 0);
  p.stack.clear();
  for (SwitchIndex x = 0; x < g_.size(); ++x)
    if (weight_[x] - ((d.toCa && x == d.target) ? 1u : 0u) > 0) {
      p.mark[x] = 1;
      p.stack.push_back(x);
    }
  for (size_t head = 0; head < p.stack.size(); ++head) {
    SwitchIndex x = p.stack[head];
    outs[x].forEach([&](unsigned q) {
      SwitchIndex y = g_.arcs()[g_.arcOfPort(x, q)].to;
      if (!p.mark[y]) {
        p.mark[y] = 1;
        p.stack.push_back(y);
      }
    });
  }
  for (SwitchIndex x : p.stack)
    outs[x].forEach([&](unsigned q) {
      uint32_t a = g_.arcOfPort(x, q);
      p.arCdg[a] |= outs[g_.arcs()[a].to];
    });
}

// The VL-aware dependencies when any AR alternative may be taken. A packet keeps its SL whichever member it
// takes, so per SL the channels (link, VL) that the traffic of the source switches on that SL can reach are
// closed over all members, each hop on the VL its SL gets on that output (as vlCdg's static hops do).
void Checker::vlArCdg(Partial& p, const Dest& d) {
  arOuts(p, d);  // the SLs may differ from the previous destination's even when the out sets do not
  const std::vector<Bits256>& outs = p.arCdgScratch;
  const auto& arcs = g_.arcs();
  auto sources = [&](SwitchIndex x) { return weight_[x] - (x == d.target ? 1u : 0u); };
  uint32_t sls = 0;
  for (SwitchIndex x = 0; x < g_.size(); ++x)
    if (sources(x) > 0) sls |= 1u << (tables_.pathSl(g_.node(x), d.lid) & 0xF);
  if (p.vlArSeen.empty()) p.vlArSeen.assign(arcs.size() * 16, 0);
  for (; sls; sls &= sls - 1) {
    const uint8_t sl = static_cast<uint8_t>(std::countr_zero(sls));
    if (++p.vlArEpoch == 0) {
      std::fill(p.vlArSeen.begin(), p.vlArSeen.end(), 0);
      p.vlArEpoch = 1;
    }
    std::vector<uint32_t>& queue = p.vlArQueue;
    queue.clear();
    auto leave = [&](SwitchIndex u, unsigned in, uint32_t from) {
      outs[u].forEach([&](unsigned q) {
        const uint32_t ch = g_.arcOfPort(u, q) * 16 + hopVl(u, in, q, sl);
        if (from != UINT32_MAX) p.vlArEdges.push_back(channelEdge(from, ch));
        if (p.vlArSeen[ch] != p.vlArEpoch) {
          p.vlArSeen[ch] = p.vlArEpoch;
          queue.push_back(ch);
        }
      });
    };
    for (SwitchIndex x = 0; x < g_.size(); ++x)
      if (sources(x) > 0 && tables_.pathSl(g_.node(x), d.lid) == sl) leave(x, ingressPort_[x], UINT32_MAX);
    for (size_t head = 0; head < queue.size(); ++head) {
      const uint32_t ch = queue[head];
      const auto& a = arcs[ch / 16];
      leave(a.to, a.peerPort, ch);
    }
  }
  if (p.vlArEdges.size() > (size_t{1} << 22)) uniqueEdges(p.vlArEdges);
}

bool Checker::findCycle(const std::vector<Bits256>& cdg, std::vector<LinkRef>& cycle, size_t& channels,
                        size_t& edges) const {
  const size_t A = g_.arcs().size();
  std::vector<uint8_t> touched(A, 0);
  edges = 0;
  auto succ = [&](uint32_t a, unsigned q) { return g_.arcOfPort(g_.arcs()[a].to, q); };
  for (uint32_t a = 0; a < A; ++a) {
    if (!cdg[a].any()) continue;
    touched[a] = 1;
    edges += cdg[a].count();
    cdg[a].forEach([&](unsigned q) {
      uint32_t c = succ(a, q);
      if (c != kNoArc) touched[c] = 1;
    });
  }
  channels = static_cast<size_t>(std::count(touched.begin(), touched.end(), 1));
  // Iterative DFS: colour 0 new, 1 on the stack, 2 done. Each frame remembers the next port to try.
  std::vector<uint8_t> colour(A, 0);
  struct Frame {
    uint32_t arc;
    unsigned nextPort;
  };
  std::vector<Frame> stack;
  for (uint32_t root = 0; root < A; ++root) {
    if (colour[root] || !cdg[root].any()) continue;
    stack.push_back({root, 0});
    colour[root] = 1;
    while (!stack.empty()) {
      Frame& f = stack.back();
      const Bits256& m = cdg[f.arc];
      unsigned q = f.nextPort;
      while (q < 256 && !m.test(q)) ++q;
      if (q >= 256) {
        colour[f.arc] = 2;
        stack.pop_back();
        continue;
      }
      f.nextPort = q + 1;
      uint32_t c = succ(f.arc, q);
      if (c == kNoArc || colour[c] == 2) continue;
      if (colour[c] == 1) {
        auto it = std::find_if(stack.begin(), stack.end(), [&](const Frame& fr) { return fr.arc == c; });
        for (; it != stack.end(); ++it) cycle.push_back(linkRef(it->arc));
        return false;
      }
      colour[c] = 1;
      stack.push_back({c, 0});
    }
  }
  return true;
}

CheckReport Checker::run() {
  const size_t S = g_.size();
  CheckReport r;
  r.engine = tables_.engine;
  r.switches = S;

  weight_.assign(S, 0);
  firstSource_.assign(S, Source{fabric::kNoNode, PortNum{}});
  ingressPort_.assign(S, 0);
  vlAware_ = opt_.slToVl != nullptr || !tables_.sl.empty() || tables_.slLayers > 1;
  arStretch_ = vlAware_ && opt_.checkArCdg ? tables_.arStretch : 0;
  for (NodeIndex i = 0; i < topo_.size(); ++i) {
    const Node& n = topo_.node(i);
    if (n.isSwitch()) continue;
    for (unsigned q = 1; q <= n.numPorts; ++q) {
      const fabric::Port& port = n.ports[q];
      if (!port.connected()) continue;
      ++r.sources;
      PortNum pn{static_cast<uint8_t>(q)};
      SwitchIndex s = g_.index(port.peerNode);
      if (s != kNoSwitch && portUsable(topo_, i, pn)) {
        if (weight_[s]++ == 0) {
          firstSource_[s] = Source{i, pn};
          ingressPort_[s] = port.peerPort.value;
        }
      } else {
        directSources_.push_back(Source{i, pn});
      }
    }
  }
  switchPorts_.assign(S, Bits256{});
  for (const auto& a : g_.arcs()) switchPorts_[a.from].set(a.port);
  for (const auto& t : tables_.ar) {
    if (!t.lidToGroup.empty()) haveAr_ = true;
    r.arGroups += t.groups.size();
  }
  if (haveAr_) {
    arBits_.resize(tables_.ar.size());
    for (size_t n = 0; n < tables_.ar.size(); ++n)
      for (const PortMask& m : tables_.ar[n].groups) arBits_[n].push_back(fromPortMask(m));
  }
  for (SwitchIndex x = 0; x < S; ++x) {
    const NodeIndex n = g_.node(x);
    const Node& node = topo_.node(n);
    portBase_.push_back(static_cast<uint32_t>(hops_.size()));
    portCount_.push_back(static_cast<uint16_t>(node.numPorts + 1u));
    hops_.resize(hops_.size() + node.numPorts + 1u);
    for (unsigned q = 1; q <= node.numPorts; ++q) {
      const fabric::Port& port = node.ports[q];
      Hop& h = hops_[portBase_[x] + q];
      if (!port.connected() || !portUsable(topo_, n, fabric::PortNum{static_cast<uint8_t>(q)})) continue;
      h.peerPort = port.peerPort;
      h.node = port.peerNode;
      h.sw = g_.index(port.peerNode);
      h.kind = h.sw == kNoSwitch ? Hop::kToEndnode : Hop::kToSwitch;
      h.arc = g_.arcOfPort(x, q);
    }
  }

  std::vector<Dest> dests;
  for (uint32_t l = 1; l <= lids_.maxLid().value; ++l) {
    Lid lid{static_cast<uint16_t>(l)};
    LidOwner o = lids_.owner(lid);
    if (o.node == fabric::kNoNode || o.node >= topo_.size()) continue;
    if (!opt_.allLids && lids_.base(o.node, o.port) != lid) continue;
    Dest d{lid, o, kNoSwitch, false};
    const Node& n = topo_.node(o.node);
    if (n.isSwitch()) {
      d.target = g_.index(o.node);
    } else if (o.port.value >= 1 && o.port.value <= n.numPorts) {
      // target is set exactly when the destination port is itself a source linked to that switch.
      d.toCa = true;
      const fabric::Port& port = n.ports[o.port.value];
      if (port.connected() && portUsable(topo_, o.node, o.port)) d.target = g_.index(port.peerNode);
    }
    dests.push_back(d);
  }
  r.destinations = dests.size();

  const size_t A = g_.arcs().size();
  // Destinations in blocks of kLidBlock consecutive LIDs; each block's tables are transposed once.
  std::vector<size_t> blockStart;
  for (size_t i = 0; i < dests.size(); ++i)
    if (i == 0 || dests[i].lid.value / kLidBlock != dests[i - 1].lid.value / kLidBlock)
      blockStart.push_back(i);
  blockStart.push_back(dests.size());
  unsigned workers = workerCount(blockStart.size() - 1, opt_.threads);
  std::vector<Partial> parts(workers);
  for (auto& p : parts) {
    p.load.assign(A, 0);
    if (opt_.checkCdg) p.cdg.assign(A, Bits256{});
    if (haveAr_ && opt_.checkArCdg) p.arCdg.assign(A, Bits256{});
    p.state.assign(S, 0);
    p.hops.assign(S, 0);
    p.next.assign(S, kNoSwitch);
    p.failAt.assign(S, kNoSwitch);
    p.nextArc.assign(S, kNoArc);
    p.acc.assign(S, 0);
    p.mark.assign(S, 0);
    p.arKey.assign(S, UINT64_MAX);
    p.arCachedMembers.assign(S, 0);
    p.arCachedBad.assign(S, 0);
  }
  parallelFor(blockStart.size() - 1, opt_.threads, [&](unsigned w, size_t b) {
    Partial& p = parts[w];
    loadBlock(p, dests[blockStart[b]].lid.value / kLidBlock * kLidBlock);
    for (size_t i = blockStart[b]; i < blockStart[b + 1]; ++i) checkDest(p, dests[i]);
  });

  // Sources that reach no switch: a CA port cabled to a CA (reaches that CA's LIDs only) or over a Down link.
  Partial& p0 = parts[0];
  for (const Source& src : directSources_) {
    const fabric::Port& port = topo_.node(src.node).ports[src.port.value];
    bool usable = portUsable(topo_, src.node, src.port);
    for (const Dest& d : dests) {
      if (d.owner.node == src.node && d.owner.port == src.port) continue;
      ++p0.pairs;
      if (usable && port.peerNode == d.owner.node && port.peerPort == d.owner.port) {
        ++p0.reachable;
        p0.sumHops += 1;
        p0.maxHops = std::max(p0.maxHops, 1u);
        continue;
      }
      (usable ? p0.noRoute : p0.dead) += 1;
      if (!d.toCa) ++p0.toSwitches;
      addExample(p0, usable ? kKindNoRoute : kKindDead, d.lid.value, UINT32_MAX, [&] {
        return "LID " + std::to_string(d.lid.value) + " (" + endportText(d.owner.node, d.owner.port) +
               ") from " + endportText(src.node, src.port) + ": " +
               (usable ? "source is not linked to a switch" : "source link is down");
      });
    }
  }

  // Merge.
  std::vector<uint64_t> load(A, 0);
  std::vector<Bits256> cdg(opt_.checkCdg && !vlAware_ ? A : 0), arCdgAll(haveAr_ && opt_.checkArCdg ? A : 0);
  std::vector<uint64_t> vlEdges, vlArEdges;
  std::array<std::vector<Example>, kKinds> examples;
  uint64_t sumHops = 0, sumStretch = 0;
  for (auto& p : parts) {
    r.pairs += p.pairs;
    r.reachable += p.reachable;
    r.noRoute += p.noRoute;
    r.deadLink += p.dead;
    r.misdelivered += p.misdeliver;
    r.loops += p.loops;
    r.unreachableToSwitches += p.toSwitches;
    sumHops += p.sumHops;
    sumStretch += p.sumStretch;
    r.maxHops = std::max(r.maxHops, p.maxHops);
    r.maxStretch = std::max(r.maxStretch, p.maxStretch);
    r.stretchedPairs += p.stretched;
    r.arEntries += p.arEntries;
    r.arMembers += p.arMembers;
    r.arNotShortest += p.arNotShortest;
    r.arStretched += p.arStretched;
    r.arMissingStatic += p.arMissingStatic;
    for (size_t a = 0; a < A; ++a) load[a] += p.load[a];
    for (size_t a = 0; a < cdg.size(); ++a) cdg[a] |= p.cdg[a];
    vlEdges.insert(vlEdges.end(), p.vlEdges.begin(), p.vlEdges.end());
    p.vlEdges = {};
    vlArEdges.insert(vlArEdges.end(), p.vlArEdges.begin(), p.vlArEdges.end());
    p.vlArEdges = {};
    for (size_t a = 0; a < arCdgAll.size(); ++a) arCdgAll[a] |= p.arCdg[a];
    for (int k = 0; k < kKinds; ++k)
      examples[k].insert(examples[k].end(), p.examples[k].begin(), p.examples[k].end());
  }
  r.unreachable = r.noRoute + r.deadLink + r.misdelivered + r.loops;
  if (r.reachable) {
    r.meanHops = static_cast<double>(sumHops) / static_cast<double>(r.reachable);
    r.meanStretch = static_cast<double>(sumStretch) / static_cast<double>(r.reachable);
  }
  for (int k = 0; k < kKinds; ++k) {
    std::sort(examples[k].begin(), examples[k].end());
    for (size_t i = 0; i < examples[k].size() && i < opt_.maxExamples; ++i)
      r.examples.push_back(examples[k][i].text);
  }

  r.switchLinks = A;
  if (A) {
    auto mx = std::max_element(load.begin(), load.end());
    r.maxLoad = *mx;
    r.maxLink = linkRef(static_cast<uint32_t>(mx - load.begin()));
    r.minLoad = *std::min_element(load.begin(), load.end());
    uint64_t sum = 0;
    for (uint64_t v : load) sum += v;
    r.meanLoad = static_cast<double>(sum) / static_cast<double>(A);
    std::vector<uint64_t> links(S, 0);
    uint64_t total = 0;
    for (const auto& a : g_.arcs()) ++links[a.from];
    for (size_t s = 0; s < S; ++s) total += weight_[s];
    for (size_t s = 0; s < S; ++s)
      if (weight_[s] > 0 && links[s] > 0)
        r.loadBound =
            std::max<uint64_t>(r.loadBound, (weight_[s] * (total - weight_[s]) + links[s] - 1) / links[s]);
  }

  if (opt_.checkCdg && vlAware_) {
    r.cdgChecked = true;
    uniqueEdges(vlEdges);
    r.cdgEdges = vlEdges.size();
    std::vector<uint8_t> touched(A * 16, 0);
    uint32_t vls = 0;
    for (uint64_t e : vlEdges)
      for (uint32_t ch : {static_cast<uint32_t>(e >> 32), static_cast<uint32_t>(e & 0xFFFFFFFFu)}) {
        touched[ch] = 1;
        vls |= 1u << (ch % 16);
      }
    r.cdgChannels = static_cast<size_t>(std::count(touched.begin(), touched.end(), 1));
    r.cdgVls = static_cast<uint8_t>(std::popcount(vls));
    r.cdgAcyclic = findVlCycle(vlEdges, r.cdgCycle);
  } else if (opt_.checkCdg) {
    r.cdgChecked = true;
    r.cdgAcyclic = findCycle(cdg, r.cdgCycle, r.cdgChannels, r.cdgEdges);
  }
  if (haveAr_) {
    r.arChecked = opt_.checkAr;
    if (opt_.checkArCdg && vlAware_) {
      r.arCdgChecked = r.arCdgVlAware = true;
      uniqueEdges(vlArEdges);
      r.arCdgEdges = vlArEdges.size();
      r.arCdgAcyclic = findVlCycle(vlArEdges, r.arCdgCycle);
    } else if (opt_.checkArCdg) {
      r.arCdgChecked = true;
      size_t channels = 0;
      r.arCdgAcyclic = findCycle(arCdgAll, r.arCdgCycle, channels, r.arCdgEdges);
    }
  }
  return r;
}

}  // namespace

// ---- rendering ----

LinkRef linkRefOf(const Topology& topo, const SwitchGraph& g, uint32_t arc) {
  const auto& a = g.arcs()[arc];
  const Node& f = topo.node(g.node(a.from));
  const Node& t = topo.node(g.node(a.to));
  return LinkRef{f.guid, a.port, t.guid, a.peerPort, f.description, t.description};
}

std::string formatLinkText(const LinkRef& l) {
  return fabric::toString(l.from) + "[" + std::to_string(l.port) + "] '" + l.fromDesc + "' -> " +
         fabric::toString(l.to) + "[" + std::to_string(l.toPort) + "] '" + l.toDesc + "'";
}

std::string formatFixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, std::isfinite(v) ? v : 0.0);
  return buf;
}

std::string jsonQuote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string formatLinkJson(const LinkRef& l) {
  return "{\"from\":" + jsonQuote(fabric::toString(l.from)) + ",\"port\":" + std::to_string(l.port) +
         ",\"fromDesc\":" + jsonQuote(l.fromDesc) + ",\"to\":" + jsonQuote(fabric::toString(l.to)) +
         ",\"toPort\":" + std::to_string(l.toPort) + ",\"toDesc\":" + jsonQuote(l.toDesc) +
         ",\"vl\":" + std::to_string(l.vl) + "}";
}

CheckReport checkRoutes(const Topology& topo, const LidAssignment& lids, const RoutingTables& tables,
                        const CheckOptions& options) {
  Checker c(topo, lids, tables, options);
  return c.run();
}

std::string formatReportText(const CheckReport& r) {
  std::string s;
  auto line = [&](const std::string& k, const std::string& v) { s += k + ": " + v + "\n"; };
  line("engine", r.engine.empty() ? "-" : r.engine);
  line("switches", std::to_string(r.switches));
  line("sources (CA ports)", std::to_string(r.sources));
  line("destination LIDs", std::to_string(r.destinations));
  line("pairs", std::to_string(r.pairs));
  line("reachable", std::to_string(r.reachable));
  line("unreachable", std::to_string(r.unreachable) + " (no route " + std::to_string(r.noRoute) +
                          ", dead link " + std::to_string(r.deadLink) + ", misdelivered " +
                          std::to_string(r.misdelivered) + ", loops " + std::to_string(r.loops) +
                          "; to switch LIDs " + std::to_string(r.unreachableToSwitches) + ")");
  line("hops max/mean", std::to_string(r.maxHops) + " / " + formatFixed(r.meanHops));
  line("stretch max/mean", std::to_string(r.maxStretch) + " / " + formatFixed(r.meanStretch, 4) + " (" +
                               std::to_string(r.stretchedPairs) + " pairs longer than min-hop)");
  line("switch links (directed)", std::to_string(r.switchLinks));
  if (r.switchLinks) {
    line("link load max/mean/min",
         std::to_string(r.maxLoad) + " / " + formatFixed(r.meanLoad, 1) + " / " + std::to_string(r.minLoad));
    if (r.loadBound)
      line("link load lower bound",
           std::to_string(r.loadBound) + " (max " +
               formatFixed(static_cast<double>(r.maxLoad) / static_cast<double>(r.loadBound), 3) +
               "x of it)");
    line("most loaded link", formatLinkText(r.maxLink));
  }
  if (r.cdgChecked && r.cdgVls > 0) {
    line("CDG", std::to_string(r.cdgChannels) + " channels (link x VL), " + std::to_string(r.cdgEdges) +
                    " dependencies on " + std::to_string(r.cdgVls) + " VL" + (r.cdgVls == 1 ? "" : "s") +
                    ", " + (r.cdgAcyclic ? "acyclic on every VL (deadlock-free)" : "CYCLE"));
    for (const auto& l : r.cdgCycle)
      s += "  cycle: " + formatLinkText(l) + " VL " + std::to_string(l.vl) + "\n";
  } else if (r.cdgChecked) {
    line("CDG", std::to_string(r.cdgChannels) + " channels, " + std::to_string(r.cdgEdges) +
                    " dependencies, " + (r.cdgAcyclic ? "acyclic (deadlock-free on one VL)" : "CYCLE"));
    for (const auto& l : r.cdgCycle) s += "  cycle: " + formatLinkText(l) + "\n";
  }
  if (r.arChecked || r.arCdgChecked) {
    line("AR groups", std::to_string(r.arGroups));
    line("AR entries", std::to_string(r.arEntries) + " (" + std::to_string(r.arMembers) + " members, " +
                           std::to_string(r.arNotShortest) + " not shortest, " +
                           (r.arStretched ? std::to_string(r.arStretched) + " within the AR stretch, " : "") +
                           std::to_string(r.arMissingStatic) + " without the LFT port)");
    if (r.arCdgChecked) {
      line("AR CDG", std::to_string(r.arCdgEdges) + " dependencies" + (r.arCdgVlAware ? " (per VL)" : "") +
                         ", " + (r.arCdgAcyclic ? "acyclic" : "CYCLE"));
      for (const auto& l : r.arCdgCycle)
        s += "  cycle: " + formatLinkText(l) + (r.arCdgVlAware ? " VL " + std::to_string(l.vl) : "") + "\n";
    }
  }
  for (const auto& e : r.examples) s += "  " + e + "\n";
  line("result", r.ok() ? "OK" : "PROBLEMS");
  return s;
}

std::string formatReportJson(const CheckReport& r) {
  std::string s = "{";
  bool first = true;
  auto key = [&](const char* k) {
    s += first ? "" : ",";
    first = false;
    s += jsonQuote(k) + ":";
  };
  auto num = [&](const char* k, uint64_t v) {
    key(k);
    s += std::to_string(v);
  };
  auto dbl = [&](const char* k, double v) {
    key(k);
    s += formatFixed(v, 6);
  };
  auto boolean = [&](const char* k, bool v) {
    key(k);
    s += v ? "true" : "false";
  };
  auto links = [&](const char* k, const std::vector<LinkRef>& v) {
    key(k);
    s += "[";
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) s += ',';
      s += formatLinkJson(v[i]);
    }
    s += "]";
  };
  key("engine");
  s += jsonQuote(r.engine);
  boolean("ok", r.ok());
  num("switches", r.switches);
  num("sources", r.sources);
  num("destinations", r.destinations);
  num("pairs", r.pairs);
  num("reachable", r.reachable);
  num("unreachable", r.unreachable);
  num("noRoute", r.noRoute);
  num("deadLink", r.deadLink);
  num("misdelivered", r.misdelivered);
  num("loops", r.loops);
  num("unreachableToSwitches", r.unreachableToSwitches);
  num("maxHops", r.maxHops);
  dbl("meanHops", r.meanHops);
  num("maxStretch", r.maxStretch);
  dbl("meanStretch", r.meanStretch);
  num("stretchedPairs", r.stretchedPairs);
  num("switchLinks", r.switchLinks);
  num("maxLoad", r.maxLoad);
  dbl("meanLoad", r.meanLoad);
  num("minLoad", r.minLoad);
  num("loadBound", r.loadBound);
  if (r.switchLinks) {
    key("maxLink");
    s += formatLinkJson(r.maxLink);
  }
  boolean("cdgChecked", r.cdgChecked);
  num("cdgVls", r.cdgVls);
  num("cdgChannels", r.cdgChannels);
  num("cdgEdges", r.cdgEdges);
  boolean("cdgAcyclic", r.cdgAcyclic);
  links("cdgCycle", r.cdgCycle);
  boolean("arChecked", r.arChecked);
  num("arGroups", r.arGroups);
  num("arEntries", r.arEntries);
  num("arMembers", r.arMembers);
  num("arNotShortest", r.arNotShortest);
  num("arStretched", r.arStretched);
  num("arMissingStatic", r.arMissingStatic);
  boolean("arCdgChecked", r.arCdgChecked);
  boolean("arCdgVlAware", r.arCdgVlAware);
  num("arCdgEdges", r.arCdgEdges);
  boolean("arCdgAcyclic", r.arCdgAcyclic);
  links("arCdgCycle", r.arCdgCycle);
  key("examples");
  s += "[";
  for (size_t i = 0; i < r.examples.size(); ++i) {
    if (i) s += ',';
    s += jsonQuote(r.examples[i]);
  }
  s += "]}";
  return s;
}

}  // namespace ibsm::routing
