// Probe (tests/probes/CMakeLists.txt): the SA depends on the snapshot, never on SubnetManager: this must fail
// to compile with ibsm_sa's include paths.
#include "daemon/sa/sa_server.h"
#include "daemon/sm/subnet_manager.h"
