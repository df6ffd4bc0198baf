// What the SM knows the switches hold, so it sends only what differs. The SM rarely reads tables back: a
// block is known once a Set of it was acknowledged (or discovery read it), and an unknown block is always
// sent. KnownBlocks is one table of a switch (LFT blocks, AR group or ARLFT blocks); SwitchCache keeps, per
// switch GUID, whatever the programmer knows of that switch. A switch that left the fabric or was reset is
// forgotten, so it is written from scratch when it comes back.
#pragma once

#include <cstddef>
#include <iterator>
#include <unordered_map>
#include <vector>

#include "fabric/ids.h"

namespace ibsm::daemon {

template <typename Block>
class KnownBlocks {
 public:
  // Makes room for n blocks; new ones are unknown. Never shrinks.
  void grow(size_t n) {
    if (blocks_.size() >= n) return;
    blocks_.resize(n);
    known_.resize(n, false);
  }
  size_t size() const { return blocks_.size(); }
  bool known(size_t b) const { return b < known_.size() && known_[b]; }
  // True when block b is known to hold `want`: no Set needed.
  bool holds(size_t b, const Block& want) const { return known(b) && blocks_[b] == want; }
  // A Set of block b was acknowledged.
  void store(size_t b, const Block& block) {
    grow(b + 1);
    blocks_[b] = block;
    known_[b] = true;
  }
  // A Set of block b failed: what the switch holds there is unknown now.
  void markUnknown(size_t b) {
    if (b < known_.size()) known_[b] = false;
  }
  void forgetAll() { known_.assign(known_.size(), false); }

 private:
  std::vector<Block> blocks_;
  std::vector<bool> known_;
};

template <typename Entry>
class SwitchCache {
 public:
  Entry& operator[](fabric::Guid guid) { return entries_[guid]; }  // references stay valid (node-based map)
  const Entry* find(fabric::Guid guid) const {
    auto it = entries_.find(guid);
    return it == entries_.end() ? nullptr : &it->second;
  }
  Entry* find(fabric::Guid guid) {
    auto it = entries_.find(guid);
    return it == entries_.end() ? nullptr : &it->second;
  }
  void forget(fabric::Guid guid) { entries_.erase(guid); }
  void clear() { entries_.clear(); }
  // Forgets every switch for which keep(guid) is false.
  template <typename Keep>
  void retain(Keep keep) {
    for (auto it = entries_.begin(); it != entries_.end();)
      it = keep(it->first) ? std::next(it) : entries_.erase(it);
  }
  auto begin() { return entries_.begin(); }
  auto end() { return entries_.end(); }
  auto begin() const { return entries_.begin(); }
  auto end() const { return entries_.end(); }

 private:
  std::unordered_map<fabric::Guid, Entry> entries_;
};

}  // namespace ibsm::daemon
