// Placeholder until the up/down engine lands (being written now); declines every topology so chains fall back.
#include "routing/engine.h"

namespace ibsm::routing {
namespace {
class UpDownEngine final : public Engine {
 public:
  std::string_view name() const override { return "updn"; }
  fabric::Result<RoutingTables> compute(const Topology&, const LidAssignment&, const Options&) const override {
    return fabric::makeError("updn: not implemented yet");
  }
};
}  // namespace
std::unique_ptr<Engine> makeUpDownEngine() { return std::make_unique<UpDownEngine>(); }
}  // namespace ibsm::routing
