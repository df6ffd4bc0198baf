// Probe (tests/probes/CMakeLists.txt): the programmers take the discovery result from the shared state: this
// compiles with ibsm_program's include paths.
#include "daemon/program/programmer.h"
#include "daemon/state/discovery_result.h"
