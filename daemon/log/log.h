// The daemon's logger: levels, a stable message id per kind of line (operators grep for "CTL001", journald
// filters on IBSM_MSGID=CTL001 or the derived MESSAGE_ID), and two sinks: plain stderr lines, or journald
// with structured fields (PRIORITY, MESSAGE_ID, GUID, LID, ...) through sd_journal_send when stderr is
// connected to the journal (JOURNAL_STREAM names it, as systemd sets it for a service). Thread-safe: the
// control server and the dump writer log from their own threads. Not a singleton: main creates one and hands
// it out.
#pragma once

#include <atomic>
#include <functional>
#include <initializer_list>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"

namespace ibsm::daemon {

using LogLevel = config::LogLevel;

// One structured field: the key is a journald field name (upper case, digits, underscores), e.g. GUID, LID.
struct LogField {
  std::string key;
  std::string value;
};

struct LogRecord {
  LogLevel level;
  std::string id;  // stable message id, e.g. "SWEEP001"
  std::string message;
  std::vector<LogField> fields;
};

class Logger {
 public:
  enum class Sink { kStderr, kJournal, kCallback };
  using Callback = std::function<void(const LogRecord&)>;

  // kJournal when $JOURNAL_STREAM names the device and inode that stderr is, else kStderr.
  static Sink detectSink();

  Logger(Sink sink, LogLevel level, std::string ident = "ibsmd");
  // Records go to `callback` (tests).
  Logger(Callback callback, LogLevel level);

  void setLevel(LogLevel level) { level_.store(level); }
  LogLevel level() const { return level_.load(); }
  bool enabled(LogLevel level) const { return static_cast<int>(level) <= static_cast<int>(level_.load()); }
  Sink sink() const { return sink_; }

  void log(LogLevel level, std::string_view id, std::string_view message, std::vector<LogField> fields = {});
  void error(std::string_view id, std::string_view m, std::vector<LogField> f = {}) {
    log(LogLevel::kError, id, m, std::move(f));
  }
  void warn(std::string_view id, std::string_view m, std::vector<LogField> f = {}) {
    log(LogLevel::kWarn, id, m, std::move(f));
  }
  void info(std::string_view id, std::string_view m, std::vector<LogField> f = {}) {
    log(LogLevel::kInfo, id, m, std::move(f));
  }
  void debug(std::string_view id, std::string_view m, std::vector<LogField> f = {}) {
    log(LogLevel::kDebug, id, m, std::move(f));
  }

 private:
  Sink sink_;
  std::atomic<LogLevel> level_;
  std::string ident_;
  Callback callback_;
  std::mutex mutex_;  // one line at a time on stderr
};

// The journald MESSAGE_ID for a short id: a fixed 128-bit value derived from it (32 hex digits), so that
// "SWEEP001" always maps to the same MESSAGE_ID across versions and machines.
std::string journalMessageId(std::string_view id);
// syslog priority of a level (3 error, 4 warning, 6 info, 7 debug).
int syslogPriority(LogLevel level);
// "error" ... "debug" -> level; nullopt otherwise.
bool parseLogLevel(std::string_view text, LogLevel& out);

}  // namespace ibsm::daemon
