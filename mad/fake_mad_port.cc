#include "mad/fake_mad_port.h"

#include <infiniband/mad.h>

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

MadPacket makeResponse(const MadPacket& request, uint16_t status) {
  MadPacket r = request;
  uint8_t* b = r.bytes.data();
  mad_set_field(b, 0, IB_MAD_METHOD_F, kGetResp & 0x7f);
  mad_set_field(b, 0, IB_MAD_RESPONSE_F, 1);
  if (b[1] == kClassSmiDirected) {
    mad_set_field(b, 0, IB_DRSMP_DIRECTION_F, 1);
    mad_set_field(b, 0, IB_DRSMP_STATUS_F, status);
  } else {
    mad_set_field(b, 0, IB_MAD_STATUS_F, status);
  }
  return r;
}

}  // namespace ibsm::mad
