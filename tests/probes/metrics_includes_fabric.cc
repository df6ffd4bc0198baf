// Probe (tests/probes/CMakeLists.txt): the metrics room uses the fabric's ids (port counters by node GUID):
// this compiles with ibsm_metrics' include paths.
#include "daemon/metrics/sm_metrics.h"
#include "fabric/ids.h"
