// libFuzzer target: the adaptive-routing attribute decoders of mad/ar.h on an arbitrary 64-byte block, with
// encode/decode round trips (what decodes must re-encode to something that decodes to the same value).
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "mad/ar.h"

using namespace ibsm::mad;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::array<uint8_t, 64> block{};
  std::memcpy(block.data(), data, std::min(size, block.size()));

  auto info = decodeArInfo(block.data());
  if (info.ok()) {
    std::array<uint8_t, 64> out{};
    encodeArInfo(*info, out.data());
    auto again = decodeArInfo(out.data());
    if (!again.ok() || !(*again == *info)) __builtin_trap();
  }
  ArGroupBlock groups = decodeArGroupBlock(block.data());
  {
    std::array<uint8_t, 64> out{};
    encodeArGroupBlock(groups, out.data());
    if (!(decodeArGroupBlock(out.data()) == groups)) __builtin_trap();
  }
  auto lft = decodeArLftBlock(block.data());
  if (lft.ok()) {
    std::array<uint8_t, 64> out{};
    encodeArLftBlock(*lft, out.data());
    auto again = decodeArLftBlock(out.data());
    if (!again.ok() || !(*again == *lft)) __builtin_trap();
  }
  // The bit-field helper on fuzzed field descriptors that stay inside the block.
  if (size >= 68) {
    VendorField f{static_cast<uint16_t>((data[64] % 16) * 4), static_cast<uint8_t>(data[65] % 32),
                  static_cast<uint8_t>(1 + data[66] % 32)};
    if (f.lsb + f.width <= 32) {
      uint32_t v = getVendorField(block.data(), f);
      setVendorField(block.data(), f, v);
      if (getVendorField(block.data(), f) != v) __builtin_trap();
    }
  }
  // Block numbers within the attributes' ranges (the helpers assert them: the SM never asks for more).
  const uint32_t blockNumber = data[0] | (size > 1 ? data[1] << 8 : 0);
  (void)arGroupTableAttrMod(blockNumber & kArGroupBlockMax);
  (void)arLftAttrMod(blockNumber & kArLftBlockMax);
  return 0;
}
