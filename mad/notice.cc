#include "mad/notice.h"

#include <endian.h>
#include <infiniband/mad.h>

#include <cstring>

#include "mad/fields.h"
#include "mad/smp.h"

namespace ibsm::mad {

namespace {
// Notice DataDetails start 10 bytes into the attribute; the port number of traps 129-131 is DataDetails[5],
// the system image GUID of trap 145 DataDetails[6..13]. libibmad names only the LID fields.
constexpr size_t kDetails = 10;
using fields::get;
}  // namespace

fabric::Result<Notice> decodeNotice(const MadPacket& trap) {
  auto h = parseHeader(trap);
  if (!h) return h.error();
  if (h->mgmtClass != kClassSmiLid || h->method != kTrap || h->attrId != kAttrNotice)
    return fabric::makeError("not a SubnTrap(Notice)");
  if (trap.size < kSmpDataOffset + kSmpDataSize) return fabric::makeError("trap too short");
  const uint8_t* d = smpData(trap);
  Notice n;
  n.generic = get(d, IB_NOTICE_IS_GENERIC_F);
  n.type = static_cast<uint8_t>(get(d, IB_NOTICE_TYPE_F));
  n.producerType = get(d, IB_NOTICE_PRODUCER_F);
  n.trapNumber = static_cast<uint16_t>(get(d, IB_NOTICE_TRAP_NUMBER_F));
  n.issuerLid = static_cast<uint16_t>(get(d, IB_NOTICE_ISSUER_LID_F));
  if (!n.generic)
    return fabric::makeError("vendor-specific notice (trap " + std::to_string(n.trapNumber) + ")");
  switch (n.trapNumber) {
    case 128:
    case 256:  // Bad M_Key: LIDADDR is where the SMP came from (the issuer is the protected port)
      n.lidAddr = static_cast<uint16_t>(get(d, IB_NOTICE_DATA_LID_F));
      break;
    case 129:
    case 130:
    case 131:
      n.lidAddr = static_cast<uint16_t>(get(d, IB_NOTICE_DATA_144_LID_F));
      n.portNum = d[kDetails + 5];
      break;
    case 144:
      n.lidAddr = static_cast<uint16_t>(get(d, IB_NOTICE_DATA_144_LID_F));
      n.capMask = get(d, IB_NOTICE_DATA_144_CAPMASK_F);
      break;
    case 145:
      n.lidAddr = static_cast<uint16_t>(get(d, IB_NOTICE_DATA_144_LID_F));
      std::memcpy(&n.systemImageGuid, d + kDetails + 6, 8);
      n.systemImageGuid = be64toh(n.systemImageGuid);
      break;
    default:
      break;  // other generic traps are accepted and logged by number only
  }
  // umad2sim/ibsim leave IssuerLID 0 on switch traps; the LID the trap is about is what matters.
  if (n.trapNumber >= 128 && n.trapNumber <= 145 && (n.lidAddr == 0 || n.lidAddr > 0xBFFF))
    return fabric::makeError("trap " + std::to_string(n.trapNumber) + " names LID " +
                             std::to_string(n.lidAddr));
  return n;
}

MadPacket makeTrap(const Notice& n, uint16_t dlid) {
  MadPacket m = makeLidRoutedSmp(kTrap, kAttrNotice, 0, dlid);
  uint8_t* d = smpData(m);
  mad_set_field(d, 0, IB_NOTICE_IS_GENERIC_F, n.generic);
  mad_set_field(d, 0, IB_NOTICE_TYPE_F, n.type);
  mad_set_field(d, 0, IB_NOTICE_PRODUCER_F, n.producerType);
  mad_set_field(d, 0, IB_NOTICE_TRAP_NUMBER_F, n.trapNumber);
  mad_set_field(d, 0, IB_NOTICE_ISSUER_LID_F, n.issuerLid);
  if (n.trapNumber == 128 || n.trapNumber == 256) {
    mad_set_field(d, 0, IB_NOTICE_DATA_LID_F, n.lidAddr);
  } else {
    mad_set_field(d, 0, IB_NOTICE_DATA_144_LID_F, n.lidAddr);
    if (n.trapNumber == 144) mad_set_field(d, 0, IB_NOTICE_DATA_144_CAPMASK_F, n.capMask);
    if (n.trapNumber >= 129 && n.trapNumber <= 131) d[kDetails + 5] = n.portNum;
  }
  return m;
}

MadPacket makeTrapRepress(const MadPacket& trap) {
  MadPacket r = trap;
  mad_set_field(r.bytes.data(), 0, IB_MAD_METHOD_F, kTrapRepress);
  mad_set_field(r.bytes.data(), 0, IB_MAD_RESPONSE_F, 0);
  r.status = 0;
  return r;
}

}  // namespace ibsm::mad
