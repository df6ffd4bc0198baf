#include "daemon/control/dumps.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <vector>

#include "daemon/control/control_protocol.h"
#include "daemon/state/state_store.h"
#include "routing/lft_dump.h"
#include "routing/parallel.h"

namespace ibsm::daemon {

using fabric::Node;
using fabric::NodeIndex;
using fabric::PortNum;
using fabric::PortState;

namespace {

constexpr uint32_t kCapHasExtSpeeds = 1u << 14;  // PortInfo CapabilityMask.IsExtendedSpeedsSupported

const char* lstType(fabric::NodeType t) {
  switch (t) {
    case fabric::NodeType::kSwitch:
      return "SW";
    case fabric::NodeType::kCa:
      return "CA";
    case fabric::NodeType::kRouter:
      return "Rt";
    default:
      return "**";
  }
}

// OpenSM keeps nodes in a map keyed by the GUID in network byte order and compared as a host integer, so on
// x86 its files list nodes in the order of the byte-swapped GUID. Matching it keeps diffs against OpenSM's
// files small.
std::vector<NodeIndex> opensmNodeOrder(const fabric::Topology& t) {
  std::vector<NodeIndex> order(t.size());
  for (NodeIndex i = 0; i < t.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](NodeIndex a, NodeIndex b) {
    return __builtin_bswap64(t.node(a).guid.value) < __builtin_bswap64(t.node(b).guid.value);
  });
  return order;
}

// The port whose LID and capability mask stand for the node: port 0 of a switch, the port itself on a CA.
PortNum defaultPort(const Node& n, unsigned port) {
  return n.isSwitch() ? PortNum{0} : PortNum{static_cast<uint8_t>(port)};
}

std::string nodeHalf(const SubnetSnapshot& s, NodeIndex n, unsigned port, bool wideVendor,
                     fabric::Lid smLid) {
  const Node& node = s.topology->node(n);
  fabric::Lid lid = s.lids.base(n, defaultPort(node, port));
  char buf[512];
  std::snprintf(buf, sizeof buf,
                wideVendor
                    ? "{ %s%s Ports:%02X SystemGUID:%016llx NodeGUID:%016llx PortGUID:%016llx VenID:%08X "
                      "DevID:%04X Rev:%08X {%s} LID:%04X PN:%02X }"
                    : "{ %s%s Ports:%02X SystemGUID:%016llx NodeGUID:%016llx PortGUID:%016llx VenID:%06X "
                      "DevID:%04X Rev:%08X {%s} LID:%04X PN:%02X }",
                lstType(node.type), lid.value && lid == smLid ? "-SM" : "", node.numPorts,
                static_cast<unsigned long long>(node.systemGuid.value),
                static_cast<unsigned long long>(node.guid.value),
                static_cast<unsigned long long>(node.ports[port].guid.value), node.vendorId, node.deviceId,
                node.revision, node.description.c_str(), lid.value, port);
  return buf;
}

const char* speedText(const fabric::PortAttrs& a, uint32_t capMask) {
  const char* s = a.speedActive == 1 ? "2.5" : a.speedActive == 2 ? "5" : a.speedActive == 4 ? "10" : "??";
  if (capMask & kCapHasExtSpeeds) {
    if (a.speedExtActive == 1)
      s = "14";
    else if (a.speedExtActive == 2)
      s = "25";
    else if (a.speedExtActive != 0)
      s = "??";
  }
  return s;
}

// OpenSM's subnet.lst prints an unknown width as "??".
std::string widthText(uint8_t w) {
  std::string text = fabric::linkWidthString(w);
  return text.empty() ? "??" : text;
}

const char* stateText(PortState s) {
  switch (s) {
    case PortState::kActive:
      return "ACT";
    case PortState::kArmed:
      return "ARM";
    case PortState::kInit:
      return "INI";
    default:
      return "DWN";
  }
}

std::string ranges(const std::vector<unsigned>& v) {
  std::string out;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(v[i]);
    if (j > i) {
      out += '-';
      out += std::to_string(v[j]);
    }
    i = j + 1;
  }
  return out;
}

}  // namespace

std::string formatSubnetLst(const SubnetSnapshot& s, bool portsActivated) {
  std::string out;
  formatSubnetLst(s, portsActivated, [&](std::string_view piece) { out += piece; });
  return out;
}

void formatSubnetLst(const SubnetSnapshot& s, bool portsActivated, const routing::TextSink& sink) {
  const fabric::Topology& t = *s.topology;
  fabric::Lid smLid;
  if (t.smNode() != fabric::kNoNode)
    smLid = s.lids.base(t.smNode(), t.node(t.smNode()).isSwitch() ? PortNum{0} : t.smPort());
  std::string out;
  for (NodeIndex n : opensmNodeOrder(t)) {
    out.clear();
    const Node& node = t.node(n);
    for (unsigned p = 1; p <= node.numPorts; ++p) {
      const fabric::Port& port = node.ports[p];
      if (!port.connected()) continue;
      out += nodeHalf(s, n, p, false, smLid);
      out += ' ';
      out += nodeHalf(s, port.peerNode, port.peerPort.value, true, smLid);
      const Node& capNode = node;
      uint32_t capMask = capNode.ports[defaultPort(node, p).value].attrs.capMask;
      out += " PHY=";
      out += widthText(port.attrs.widthActive);
      out += " LOG=";
      out += stateText(effectivePortState(port, portsActivated));
      out += " SPD=";
      out += speedText(port.attrs, capMask);
      out += '\n';
    }
    sink(out);
  }
}

