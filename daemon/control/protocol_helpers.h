// Helpers the control protocol's source files share (not part of its interface): the exception a read-only
// answer raises for an error response, time and text formatting, and how every listing names a node.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "daemon/control/control_protocol.h"
#include "fabric/text.h"

namespace ibsm::daemon::detail {

// Raised inside the handler and turned into an error response at its boundary.
struct Failure : std::runtime_error {
  Failure(ErrorCode c, const std::string& m) : std::runtime_error(m), code(c) {}
  ErrorCode code;
};

using fabric::printable;  // untrusted text for an error message (fabric/text.h)
// "2024-01-31T12:00:00.123Z" (UTC) and milliseconds since the epoch.
std::string isoTime(std::chrono::system_clock::time_point t);
int64_t unixMs(std::chrono::system_clock::time_point t);

// A LID from a JSON number or a decimal string; nullopt when the value is not LID-shaped; throws Failure when
// it is but is out of range.
std::optional<fabric::Lid> lidValue(const Json& v);
// A request's node name for an error message: 'leaf-0', 12, ...
std::string describeName(const Json& v);
// The NodeDescription, or the GUID when it is empty.
std::string nodeLabel(const fabric::Node& n);
// Endport (or node) as JSON: what every listing uses to name a node.
Json nodeRef(const fabric::Topology& topo, const routing::LidAssignment& lids, fabric::NodeIndex n,
             std::optional<fabric::PortNum> port = {});
// The endport owning a LID, or null.
Json lidOwnerRef(const fabric::Topology& topo, const routing::LidAssignment& lids, fabric::Lid lid);

}  // namespace ibsm::daemon::detail
