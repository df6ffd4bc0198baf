// libFuzzer target: the trap/notice decoder (mad/notice.h) on an arbitrary MAD, plus the TrapRepress built
// for it; a notice that decodes must re-encode (makeTrap) to one that decodes to the same fields.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "mad/notice.h"
#include "mad/smp.h"

using namespace ibsm::mad;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  MadPacket mad;
  size_t n = std::min(size, kMadSize);
  std::memcpy(mad.bytes.data(), data, n);
  mad.size = n;
  if (size > kMadSize) mad.addr.lid = static_cast<uint16_t>(data[kMadSize] | (data[kMadSize - 1] << 8));
  auto notice = decodeNotice(mad);
  if (!notice.ok()) return 0;
  MadPacket repress = makeTrapRepress(mad);
  (void)parseHeader(repress);
  MadPacket again = makeTrap(*notice, 1);
  auto back = decodeNotice(again);
  if (!back.ok() || back->trapNumber != notice->trapNumber || back->issuerLid != notice->issuerLid)
    __builtin_trap();
  return 0;
}
