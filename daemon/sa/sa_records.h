// The SA's read-only record builders (IBA 15.2.5): one function per attribute, each answering a Query from
// the snapshot alone (no server state), and the endport look-ups they, the PathRecord builders and the server
// share.
#pragma once

#include <optional>
#include <vector>

#include "daemon/sa/sa_server.h"

namespace ibsm::daemon::sa {

using Query = SaServer::Query;
using Answer = SaServer::Answer;

struct Endport {
  fabric::NodeIndex node;
  fabric::PortNum port;
};

// Endports of a snapshot: switch port 0 and every CA port that has a LID.
std::vector<Endport> endports(const SubnetSnapshot& s);
// The port's GUID (port 0's for a switch), the node GUID when the port has none.
fabric::Guid portGuidOf(const fabric::Node& n, fabric::PortNum p);
std::optional<Endport> endportByLid(const SubnetSnapshot& s, uint16_t lid);
// Only a GID of this subnet's prefix naming a port that has a LID.
std::optional<Endport> endportByGid(const SubnetSnapshot& s, const mad::Gid& gid, uint64_t prefix);

// An answer with only a MAD status.
Answer fail(uint16_t status);

Answer classPortInfo(const SaOptions& options);
Answer nodeRecords(const Query& q);
Answer portInfoRecords(const Query& q, uint64_t gidPrefix);
Answer linkRecords(const Query& q);
Answer switchInfoRecords(const Query& q);
Answer lftRecords(const Query& q, size_t maxRecords);
Answer guidInfoRecords(const Query& q);
Answer smInfoRecords(const Query& q, const SaServer::SmInfoFn& smInfo);
Answer pkeyTableRecords(const Query& q, uint64_t saKey, size_t maxRecords);

}  // namespace ibsm::daemon::sa
