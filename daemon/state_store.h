// Persistent state under the state directory: the guid2lid map (OpenSM's format), written atomically.
// A damaged file is moved aside (guid2lid.bad-<time>) and the SM continues with a fresh map.
#pragma once

#include <string>
#include <vector>

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
fabric::Result<void> writeFileAtomically(const std::string& path, const std::string& text);

}  // namespace ibsm::daemon
