// Probe (tests/probes/CMakeLists.txt): the programmers are driven by the SM cycle and may not use it: this
// must fail to compile with ibsm_program's include paths.
#include "daemon/program/programmer.h"
#include "daemon/sm/discoverer.h"
