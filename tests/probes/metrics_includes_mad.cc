// Probe (tests/probes/CMakeLists.txt): the metrics room knows none of the rooms it reports on (the service
// feeds it plain totals): this must fail to compile with ibsm_metrics' include paths.
#include "daemon/metrics/sm_metrics.h"
#include "mad/mad_engine.h"
