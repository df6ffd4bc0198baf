// Probe (tests/probes/CMakeLists.txt): the perf room reads the snapshot and publishes the health snapshot:
// this compiles with ibsm_perf's include paths.
#include "daemon/perf/health_policy.h"
#include "daemon/state/health_snapshot.h"
#include "daemon/state/subnet_snapshot.h"
