#include "daemon/state_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ibsm::daemon {

namespace fs = std::filesystem;

LoadedGuid2Lid loadGuid2Lid(const std::string& path) {
  LoadedGuid2Lid out;
  std::error_code ec;
  if (!fs::exists(path, ec)) return out;
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  auto parsed = in ? routing::parseGuid2Lid(ss.str()) : fabric::Result<routing::Guid2Lid>(fabric::makeError("unreadable"));
  if (parsed) {
    out.map = std::move(*parsed);
    return out;
  }
  auto stamp = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch());
  std::string aside = path + ".bad-" + std::to_string(stamp.count());
  fs::rename(path, aside, ec);
  out.warnings.push_back("STATE001 " + path + ": " + parsed.error().message + "; " +
                         (ec ? "could not move it aside (" + ec.message() + ")" : "kept as " + aside) +
                         "; starting with an empty LID map");
  return out;
}

fabric::Result<void> writeFileAtomically(const std::string& path, const std::string& text) {
  std::error_code ec;
  fs::path p(path);
  if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return fabric::makeError("cannot write " + tmp + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return fabric::makeError("cannot write " + tmp + ": " + std::strerror(e));
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return fabric::makeError("cannot write " + tmp + ": " + std::strerror(e));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return fabric::makeError("cannot rename " + tmp + " to " + path + ": " + std::strerror(e));
  }
  return {};
}

fabric::Result<void> saveGuid2Lid(const std::string& path, const routing::Guid2Lid& map) {
  return writeFileAtomically(path, routing::formatGuid2Lid(map));
}

}  // namespace ibsm::daemon
