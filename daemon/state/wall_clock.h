// Wall-clock time for what people read: when the daemon started, since when the subnet is up, when a sweep
// began, event timestamps. Timers and durations never use it: they run on mad::Clock (steady, and simulated
// in tests). It is an interface only so that tests can pin the times shown.
#pragma once

#include <chrono>

namespace ibsm::daemon {

using WallTime = std::chrono::system_clock::time_point;

class WallClock {
 public:
  virtual ~WallClock() = default;
  virtual WallTime now() const = 0;
};

// The daemon's read of the system clock for display (main.cc owns the instance).
class SystemWallClock final : public WallClock {
 public:
  WallTime now() const override { return std::chrono::system_clock::now(); }
};

class FakeWallClock final : public WallClock {
 public:
  WallTime now() const override { return now_; }
  void set(WallTime t) { now_ = t; }

 private:
  WallTime now_{};
};

}  // namespace ibsm::daemon
