#include "routing/turn_guard.h"

#include <map>
#include <numeric>

namespace ibsm::routing {

TurnGuard::TurnGuard(const RoutingGraph& g, const std::vector<uint32_t>& upKey,
                     const std::vector<DownUpTurn>& turns)
    : g_(g), key_(g.size(), 0), class_(g.size(), 0) {
  const uint32_t n = static_cast<uint32_t>(g.size());
  for (uint32_t s = 0; s < n; ++s) key_[s] = g.node(s) < upKey.size() ? upKey[g.node(s)] : 0;
  // The tops each switch reaches going up only, by increasing key: a switch's up neighbours come first.
  std::vector<uint32_t> order(n), topIndex(n, kInf);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return key_[a] < key_[b]; });
  uint32_t tops = 0;
  for (uint32_t s : order) {
    bool top = true;
    for (const auto& a : g.arcs(s)) top = top && !isUp(s, a.to);
    if (top) topIndex[s] = tops++;
  }
  words_ = (tops + 63) / 64;
  std::vector<uint64_t> reach(size_t{n} * words_, 0);
  std::map<std::vector<uint64_t>, uint32_t> classes;
  for (uint32_t s : order) {
    uint64_t* mine = reach.data() + size_t{s} * words_;
    if (topIndex[s] != kInf) mine[topIndex[s] / 64] |= uint64_t{1} << (topIndex[s] % 64);
    for (const auto& a : g.arcs(s))
      if (isUp(s, a.to))
        for (size_t w = 0; w < words_; ++w) mine[w] |= reach[size_t{a.to} * words_ + w];
    std::vector<uint64_t> set(mine, mine + words_);
    auto [it, fresh] = classes.emplace(std::move(set), static_cast<uint32_t>(classTops_.size()));
    if (fresh) classTops_.push_back(it->first);
    class_[s] = it->second;
  }
  admitted_.assign((classTops_.size() * classTops_.size() + 63) / 64, 0);
  refused_.assign(admitted_.size(), 0);
  // The turns routes take already: by GUID, of the switches still here.
  std::vector<std::pair<Guid, uint32_t>> byGuid(n);
  for (uint32_t s = 0; s < n; ++s) byGuid[s] = {g.guid(s), s};
  std::sort(byGuid.begin(), byGuid.end());
  auto find = [&](Guid guid) {
    auto it = std::lower_bound(byGuid.begin(), byGuid.end(), std::pair(guid, uint32_t{0}));
    return it != byGuid.end() && it->first == guid ? it->second : kInf;
  };
  for (const auto& [d, v] : turns) {
    const uint32_t ds = find(d), vs = find(v);
    if (ds == kInf || vs == kInf) continue;  // its routes went with the switch
    turns_.push_back({d, v});
    if (!has(ds, vs)) add(class_[ds], class_[vs]);
  }
}

bool TurnGuard::meet(uint32_t classA, const std::vector<uint64_t>& set) const {
  const std::vector<uint64_t>& a = classTops_[classA];
  for (size_t w = 0; w < words_; ++w)
    if (a[w] & set[w]) return true;
  return false;
}

size_t TurnGuard::bit(uint32_t classD, uint32_t classV) const {
  return size_t{classD} * classTops_.size() + classV;
}

bool TurnGuard::has(uint32_t d, uint32_t v) const {
  const size_t b = bit(class_[d], class_[v]);
  return admitted_[b / 64] >> (b % 64) & 1;
}

void TurnGuard::add(uint32_t classD, uint32_t classV) {
  const size_t b = bit(classD, classV);
  admitted_[b / 64] |= uint64_t{1} << (b % 64);
  classTurns_.emplace_back(classD, classV);
}

bool TurnGuard::allows(std::span<const std::pair<uint32_t, uint32_t>> turns) const {
  std::vector<std::pair<uint32_t, uint32_t>> fresh;  // kinds not admitted yet
  for (const auto& [d, v] : turns) {
    const std::pair cp(class_[d], class_[v]);
    if (!has(d, v) && std::find(fresh.begin(), fresh.end(), cp) == fresh.end()) fresh.push_back(cp);
  }
  if (fresh.empty()) return true;
  // A kind refused alone stays refused: admitted kinds only add chains.
  const size_t alone = bit(fresh[0].first, fresh[0].second);
  if (fresh.size() == 1 && (refused_[alone / 64] >> (alone % 64) & 1)) return false;
  const size_t before = classTurns_.size(), all = before + fresh.size();
  auto at = [&](size_t j) -> const std::pair<uint32_t, uint32_t>& {
    return j < before ? classTurns_[j] : fresh[j - before];
  };
  // Only a chain through a new kind of turn can close a cycle: follow the chains from its up side (the down
  // hops of every turn whose D shares a top with what was reached, then that turn's up side) and see
  // whether they come back to its down side.
  std::vector<uint64_t> reached(words_);
  std::vector<char> taken(all);
  for (size_t i = before; i < all; ++i) {
    reached = classTops_[at(i).second];
    std::fill(taken.begin(), taken.end(), 0);
    for (bool grew = true; grew;) {
      grew = false;
      for (size_t j = 0; j < all; ++j)
        if (!taken[j] && meet(at(j).first, reached)) {
          taken[j] = 1;
          grew = true;
          const std::vector<uint64_t>& up = classTops_[at(j).second];
          for (size_t w = 0; w < words_; ++w) reached[w] |= up[w];
        }
    }
    if (meet(at(i).first, reached)) {
      if (fresh.size() == 1) refused_[alone / 64] |= uint64_t{1} << (alone % 64);
      return false;
    }
  }
  return true;
}

bool TurnGuard::admit(std::span<const std::pair<uint32_t, uint32_t>> turns) {
  if (!allows(turns)) return false;
  for (const auto& [d, v] : turns) {
    if (!has(d, v)) add(class_[d], class_[v]);
    turns_.push_back({g_.guid(d), g_.guid(v)});
  }
  return true;
}

std::vector<DownUpTurn> TurnGuard::turns() const {
  std::vector<DownUpTurn> out = turns_;
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace ibsm::routing
