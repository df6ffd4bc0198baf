// Test harness for integration tests on ibsim: each Ibsim instance runs its own simulator on a net file, in a
// scratch working directory, with a unique IBSIM_SOCKNAME (so ctest -j works), and runs clients under
// LD_PRELOAD of libumad2sim.so. Everything it started is stopped in the destructor, also when a test fails.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ibsm::testing {

// The one polling loop of these tests: runs cond until it holds (success) or `limit` has passed (failure
// saying what was awaited and how long), sleeping `every` between tries. cond runs at least once, and once
// more after the last sleep; every = 0 polls back to back (for a cond that blocks by itself, e.g. on a
// socket). When giveUp is given and holds (e.g. the program that should bring cond about has exited), the
// wait ends early: cond gets one last try, then it fails. Use it under EXPECT_TRUE/ASSERT_TRUE and stream the
// context after it.
[[nodiscard]] ::testing::AssertionResult waitUntil(
    const std::function<bool()>& cond, std::chrono::milliseconds limit, const std::string& what,
    std::chrono::milliseconds every = std::chrono::milliseconds(50),
    const std::function<bool()>& giveUp = nullptr);

struct RunResult {
  int exitCode = -1;  // -1 when killed by the timeout or a signal
  bool timedOut = false;
  std::string out, err;
};

struct RunOptions {
  std::string simHost;  // SIM_HOST: node id or description where the client attaches; empty = first node
  std::chrono::milliseconds timeout{60000};
  std::map<std::string, std::string> env;
  bool preload = true;  // run under umad2sim
};

class Ibsim {
 public:
  struct Options {
    int maxNodes = 4096;
    int maxSwitches = 1024;
    int maxPorts = 65536;
    int lftCap = 30720;
  };
  // Starts ibsim on the given net file (copied into the scratch directory). Throws std::runtime_error with
  // ibsim's output when it does not come up.
  static std::unique_ptr<Ibsim> start(const std::string& netFile, Options options);
  static std::unique_ptr<Ibsim> start(const std::string& netFile) { return start(netFile, Options{}); }
  ~Ibsim();

  const std::string& dir() const { return dir_; }
  const std::string& sockName() const { return sock_; }
  // A console command such as `Unlink "S-..."[3]`; ibsim processes commands in order.
  void console(const std::string& command);
  // Runs a program to completion (killing it at the timeout).
  RunResult run(const std::vector<std::string>& argv, const RunOptions& options = {});
  // Starts a program in the background; its output goes to files named after the returned handle.
  pid_t spawn(const std::vector<std::string>& argv, const RunOptions& options = {});
  // Sends SIGTERM (then SIGKILL after grace) and collects the result.
  RunResult stop(pid_t pid, std::chrono::milliseconds grace = std::chrono::milliseconds(5000));
  // Waits for a spawned program to exit by itself.
  RunResult wait(pid_t pid, std::chrono::milliseconds timeout);
  // What a spawned program has written so far (stdout, then stderr).
  std::string output(pid_t pid) const;
  // Whether a spawned program is still running.
  bool running(pid_t pid);
  // waitUntil for text in what the spawned program pid has written (e.g. ibsmd's "SUBNET UP"); gives up as
  // soon as the program has exited without writing it.
  [[nodiscard]] ::testing::AssertionResult waitForOutput(
      pid_t pid, const std::string& text, std::chrono::milliseconds limit,
      std::chrono::milliseconds every = std::chrono::milliseconds(50));
  std::string ibsimLog() const;

 private:
  Ibsim() = default;
  pid_t launch(const std::vector<std::string>& argv, const RunOptions& options, const std::string& tag);
  RunResult collect(pid_t pid, std::chrono::milliseconds timeout, bool terminate,
                    std::chrono::milliseconds grace);

  std::string dir_, sock_;
  pid_t ibsimPid_ = -1;
  int consoleFd_ = -1;
  std::map<pid_t, std::string> children_;  // pid -> output file stem
  int nextTag_ = 0;
};

// Paths of the project's binaries and of the installed tools, resolved at configure time.
std::string binPath(const std::string& name);  // build/bin/<name>
std::string readFile(const std::string& path);
void writeFile(const std::string& path, const std::string& content);

}  // namespace ibsm::testing
