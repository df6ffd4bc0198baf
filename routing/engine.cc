// Engine registry and fallback chain.
#include "routing/engine.h"

#include <optional>
#include <span>

#include "fabric/text.h"
#include "routing/route_checker.h"
#include "routing/routing_graph.h"
#include "routing/turn_guard.h"

namespace ibsm::routing {

using fabric::trim;

namespace {

struct Registered {
  std::string_view name;
  std::unique_ptr<Engine> (*make)();
};

constexpr Registered kEngines[] = {
    {"minhop", &makeMinHopEngine}, {"updn", &makeUpDownEngine}, {"ftree", &makeFatTreeEngine},
    {"dfsp", &makeDfspEngine},     {"dor", &makeDorEngine},     {"dfly", &makeDflyEngine},
};

// "dor|dfsp" -> {"dor", "dfsp"}; a plain name -> {name}.
std::vector<std::string_view> splitAlternatives(std::string_view token) {
  std::vector<std::string_view> out;
  while (true) {
    size_t bar = token.find('|');
    out.push_back(trim(token.substr(0, bar)));
    if (bar == std::string_view::npos) return out;
    token.remove_prefix(bar + 1);
  }
}

// One chain element: a single engine, or alternatives of which every one that routes is measured and the
// one with the lowest max switch-to-switch link load wins (ties: fewer VL layers, then the earlier one).
fabric::Result<RoutingTables> computeElement(std::string_view token, const Topology& topo,
                                             const LidAssignment& lids, const Options& options,
                                             std::vector<std::string>& notes) {
  auto alts = splitAlternatives(token);
  auto run = [&](std::string_view name) -> fabric::Result<RoutingTables> {
    auto engine = makeEngine(name);
    if (!engine) return fabric::makeError("unknown routing engine '" + std::string(name) + "'");
    auto tables = engine->compute(topo, lids, options);
    if (tables && tables->engine.empty()) tables->engine = std::string(name);
    return tables;
  };
  if (alts.size() == 1) return run(alts[0]);
  std::vector<std::pair<std::string_view, RoutingTables>> routed;
  std::vector<size_t> noteOf;  // notes index of each routed alternative
  std::string why;
  for (std::string_view name : alts) {
    auto tables = run(name);
    if (!tables) {
      const std::string& m = tables.error().message;
      std::string reason = m.starts_with(std::string(name) + ":") ? m : std::string(name) + ": " + m;
      why += (why.empty() ? "" : "; ") + reason;
      notes.push_back(reason);
      continue;
    }
    noteOf.push_back(notes.size());
    notes.emplace_back();
    routed.emplace_back(name, std::move(tables).value());
  }
  auto vls = [](const RoutingTables& t) {
    std::string s = " on ";
    s += std::to_string(t.slLayers);
    s += t.slLayers == 1 ? " VL" : " VLs";
    return s;
  };
  std::optional<RoutingTables> best;
  if (routed.size() == 1) {
    // Nothing to compare with: the route check that measures the load is not needed.
    notes[noteOf[0]] = std::string(routed[0].first) + ": the only one that routes," + vls(routed[0].second);
    best = std::move(routed[0].second);
  }
  uint64_t bestLoad = 0;
  CheckOptions co;
  co.checkCdg = co.checkAr = co.checkArCdg = false;
  co.threads = options.threads;
  for (size_t r = 0; routed.size() > 1 && r < routed.size(); ++r) {
    RoutingTables& tables = routed[r].second;
    uint64_t load = checkRoutes(topo, lids, tables, co).maxLoad;
    notes[noteOf[r]] = std::string(routed[r].first) + ": max link load " + std::to_string(load) + vls(tables);
    if (!best || load < bestLoad || (load == bestLoad && tables.slLayers < best->slLayers)) {
      best = std::move(tables);
      bestLoad = load;
    }
  }
  if (!best) return fabric::makeError(why);
  return std::move(*best);
}

}  // namespace

std::unique_ptr<Engine> makeEngine(std::string_view name) {
  for (const auto& e : kEngines)
    if (e.name == name) return e.make();
  return nullptr;
}

std::vector<std::string> engineNames() {
  std::vector<std::string> names;
  for (const auto& e : kEngines) names.emplace_back(e.name);
  return names;
}

fabric::Result<std::vector<std::string>> parseChain(std::string_view text) {
  std::vector<std::string> chain;
  std::string known;
  for (const auto& n : engineNames()) known += (known.empty() ? "" : ", ") + n;
  while (true) {
    size_t comma = text.find(',');
    std::string_view name = trim(text.substr(0, comma));
    if (name.empty()) return fabric::makeError("empty engine name in routing chain (known: " + known + ")");
    for (std::string_view alt : splitAlternatives(name))
      if (alt.empty() || !makeEngine(alt))
        return fabric::makeError("unknown routing engine '" + std::string(alt) + "' (known: " + known + ")");
    for (const auto& n : chain)
      if (n == name) return fabric::makeError("routing engine '" + std::string(name) + "' listed twice");
    chain.emplace_back(name);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return chain;
}

size_t fillSwitchLidHoles(const Topology& topo, const LidAssignment& lids, RoutingTables& tables) {
  // Where the engine left a switch without a route to a switch LID (no legal up*/down* path, e.g. from a top
  // switch to another), take a next hop on a shortest path, as min-hop would: the one fewest filled routes
  // use so far. Switches no host's route reaches carry SMPs only there (VL15, not flow controlled: no
  // credit loops), so any loop-free way will do. The hosts of a switch with such a hole send GMPs on data
  // VLs (PMA reads), so under an up/down order their ways go first and take only down-up turns the
  // TurnGuard admits (routing/turn_guard.h); a hole it can admit no way for keeps none. No loop can form: a
  // switch the engine routes leads to the target along the engine's path, whose suffix the engine routes
  // too, and the filled switches step strictly closer along shortest paths or into a switch with a way. One
  // BFS per switch LID with a hole.
  if (tables.engine == "minhop") return 0;
  const RoutingGraph g(topo);
  const ArcIndex arcOf(g);
  const bool ordered = tables.upKey.size() == topo.size();
  std::optional<TurnGuard> guard;  // built at the first hole a host's route meets
  size_t filled = 0;
  std::vector<uint32_t> holes, starts, blocked, used(g.arcCount(), 0);
  for (uint32_t lid = 1; lid <= lids.maxLid().value; ++lid) {
    const LidOwner o = lids.owner(Lid{static_cast<uint16_t>(lid)});
    if (o.node == fabric::kNoNode || !topo.node(o.node).isSwitch() || g.indexOf(o.node) == kInf) continue;
    const Lid l{static_cast<uint16_t>(lid)};
    holes.clear();
    for (uint32_t s = 0; s < g.size(); ++s)
      if (g.node(s) != o.node && tables.port(g.node(s), l) == kNoPort) holes.push_back(s);
    if (holes.empty()) continue;
    const uint32_t target = g.indexOf(o.node);
    const std::vector<uint32_t> dist = g.distances(std::span(&target, 1));
    auto set = [&](uint32_t s, uint8_t port) {
      auto& row = tables.lft[g.node(s)];
      if (row.size() <= lid) row.resize(lid + 1, kNoPort);
      row[lid] = port;
    };
    blocked.clear();
    starts.clear();
    for (uint32_t s : holes)
      if (ordered && g.hosts(s) > 0 && dist[s] != kInf) starts.push_back(s);
    if (!starts.empty()) {
      if (!guard) guard.emplace(g, tables.upKey, tables.downUpTurns);
      auto way = [&](uint32_t s) {
        const uint8_t p = tables.port(g.node(s), l);
        if (s == target) return kWayEnds;
        if (p == kNoPort) return kInf;
        const uint32_t a = arcOf(s, p);
        return a == kInf ? kWayEnds : a;
      };
      filled += fillFromHosts(
          g, *guard, dist, starts, used, lid, way, [&](uint32_t s, uint32_t a) { set(s, g.arc(a).port); },
          blocked);
    }
    for (uint32_t s : holes) {
      if (dist[s] == kInf || tables.port(g.node(s), l) != kNoPort ||
          std::find(blocked.begin(), blocked.end(), s) != blocked.end())
        continue;
      // Equal counts: the first from an offset that differs per switch and LID, so that the switches of one
      // level do not all pick the same neighbour (a repair then finds ways around a lost link).
      const uint32_t first = g.firstArc(s), deg = g.firstArc(s + 1) - first;
      uint32_t best = kInf;
      for (uint32_t i = 0; i < deg; ++i) {
        const uint32_t a = first + (s + lid + i) % deg;
        if (dist[g.arc(a).to] + 1 == dist[s] && (best == kInf || used[a] < used[best])) best = a;
      }
      ++used[best];
      set(s, g.arc(best).port);
      ++filled;
    }
  }
  if (guard) tables.downUpTurns = guard->turns();
  return filled;
}

fabric::Result<ChainResult> computeChain(const std::vector<std::string>& chain, const Topology& topo,
                                         const LidAssignment& lids, const Options& options) {
  if (chain.empty()) return fabric::makeError("empty routing chain");
  for (const auto& name : chain)
    for (std::string_view alt : splitAlternatives(name))
      if (!makeEngine(alt)) return fabric::makeError("unknown routing engine '" + std::string(alt) + "'");
  ChainResult out;
  for (size_t i = 0; i < chain.size(); ++i) {
    const std::string& name = chain[i];
    auto tables = computeElement(name, topo, lids, options, out.choices);
    if (tables) {
      out.tables = std::move(tables).value();
      out.switchLidsFilled = fillSwitchLidHoles(topo, lids, out.tables);
      return out;
    }
    // Engines usually prefix their reason with their name; avoid "ftree: ftree: ...".
    const std::string& why = tables.error().message;
    out.fallbacks.push_back(why.starts_with(name + ":") ? why : name + ": " + why);
  }
  std::string all;
  for (const auto& f : out.fallbacks) all += (all.empty() ? "" : "; ") + f;
  return fabric::makeError("no routing engine could route the fabric: " + all);
}

}  // namespace ibsm::routing
