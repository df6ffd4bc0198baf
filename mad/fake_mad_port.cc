#include "mad/fake_mad_port.h"

namespace ibsm::mad {

fabric::Result<void> FakeMadPort::send(const MadPacket& mad, Duration) {
  if (failSends_) return fabric::makeError("fake send failure");
  sent_.push_back(mad);
  if (responder_)
    for (auto& r : responder_(mad)) rx_.push_back(std::move(r));
  return {};
}

std::optional<MadPacket> FakeMadPort::receive(Duration timeout) {
  if (rx_.empty()) {
    clock_.advance(timeout);
    return std::nullopt;
  }
  MadPacket m = std::move(rx_.front());
  rx_.pop_front();
  return m;
}

}  // namespace ibsm::mad
