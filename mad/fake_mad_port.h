// In-memory MadPort for unit tests. Sent MADs are recorded and offered to a responder, which may answer at
// once (return packets), answer later (keep the request and inject() later), or drop it. receive() on an
// empty queue advances the FakeClock by the timeout, so time-outs happen without sleeping.
#pragma once

#include <deque>
#include <functional>
#include <vector>

#include "mad/mad_port.h"

namespace ibsm::mad {

class FakeMadPort final : public MadPort {
 public:
  using Responder = std::function<std::vector<MadPacket>(const MadPacket& sent)>;

  explicit FakeMadPort(FakeClock& clock) : clock_(clock) {}
  void setResponder(Responder responder) { responder_ = std::move(responder); }
  void setLocalPort(LocalPortInfo info) { local_ = std::move(info); }
  // Makes the next send() calls fail.
  void failSends(bool fail) { failSends_ = fail; }
  void inject(MadPacket mad) { rx_.push_back(std::move(mad)); }

  fabric::Result<void> send(const MadPacket& mad, Duration timeout) override;
  std::optional<MadPacket> receive(Duration timeout) override;
  int eventFd() const override { return -1; }
  LocalPortInfo localPort() override { return local_; }

  const std::vector<MadPacket>& sent() const { return sent_; }

 private:
  FakeClock& clock_;
  Responder responder_;
  LocalPortInfo local_;
  bool failSends_ = false;
  std::deque<MadPacket> rx_;
  std::vector<MadPacket> sent_;
};

}  // namespace ibsm::mad
