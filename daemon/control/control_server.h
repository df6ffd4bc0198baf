// The control socket: a Unix stream socket (mode 0660, group control.group) speaking the JSON-lines protocol
// of control_protocol.h. It runs on its own thread so that any number of clients never stall a sweep:
// read-only requests are answered there from the view the event loop last published (StatePublisher);
// state-changing requests are checked against the peer's credentials (SO_PEERCRED, SO_PEERGROUPS) and handed
// to a ChangeHandler, which runs them on the event loop thread and replies when done. Requests on one
// connection are answered in order; a connection waiting for a change sends nothing else until that reply.
// Abuse is bounded: connections per UID and in all (with slots kept for root), idle time, bytes per request
// (an oversized one is still read to its end, up to maxDiscardBytes, so that the client gets its error line
// instead of a broken pipe) and unread output.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "daemon/control/control_protocol.h"
#include "daemon/control/event_log.h"
#include "daemon/log/log.h"
#include "fabric/result.h"
#include "mad/clock.h"

namespace ibsm::daemon {

// What the event loop publishes for readers on other threads. Readers copy a view out under a short lock; the
// snapshot itself is immutable and shared.
class StatePublisher {
 public:
  void publishSnapshot(std::shared_ptr<const SubnetSnapshot> snapshot, bool portsActivated);
  void updateStatus(const std::function<void(StatusInfo&)>& edit);
  StatusInfo status() const;
  std::shared_ptr<const SubnetSnapshot> snapshot() const;
  ControlView view(const EventLog* events) const;
  // The performance manager's view of the ports, after every counter sweep (perf/).
  void publishHealth(std::shared_ptr<const HealthSnapshot> health);
  std::shared_ptr<const HealthSnapshot> health() const;

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const SubnetSnapshot> snapshot_;
  bool portsActivated_ = false;
  StatusInfo status_;
  std::shared_ptr<const HealthSnapshot> health_;
};

struct ControlServerOptions {
  std::string path;                  // absolute, at most 107 bytes
  std::optional<std::string> group;  // control.group: owner group of the socket and who may change state
  unsigned checkThreads = 1;         // routing.threads: workers of the route check (`ibsmctl check`)
  mode_t mode = 0660;
  // Connections beyond these limits are answered "busy" and closed. One user (a peer UID other than root's)
  // holds at most maxClientsPerUid, and the last reservedForRoot of the pool are for root alone, so a client
  // that floods the socket with idle connections cannot lock the operator out.
  size_t maxClients = 256;
  size_t maxClientsPerUid = 64;
  size_t reservedForRoot = 16;
  size_t maxDiscardBytes = 64u << 20;  // of an oversized request read (and dropped) so its answer arrives
  std::chrono::milliseconds idleTimeout{60000};
  size_t maxOutputBytes = 256u << 20;  // a client that does not read its answers is dropped past this
};

class ControlServer {
 public:
  using Reply = std::function<void(Json response)>;  // callable from any thread, once
  using ChangeHandler = std::function<void(Request request, PeerCredentials peer, Reply reply)>;

  // Removes a stale socket file (one nobody listens on), refuses to take over a live one or a path that is
  // not a socket, binds, sets mode and group, and starts the thread. The clock times idle connections; the
  // server's thread reads it, so it must be safe to read from another thread and outlive the server.
  static fabric::Result<std::unique_ptr<ControlServer>> start(ControlServerOptions options,
                                                              const StatePublisher& state,
                                                              const EventLog& events, Logger& log,
                                                              const mad::Clock& clock,
                                                              ChangeHandler onChange);
  ~ControlServer();  // stops the thread, closes every connection, removes the socket file
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  const std::string& path() const { return options_.path; }
  struct Stats {
    uint64_t connections = 0, requests = 0, errors = 0, denied = 0, busy = 0;
  };
  Stats stats() const;

 private:
  struct Impl;
  ControlServer(ControlServerOptions options, const StatePublisher& state, const EventLog& events,
                Logger& log, const mad::Clock& clock, ChangeHandler onChange);
  ControlServerOptions options_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ibsm::daemon
