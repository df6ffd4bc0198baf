#include "daemon/state/state_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <string_view>

namespace ibsm::daemon {

namespace fs = std::filesystem;

namespace {

// Moves a damaged state file aside; says where it went (or why it stayed).
std::string moveAside(const std::string& path) {
  // Deliberately the system clock: the suffix tells an operator when the file went bad; nothing times by it.
  auto stamp =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch());
  std::string aside = path + ".bad-" + std::to_string(stamp.count());
  std::error_code ec;
  fs::rename(path, aside, ec);
  return ec ? "could not move it aside (" + ec.message() + ")" : "kept as " + aside;
}

// "0x" and exactly 16 hex digits, an optional newline, nothing else; 0 is not a key.
std::optional<uint64_t> parseMkeyFile(const std::string& text) {
  std::string_view s = text;
  if (s.ends_with('\n')) s.remove_suffix(1);
  if (s.size() != 18 || !s.starts_with("0x")) return std::nullopt;
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data() + 2, s.data() + s.size(), v, 16);
  if (ec != std::errc() || end != s.data() + s.size() || v == 0) return std::nullopt;
  return v;
}

}  // namespace

LoadedGuid2Lid loadGuid2Lid(const std::string& path) {
  LoadedGuid2Lid out;
  std::error_code ec;
  if (!fs::exists(path, ec)) return out;
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  auto parsed = in ? routing::parseGuid2Lid(ss.str())
                   : fabric::Result<routing::Guid2Lid>(fabric::makeError("unreadable"));
  if (parsed) {
    out.map = std::move(*parsed);
    return out;
  }
  out.warnings.push_back("STATE001 " + path + ": " + parsed.error().message + "; " + moveAside(path) +
                         "; starting with an empty LID map");
  return out;
}

fabric::Result<LoadedMkey> loadOrCreateMkey(const std::string& path) {
  LoadedMkey out;
  std::error_code ec;
  if (fs::exists(path, ec)) {
    std::ifstream in(path, std::ios::binary);
    std::string text(64, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<size_t>(in.gcount()));
    if (auto key = parseMkeyFile(text)) {
      out.key = *key;
      return out;
    }
    out.warnings.push_back(
        "STATE003 " + path + ": not an M_Key (expected 0x and 16 hex digits); " + moveAside(path) +
        "; a new M_Key is generated: ports protected with the old one can be managed again "
        "only after their M_Key lease period");
  }
  std::random_device rd;
  std::uniform_int_distribution<uint64_t> any(1, UINT64_MAX);
  out.key = any(rd);
  out.created = true;
  char line[32];
  std::snprintf(line, sizeof line, "0x%016llx\n", static_cast<unsigned long long>(out.key));
  auto saved = writeFileAtomically(path, line, 0600);
  if (!saved) return fabric::makeError("cannot keep the generated M_Key: " + saved.error().message);
  return out;
}

fabric::Result<void> writeFileAtomically(const std::string& path, const std::string& text, mode_t mode) {
  auto written = writeFileStreamed(
      path, [&](const routing::TextSink& sink) { sink(text); }, std::nullopt, mode);
  if (!written) return written.error();
  return {};
}

fabric::Result<StreamedFile> writeFileStreamed(const std::string& path,
                                               const std::function<void(const routing::TextSink&)>& produce,
                                               std::optional<uint64_t> unlessHash, mode_t mode) {
  std::error_code ec;
  fs::path p(path);
  if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return fabric::makeError("cannot write " + tmp + ": " + std::strerror(errno));
  StreamedFile out;
  std::string buf;  // written out about 1 MiB at a time
  int err = 0;
  auto flush = [&] {
    for (size_t done = 0; !err && done < buf.size();) {
      ssize_t n = ::write(fd, buf.data() + done, buf.size() - done);
      if (n >= 0)
        done += static_cast<size_t>(n);
      else if (errno != EINTR)
        err = errno;
    }
    buf.clear();
  };
  produce([&](std::string_view piece) {
    // The pieces come the same way for the same content, so a hash per piece, combined, tells a change.
    out.hash ^=
        std::hash<std::string_view>{}(piece) + 0x9e3779b97f4a7c15ULL + (out.hash << 6) + (out.hash >> 2);
    buf.append(piece);
    if (buf.size() >= (size_t{1} << 20)) flush();
  });
  flush();
  if (!err && unlessHash == out.hash && fs::exists(path, ec)) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return out;
  }
  if (err || ::fsync(fd) != 0) {
    const int e = err ? err : errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    return fabric::makeError("cannot write " + tmp + ": " + std::strerror(e));
  }
  if (::close(fd) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    return fabric::makeError("cannot write " + tmp + ": " + std::strerror(e));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return fabric::makeError("cannot rename " + tmp + " to " + path + ": " + std::strerror(e));
  }
  out.written = true;
  return out;
}

fabric::Result<void> saveGuid2Lid(const std::string& path, const routing::Guid2Lid& map) {
  return writeFileAtomically(path, routing::formatGuid2Lid(map));
}

}  // namespace ibsm::daemon
