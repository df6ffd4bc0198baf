// MadPort over libibumad: a real HCA port, or ibsim through umad2sim. The only file that includes umad.h.
// Received MADs are read on a dedicated thread that polls only the umad fd (umad2sim wraps poll() for one
// umad fd per call and cannot be epolled) and are handed over through a queue plus an eventfd.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "mad/mad_port.h"

namespace ibsm::mad {

struct UmadPortOptions {
  std::optional<fabric::Guid> portGuid;  // default: first port whose link is up
  bool becomeSm = true;                  // open the issm device so traps and SM requests reach us
  bool registerSa = true;                // register the SA class (0x03) agent
  bool registerPerf = true;              // register the PerfMgt class (0x04) agent (counter sweeps)
};

class UmadPort final : public MadPort {
 public:
  static fabric::Result<std::unique_ptr<UmadPort>> open(const UmadPortOptions& options);
  ~UmadPort() override;

  fabric::Result<void> send(const MadPacket& mad, Duration timeout) override;
  std::optional<MadPacket> receive(Duration timeout) override;
  int eventFd() const override { return eventFd_; }
  LocalPortInfo localPort() override;

 private:
  UmadPort() = default;
  void receiveLoop();

  std::string caName_;
  int portNum_ = 0;
  int fd_ = -1;
  int issmFd_ = -1;
  int eventFd_ = -1;
  int agentDirected_ = -1, agentLid_ = -1, agentSa_ = -1, agentPerf_ = -1;
  std::mutex sendMutex_;
  std::vector<uint8_t> sendBuf_;  // under sendMutex_
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<MadPacket> rx_;     // under mutex_
  std::vector<MadPacket> taken_;  // receive()'s (one caller thread), handed out from takenHead_ on
  size_t takenHead_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace ibsm::mad
