#include "daemon/control/control_server.h"

#include <fcntl.h>
#include <grp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>
#include <unordered_map>
#include <vector>

namespace ibsm::daemon {

namespace {

constexpr uint64_t kListenKey = 0;
constexpr uint64_t kWakeKey = 1;
constexpr size_t kReadChunk = 16384;
constexpr size_t kReadPerWakeup = 1 << 20;  // bytes read from one client before others get their turn

std::string errnoText(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

PeerCredentials peerOf(int fd) {
  PeerCredentials c;
  ucred cred{};
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
    c.uid = cred.uid;
    c.gid = cred.gid;
    c.pid = cred.pid;
  }
  std::vector<gid_t> groups(64);
  len = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
  int rc = getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &len);
  if (rc != 0 && errno == ERANGE) {
    groups.resize(len / sizeof(gid_t) + 1);
    len = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
    rc = getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &len);
  }
  if (rc == 0) {
    groups.resize(len / sizeof(gid_t));
    c.groups = std::move(groups);
  }
  return c;
}

fabric::Result<gid_t> lookupGroup(const std::string& name) {
  std::vector<char> buf(16384);
  group g{};
  group* out = nullptr;
  int rc = getgrnam_r(name.c_str(), &g, buf.data(), buf.size(), &out);
  if (rc != 0 || !out) return fabric::makeError("control.group '" + name + "' does not exist");
  return out->gr_gid;
}

}  // namespace

// ---- StatePublisher
// ------------------------------------------------------------------------------------------

void StatePublisher::publishSnapshot(std::shared_ptr<const SubnetSnapshot> snapshot, bool portsActivated) {
  std::lock_guard<std::mutex> lock(mutex_);
  snapshot_ = std::move(snapshot);
  portsActivated_ = portsActivated;
}

void StatePublisher::updateStatus(const std::function<void(StatusInfo&)>& edit) {
  std::lock_guard<std::mutex> lock(mutex_);
  edit(status_);
}

StatusInfo StatePublisher::status() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return status_;
}

std::shared_ptr<const SubnetSnapshot> StatePublisher::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return snapshot_;
}

ControlView StatePublisher::view(const EventLog* events) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ControlView{snapshot_, portsActivated_, status_, events, health_};
}

void StatePublisher::publishHealth(std::shared_ptr<const HealthSnapshot> health) {
  std::lock_guard<std::mutex> lock(mutex_);
  health_ = std::move(health);
}

std::shared_ptr<const HealthSnapshot> StatePublisher::health() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return health_;
}

// ---- ControlServer
// -------------------------------------------------------------------------------------------

