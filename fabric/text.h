// Small text helpers shared by every parser (topology files, LFT dumps, guid2lid, the config and partition
// files): ASCII only, so a byte >= 0x80 is never taken for a blank whatever the locale.
#pragma once

#include <string>
#include <string_view>

namespace ibsm::fabric {

// Space, tab, CR, LF, VT and FF.
constexpr bool isBlank(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

constexpr std::string_view trimLeft(std::string_view s) {
  while (!s.empty() && isBlank(s.front())) s.remove_prefix(1);
  return s;
}

constexpr std::string_view trim(std::string_view s) {
  s = trimLeft(s);
  while (!s.empty() && isBlank(s.back())) s.remove_suffix(1);
  return s;
}

// At most `max` bytes of untrusted text for a message, control characters replaced, "..." when cut.
inline std::string printable(std::string_view s, size_t max = 40) {
  std::string out;
  for (char c : s.substr(0, max)) out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  if (s.size() > max) out += "...";
  return out;
}

inline std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

inline std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  return out;
}

}  // namespace ibsm::fabric
