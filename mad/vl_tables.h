// Virtual-lane attributes of a port. SLtoVLMappingTable (IBA 14.2.5.8): 16 four-bit VL numbers, SL 0 in the
// high nibble of byte 0, SL 1 in its low nibble, ...; on a switch the attribute modifier names the input port
// (bits 8-15) and the output port (bits 0-7), on a CA it is 0; a switch with SwitchInfo
// OptimizedSLtoVLMappingProgramming also takes bit 17 (the table of every input port, the input port field
// ignored) and bit 16 (every output port), as OpenSM's osm_qos.c sends them (0x30000: the whole switch in one
// Set; 0x20000 | out: every input port towards one output). VLArbitrationTable (IBA 14.2.5.9): 32 entries
// of {VL (low 4 bits of byte 0), weight (byte 1)} per block; the modifier holds the block in bits 16-31
// (1, 2: low priority entries 0-31, 32-63; 3, 4: high priority) and, on a switch, the output port in bits
// 0-7.
#pragma once

#include <array>
#include <cstdint>

namespace ibsm::mad {

using SlToVlTable = std::array<uint8_t, 16>;  // SL -> VL
inline uint32_t slToVlAttrMod(uint8_t inPort, uint8_t outPort) {
  return uint32_t{inPort} << 8 | outPort;
}
inline constexpr uint32_t kSlToVlAllOutputs = 1u << 16, kSlToVlAllInputs = 1u << 17;
SlToVlTable decodeSlToVl(const uint8_t* data);
void encodeSlToVl(const SlToVlTable& table, uint8_t* data);

struct VlArbEntry {
  uint8_t vl = 0;
  uint8_t weight = 0;  // 64-byte units per turn; 0 skips the entry
  bool operator==(const VlArbEntry&) const = default;
};
inline constexpr unsigned kVlArbBlockEntries = 32;
using VlArbBlock = std::array<VlArbEntry, kVlArbBlockEntries>;
enum VlArbBlockNum : uint8_t {
  kVlArbLowFirst = 1,
  kVlArbLowSecond = 2,
  kVlArbHighFirst = 3,
  kVlArbHighSecond = 4
};
inline uint32_t vlArbAttrMod(uint8_t block, uint8_t port) {
  return uint32_t{block} << 16 | port;
}
VlArbBlock decodeVlArbBlock(const uint8_t* data);
void encodeVlArbBlock(const VlArbBlock& block, uint8_t* data);

}  // namespace ibsm::mad
