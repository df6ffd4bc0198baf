#include "daemon/log/log.h"

#include <sys/stat.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ibsm::daemon {

namespace {

uint64_t fnv1a(std::string_view s, uint64_t seed) {
  uint64_t h = 1469598103934665603ull ^ seed;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

Logger::Sink Logger::detectSink() {
  // systemd sets JOURNAL_STREAM=<device>:<inode> of the stream it connected stdout/stderr to; if stderr is
  // still that stream (not redirected by a wrapper), structured logging reaches the journal.
  const char* js = std::getenv("JOURNAL_STREAM");
  if (!js || !*js) return Sink::kStderr;
  unsigned long long dev = 0, ino = 0;
  if (std::sscanf(js, "%llu:%llu", &dev, &ino) != 2) return Sink::kStderr;
  struct stat st {};
  if (fstat(STDERR_FILENO, &st) != 0) return Sink::kStderr;
  return (static_cast<unsigned long long>(st.st_dev) == dev &&
          static_cast<unsigned long long>(st.st_ino) == ino)
             ? Sink::kJournal
             : Sink::kStderr;
}

Logger::Logger(Sink sink, LogLevel level, std::string ident)
    : sink_(sink), level_(level), ident_(std::move(ident)) {}

Logger::Logger(Callback callback, LogLevel level)
    : sink_(Sink::kCallback), level_(level), ident_("ibsmd"), callback_(std::move(callback)) {}

int syslogPriority(LogLevel level) {
  switch (level) {
    case LogLevel::kError:
      return 3;
    case LogLevel::kWarn:
      return 4;
    case LogLevel::kInfo:
      return 6;
    case LogLevel::kDebug:
      return 7;
  }
  return 6;
}

bool parseLogLevel(std::string_view text, LogLevel& out) {
  for (LogLevel l : {LogLevel::kError, LogLevel::kWarn, LogLevel::kInfo, LogLevel::kDebug})
    if (text == config::toString(l)) {
      out = l;
      return true;
    }
  return false;
}

std::string journalMessageId(std::string_view id) {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(fnv1a(id, 0x1b5f)),
                static_cast<unsigned long long>(fnv1a(id, 0x5a7c0de)));
  return buf;
}

void Logger::log(LogLevel level, std::string_view id, std::string_view message,
                 std::vector<LogField> fields) {
  if (!enabled(level)) return;
  if (sink_ == Sink::kCallback) {
    if (callback_) callback_(LogRecord{level, std::string(id), std::string(message), std::move(fields)});
    return;
  }
  std::string text = id.empty() ? std::string(message) : std::string(id) + " " + std::string(message);
  if (sink_ == Sink::kJournal) {
    // sd_journal_sendv takes "KEY=value" iovecs; values may hold any bytes.
    std::vector<std::string> items;
    items.push_back("MESSAGE=" + text);
    items.push_back("PRIORITY=" + std::to_string(syslogPriority(level)));
    items.push_back("SYSLOG_IDENTIFIER=" + ident_);
    if (!id.empty()) {
      items.push_back("MESSAGE_ID=" + journalMessageId(id));
      items.push_back("IBSM_MSGID=" + std::string(id));
    }
    for (const auto& f : fields) items.push_back(f.key + "=" + f.value);
    std::vector<iovec> iov;
    iov.reserve(items.size());
    for (auto& s : items) iov.push_back(iovec{s.data(), s.size()});
    if (sd_journal_sendv(iov.data(), static_cast<int>(iov.size())) >= 0) return;
    // The journal is gone (e.g. journald restarting): fall through to stderr, which still reaches it later.
  }
  std::string line = ident_ + ": " + std::string(config::toString(level)) + ": " + text;
  for (const auto& f : fields) line += " " + f.key + "=" + f.value;
  line += "\n";
  std::lock_guard<std::mutex> lock(mutex_);
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace ibsm::daemon
