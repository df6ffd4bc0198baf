// The one transport seam: everything that sends or receives a MAD goes through a MadPort. UmadPort talks to
// libibumad (real HCA or ibsim via umad2sim); FakeMadPort is an in-memory port for tests.
#pragma once

#include <optional>
#include <string>

#include "fabric/ids.h"
#include "fabric/result.h"
#include "mad/clock.h"
#include "mad/mad_packet.h"

namespace ibsm::mad {

// What the local port reports about itself.
struct LocalPortInfo {
  std::string caName;
  int portNum = 0;
  fabric::Guid portGuid;
  uint16_t lid = 0;
  uint16_t smLid = 0;
  uint8_t lmc = 0;
  uint8_t state = 0;  // PortInfo PortState
};

class MadPort {
 public:
  virtual ~MadPort() = default;
  // Queues one MAD for sending; timeout is the per-attempt timeout the transport may enforce itself (a MAD it
  // gives up on comes back from receive() with status 110). An Error means the MAD did not leave.
  virtual fabric::Result<void> send(const MadPacket& mad, Duration timeout) = 0;
  // The next received MAD (a response, a request, a trap, or a send the transport gave up on), waiting at
  // most timeout; nullopt when nothing arrived.
  virtual std::optional<MadPacket> receive(Duration timeout) = 0;
  // A file descriptor that is readable while receive() has something, for an event loop; -1 if none.
  virtual int eventFd() const = 0;
  virtual LocalPortInfo localPort() = 0;
};

}  // namespace ibsm::mad
