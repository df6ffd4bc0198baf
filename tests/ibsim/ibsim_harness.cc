#include "tests/ibsim/ibsim_harness.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace ibsm::testing {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {
constexpr const char* kUmad2Sim = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so";

int pidfdOpen(pid_t pid) {
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
}

bool socketBound(const std::string& name) {
  std::ifstream in("/proc/net/unix");
  std::string line, want = "@" + name + ":ctl@";
  while (std::getline(in, line))
    if (line.find(want) != std::string::npos) return true;
  return false;
}
}  // namespace

::testing::AssertionResult waitUntil(const std::function<bool()>& cond, std::chrono::milliseconds limit,
                                     const std::string& what, std::chrono::milliseconds every,
                                     const std::function<bool()>& giveUp) {
  const auto start = std::chrono::steady_clock::now(), deadline = start + limit;
  auto waited = [&] {
    return std::to_string(
               std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start)
                   .count()) +
           " ms";
  };
  for (;;) {
    if (cond()) return ::testing::AssertionSuccess();
    if (giveUp && giveUp()) {
      if (cond()) return ::testing::AssertionSuccess();
      return ::testing::AssertionFailure() << "gave up waiting for " << what << " after " << waited();
    }
    if (std::chrono::steady_clock::now() >= deadline)
      return ::testing::AssertionFailure()
             << "timed out after " << waited() << " (limit " << limit.count() << " ms) waiting for " << what;
    if (every.count() > 0) std::this_thread::sleep_for(every);
  }
}

std::string binPath(const std::string& name) {
  return std::string(IBSM_BIN_DIR) + "/" + name;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void writeFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary);
  out << content;
}

