// libFuzzer target: every SMP attribute decoder of mad/smp.h on arbitrary bytes. The first input byte picks
// nothing; all decoders run on the same 64-byte attribute block (short inputs are zero-padded, as a short MAD
// would be by the engine), and parseHeader on the whole input as a 256-byte MAD.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "mad/mad_packet.h"
#include "mad/smp.h"

using namespace ibsm::mad;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  MadPacket mad;
  size_t n = std::min(size, kMadSize);
  std::memcpy(mad.bytes.data(), data, n);
  mad.size = n;
  auto header = parseHeader(mad);
  if (header.ok()) (void)header->isResponse();
  (void)getTid(mad);

  const uint8_t* block = smpData(mad);
  auto ni = decodeNodeInfo(block);
  if (ni.ok()) {
    // Round trip: what decodes must encode without trouble.
    std::array<uint8_t, kSmpDataSize> out{};
    encodeNodeInfo(*ni, out.data());
  }
  std::string desc = decodeNodeDescription(block);
  if (desc.size() > kSmpDataSize) __builtin_trap();
  ibsm::fabric::PortAttrs pa = decodePortInfo(block);
  (void)decodePortInfoLocalPort(block);
  (void)decodePortInfoMkey(block);
  std::array<uint8_t, kSmpDataSize> pi{};
  encodePortInfo(pa, pi.data());
  PortInfoSet set;
  set.lid = pa.lid.value;
  set.state = 0;
  applyPortInfoSet(set, pi.data());
  ibsm::fabric::SwitchAttrs sa = decodeSwitchInfo(block);
  std::array<uint8_t, kSmpDataSize> si{};
  encodeSwitchInfo(sa, si.data());
  SmInfo sm = decodeSmInfo(block);
  std::array<uint8_t, kSmpDataSize> smi{};
  encodeSmInfo(sm, smi.data());
  // A response built from a fuzzed request must stay a well-formed MAD.
  MadPacket resp = makeResponse(mad, 0);
  (void)parseHeader(resp);
  return 0;
}
