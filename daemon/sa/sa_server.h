// The Subnet Administrator: answers SA (class 0x03) queries from the SM's current immutable snapshot. Pure
// request -> responses logic with an injected clock; SaAgent below is the thin glue to the MadEngine.
//
// Built in: ClassPortInfo, NodeRecord, PortInfoRecord, LinkRecord, SwitchInfoRecord, LFTRecord,
// GUIDInfoRecord, SMInfoRecord, P_KeyTableRecord (trusted requests only), PathRecord, MultiPathRecord,
// ServiceRecord (Set/Get/GetTable/Delete, leases), InformInfo (Set: subscribe/unsubscribe) and
// InformInfoRecord. Other attributes (MCMemberRecord, MulticastForwardingTableRecord) plug in with
// setHandler(). Every request but one with a wrong SA_Key is answered: unknown attribute/method and bad
// queries get the MAD status of IBA 13.4.7 / 15.2.1.3. GetTable answers go out as RMPP (IBA 13.6): the first
// window at once, the rest as the requester ACKs, with resends on timeout.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include "daemon/state/subnet_snapshot.h"
#include "mad/mad_engine.h"
#include "mad/sa.h"

namespace ibsm::daemon {

struct SaOptions {
  uint64_t gidPrefix = mad::kDefaultGidPrefix;
  uint8_t subnetTimeout = 18;  // PathRecord PacketLifeTime, ClassPortInfo RespTimeValue
  mad::Duration rmppTimeout = std::chrono::milliseconds(200);
  unsigned rmppRetries = 3;
  size_t maxRecords = 100000;  // a GetTable larger than this is answered with ERR_NO_RESOURCES
  // SA_Key (sm.sa_key): a request carrying it is trusted, one carrying 0 untrusted, any other is dropped.
  uint64_t saKey = 1;
};

struct SaCounters {
  uint64_t requests = 0, malformed = 0, errors = 0, rmppSessions = 0, rmppAborted = 0, reports = 0;
  uint64_t wrongKey = 0;  // requests dropped for a wrong SA_Key
  // Requests by (attribute id, status answered), for the metrics. The attribute comes from the wire: past
  // kMaxAttrStatus distinct pairs, new pairs are counted in otherAttrStatus.
  std::map<std::pair<uint16_t, uint16_t>, uint64_t> byAttrStatus;
  uint64_t otherAttrStatus = 0;
  static constexpr size_t kMaxAttrStatus = 128;
  void answered(uint16_t attrId, uint16_t status);
};

class SaServer {
 public:
  using SnapshotFn = std::function<std::shared_ptr<const SubnetSnapshot>()>;
  using SmInfoFn = std::function<mad::SmInfo()>;  // what this SM says about itself

  // What a handler sees of a request, and what it answers: status, or records of recordSize bytes each
  // (laid out at recordStride(recordSize)) for GetTable / exactly one for Get / Set / Delete.
  struct Query {
    const mad::MadPacket& mad;
    const mad::MadHeader& header;
    mad::SaHeader sa;
    const SubnetSnapshot* snapshot;  // nullptr before the first sweep
    mad::TimePoint now;
  };
  struct Answer {
    uint16_t status = 0;
    size_t recordSize = 0;
    std::vector<uint8_t> records;
    size_t count = 0;
    uint8_t* add();  // appends one zeroed record and returns it
    // Drops the record add() appended last unless its fields under mask equal the query's (IBA 15.2.1.2).
    void keepIfMatches(uint16_t attrId, uint64_t mask, const uint8_t* query);
  };
  using Handler = std::function<Answer(const Query&)>;

  SaServer(const mad::Clock& clock, SnapshotFn snapshot, SmInfoFn smInfo, SaOptions options = {});

  // For attributes the server does not build in (MCMemberRecord); replaces a built-in one with the same id.
  void setHandler(uint16_t attrId, Handler handler) { handlers_[attrId] = std::move(handler); }

  // One received class-0x03 MAD -> the MADs to send back (responses, RMPP segments). Never throws; malformed
  // MADs are counted and answered when they can be.
  std::vector<mad::MadPacket> handle(const mad::MadPacket& mad);
  // Timers: RMPP resends and aborts; leases. Returns segments to resend.
  std::vector<mad::MadPacket> poll();
  // Report(Notice) requests for the subscribers of a trap the SM received (e.g. 128).
  std::vector<mad::MadPacket> reportsFor(const mad::Notice& notice);
  // Reports 64/65 (GID in/out of service) for endports that became active / went away since the snapshot
  // seen at the previous call. The first call only records the state.
  std::vector<mad::MadPacket> reportsForSnapshot();

  const SaCounters& counters() const { return counters_; }
  size_t services() const { return services_.size(); }
  size_t subscriptions() const { return subscribers_.size(); }
  size_t rmppInFlight() const { return sessions_.size(); }

 private:
  struct Service {
    mad::ServiceRecord rec;
    mad::TimePoint expires;
    bool infinite = false;
  };
  struct Subscriber {
    mad::InformInfo info;
    mad::MadAddress addr;
    mad::Gid gid;
  };
  struct Session {
    std::vector<mad::MadPacket> segments;
    uint32_t acked = 0;       // segments acknowledged
    uint32_t windowLast = 1;  // highest segment the receiver accepts
    uint32_t sent = 0;        // highest segment sent
    mad::TimePoint deadline;
    unsigned retries = 0;
  };
  using SessionKey = std::tuple<uint16_t, uint32_t, uint64_t>;  // requester LID, QPN, TID

  Answer dispatch(const Query& q);
  // The read-only records are built in sa_records.cc and path_records.cc; these keep server state.
  Answer serviceRecords(const Query& q);
  Answer informInfo(const Query& q);
  Answer informInfoRecords(const Query& q);
  void expireLeases(mad::TimePoint now);
  std::vector<mad::MadPacket> sendWindow(Session& s);
  std::vector<mad::MadPacket> rmppControl(const mad::MadPacket& mad, const mad::MadHeader& h);
  mad::MadPacket makeReport(const Subscriber& s, const uint8_t* notice);

  const mad::Clock& clock_;
  SnapshotFn snapshot_;
  SmInfoFn smInfo_;
  SaOptions options_;
  std::map<uint16_t, Handler> handlers_;
  std::vector<Service> services_;
  std::vector<Subscriber> subscribers_;
  std::map<SessionKey, Session> sessions_;
  std::shared_ptr<const SubnetSnapshot> reported_;  // snapshot of the last reportsForSnapshot()
  bool reportedOnce_ = false;
  SaCounters counters_;
};

// Glue between the MadEngine and the SaServer: responses leave with sendUnmatched, Reports with submit (their
// ReportResponse is matched by the engine; nobody waits for it).
class SaAgent {
 public:
  SaAgent(mad::MadEngine& engine, SaServer& server) : engine_(engine), server_(server) {}
  void onMad(const mad::MadPacket& mad) { send(server_.handle(mad)); }
  void onNotice(const mad::Notice& notice) { report(server_.reportsFor(notice)); }
  // From the event loop: RMPP timers, and reports 64/65 when a new snapshot was published.
  void poll() {
    send(server_.poll());
    report(server_.reportsForSnapshot());
  }

 private:
  void send(const std::vector<mad::MadPacket>& mads) {
    for (const auto& m : mads) (void)engine_.sendUnmatched(m);
  }
  void report(std::vector<mad::MadPacket> mads) {
    for (auto& m : mads) engine_.submit(std::move(m), nullptr, {std::chrono::milliseconds(500), 1u});
  }
  mad::MadEngine& engine_;
  SaServer& server_;
};

}  // namespace ibsm::daemon
