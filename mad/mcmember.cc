#include "mad/mcmember.h"

#include <infiniband/mad.h>

#include <algorithm>

#include "mad/fields.h"

namespace ibsm::mad {

namespace {
using fields::get;
using fields::set;
// Byte offsets of the fields libibmad has no entry for.
constexpr size_t kMtuByte = 38, kRateByte = 42, kLifeByte = 43, kHopByte = 47, kScopeByte = 48;
}  // namespace

McMemberRecord decodeMcMemberRecord(const uint8_t* d) {
  McMemberRecord r;
  r.mgid = takeGid(d);
  r.portGid = takeGid(d + 16);
  r.qkey = get(d, IB_SA_MCM_QKEY_F);
  r.mlid = static_cast<uint16_t>(get(d, IB_SA_MCM_MLID_F));
  r.mtuSelector = d[kMtuByte] >> 6;
  r.mtu = static_cast<uint8_t>(get(d, IB_SA_MCM_MTU_F));
  r.tclass = static_cast<uint8_t>(get(d, IB_SA_MCM_TCLASS_F));
  r.pkey = static_cast<uint16_t>(get(d, IB_SA_MCM_PKEY_F));
  r.rateSelector = d[kRateByte] >> 6;
  r.rate = static_cast<uint8_t>(get(d, IB_SA_MCM_RATE_F));
  r.lifeSelector = d[kLifeByte] >> 6;
  r.packetLifeTime = d[kLifeByte] & 0x3F;
  r.sl = static_cast<uint8_t>(get(d, IB_SA_MCM_SL_F));
  r.flowLabel = get(d, IB_SA_MCM_FLOW_LABEL_F);
  r.hopLimit = d[kHopByte];
  r.scope = d[kScopeByte] >> 4;
  r.joinState = static_cast<uint8_t>(get(d, IB_SA_MCM_JOIN_STATE_F));
  r.proxyJoin = get(d, IB_SA_MCM_PROXY_JOIN_F) != 0;
  return r;
}

void encodeMcMemberRecord(const McMemberRecord& r, uint8_t* d) {
  std::fill_n(d, kMcMemberRecordSize, 0);
  putGid(d, r.mgid);
  putGid(d + 16, r.portGid);
  set(d, IB_SA_MCM_QKEY_F, r.qkey);
  set(d, IB_SA_MCM_MLID_F, r.mlid);
  set(d, IB_SA_MCM_MTU_F, r.mtu);
  d[kMtuByte] = static_cast<uint8_t>(d[kMtuByte] | (r.mtuSelector & 3) << 6);
  set(d, IB_SA_MCM_TCLASS_F, r.tclass);
  set(d, IB_SA_MCM_PKEY_F, r.pkey);
  set(d, IB_SA_MCM_RATE_F, r.rate);
  d[kRateByte] = static_cast<uint8_t>(d[kRateByte] | (r.rateSelector & 3) << 6);
  d[kLifeByte] = static_cast<uint8_t>((r.lifeSelector & 3) << 6 | (r.packetLifeTime & 0x3F));
  set(d, IB_SA_MCM_SL_F, r.sl);
  set(d, IB_SA_MCM_FLOW_LABEL_F, r.flowLabel);
  d[kHopByte] = r.hopLimit;
  set(d, IB_SA_MCM_JOIN_STATE_F, r.joinState);
  d[kScopeByte] = static_cast<uint8_t>(d[kScopeByte] | (r.scope & 0xF) << 4);
  set(d, IB_SA_MCM_PROXY_JOIN_F, r.proxyJoin);
}

}  // namespace ibsm::mad