struct ControlServer::Impl {
  // Replies from the event loop thread, waiting to be written by the server thread. Shared with the Reply
  // callbacks so that a late reply after the server is gone is harmless.
  struct ReplyQueue {
    int fd = -1;  // eventfd that wakes the server thread
    std::mutex mutex;
    std::deque<std::pair<uint64_t, Json>> items;
    ~ReplyQueue() {
      if (fd >= 0) ::close(fd);
    }
    void push(uint64_t conn, Json response) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        items.emplace_back(conn, std::move(response));
      }
      uint64_t one = 1;
      (void)!::write(fd, &one, sizeof one);
    }
  };

  struct Connection {
    int fd = -1;
    PeerCredentials peer;
    std::string in, out;
    bool pending = false;          // a change request is with the event loop
    bool eof = false;              // the client shut down its side
    bool discarding = false;       // reading an oversized line to its end (its error is already queued)
    size_t discarded = 0;          // bytes of that line dropped so far
    bool closeAfterFlush = false;  // after an unrecoverable error (oversized line)
    uint32_t mask = EPOLLIN;
    mad::TimePoint lastActive;
  };

  const ControlServerOptions& options;
  const StatePublisher& state;
  const EventLog& events;
  Logger& log;
  const mad::Clock& clock;
  ChangeHandler onChange;
  AccessPolicy policy;
  int listenFd = -1, epollFd = -1;
  dev_t socketDev = 0;
  ino_t socketIno = 0;
  std::shared_ptr<ReplyQueue> replies = std::make_shared<ReplyQueue>();
  std::unordered_map<uint64_t, Connection> conns;
  std::unordered_map<uid_t, size_t> perUid;  // open connections of each peer UID
  uint64_t nextConn = 2;                     // 0 and 1 are the listening socket and the wake-up eventfd
  ReadHandler reader;
  std::atomic<bool> stopping{false};
  std::thread thread;
  std::atomic<uint64_t> statConnections{0}, statRequests{0}, statErrors{0}, statDenied{0}, statBusy{0};

  Impl(const ControlServerOptions& o, const StatePublisher& s, const EventLog& e, Logger& l,
       const mad::Clock& c, ChangeHandler h)
      : options(o), state(s), events(e), log(l), clock(c), onChange(std::move(h)), reader(o.checkThreads) {}

  ~Impl() {
    for (auto& [id, c] : conns) ::close(c.fd);
    if (listenFd >= 0) ::close(listenFd);
    if (epollFd >= 0) ::close(epollFd);
  }

  void watch(int fd, uint64_t key, uint32_t events) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = key;
    epoll_ctl(epollFd, EPOLL_CTL_ADD, fd, &ev);
  }

  // Input is watched until EOF or an unrecoverable error; output while something waits to be written. (A
  // half-closed peer with nothing to write generates no events: level-triggered EOF would spin.)
  void updateInterest(uint64_t id, Connection& c) {
    uint32_t mask = (!c.eof && !c.closeAfterFlush ? EPOLLIN : 0u) | (!c.out.empty() ? EPOLLOUT : 0u);
    if (mask == c.mask) return;
    c.mask = mask;
    epoll_event ev{};
    ev.events = mask;
    ev.data.u64 = id;
    epoll_ctl(epollFd, EPOLL_CTL_MOD, c.fd, &ev);
  }

  void closeConn(uint64_t id) {
    auto it = conns.find(id);
    if (it == conns.end()) return;
    epoll_ctl(epollFd, EPOLL_CTL_DEL, it->second.fd, nullptr);
    ::close(it->second.fd);
    if (auto u = perUid.find(it->second.peer.uid); u != perUid.end() && --u->second == 0) perUid.erase(u);
    conns.erase(it);
  }

  bool privileged(const PeerCredentials& peer) const { return peer.uid == 0 || peer.uid == policy.daemonUid; }

  // Why a new connection from `peer` is refused, "" when it may stay.
  std::string refusal(const PeerCredentials& peer) const {
    if (conns.size() >= options.maxClients)
      return "too many clients (" + std::to_string(options.maxClients) + "); try again";
    if (privileged(peer)) return "";
    size_t shared = options.maxClients - std::min(options.reservedForRoot, options.maxClients);
    if (conns.size() >= shared)
      return "too many clients (" + std::to_string(shared) + " for users other than root); try again";
    auto it = perUid.find(peer.uid);
    if (it != perUid.end() && it->second >= options.maxClientsPerUid)
      return "too many connections from uid " + std::to_string(peer.uid) + " (" +
             std::to_string(options.maxClientsPerUid) + "); close some and try again";
    return "";
  }

  void accept() {
    for (;;) {
      int fd = ::accept4(listenFd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
          log.warn("CTL004", errnoText("control socket accept failed"));
        return;
      }
      ++statConnections;
      PeerCredentials peer = peerOf(fd);
      if (std::string why = refusal(peer); !why.empty()) {
        ++statBusy;
        std::string line = toLine(errorResponse(nullptr, ErrorCode::kBusy, why));
        (void)!::send(fd, line.data(), line.size(), MSG_NOSIGNAL);
        ::close(fd);
        continue;
      }
      uint64_t id = nextConn++;
      Connection& c = conns[id];
      c.fd = fd;
      c.peer = std::move(peer);
      ++perUid[c.peer.uid];
      c.lastActive = clock.now();
      watch(fd, id, EPOLLIN);
    }
  }

  void respond(Connection& c, const Json& response) {
    if (!response.value("ok", false)) ++statErrors;
    c.out += toLine(response);
  }

  // Handles complete lines until one is handed to the event loop (answers stay in order).
  void process(uint64_t id, Connection& c) {
    while (!c.pending && !c.closeAfterFlush && !c.discarding) {
      size_t nl = c.in.find('\n');
      if (nl == std::string::npos ? c.in.size() > kMaxRequestBytes : nl > kMaxRequestBytes) {
        // Answered at once; the rest of the line is still read (readable()) so that a client busy writing
        // it gets this answer instead of a broken pipe, then the connection closes.
        respond(c, errorResponse(nullptr, ErrorCode::kTooLarge,
                                 "request exceeds the limit of " + std::to_string(kMaxRequestBytes) +
                                     " bytes; closing the connection"));
        c.discarding = nl == std::string::npos && !c.eof;
        c.discarded = c.in.size();
        c.in.clear();
        c.closeAfterFlush = !c.discarding;
        break;
      }
      if (nl == std::string::npos) break;
      std::string line = c.in.substr(0, nl);
      c.in.erase(0, nl + 1);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.find_first_not_of(" \t") == std::string::npos) continue;
      ++statRequests;
      auto parsed = parseRequest(line);
      if (auto* err = std::get_if<RequestError>(&parsed)) {
        respond(c, errorResponse(err->id, err->code, err->message));
        continue;
      }
      Request& req = std::get<Request>(parsed);
      const CommandInfo* info = findCommand(req.command);
      if (info->access == Access::kRead) {
        respond(c, reader.handle(req, state.view(&events)));
        continue;
      }
      if (!mayChangeState(c.peer, policy)) {
        ++statDenied;
        log.info("CTL006", "denied '" + req.command + "' to uid " + std::to_string(c.peer.uid) + " pid " +
                               std::to_string(c.peer.pid));
        std::string who = options.group ? "root or members of group '" + *options.group + "'" : "root";
        respond(c, errorResponse(req.id, ErrorCode::kPermissionDenied,
                                 "permission denied: '" + req.command + "' changes state; only " + who +
                                     " may do that"));
        continue;
      }
      if (stopping) {
        respond(c, errorResponse(req.id, ErrorCode::kUnavailable, "ibsmd is stopping"));
        continue;
      }
      c.pending = true;
      std::weak_ptr<ReplyQueue> queue = replies;
      Json rid = req.id;
      onChange(std::move(req), c.peer, [queue, id, rid](Json response) {
        if (!response.is_object()) response = errorResponse(rid, ErrorCode::kInternal, "no response");
        if (auto q = queue.lock()) q->push(id, std::move(response));
      });
    }
  }

  // Writes what it can; closes the connection when it is done. Returns false when it was closed.
  bool flush(uint64_t id, Connection& c) {
    while (!c.out.empty()) {
      ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
      if (n > 0) {
        c.out.erase(0, static_cast<size_t>(n));
        c.lastActive = clock.now();
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      closeConn(id);  // the peer went away
      return false;
    }
    if (c.out.size() > options.maxOutputBytes) {
      log.warn("CTL005",
               "dropping a control client (pid " + std::to_string(c.peer.pid) + ") that does not read");
      closeConn(id);
      return false;
    }
    updateInterest(id, c);
    bool linesLeft = c.in.find('\n') != std::string::npos;
    if (c.out.empty() && !c.pending && (c.closeAfterFlush || (c.eof && !linesLeft))) {
      closeConn(id);
      return false;
    }
    return true;
  }

  // The rest of an oversized line, dropped; at its newline, at EOF or past maxDiscardBytes the connection
  // closes once the error line is written.
  void discard(Connection& c, std::string_view data) {
    size_t nl = data.find('\n');
    c.discarded += std::min(nl, data.size());
    if (nl != std::string_view::npos || c.eof || c.discarded > options.maxDiscardBytes) {
      c.discarding = false;
      c.closeAfterFlush = true;
    }
  }

  void readable(uint64_t id, Connection& c) {
    char buf[kReadChunk];
    size_t readNow = 0;
    // Stop reading past one oversized line (process() answers it), and after kReadPerWakeup so that one
    // fast writer does not hold up the others (epoll reports the rest again).
    while (c.in.size() <= kMaxRequestBytes + 1 && !c.eof && !c.closeAfterFlush && readNow < kReadPerWakeup) {
      ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
      if (n > 0) {
        readNow += static_cast<size_t>(n);
        c.lastActive = clock.now();
        if (c.discarding)
          discard(c, std::string_view(buf, static_cast<size_t>(n)));
        else
          c.in.append(buf, static_cast<size_t>(n));
        continue;
      }
      if (n == 0) {
        c.eof = true;
        if (c.discarding) discard(c, {});
        break;
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      closeConn(id);
      return;
    }
    process(id, c);
    flush(id, c);
  }

  void drainReplies() {
    uint64_t n;
    while (::read(replies->fd, &n, sizeof n) == sizeof n) {
    }
    std::deque<std::pair<uint64_t, Json>> items;
    {
      std::lock_guard<std::mutex> lock(replies->mutex);
      items.swap(replies->items);
    }
    for (auto& [id, response] : items) {
      auto it = conns.find(id);
      if (it == conns.end()) continue;  // the client left before the answer
      Connection& c = it->second;
      c.pending = false;
      respond(c, response);
      process(id, c);
      flush(id, c);
    }
  }

  void closeIdle() {
    auto now = clock.now();
    std::vector<uint64_t> idle;
    for (auto& [id, c] : conns)
      if (!c.pending && now - c.lastActive > options.idleTimeout) idle.push_back(id);
    for (uint64_t id : idle) closeConn(id);
  }

  void run() {
    epoll_event evs[64];
    while (!stopping) {
      int n = epoll_wait(epollFd, evs, 64, 1000);
      if (n < 0 && errno != EINTR) {
        log.error("CTL007", errnoText("control socket epoll_wait failed; the control socket stops"));
        return;
      }
      for (int i = 0; i < n; ++i) {
        uint64_t key = evs[i].data.u64;
        if (key == kListenKey)
          accept();
        else if (key == kWakeKey)
          drainReplies();
        else if (auto it = conns.find(key); it != conns.end()) {
          // Hang-up: the peer closed both directions, nobody would read an answer.
          if (evs[i].events & (EPOLLHUP | EPOLLERR))
            closeConn(key);
          else if (evs[i].events & EPOLLIN)
            readable(key, it->second);
          else if (evs[i].events & EPOLLOUT)
            flush(key, it->second);
        }
      }
      closeIdle();
    }
  }
};

ControlServer::ControlServer(ControlServerOptions options, const StatePublisher& state,
                             const EventLog& events, Logger& log, const mad::Clock& clock,
                             ChangeHandler onChange)
    : options_(std::move(options)),
      impl_(std::make_unique<Impl>(options_, state, events, log, clock, std::move(onChange))) {}

fabric::Result<std::unique_ptr<ControlServer>> ControlServer::start(ControlServerOptions options,
                                                                    const StatePublisher& state,
                                                                    const EventLog& events, Logger& log,
                                                                    const mad::Clock& clock,
                                                                    ChangeHandler onChange) {
  const std::string path = options.path;
  sockaddr_un addr{};
  if (path.empty() || path.size() >= sizeof addr.sun_path)
    return fabric::makeError("control socket path '" + path + "' is empty or longer than " +
                             std::to_string(sizeof addr.sun_path - 1) + " bytes");
  std::unique_ptr<ControlServer> server(
      new ControlServer(std::move(options), state, events, log, clock, std::move(onChange)));
  Impl& m = *server->impl_;
  m.policy.daemonUid = geteuid();
  if (server->options_.group) {
    auto gid = lookupGroup(*server->options_.group);
    if (!gid) return gid.error();
    m.policy.group = *gid;
  }
  std::error_code ec;
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty() && !std::filesystem::exists(parent, ec))
    std::filesystem::create_directories(parent, ec);

  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  addr.sun_family = AF_UNIX;
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      return fabric::makeError("control socket path " + path + " exists and is not a socket");
    int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool live = probe >= 0 && ::connect(probe, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    if (probe >= 0) ::close(probe);
    if (live) return fabric::makeError("another process (an ibsmd?) is listening on " + path);
    if (::unlink(path.c_str()) != 0)
      return fabric::makeError(errnoText("cannot remove the stale socket " + path));
    log.info("CTL002", "removed a stale control socket " + path);
  }
  m.listenFd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (m.listenFd < 0) return fabric::makeError(errnoText("socket"));
  if (::bind(m.listenFd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    return fabric::makeError(errnoText("cannot bind the control socket " + path));
  // Until chmod the file has the umask's mode: never wider than what we set next.
  if (::chmod(path.c_str(), server->options_.mode) != 0) {
    ::unlink(path.c_str());
    return fabric::makeError(errnoText("cannot chmod " + path));
  }
  if (m.policy.group && ::chown(path.c_str(), static_cast<uid_t>(-1), *m.policy.group) != 0) {
    ::unlink(path.c_str());
    return fabric::makeError(errnoText("cannot give " + path + " to group " + *server->options_.group));
  }
  if (::lstat(path.c_str(), &st) == 0) {
    m.socketDev = st.st_dev;
    m.socketIno = st.st_ino;
  }
  if (::listen(m.listenFd, 128) != 0) {
    ::unlink(path.c_str());
    return fabric::makeError(errnoText("listen on " + path));
  }
  m.epollFd = epoll_create1(EPOLL_CLOEXEC);
  m.replies->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (m.epollFd < 0 || m.replies->fd < 0) {
    ::unlink(path.c_str());
    return fabric::makeError(errnoText("epoll/eventfd"));
  }
  m.watch(m.listenFd, kListenKey, EPOLLIN);
  m.watch(m.replies->fd, kWakeKey, EPOLLIN);
  m.thread = std::thread([&m] { m.run(); });
  log.info("CTL001", "control socket listening on " + path,
           {{"SOCKET", path}, {"GROUP", server->options_.group.value_or("")}});
  return server;
}

ControlServer::~ControlServer() {
  impl_->stopping = true;
  uint64_t one = 1;
  (void)!::write(impl_->replies->fd, &one, sizeof one);
  if (impl_->thread.joinable()) impl_->thread.join();
  // Remove the socket file only if it is still the one we bound (a new daemon may own the path by now).
  struct stat st {};
  if (::lstat(options_.path.c_str(), &st) == 0 && st.st_dev == impl_->socketDev &&
      st.st_ino == impl_->socketIno)
    ::unlink(options_.path.c_str());
}

ControlServer::Stats ControlServer::stats() const {
  return Stats{impl_->statConnections.load(), impl_->statRequests.load(), impl_->statErrors.load(),
               impl_->statDenied.load(), impl_->statBusy.load()};
}

}  // namespace ibsm::daemon