std::unique_ptr<Ibsim> Ibsim::start(const std::string& netFile, Options o) {
  static std::atomic<int> counter{0};
  std::unique_ptr<Ibsim> sim(new Ibsim());
  std::string tmpl = (fs::temp_directory_path() / "ibsm-test-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  sim->dir_ = tmpl;
  sim->sock_ = "ibsm" + std::to_string(getpid()) + "-" + std::to_string(counter++);
  fs::copy_file(netFile, sim->dir_ + "/fabric.net");
  std::string fifo = sim->dir_ + "/console";
  if (mkfifo(fifo.c_str(), 0600) != 0) throw std::runtime_error("mkfifo failed");
  // O_RDWR keeps a writer open for ibsim's whole life (at end of input it would spin at 100% CPU).
  sim->consoleFd_ = ::open(fifo.c_str(), O_RDWR | O_CLOEXEC);
  if (sim->consoleFd_ < 0) throw std::runtime_error("cannot open the console FIFO");

  sim->ibsimPid_ = fork();
  if (sim->ibsimPid_ == 0) {
    if (chdir(sim->dir_.c_str()) != 0) _exit(127);
    int in = ::open("console", O_RDONLY);
    int log = ::open("ibsim.log", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || log < 0) _exit(127);
    dup2(in, 0);
    dup2(log, 1);
    dup2(log, 2);
    setenv("IBSIM_SOCKNAME", sim->sock_.c_str(), 1);
    std::string n = std::to_string(o.maxNodes), s = std::to_string(o.maxSwitches),
                p = std::to_string(o.maxPorts), l = std::to_string(o.lftCap);
    execlp("ibsim", "ibsim", "-s", "-N", n.c_str(), "-S", s.c_str(), "-P", p.c_str(), "-L", l.c_str(),
           "fabric.net", static_cast<char*>(nullptr));
    _exit(127);
  }
  // "Network simulator ready." is printed before the sockets are bound: wait for the control socket itself.
  bool exited = false;
  auto bound = waitUntil([&] { return socketBound(sim->sock_); }, 30s, "ibsim's control socket", 10ms,
                         [&] {
                           int status;
                           return exited = waitpid(sim->ibsimPid_, &status, WNOHANG) == sim->ibsimPid_;
                         });
  if (exited) {
    sim->ibsimPid_ = -1;
    throw std::runtime_error("ibsim exited at start:\n" + sim->ibsimLog());
  }
  if (!bound) throw std::runtime_error("ibsim did not come up:\n" + sim->ibsimLog());
  return sim;
}

Ibsim::~Ibsim() {
  for (auto it = children_.begin(); it != children_.end();) {
    pid_t pid = it->first;
    ++it;
    stop(pid, 2000ms);
  }
  if (ibsimPid_ > 0) {
    kill(ibsimPid_, SIGKILL);
    waitpid(ibsimPid_, nullptr, 0);
  }
  if (consoleFd_ >= 0) ::close(consoleFd_);
  if (!dir_.empty() && !std::getenv("IBSM_KEEP_TEST_DIRS")) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
}

void Ibsim::console(const std::string& command) {
  std::string line = command + "\n";
  if (::write(consoleFd_, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
    throw std::runtime_error("console write failed");
}

std::string Ibsim::ibsimLog() const {
  return readFile(dir_ + "/ibsim.log");
}

pid_t Ibsim::launch(const std::vector<std::string>& argv, const RunOptions& o, const std::string& tag) {
  pid_t pid = fork();
  if (pid == 0) {
    if (chdir(dir_.c_str()) != 0) _exit(127);
    int out = ::open((tag + ".out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = ::open((tag + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int null = ::open("/dev/null", O_RDONLY);
    if (out < 0 || err < 0 || null < 0) _exit(127);
    dup2(null, 0);
    dup2(out, 1);
    dup2(err, 2);
    setpgid(0, 0);
    setenv("IBSIM_SOCKNAME", sock_.c_str(), 1);
    if (!o.simHost.empty()) setenv("SIM_HOST", o.simHost.c_str(), 1);
    if (o.preload) setenv("LD_PRELOAD", kUmad2Sim, 1);
    // An ASan build's binaries run with umad2sim preloaded ahead of the ASan runtime.
    // Appended, so it wins over whatever the caller's ASAN_OPTIONS say. replace_intrin=0: umad2sim's read()
    // (not our code) memcpys 320 bytes out of a smaller buffer of its own, which ASan would abort on.
    const char* asan = std::getenv("ASAN_OPTIONS");
    std::string opts = std::string(asan ? asan : "") + (asan && *asan ? ":" : "") +
                       "verify_asan_link_order=0:detect_leaks=0:replace_intrin=0";
    setenv("ASAN_OPTIONS", opts.c_str(), 1);
    for (const auto& [k, v] : o.env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  children_[pid] = tag;
  return pid;
}

RunResult Ibsim::collect(pid_t pid, std::chrono::milliseconds timeout, bool terminate,
                         std::chrono::milliseconds grace) {
  RunResult r;
  auto it = children_.find(pid);
  if (it == children_.end()) return r;
  int fd = pidfdOpen(pid);
  auto waitFor = [&](std::chrono::milliseconds t) {
    pollfd p{fd, POLLIN, 0};
    return fd >= 0 && ::poll(&p, 1, static_cast<int>(t.count())) > 0;
  };
  if (terminate) {
    kill(pid, SIGTERM);
    if (!waitFor(grace)) {
      kill(-pid, SIGKILL);
      r.timedOut = true;
    }
  } else if (!waitFor(timeout)) {
    kill(-pid, SIGTERM);
    if (!waitFor(2000ms)) kill(-pid, SIGKILL);
    r.timedOut = true;
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (fd >= 0) ::close(fd);
  r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = readFile(dir_ + "/" + it->second + ".out");
  r.err = readFile(dir_ + "/" + it->second + ".err");
  children_.erase(it);
  return r;
}

RunResult Ibsim::run(const std::vector<std::string>& argv, const RunOptions& o) {
  pid_t pid = launch(argv, o, "run" + std::to_string(nextTag_++));
  return collect(pid, o.timeout, false, {});
}

pid_t Ibsim::spawn(const std::vector<std::string>& argv, const RunOptions& o) {
  return launch(argv, o, "bg" + std::to_string(nextTag_++));
}

RunResult Ibsim::stop(pid_t pid, std::chrono::milliseconds grace) {
  return collect(pid, {}, true, grace);
}

RunResult Ibsim::wait(pid_t pid, std::chrono::milliseconds timeout) {
  return collect(pid, timeout, false, {});
}

std::string Ibsim::output(pid_t pid) const {
  auto it = children_.find(pid);
  if (it == children_.end()) return {};
  return readFile(dir_ + "/" + it->second + ".out") + readFile(dir_ + "/" + it->second + ".err");
}

::testing::AssertionResult Ibsim::waitForOutput(pid_t pid, const std::string& text,
                                                std::chrono::milliseconds limit,
                                                std::chrono::milliseconds every) {
  return waitUntil([&] { return output(pid).find(text) != std::string::npos; }, limit,
                   "\"" + text + "\" from process " + std::to_string(pid), every,
                   [&] { return !running(pid); });
}

bool Ibsim::running(pid_t pid) {
  if (!children_.count(pid)) return false;
  int fd = pidfdOpen(pid);
  if (fd < 0) return false;
  pollfd p{fd, POLLIN, 0};
  bool exited = ::poll(&p, 1, 0) > 0;
  ::close(fd);
  return !exited;
}

}  // namespace ibsm::testing