std::string formatArDump(const SubnetSnapshot& s) {
  std::string out;
  formatArDump(s, [&](std::string_view piece) { out += piece; });
  return out;
}

void formatArDump(const SubnetSnapshot& s, const routing::TextSink& sink) {
  const fabric::Topology& t = *s.topology;
  std::string out = "# ibsm adaptive-routing groups (engine " + s.tables.engine + ")\n";
  if (s.tables.ar.empty()) return sink(out + "# adaptive routing is off\n");
  sink(out);
  for (NodeIndex sw : t.switches()) {
    if (sw >= s.tables.ar.size()) continue;
    out.clear();
    const routing::ArTable& ar = s.tables.ar[sw];
    const Node& node = t.node(sw);
    std::vector<std::vector<unsigned>> lids(ar.groups.size());
    for (unsigned l = 0; l < ar.lidToGroup.size(); ++l)
      if (ar.lidToGroup[l] != routing::ArTable::kNoGroup && ar.lidToGroup[l] < lids.size())
        lids[ar.lidToGroup[l]].push_back(l);
    char buf[256];
    std::snprintf(buf, sizeof buf, "Switch 0x%016llx '", static_cast<unsigned long long>(node.guid.value));
    out += buf;
    out += node.description + "' lid " + std::to_string(s.lids.base(sw, PortNum{0}).value) + ": " +
           std::to_string(ar.groups.size()) + " groups" + (ar.capped ? " (capped)" : "") + "\n";
    for (size_t g = 0; g < ar.groups.size(); ++g) {
      std::vector<unsigned> ports;
      for (unsigned p = 0; p < ar.groups[g].size(); ++p)
        if (ar.groups[g].test(p)) ports.push_back(p);
      std::string portList;
      for (unsigned p : ports) {
        if (!portList.empty()) portList += ',';
        portList += std::to_string(p);
      }
      // Piece by piece: GCC 12 at -O3 reports a false -Wrestrict for "literal" + std::string temporaries.
      out += "group ";
      out += std::to_string(g);
      out += " ports " + portList + " lids " + ranges(lids[g]) + "\n";
    }
    sink(out);
  }
}

DumpWriter::DumpWriter(DumpOptions options, Logger& log) : log_(log), options_(std::move(options)) {
  thread_ = std::thread([this] { run(); });
}

DumpWriter::~DumpWriter() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void DumpWriter::submit(std::shared_ptr<const SubnetSnapshot> snapshot, bool portsActivated) {
  if (!snapshot || !snapshot->topology) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (options_.dir.empty()) return;
    pending_ = Job{std::move(snapshot), portsActivated, options_};
    ++submitted_;
  }
  cv_.notify_all();
}

void DumpWriter::setDir(std::string dir) {
  std::lock_guard<std::mutex> lock(mutex_);
  options_.dir = std::move(dir);
}

void DumpWriter::setLftsOnChange(bool onChange) {
  std::lock_guard<std::mutex> lock(mutex_);
  options_.lftsOnChange = onChange;
}

void DumpWriter::requestLfts(std::shared_ptr<const SubnetSnapshot> snapshot, LftDone done) {
  std::string dir;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    dir = options_.dir;
    if (snapshot && snapshot->topology && !dir.empty() && !stop_) {
      requests_.push_back(LftRequest{std::move(snapshot), std::move(dir), std::move(done)});
      cv_.notify_all();
      return;
    }
  }
  if (!snapshot || !snapshot->topology)
    done(fabric::makeError("no sweep has completed yet"));
  else if (dir.empty())
    done(fabric::makeError("no dump directory (paths.dump_dir)"));
  else
    done(fabric::makeError("the dump writer is stopping"));
}

void DumpWriter::flush() {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return done_ >= submitted_ && requests_.empty() && !busy_; });
}

DumpWriter::Stats DumpWriter::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void DumpWriter::run() {
  if (options_.background) routing::lowerThreadPriority();  // tens of MB formatted after each event
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || pending_.has_value() || !requests_.empty(); });
    if (pending_) {
      Job job = std::move(*pending_);
      pending_.reset();
      uint64_t upTo = submitted_;
      busy_ = true;
      lock.unlock();
      writeAll(job);
      lock.lock();
      busy_ = false;
      done_ = upTo;
      ++stats_.rounds;
      cv_.notify_all();
    } else if (!requests_.empty()) {
      std::vector<LftRequest> requests;
      requests.swap(requests_);
      busy_ = true;
      lock.unlock();
      writeRequests(std::move(requests));
      lock.lock();
      busy_ = false;
      cv_.notify_all();
    } else {
      return;  // stopping with nothing left
    }
  }
}

