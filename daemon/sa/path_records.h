// PathRecord and MultiPathRecord (IBA 15.2.5.16, 15.2.5.20): paths traced along the snapshot's LFTs, with
// the MTU, rate and packet life time selectors applied.
#pragma once

#include "daemon/sa/sa_records.h"

namespace ibsm::daemon::sa {

Answer pathRecords(const Query& q, const SaOptions& options);
Answer multiPathRecords(const Query& q, const SaOptions& options);

}  // namespace ibsm::daemon::sa
