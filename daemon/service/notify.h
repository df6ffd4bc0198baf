// The service manager's notification protocol (sd_notify): READY=1 once the subnet is up for the first time,
// STATUS= one line of state, WATCHDOG=1 from the event loop, RELOADING=1 / STOPPING=1 around SIGHUP and exit.
// A no-op when $NOTIFY_SOCKET is not set (run by hand), so the daemon code need not care.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace ibsm::daemon {

class Notifier {
 public:
  // Reads $NOTIFY_SOCKET, $WATCHDOG_USEC and $WATCHDOG_PID (through libsystemd).
  Notifier();

  bool enabled() const { return enabled_; }
  // How often to send WATCHDOG=1: half of WATCHDOG_USEC, when the service manager asked for a watchdog for
  // this process; nullopt otherwise.
  std::optional<std::chrono::milliseconds> watchdogPeriod() const { return watchdogPeriod_; }
  bool readySent() const { return readySent_; }

  // READY=1 with a status line; sent once (later calls only update STATUS).
  void ready(std::string_view status);
  void status(std::string_view status);
  void watchdog();
  // RELOADING=1 before a reload and READY=1 after it; only once READY was sent (systemd ignores a reload
  // of a service that is still starting).
  void reloading(std::string_view status);
  void reloaded(std::string_view status);
  void stopping();

 private:
  void send(const std::string& text);
  bool enabled_ = false;
  bool readySent_ = false;
  std::optional<std::chrono::milliseconds> watchdogPeriod_;
};

}  // namespace ibsm::daemon
