// Persistent state under the state directory: the guid2lid map (OpenSM's format) and the generated M_Key,
// written atomically. A damaged file is moved aside (<name>.bad-<time>) and the SM continues with a fresh
// one.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "routing/lft_dump.h"
#include "routing/lid_assignment.h"

namespace ibsm::daemon {

struct LoadedGuid2Lid {
  routing::Guid2Lid map;
  std::vector<std::string> warnings;  // e.g. the file was damaged and kept aside as ...
};

// A missing file is an empty map; an unreadable or malformed one is moved aside with a warning.
LoadedGuid2Lid loadGuid2Lid(const std::string& path);
// Temp file + fsync + rename, so a crash leaves either the old or the new file.
fabric::Result<void> saveGuid2Lid(const std::string& path, const routing::Guid2Lid& map);
// Writes text to path atomically (creating parent directories).
fabric::Result<void> writeFileAtomically(const std::string& path, const std::string& text,
                                         mode_t mode = 0644);
// The same for text that `produce` hands to its sink piece by piece (a dump of a large fabric is never in
// memory whole). Returns a hash of the content (of its pieces, combined); when it equals `unlessHash` and the
// file exists, the file is left as it was and `written` is false.
struct StreamedFile {
  uint64_t hash = 0;
  bool written = false;
};
fabric::Result<StreamedFile> writeFileStreamed(const std::string& path,
                                               const std::function<void(const routing::TextSink&)>& produce,
                                               std::optional<uint64_t> unlessHash = std::nullopt,
                                               mode_t mode = 0644);

// The subnet's M_Key for sm.m_key: random, one line "0x<16 hex digits>" in <state_dir>/mkey (mode 0600: it is
// a secret). Made once: a restarted SM with the same state directory reuses it, so it can still manage the
// ports it protected. A missing file gets a new key; a damaged one is moved aside with a warning (ports
// protected with the lost key answer again once their lease period runs out); a key that cannot be saved
// is an error, since the next start could not manage the ports protected with it.
inline constexpr const char* kMkeyFile = "mkey";
struct LoadedMkey {
  uint64_t key = 0;  // never 0
  bool created = false;
  std::vector<std::string> warnings;
};
fabric::Result<LoadedMkey> loadOrCreateMkey(const std::string& path);

}  // namespace ibsm::daemon
