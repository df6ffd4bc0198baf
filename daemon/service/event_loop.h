// The daemon's event loop: epoll over file descriptors (signalfd, the MAD port's eventfd, sockets) and
// periodic timers (timerfd). Single-threaded; callbacks run on the loop's thread.
#pragma once

#include <chrono>
#include <functional>
#include <map>

#include "fabric/result.h"

namespace ibsm::daemon {

class EventLoop {
 public:
  using Callback = std::function<void()>;
  EventLoop();
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  fabric::Result<void> addFd(int fd, Callback onReadable);
  void removeFd(int fd);
  // A repeating timer; returns its fd (for removeFd). The first expiry is after `first`.
  fabric::Result<int> addTimer(std::chrono::milliseconds first, std::chrono::milliseconds interval,
                               Callback onExpiry);
  // Blocks SIGTERM, SIGINT and SIGHUP and delivers them through a signalfd.
  fabric::Result<void> handleSignals(std::function<void(int signo)> onSignal);
  // Runs until stop(); each wait is at most maxWait (so `idle` runs at least that often), and at most what
  // `wait` says when given (work due sooner, e.g. a batch of traps).
  void run(std::chrono::milliseconds maxWait, const Callback& idle,
           const std::function<std::chrono::milliseconds()>& wait = {});
  void stop() { stopped_ = true; }

 private:
  int epoll_ = -1;
  std::map<int, Callback> callbacks_;
  std::map<int, bool> timers_;
  bool stopped_ = false;
};

}  // namespace ibsm::daemon
