#include "daemon/service/event_loop.h"

#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ibsm::daemon {

EventLoop::EventLoop() : epoll_(epoll_create1(EPOLL_CLOEXEC)) {}

EventLoop::~EventLoop() {
  for (auto& [fd, isTimer] : timers_) ::close(fd);
  if (epoll_ >= 0) ::close(epoll_);
}

fabric::Result<void> EventLoop::addFd(int fd, Callback cb) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  if (epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev) != 0)
    return fabric::makeError(std::string("epoll_ctl: ") + std::strerror(errno));
  callbacks_[fd] = std::move(cb);
  return {};
}

void EventLoop::removeFd(int fd) {
  epoll_ctl(epoll_, EPOLL_CTL_DEL, fd, nullptr);
  callbacks_.erase(fd);
  if (timers_.erase(fd)) ::close(fd);
}

fabric::Result<int> EventLoop::addTimer(std::chrono::milliseconds first, std::chrono::milliseconds interval,
                                        Callback cb) {
  int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (fd < 0) return fabric::makeError(std::string("timerfd_create: ") + std::strerror(errno));
  auto ts = [](std::chrono::milliseconds ms) {
    timespec t{};
    t.tv_sec = ms.count() / 1000;
    t.tv_nsec = (ms.count() % 1000) * 1000000;
    return t;
  };
  itimerspec spec{ts(interval), ts(first.count() > 0 ? first : std::chrono::milliseconds(1))};
  timerfd_settime(fd, 0, &spec, nullptr);
  timers_[fd] = true;
  auto added = addFd(fd, [fd, cb = std::move(cb)] {
    uint64_t expirations;
    if (::read(fd, &expirations, sizeof expirations) == sizeof expirations) cb();
  });
  if (!added) return added.error();
  return fd;
}

fabric::Result<void> EventLoop::handleSignals(std::function<void(int)> onSignal) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  // Threads started after this (the umad receive thread) inherit the mask, so signals reach the signalfd.
  if (pthread_sigmask(SIG_BLOCK, &set, nullptr) != 0) return fabric::makeError("pthread_sigmask failed");
  int fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd < 0) return fabric::makeError(std::string("signalfd: ") + std::strerror(errno));
  timers_[fd] = true;  // closed with the loop
  return addFd(fd, [fd, onSignal = std::move(onSignal)] {
    signalfd_siginfo info;
    while (::read(fd, &info, sizeof info) == sizeof info) onSignal(static_cast<int>(info.ssi_signo));
  });
}

void EventLoop::run(std::chrono::milliseconds maxWait, const Callback& idle,
                    const std::function<std::chrono::milliseconds()>& wait) {
  stopped_ = false;
  epoll_event events[32];
  while (!stopped_) {
    const std::chrono::milliseconds timeout =
        wait ? std::clamp(wait(), std::chrono::milliseconds(0), maxWait) : maxWait;
    int n = epoll_wait(epoll_, events, 32, static_cast<int>(timeout.count()));
    for (int i = 0; i < n && !stopped_; ++i) {
      auto it = callbacks_.find(events[i].data.fd);
      if (it != callbacks_.end()) {
        Callback cb = it->second;  // a callback may remove itself
        cb();
      }
    }
    if (idle && !stopped_) idle();
  }
}

}  // namespace ibsm::daemon
