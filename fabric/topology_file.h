// Topology files in ibnetdiscover's text format — what ibnetdiscover prints, what ibsim loads as a net file,
// and what `ibsmd --discover-only --topology-out` and ibsm-fabric write. The reader also takes plain ibsim
// net files (no GUID lines): their GUIDs are assigned the way ibsim assigns them, so a file and the simulated
// fabric agree.
#pragma once

#include <string>
#include <string_view>

#include "fabric/topology.h"

namespace ibsm::fabric {

// Parses the text; an Error names the line (and file name if given), e.g.
// "fab.net:12: port 37 is past the switch's 36 ports". Links listed on one end only are an error.
Result<TopologyPtr> parseTopology(std::string_view text, std::string_view fileName = "<input>");
Result<TopologyPtr> readTopologyFile(const std::string& path);

// ibnetdiscover format, with width/speed and LIDs in the comments (ibsim reads those back).
std::string formatTopology(const Topology& topo);
// Atomic write (temp file + rename).
Result<void> writeTopologyFile(const Topology& topo, const std::string& path);

}  // namespace ibsm::fabric
