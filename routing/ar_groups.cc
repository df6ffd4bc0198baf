#include "routing/ar_groups.h"

#include <cassert>

namespace ibsm::routing {

ArGroupBuilder::ArGroupBuilder(size_t lidCount, uint32_t cap)
    : cap_(cap < ArTable::kNoGroup ? cap : ArTable::kNoGroup), lidCount_(lidCount) {}

uint32_t ArGroupBuilder::intern(const PortMask& ports) {
  if (lastId_ != kNoSet && ports == lastMask_) return lastId_;
  if (ports.count() < 2) return kNoSet;
  auto [it, inserted] = index_.try_emplace(ports, static_cast<uint32_t>(sets_.size()));
  if (inserted) sets_.push_back(ports);
  lastMask_ = ports;
  lastId_ = it->second;
  return it->second;
}

void ArGroupBuilder::assign(fabric::Lid lid, uint32_t setId) {
  assert(lid.value < lidCount_);
  if (lidSet_.empty()) {
    if (setId == kNoSet) return;
    lidSet_.assign(lidCount_, kNoSet);
  }
  assert(setId == kNoSet || setId < sets_.size());
  lidSet_[lid.value] = setId;
}

void ArGroupBuilder::set(fabric::Lid lid, PortMask ports, uint8_t defaultPort) {
  if (defaultPort == kNoPort) {
    assign(lid, kNoSet);
    return;
  }
  ports.set(defaultPort);
  assign(lid, intern(ports));
}

ArTable ArGroupBuilder::build() const {
  ArTable table;
  table.lidToGroup.assign(lidCount_, ArTable::kNoGroup);
  std::vector<uint16_t> groupOfSet(sets_.size(), ArTable::kNoGroup);
  for (size_t lid = 0; lid < lidSet_.size(); ++lid) {
    uint32_t s = lidSet_[lid];
    if (s == kNoSet) continue;
    if (groupOfSet[s] == ArTable::kNoGroup) {
      if (table.groups.size() >= cap_) {
        table.capped = true;
        continue;
      }
      groupOfSet[s] = static_cast<uint16_t>(table.groups.size());
      table.groups.push_back(sets_[s]);
    }
    table.lidToGroup[lid] = groupOfSet[s];
  }
  table.lidToGroup.shareEqualBlocks();
  return table;
}

}  // namespace ibsm::routing
