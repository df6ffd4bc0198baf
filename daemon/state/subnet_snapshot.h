// The state of the subnet that the rooms share: the SM cycle (sm/) publishes a new SubnetSnapshot after every
// sweep; the SA, the control socket and the dumps read the one they hold. Immutable once published.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "fabric/partition.h"
#include "fabric/topology.h"
#include "routing/lid_assignment.h"
#include "routing/routing_tables.h"

namespace ibsm::daemon {

// P_Key tables as the ports hold them, by (node GUID, port number): whole blocks of 32 entries.
struct PkeyTables {
  std::map<std::pair<fabric::Guid, uint8_t>, std::vector<uint16_t>> ports;
  const std::vector<uint16_t>* find(fabric::Guid node, uint8_t port) const {
    auto it = ports.find({node, port});
    return it == ports.end() ? nullptr : &it->second;
  }
};

// Everything a reader needs about the current state of the subnet, immutable once published.
struct SubnetSnapshot {
  fabric::TopologyPtr topology;
  routing::LidAssignment lids;
  routing::RoutingTables tables;
  std::shared_ptr<const PkeyTables> pkeys;  // P_Key tables of the managed ports (null: none read)
  // The partitions resolved against `topology` (null: none resolved, every port in the default partition).
  std::shared_ptr<const fabric::PartitionMap> partitions;
  // The partition rules `partitions` was resolved from (config and run time; `ibsmctl partitions`).
  std::shared_ptr<const std::vector<fabric::Partition>> partitionDefs;
};

// Routes that differ between two snapshots: LFT entries of LIDs 1 and up (LID 0 is not a route), switches
// matched by GUID; every route of `after` when before is null. The event log and `status` both count this.
size_t countRouteChanges(const SubnetSnapshot* before, const SubnetSnapshot& after);

}  // namespace ibsm::daemon
