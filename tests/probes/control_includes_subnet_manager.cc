// Probe (tests/probes/CMakeLists.txt): the control room depends on the snapshot, never on SubnetManager: this
// must fail to compile with ibsm_control's include paths.
#include "daemon/control/control_protocol.h"
#include "daemon/sm/subnet_manager.h"
