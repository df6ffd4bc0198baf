// Probe (tests/probes/CMakeLists.txt): routing/ may use fabric/: this compiles with ibsm_routing's include
// paths.
#include "fabric/topology.h"
#include "routing/engine.h"
