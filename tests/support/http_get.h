// A minimal HTTP/1.0 GET for tests of the metrics endpoint (and of the Prometheus server the ibsim test
// starts): one request to 127.0.0.1:port, the whole response read until the server closes; and a sample's
// value in an exposition.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <string>

namespace ibsm::testing {

struct HttpResponse {
  int status = 0;    // 0: no answer (refused, closed early, timed out)
  std::string body;  // after the headers
};

// Gives up after timeoutMs without data (a server that accepts and then hangs fails the test, not hangs it).
inline HttpResponse httpGet(uint16_t port, const std::string& target, int timeoutMs = 10000) {
  HttpResponse r;
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return r;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string req = "GET " + target + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) {
    ::close(fd);
    return r;
  }
  std::string all;
  char buf[16384];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, timeoutMs) != 1) {
      ::close(fd);
      return r;
    }
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    all.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  // "HTTP/1.1 200 OK\r\n...\r\n\r\nbody"
  size_t sp = all.find(' '), end = all.find("\r\n\r\n");
  if (all.rfind("HTTP/", 0) != 0 || sp == std::string::npos || end == std::string::npos) return r;
  r.status = std::atoi(all.c_str() + sp + 1);
  r.body = all.substr(end + 4);
  return r;
}

// The value of an exposition sample such as `ibsm_subnet_up` or `ibsm_sweeps_total{kind="heavy"}`; -1 when
// absent.
inline double expositionSample(const std::string& text, const std::string& series) {
  for (size_t at = text.find(series + " "); at != std::string::npos; at = text.find(series + " ", at + 1))
    if (at == 0 || text[at - 1] == '\n') return std::stod(text.substr(at + series.size() + 1));
  return -1;
}

}  // namespace ibsm::testing