namespace {
std::function<void(const routing::TextSink&)> lftDump(const SubnetSnapshot& s) {
  return [&s](const routing::TextSink& sink) { routing::formatLftDump(*s.topology, s.lids, s.tables, sink); };
}
}  // namespace

fabric::Result<void> DumpWriter::writeOne(const std::string& dir, const std::string& name,
                                          const std::function<void(const routing::TextSink&)>& produce,
                                          bool force) {
  std::string path = dir + "/" + name;
  auto it = lastHash_.find(path);
  auto written = writeFileStreamed(path, produce,
                                   force || it == lastHash_.end() ? std::nullopt : std::optional(it->second));
  std::lock_guard<std::mutex> lock(mutex_);
  if (written && !written->written) {
    ++stats_.filesUnchanged;
    return {};
  }
  if (!written) {
    ++stats_.failures;
    lastHash_.erase(path);
    log_.warn("DUMP002",
              "cannot write dump " + path + ": " + written.error().message + " (the previous file is kept)",
              {{"DUMP_FILE", path}});
    return written.error();
  }
  lastHash_[path] = written->hash;
  ++stats_.filesWritten;
  return {};
}

void DumpWriter::writeRequests(std::vector<LftRequest> requests) {
  std::error_code ec;
  for (size_t i = 0; i < requests.size(); ++i) {
    LftRequest& r = requests[i];
    if (!r.done) continue;  // answered with an earlier request for the same snapshot and directory
    std::filesystem::create_directories(r.dir, ec);
    const SubnetSnapshot& s = *r.snapshot;
    auto written = writeOne(r.dir, kLftDumpFile, lftDump(s), true);
    std::string path = r.dir + "/" + kLftDumpFile;
    if (written) log_.info("DUMP003", path + " written on request", {{"DUMP_FILE", path}});
    for (size_t j = i; j < requests.size(); ++j) {
      LftRequest& same = requests[j];
      if (!same.done || same.snapshot != r.snapshot || same.dir != r.dir) continue;
      {
        // Counted before the answer, so that whoever has the answer sees it in stats().
        std::lock_guard<std::mutex> lock(mutex_);
        ++stats_.lftRequests;
      }
      if (written)
        same.done(path);
      else
        same.done(fabric::makeError("cannot write " + path + ": " + written.error().message));
      same.done = nullptr;
    }
  }
}

void DumpWriter::writeAll(const Job& job) {
  const SubnetSnapshot& s = *job.snapshot;
  const std::string& dir = job.options.dir;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  // On request only (the default), nothing written here grows with switches x LIDs.
  // writeOne logs its failures (DUMP002); a round goes on with the other files.
  if (job.options.lftsOnChange) (void)writeOne(dir, kLftDumpFile, lftDump(s));
  (void)writeOne(dir, kSubnetLstFile,
                 [&](const routing::TextSink& sink) { formatSubnetLst(s, job.portsActivated, sink); });
  (void)writeOne(dir, kArDumpFile, [&](const routing::TextSink& sink) { formatArDump(s, sink); });
  if (!job.options.guid2lidPath.empty()) {
    std::filesystem::path target = std::filesystem::path(dir) / kGuid2LidFile;
    bool same = std::filesystem::equivalent(target, job.options.guid2lidPath, ec) ||
                std::filesystem::weakly_canonical(target, ec) ==
                    std::filesystem::weakly_canonical(job.options.guid2lidPath, ec);
    if (!same) {
      std::ifstream in(job.options.guid2lidPath, std::ios::binary);
      if (in) {
        std::stringstream ss;
        ss << in.rdbuf();
        (void)writeOne(dir, kGuid2LidFile, [text = ss.str()](const routing::TextSink& sink) { sink(text); });
      }
    }
  }
  log_.debug("DUMP001", "dumps written to " + dir);
}

void handleDumpRequest(const Request& r, std::shared_ptr<const SubnetSnapshot> snapshot, DumpWriter& writer,
                       std::function<void(Json response)> reply) {
  auto it = r.args.find("file");
  if (it == r.args.end() || !it->is_string() || it->get<std::string>() != "lfts") {
    reply(errorResponse(r.id, ErrorCode::kBadRequest, "dump: file must be lfts"));
    return;
  }
  if (!snapshot || !snapshot->topology) {
    reply(errorResponse(r.id, ErrorCode::kUnavailable, "dump: no sweep has completed yet"));
    return;
  }
  writer.requestLfts(std::move(snapshot),
                     [id = r.id, reply = std::move(reply)](fabric::Result<std::string> p) {
                       if (p)
                         reply(okResponse(id, {{"path", *p}}));
                       else
                         reply(errorResponse(id, ErrorCode::kFailed, "dump: " + p.error().message));
                     });
}

}  // namespace ibsm::daemon
