// The SA's MCMemberRecord handler (attribute 0x0038), backed by McastGroups: SubnAdmSet joins (or creates),
// SubnAdmDelete leaves, SubnAdmGet/GetTable look up. The member's link limits (MTU, rate) come from the
// current snapshot; a port may join or leave only for itself unless it sets ProxyJoin.
#pragma once

#include "daemon/sa/mcast_groups.h"
#include "daemon/sa/sa_server.h"

namespace ibsm::daemon {

SaServer::Handler makeMcMemberHandler(McastGroups& groups, uint64_t gidPrefix = mad::kDefaultGidPrefix);
// MulticastForwardingTableRecords (attribute 0x0017, Get/GetTable): the MFT blocks the groups' trees give
// each switch (what the MFT programmer writes), one record per switch, position and block with an entry.
SaServer::Handler makeMftRecordHandler(const McastGroups& groups);

}  // namespace ibsm::daemon
