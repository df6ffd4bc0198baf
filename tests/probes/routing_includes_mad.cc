// Probe (tests/probes/CMakeLists.txt): routing/ may not use mad/: this must fail to compile with
// ibsm_routing's include paths.
#include "mad/smp.h"
#include "routing/engine.h"
