// libFuzzer target: the control-socket request parser (daemon/control/control_protocol.h) and the read-only
// request handler. Each input line is parsed; a request that parses is answered against a small routed subnet
// snapshot (and against no snapshot), and every response must serialise to one line.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "daemon/control/control_protocol.h"
#include "tests/fuzz/fuzz_snapshot.h"

using namespace ibsm;

namespace {

constexpr const char* kNet = R"(Switch 4 "S1" # "leafA"
[1] "H1"[1]
[2] "H2"[1]
[3] "S2"[3]

Switch 4 "S2" # "leafB"
[1] "H3"[1]
[2] "H4"[1]
[3] "S1"[3]

Hca 1 "H1" # "h1 HCA-1"
[1] "S1"[1]

Hca 1 "H2" # "h2 HCA-1"
[1] "S1"[2]

Hca 1 "H3" # "h3 HCA-1"
[1] "S2"[1]

Hca 1 "H4" # "h4 HCA-1"
[1] "S2"[2]
)";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto snap = fuzzing::makeSnapshot(kNet, "fuzz-net");
  static const daemon::SystemWallClock wallClock;
  static daemon::EventLog events(wallClock);
  std::string_view all(reinterpret_cast<const char*>(data), size);
  daemon::ReadHandler handler;
  while (!all.empty()) {
    size_t nl = all.find('\n');
    std::string_view line = all.substr(0, nl);
    all = nl == std::string_view::npos ? std::string_view{} : all.substr(nl + 1);
    auto parsed = daemon::parseRequest(line);
    if (auto* err = std::get_if<daemon::RequestError>(&parsed)) {
      (void)daemon::toLine(daemon::errorResponse(err->id, err->code, err->message));
      continue;
    }
    const auto& req = std::get<daemon::Request>(parsed);
    const daemon::CommandInfo* info = daemon::findCommand(req.command);
    if (!info || info->access != daemon::Access::kRead) continue;
    for (bool withSnap : {true, false}) {
      daemon::ControlView view;
      if (withSnap) view.snapshot = snap;
      view.events = &events;
      std::string out = daemon::toLine(handler.handle(req, view));
      if (out.empty() || out.back() != '\n' || out.find('\n') != out.size() - 1) __builtin_trap();
    }
  }
  return 0;
}
