// ibsmctl's side of the control socket: connect, send one JSON request line, read one response line, with a
// deadline. Failures are classified so the tool can map them to its exit codes.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

namespace ibsm::ctl {

enum class Failure { kNone, kUnreachable, kPermission, kTimeout, kProtocol };

struct Exchange {
  Failure failure = Failure::kNone;
  std::string message;      // one line, when failure != kNone
  nlohmann::json response;  // the parsed response object
};

// Sends {"id": 1, "command": command, "args": args} to the daemon at socketPath.
Exchange request(const std::string& socketPath, const std::string& command, const nlohmann::json& args,
                 std::chrono::milliseconds timeout);

}  // namespace ibsm::ctl
