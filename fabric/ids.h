// Strong types for InfiniBand identifiers so a GUID, a LID and a port number cannot be mixed up.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace ibsm::fabric {

template <typename Tag, typename T>
struct StrongId {
  T value{};
  constexpr StrongId() = default;
  constexpr explicit StrongId(T v) : value(v) {}
  constexpr auto operator<=>(const StrongId&) const = default;
};

using Guid = StrongId<struct GuidTag, uint64_t>;
using Lid = StrongId<struct LidTag, uint16_t>;
using PortNum = StrongId<struct PortNumTag, uint8_t>;

// Unicast LIDs are 1..0xBFFF; 0 is "no LID", 0xC000.. multicast, 0xFFFF permissive.
inline constexpr uint16_t kMaxUnicastLid = 0xBFFF;
inline constexpr bool isUnicast(Lid lid) {
  return lid.value >= 1 && lid.value <= kMaxUnicastLid;
}

// "0x0002c903000b2240"
std::string toString(Guid guid);
// Accepts "0x..." or bare hex; nullopt when malformed or out of range.
std::optional<Guid> parseGuid(std::string_view text);

}  // namespace ibsm::fabric

template <typename Tag, typename T>
struct std::hash<ibsm::fabric::StrongId<Tag, T>> {
  size_t operator()(const ibsm::fabric::StrongId<Tag, T>& id) const noexcept {
    return std::hash<T>{}(id.value);
  }
};
