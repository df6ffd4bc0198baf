// Placeholder until the fat-tree engine lands (being written now); declines every topology so chains fall back.
#include "routing/engine.h"

namespace ibsm::routing {
namespace {
class FatTreeEngine final : public Engine {
 public:
  std::string_view name() const override { return "ftree"; }
  fabric::Result<RoutingTables> compute(const Topology&, const LidAssignment&, const Options&) const override {
    return fabric::makeError("ftree: not implemented yet");
  }
};
}  // namespace
std::unique_ptr<Engine> makeFatTreeEngine() { return std::make_unique<FatTreeEngine>(); }
}  // namespace ibsm::routing
