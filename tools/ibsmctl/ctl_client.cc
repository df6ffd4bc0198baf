#include "tools/ibsmctl/ctl_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ibsm::ctl {

namespace {

constexpr size_t kMaxResponse = 1u << 30;

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

Exchange request(const std::string& path, const std::string& command, const nlohmann::json& args,
                 std::chrono::milliseconds timeout) {
  Exchange ex;
  sockaddr_un addr{};
  if (path.size() >= sizeof addr.sun_path) {
    ex.failure = Failure::kUnreachable;
    ex.message = "socket path is longer than " + std::to_string(sizeof addr.sun_path - 1) + " bytes: " + path;
    return ex;
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  Fd s;
  s.fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  timeval tv{static_cast<time_t>(timeout.count() / 1000),
             static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
  setsockopt(s.fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (::connect(s.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    int e = errno;
    if (e == EACCES || e == EPERM) {
      ex.failure = Failure::kPermission;
      ex.message = "permission denied: cannot connect to " + path +
                   " (the control socket is for root and the control.group)";
    } else if (e == ENOENT || e == ECONNREFUSED || e == ENOTDIR) {
      ex.failure = Failure::kUnreachable;
      ex.message = "cannot reach ibsmd at " + path + ": " + std::strerror(e) +
                   " (is ibsmd running? the socket is set with --socket or IBSM_SOCKET)";
    } else if (e == EAGAIN || e == EINPROGRESS || e == ETIMEDOUT) {
      ex.failure = Failure::kTimeout;
      ex.message = "ibsmd at " + path + " did not accept the connection in time";
    } else {
      ex.failure = Failure::kUnreachable;
      ex.message = "cannot reach ibsmd at " + path + ": " + std::strerror(e);
    }
    return ex;
  }
  nlohmann::json req = {{"id", 1}, {"command", command}};
  if (!args.empty()) req["args"] = args;
  std::string line = req.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  auto deadline = std::chrono::steady_clock::now() + timeout;
  size_t sent = 0;
  int sendError = 0;  // the server may have answered (busy, too large) and closed: read that answer first
  while (sent < line.size()) {
    ssize_t n = ::send(s.fd, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      sendError = n < 0 ? errno : EPIPE;
      break;
    }
    sent += static_cast<size_t>(n);
  }
  std::string in;
  char buf[65536];
  for (;;) {
    size_t nl = in.find('\n');
    if (nl != std::string::npos) {
      in.resize(nl);
      break;
    }
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      ex.failure = Failure::kTimeout;
      ex.message = "ibsmd did not answer '" + command + "' within " +
                   std::to_string(timeout.count() / 1000.0).substr(0, 5) + " s (see --timeout)";
      return ex;
    }
    pollfd p{s.fd, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) continue;
    ssize_t n = ::recv(s.fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 && sendError != 0) {
      ex.failure = Failure::kUnreachable;
      ex.message = std::string("lost the connection to ibsmd: ") + std::strerror(sendError);
      return ex;
    }
    if (n <= 0) {
      ex.failure = Failure::kProtocol;
      ex.message = "ibsmd closed the connection without an answer";
      return ex;
    }
    in.append(buf, static_cast<size_t>(n));
    if (in.size() > kMaxResponse) {
      ex.failure = Failure::kProtocol;
      ex.message = "the answer from ibsmd is too large";
      return ex;
    }
  }
  ex.response = nlohmann::json::parse(in, nullptr, false);
  if (ex.response.is_discarded() || !ex.response.is_object() || !ex.response.contains("ok")) {
    ex.failure = Failure::kProtocol;
    ex.message = "ibsmd sent an answer that is not a protocol response";
    ex.response = nullptr;
  }
  return ex;
}

}  // namespace ibsm::ctl
