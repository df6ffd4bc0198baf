// sd_notify messages (READY=1 once, STATUS=, WATCHDOG=1 only when asked for) received on a test datagram
// socket, and the logger's levels, message ids and sinks.
#include "daemon/service/notify.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "daemon/log/log.h"

namespace ibsm::daemon {
namespace {

class NotifySocket {
 public:
  NotifySocket() {
    char tmpl[] = "/tmp/ibsm-notify-XXXXXX";
    dir_ = mkdtemp(tmpl);
    path_ = dir_ + "/notify.sock";
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path_.c_str());
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  }
  ~NotifySocket() {
    ::close(fd_);
    std::filesystem::remove_all(dir_);
  }
  const std::string& path() const { return path_; }
  // The next datagram, or "" after the timeout.
  std::string next(int timeoutMs = 2000) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, timeoutMs) <= 0) return "";
    char buf[4096];
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  }

 private:
  std::string dir_, path_;
  int fd_ = -1;
};

TEST(ControlNotify, ReadyOnceStatusLinesAndWatchdogOnlyWhenAsked) {
  NotifySocket sock;
  ::setenv("NOTIFY_SOCKET", sock.path().c_str(), 1);
  ::unsetenv("WATCHDOG_USEC");
  ::unsetenv("WATCHDOG_PID");
  {
    Notifier n;
    EXPECT_TRUE(n.enabled());
    EXPECT_FALSE(n.watchdogPeriod().has_value());
    n.status("MASTER, SUBNET NOT UP");
    EXPECT_EQ(sock.next(), "STATUS=MASTER, SUBNET NOT UP");
    n.ready("MASTER, SUBNET UP\nsecond line");
    EXPECT_EQ(sock.next(), "READY=1\nSTATUS=MASTER, SUBNET UP second line");
    n.ready("again");
    EXPECT_EQ(sock.next(), "STATUS=again");  // READY=1 only once
    n.watchdog();
    EXPECT_EQ(sock.next(200), "");
    n.reloading("reloading");
    EXPECT_EQ(sock.next(), "RELOADING=1\nSTATUS=reloading");
    n.reloaded("done");
    EXPECT_EQ(sock.next(), "READY=1\nSTATUS=done");
  }
  ::setenv("WATCHDOG_USEC", "300000", 1);
  {
    Notifier n;
    ASSERT_TRUE(n.watchdogPeriod().has_value());
    EXPECT_EQ(n.watchdogPeriod()->count(), 150);
    n.watchdog();
    EXPECT_EQ(sock.next(), "WATCHDOG=1");
    n.reloading("x");  // before READY: nothing to announce
    EXPECT_EQ(sock.next(200), "");
  }
  ::setenv("WATCHDOG_PID", "1", 1);  // meant for another process
  EXPECT_FALSE(Notifier().watchdogPeriod().has_value());
  ::unsetenv("WATCHDOG_USEC");
  ::unsetenv("WATCHDOG_PID");
  ::unsetenv("NOTIFY_SOCKET");
  Notifier off;
  EXPECT_FALSE(off.enabled());
  off.ready("x");  // a no-op without a socket
}

TEST(ControlLog, LevelsIdsAndFields) {
  std::vector<LogRecord> got;
  Logger log([&](const LogRecord& r) { got.push_back(r); }, LogLevel::kInfo);
  log.debug("X001", "hidden");
  log.info("SWEEP001", "sweep 1", {{"CAUSE", "start"}});
  log.error("CTL007", "bad");
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].id, "SWEEP001");
  EXPECT_EQ(got[0].fields[0].key, "CAUSE");
  log.setLevel(LogLevel::kDebug);
  log.debug("X001", "shown");
  EXPECT_EQ(got.size(), 3u);
  EXPECT_EQ(syslogPriority(LogLevel::kWarn), 4);
  EXPECT_EQ(journalMessageId("SWEEP001"), journalMessageId("SWEEP001"));
  EXPECT_NE(journalMessageId("SWEEP001"), journalMessageId("SWEEP002"));
  EXPECT_EQ(journalMessageId("SWEEP001").size(), 32u);
  LogLevel l;
  EXPECT_TRUE(parseLogLevel("warn", l));
  EXPECT_EQ(l, LogLevel::kWarn);
  EXPECT_FALSE(parseLogLevel("verbose", l));
}

TEST(ControlLog, JournalOnlyWhenStderrIsTheJournalStream) {
  ::unsetenv("JOURNAL_STREAM");
  EXPECT_EQ(Logger::detectSink(), Logger::Sink::kStderr);
  struct stat st {};
  ASSERT_EQ(fstat(STDERR_FILENO, &st), 0);
  std::string mine = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  ::setenv("JOURNAL_STREAM", mine.c_str(), 1);
  EXPECT_EQ(Logger::detectSink(), Logger::Sink::kJournal);
  ::setenv("JOURNAL_STREAM", "1:2", 1);  // stderr was redirected away from the journal
  EXPECT_EQ(Logger::detectSink(), Logger::Sink::kStderr);
  ::unsetenv("JOURNAL_STREAM");
}

}  // namespace
}  // namespace ibsm::daemon
