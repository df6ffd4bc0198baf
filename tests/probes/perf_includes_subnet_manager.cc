// Probe (tests/probes/CMakeLists.txt): the perf room reads the snapshot and hands decisions out; it never
// reaches into SubnetManager: this must fail to compile with ibsm_perf's include paths.
#include "daemon/perf/health_policy.h"
#include "daemon/sm/subnet_manager.h"
