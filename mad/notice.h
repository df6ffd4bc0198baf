// SubnTrap(Notice) decoding and the TrapRepress answer. Traps are untrusted input: decodeNotice validates
// everything it returns.
#pragma once

#include <cstdint>

#include "fabric/result.h"
#include "mad/mad_packet.h"

namespace ibsm::mad {

struct Notice {
  bool generic = false;
  uint8_t type = 0;           // 0 fatal, 1 urgent, 2 security, 3 subnet management, 4 info
  uint32_t producerType = 0;  // generic notices: 1 CA, 2 switch, 3 router, 4 class manager
  uint16_t trapNumber = 0;
  uint16_t issuerLid = 0;
  uint16_t lidAddr = 0;          // the LID the trap is about (128: the switch; 129-131, 144, 145: the port;
                                 // 256 Bad M_Key: the requester that presented the wrong key)
  uint8_t portNum = 0;           // 129, 130, 131: the port with the error
  uint32_t capMask = 0;          // 144: the new capability mask (PortInfo's CapabilityMask)
  uint64_t systemImageGuid = 0;  // 145
};

// PortInfo CapabilityMask.IsSM: the port runs an SM (trap 144 carries the whole mask).
inline constexpr uint32_t kCapIsSm = 1u << 1;

// From a SubnTrap SMP (LID-routed class 0x01, method Trap, attribute Notice). Fails on anything else, a
// non-generic notice, or an issuer/LID that is not a unicast LID.
fabric::Result<Notice> decodeNotice(const MadPacket& trap);
// A Notice as an SMA would send it (for fakes and tests).
MadPacket makeTrap(const Notice& notice, uint16_t dlid);
// SubnTrapRepress for a received trap: same TID and attribute, sent back to where the trap came from.
MadPacket makeTrapRepress(const MadPacket& trap);

}  // namespace ibsm::mad
