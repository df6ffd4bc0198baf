#include "mad/vl_tables.h"

namespace ibsm::mad {

SlToVlTable decodeSlToVl(const uint8_t* d) {
  SlToVlTable t{};
  for (unsigned i = 0; i < 8; ++i) {
    t[2 * i] = d[i] >> 4;
    t[2 * i + 1] = d[i] & 0xF;
  }
  return t;
}

void encodeSlToVl(const SlToVlTable& t, uint8_t* d) {
  for (unsigned i = 0; i < 8; ++i) d[i] = static_cast<uint8_t>((t[2 * i] & 0xF) << 4 | (t[2 * i + 1] & 0xF));
}

VlArbBlock decodeVlArbBlock(const uint8_t* d) {
  VlArbBlock b{};
  for (unsigned i = 0; i < kVlArbBlockEntries; ++i)
    b[i] = VlArbEntry{static_cast<uint8_t>(d[2 * i] & 0xF), d[2 * i + 1]};
  return b;
}

void encodeVlArbBlock(const VlArbBlock& b, uint8_t* d) {
  for (unsigned i = 0; i < kVlArbBlockEntries; ++i) {
    d[2 * i] = b[i].vl & 0xF;
    d[2 * i + 1] = b[i].weight;
  }
}

}  // namespace ibsm::mad
