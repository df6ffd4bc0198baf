#include "daemon/service/notify.h"

#include <systemd/sd-daemon.h>

#include <cstdlib>

namespace ibsm::daemon {

namespace {
// STATUS= is one line: a newline would start a new assignment.
std::string oneLine(std::string_view s) {
  std::string out(s.substr(0, 400));
  for (char& c : out)
    if (c == '\n' || c == '\r') c = ' ';
  return out;
}
}  // namespace

Notifier::Notifier() {
  const char* sock = std::getenv("NOTIFY_SOCKET");
  enabled_ = sock && *sock;
  uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0)
    watchdogPeriod_ = std::chrono::milliseconds(std::max<uint64_t>(1, usec / 2000));
}

void Notifier::send(const std::string& text) {
  if (enabled_) (void)sd_notify(0, text.c_str());
}

void Notifier::ready(std::string_view status) {
  if (readySent_) {
    this->status(status);
    return;
  }
  readySent_ = true;
  send("READY=1\nSTATUS=" + oneLine(status));
}

void Notifier::status(std::string_view status) {
  send("STATUS=" + oneLine(status));
}

void Notifier::watchdog() {
  if (watchdogPeriod_) send("WATCHDOG=1");
}

void Notifier::reloading(std::string_view status) {
  if (readySent_) send("RELOADING=1\nSTATUS=" + oneLine(status));
}

void Notifier::reloaded(std::string_view status) {
  if (readySent_) send("READY=1\nSTATUS=" + oneLine(status));
}

void Notifier::stopping() {
  send("STOPPING=1\nSTATUS=stopping");
}

}  // namespace ibsm::daemon
