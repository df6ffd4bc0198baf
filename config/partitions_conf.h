// OpenSM's partitions.conf, read as it is (opensm(8), PARTITION CONFIGURATION), so that a site moves over
// without rewriting it:
//   Default=0x7fff,ipoib : ALL=full ;
//   storage=0x0002, ipoib, mtu=5, rate=7, sl=1, defmember=full : 0x0002c903000b2241, SELF ;
// Statements end with ';' and may span lines; '#' starts a comment. Member lists take port GUIDs (hex or
// decimal), ALL, ALL_CAS, ALL_SWITCHES, ALL_ROUTERS and SELF, each optionally =full, =limited or =both
// (taken as full, as OpenSM does without allow_both_pkeys), and ibsm's node:PATTERN. As in OpenSM, a file
// without a rule for the default partition means `Default=0x7fff : ALL=limited, SELF=full`, entries of one
// P_Key are merged, and a partition without a P_Key gets an unused one. `mgid=` lines (extra multicast
// groups) are accepted and not created: ibsm creates each IPoIB partition's broadcast group only.
// Every error names file, line and what is wrong: "partitions.conf:4: storage: 'mtu=9' is out of range 1..5".
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "fabric/partition.h"
#include "fabric/result.h"

namespace ibsm::config {

// kOpenSm: a file without a rule for 0x7fff gets OpenSM's implicit Default rule; kNone: no rule is added (the
// state directory's file of run-time partitions).
enum class DefaultRule { kOpenSm, kNone };
fabric::Result<std::vector<fabric::Partition>> parsePartitionsConf(std::string_view text,
                                                                   std::string_view fileName,
                                                                   DefaultRule rule = DefaultRule::kOpenSm);

// The partitions as partitions.conf text that parsePartitionsConf reads back to the same partitions (names
// without ':', ',', '=', ';' or '#'). Used for the state directory's run-time partitions.
std::string formatPartitionsConf(const std::vector<fabric::Partition>& partitions);

}  // namespace ibsm::config
