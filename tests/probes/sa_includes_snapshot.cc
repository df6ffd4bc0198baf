// Probe (tests/probes/CMakeLists.txt): the SA reads the snapshot: this compiles with ibsm_sa's include paths.
#include "daemon/sa/sa_server.h"
#include "daemon/state/subnet_snapshot.h"
