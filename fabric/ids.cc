#include "fabric/ids.h"

#include <charconv>
#include <cstdio>

namespace ibsm::fabric {

std::string toString(Guid guid) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(guid.value));
  return buf;
}

std::optional<Guid> parseGuid(std::string_view text) {
  if (text.starts_with("0x") || text.starts_with("0X")) text.remove_prefix(2);
  if (text.empty() || text.size() > 16) return std::nullopt;
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, 16);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return Guid{v};
}

}  // namespace ibsm::fabric
