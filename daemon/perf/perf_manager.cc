#include "daemon/perf/perf_manager.h"

#include <algorithm>

namespace ibsm::daemon {

using mad::kPerfCounters;
using mad::kPerfDataCounters;
using mad::PerfCounter;
using mad::PerfData;

namespace {
// The increase of a counter that was `before` and now reads `now`: a counter that went down was cleared by
// someone else (counters saturate, they do not wrap), so all of `now` is new.
uint64_t increase(uint64_t before, uint64_t now) {
  return now >= before ? now - before : now;
}
// XmitData and RcvData count 4-byte words; the totals are in bytes.
uint64_t dataUnit(size_t i) {
  return i == static_cast<size_t>(PerfData::kXmitData) || i == static_cast<size_t>(PerfData::kRcvData) ? 4
                                                                                                       : 1;
}
// The data counters as read now (from PortCounters or PortCountersExtended) into the record's totals.
void addData(PortRecord& rec, const std::array<uint64_t, kPerfDataCounters>& raw) {
  for (size_t i = 0; i < kPerfDataCounters; ++i) {
    const uint64_t inc = (rec.dataSeen ? increase(rec.rawData[i], raw[i]) : raw[i]) * dataUnit(i);
    rec.data[i] += inc;
    rec.lastData[i] = rec.dataSeen ? inc : 0;
    rec.rawData[i] = raw[i];
  }
  rec.dataSeen = true;
}
bool answered(const mad::MadResult& r) {
  return r.ok() && r.header.status == 0;
}
}  // namespace

PerfManager::PerfManager(mad::MadEngine& engine, const mad::Clock& clock, PerfOptions options)
    : engine_(engine), clock_(clock), options_(options) {
  options_.maxInFlight = std::max(1u, options_.maxInFlight);
  next_ = clock_.now() + options_.interval;
}

void PerfManager::setOptions(PerfOptions options) {
  if (options.interval != options_.interval) next_ = clock_.now() + options.interval;
  options_ = options;
  options_.maxInFlight = std::max(1u, options_.maxInFlight);
}

const PortRecord* PerfManager::find(fabric::Guid node, uint8_t port) const {
  auto it = index_.find({node, port});
  return it == index_.end() ? nullptr : &ports_[it->second];
}

uint32_t PerfManager::recordFor(fabric::Guid node, uint8_t port) {
  auto [it, added] = index_.emplace(std::pair{node, port}, static_cast<uint32_t>(ports_.size()));
  if (added) {
    PortRecord r;
    r.node = node;
    r.port = port;
    ports_.push_back(r);
  }
  return it->second;
}

void PerfManager::start(const SubnetSnapshot& snap, bool clear) {
  const fabric::Topology& topo = *snap.topology;
  current_ = SweepStats{};
  current_.number = last_.number + 1;
  current_.clearing = clear;
  clear_ = clear;
  started_ = clock_.now();
  cpiNodes_.clear();
  std::vector<Task> portTasks;
  for (fabric::NodeIndex n = 0; n < topo.size(); ++n) {
    const fabric::Node& node = topo.node(n);
    const bool sw = node.isSwitch();
    const uint16_t switchLid = sw ? snap.lids.base(n, fabric::PortNum{0}).value : 0;
    NodeCaps* caps = nullptr;
    for (unsigned p = 1; p <= node.numPorts && p < node.ports.size(); ++p) {
      if (!node.ports[p].connected()) continue;
      const uint16_t lid = sw ? switchLid : snap.lids.base(n, fabric::PortNum{static_cast<uint8_t>(p)}).value;
      if (lid == 0) continue;
      const uint32_t rec = recordFor(node.guid, static_cast<uint8_t>(p));
      ports_[rec].lid = lid;
      ports_[rec].isSwitch = sw;
      ++current_.ports;
      if (!caps) {
        caps = &caps_[node.guid];
        caps->lid = lid;
        caps->records.clear();
        if (!caps->capMask) cpiNodes_.push_back(node.guid);
      }
      if (caps->capMask)
        portTasks.push_back(Task{Step::kCounters, rec});
      else
        caps->records.push_back(rec);  // after its node's ClassPortInfo
    }
  }
  // ClassPortInfo first (once per node, until one answers): it says whether PortCountersExtended exists.
  for (uint32_t i = 0; i < cpiNodes_.size(); ++i) queue_.push_back(Task{Step::kClassPortInfo, i});
  for (const Task& t : portTasks) queue_.push_back(t);
  active_ = true;
}

void PerfManager::submit(const Task& task) {
  mad::MadPacket gmp;
  switch (task.step) {
    case Step::kClassPortInfo:
      gmp = mad::makePerfGmp(mad::kGet, mad::kAttrClassPortInfo, caps_[cpiNodes_[task.record]].lid);
      break;
    case Step::kCounters:
      gmp = mad::makePortCountersRequest(ports_[task.record].lid, ports_[task.record].port);
      break;
    case Step::kClear:
      gmp = mad::makePortCountersRequest(ports_[task.record].lid, ports_[task.record].port, true, task.select,
                                         task.clearXmitWait);
      break;
    case Step::kExtended:
      gmp = mad::makePortCountersExtendedRequest(ports_[task.record].lid, ports_[task.record].port);
      break;
  }
  ++inFlight_;
  // One retry: a port whose counters are not read now is read at the next sweep, and a LID the fabric
  // cannot reach (umad2sim hands such a MAD back at once) should not cost the engine's full retry budget.
  mad::RequestOptions once;
  once.retries = 1;
  engine_.submit(
      std::move(gmp),
      [this, task](const mad::MadResult& r) {
        --inFlight_;
        current_.gmps += std::max(1u, r.attempts);
        switch (task.step) {
          case Step::kClassPortInfo:
            return onClassPortInfo(cpiNodes_[task.record], r);
          case Step::kCounters:
            return onCounters(task.record, r);
          case Step::kClear:
            return onClear(task, r);
          case Step::kExtended:
            return onExtended(task.record, r);
        }
      },
      once);
}

void PerfManager::onClassPortInfo(fabric::Guid node, const mad::MadResult& r) {
  NodeCaps& caps = caps_[node];
  if (answered(r)) caps.capMask = mad::decodePerfClassPortInfo(mad::perfData(r.response)).capMask;
  // Unanswered: the ports are read with PortCounters alone this time, and ClassPortInfo is asked again.
  for (uint32_t rec : caps.records) queue_.push_back(Task{Step::kCounters, rec});
  caps.records.clear();
}

void PerfManager::onCounters(uint32_t record, const mad::MadResult& r) {
  PortRecord& rec = ports_[record];
  if (!answered(r)) {
    ++current_.failed;
    return;
  }
  const mad::PortCounters pc = mad::decodePortCounters(mad::perfData(r.response));
  if (pc.portSelect != rec.port) {
    ++current_.failed;  // an answer about another port: untrusted input, not counted
    return;
  }
  const mad::TimePoint now = clock_.now();
  if (!rec.seen) {
    rec.found = pc.errors;
    auto caps = caps_.find(rec.node);
    rec.extended = caps != caps_.end() && caps->second.capMask &&
                   (*caps->second.capMask & (mad::kPmExtendedWidth | mad::kPmExtendedWidthNoIetf));
  }
  for (size_t i = 0; i < kPerfCounters; ++i) {
    const uint64_t inc = rec.seen ? increase(rec.rawErrors[i], pc.errors[i]) : pc.errors[i];
    rec.errors[i] += inc;
    rec.lastErrors[i] = rec.seen ? inc : 0;
    rec.rawErrors[i] = pc.errors[i];
  }
  rec.lastInterval = rec.seen ? now - rec.readAt : mad::Duration{};
  rec.readAt = now;
  rec.seen = true;
  rec.sweep = current_.number;
  uint16_t select = 0;
  bool clearXmitWait = false;
  if (clear_) {
    for (size_t i = 0; i < kPerfCounters; ++i) {
      const auto c = static_cast<PerfCounter>(i);
      if (c == PerfCounter::kPortXmitWait)
        clearXmitWait = pc.errors[i] > mad::perfCounterMax(c) / 2;
      else if (pc.errors[i] != 0)
        select |= mad::counterSelectBit(c);
    }
  }
  if (!rec.extended) {
    addData(rec, pc.data);
    for (size_t i = 0; i < kPerfDataCounters; ++i)
      if (clear_ && pc.data[i] > 0x7FFFFFFFu) select |= mad::counterSelectBit(static_cast<PerfData>(i));
  }
  // Follow-ups go first, so a port's reads stay close together.
  if (rec.extended) queue_.push_front(Task{Step::kExtended, record});
  if (select || clearXmitWait) queue_.push_front(Task{Step::kClear, record, select, clearXmitWait});
}

void PerfManager::onClear(const Task& task, const mad::MadResult& r) {
  if (!answered(r)) return;  // not cleared: the next read still sees (and counts) only the increase
  PortRecord& rec = ports_[task.record];
  ++current_.cleared;
  for (size_t i = 0; i < kPerfCounters; ++i) {
    const auto c = static_cast<PerfCounter>(i);
    if (c == PerfCounter::kPortXmitWait ? task.clearXmitWait : (task.select & mad::counterSelectBit(c)))
      rec.rawErrors[i] = 0;
  }
  for (size_t i = 0; i < kPerfDataCounters; ++i)
    if (task.select & mad::counterSelectBit(static_cast<PerfData>(i))) rec.rawData[i] = 0;
}

void PerfManager::onExtended(uint32_t record, const mad::MadResult& r) {
  PortRecord& rec = ports_[record];
  if (!answered(r)) return;  // errors were read; data waits for the next sweep
  const mad::PortCountersExtended pc = mad::decodePortCountersExtended(mad::perfData(r.response));
  if (pc.portSelect != rec.port) return;
  addData(rec, pc.data);
}

std::optional<PerfManager::SweepStats> PerfManager::tick(const std::shared_ptr<const SubnetSnapshot>& snap,
                                                         bool clear) {
  const mad::TimePoint now = clock_.now();
  if (!active_ && options_.interval.count() > 0 && snap && snap->topology && now >= next_) {
    next_ = now + options_.interval;
    start(*snap, clear);
  }
  if (!active_) return std::nullopt;
  // The SM's own requests first: nothing new while the engine has a queue.
  while (inFlight_ < options_.maxInFlight && !queue_.empty() && engine_.queued() == 0) {
    Task t = queue_.front();
    queue_.pop_front();
    submit(t);
  }
  if (!queue_.empty() || inFlight_ > 0) return std::nullopt;
  active_ = false;
  current_.elapsed = clock_.now() - started_;
  last_ = current_;
  return last_;
}

}  // namespace ibsm::daemon
