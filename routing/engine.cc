// Engine registry and fallback chain.
#include "routing/engine.h"

namespace ibsm::routing {

namespace {

struct Registered {
  std::string_view name;
  std::unique_ptr<Engine> (*make)();
};

constexpr Registered kEngines[] = {
    {"minhop", &makeMinHopEngine},
    {"updn", &makeUpDownEngine},
    {"ftree", &makeFatTreeEngine},
    {"dfsp", &makeDfspEngine},
};

std::string_view trimBlanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
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
    std::string_view name = trimBlanks(text.substr(0, comma));
    if (name.empty()) return fabric::makeError("empty engine name in routing chain (known: " + known + ")");
    if (!makeEngine(name))
      return fabric::makeError("unknown routing engine '" + std::string(name) + "' (known: " + known + ")");
    for (const auto& n : chain)
      if (n == name) return fabric::makeError("routing engine '" + std::string(name) + "' listed twice");
    chain.emplace_back(name);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return chain;
}

size_t fillSwitchLidHoles(const Topology& topo, const LidAssignment& lids, const Options& options,
                          RoutingTables& tables) {
  // Switch LIDs only carry SMPs (VL15, not flow controlled: no credit loops), so any loop-free path will do.
  // Where the engine left one unreachable (no legal up*/down* path in a degraded tree), take min-hop's
  // choice. No loop can form: a switch the engine routes leads to the target along the engine's path, whose
  // suffix the engine routes too, and the filled switches step strictly closer along shortest paths.
  auto holes = [&](auto&& onHole) {
    for (uint32_t lid = 1; lid <= lids.maxLid().value; ++lid) {
      LidOwner o = lids.owner(Lid{static_cast<uint16_t>(lid)});
      if (o.node == fabric::kNoNode || !topo.node(o.node).isSwitch()) continue;
      for (NodeIndex s : topo.switches())
        if (s != o.node && tables.port(s, Lid{static_cast<uint16_t>(lid)}) == kNoPort) onHole(s, lid);
    }
  };
  bool any = false;
  holes([&](NodeIndex, uint32_t) { any = true; });
  if (!any || tables.engine == "minhop") return 0;
  Options o = options;
  o.computeAr = false;
  auto minhop = makeMinHopEngine()->compute(topo, lids, o);
  if (!minhop) return 0;
  size_t filled = 0;
  holes([&](NodeIndex s, uint32_t lid) {
    uint8_t p = minhop->port(s, Lid{static_cast<uint16_t>(lid)});
    if (p == kNoPort) return;
    if (tables.lft[s].size() <= lid) tables.lft[s].resize(lid + 1, kNoPort);
    tables.lft[s][lid] = p;
    ++filled;
  });
  return filled;
}

fabric::Result<ChainResult> computeChain(const std::vector<std::string>& chain, const Topology& topo,
                                         const LidAssignment& lids, const Options& options) {
  if (chain.empty()) return fabric::makeError("empty routing chain");
  std::vector<std::unique_ptr<Engine>> engines;
  for (const auto& name : chain) {
    engines.push_back(makeEngine(name));
    if (!engines.back()) return fabric::makeError("unknown routing engine '" + name + "'");
  }
  ChainResult out;
  for (size_t i = 0; i < chain.size(); ++i) {
    const std::string& name = chain[i];
    const auto& engine = engines[i];
    auto tables = engine->compute(topo, lids, options);
    if (tables) {
      out.tables = std::move(tables).value();
      if (out.tables.engine.empty()) out.tables.engine = name;
      out.switchLidsFilled = fillSwitchLidHoles(topo, lids, options, out.tables);
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
