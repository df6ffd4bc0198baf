// Probe (tests/probes/CMakeLists.txt): the control room reads the snapshot: this compiles with ibsm_control's
// include paths.
#include "daemon/control/control_protocol.h"
#include "daemon/state/subnet_snapshot.h"
