// The multicast groups of the subnet and their members, with the SA's MCMemberRecord rules (IBA 15.4.2 and
// the MCMemberRecord semantics of 15.2.5.17): create (a full member may create a group it names, or let the
// SM pick the MGID), join (masked fields must agree with the group; MTU and rate selectors are checked
// against it), leave (JoinState bits cleared; a member with none left goes; a group with no member left is
// deleted and its MLID freed, except the groups the SM itself made, e.g. IPoIB's broadcast group) and
// lookup. No I/O: the SA server feeds it requests, the MFT programmer reads routes() from it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "fabric/partition.h"
#include "fabric/topology.h"
#include "mad/mcmember.h"
#include "routing/multicast.h"

namespace ibsm::daemon {

// An SA answer: a MAD status (0 = ok, else the SA's class-specific code, e.g. 0x0200 ERR_REQ_INVALID) and
// why.
struct McastError {
  uint16_t status;
  std::string why;
};

// What the SA knows about the port a join is for (its link's limits) and about the requester.
struct McastPortLimits {
  uint8_t mtuCap = 5;   // largest MTU enum the member's link carries
  uint8_t rateCap = 0;  // largest rate enum, 0 = unknown (not checked)
};

class McastGroups {
 public:
  McastGroups(uint64_t gidPrefix = 0xfe80000000000000ULL) : gidPrefix_(gidPrefix) {}

  // IPoIB's IPv4 broadcast group of a partition (RFC 4391): MGID ff1<scope>:401b:<pkey>::ffff:ffff with the
  // full-member bit in the P_Key, Q_Key, MTU, rate and SL as the partition says (default Q_Key 0x0B, MTU
  // 2048, rate 10 Gb/s, SL 0), kept while it has no members. Idempotent.
  void createBroadcastGroup(uint16_t pkey = 0xFFFF, const fabric::IpoibGroup& params = {});
  // The broadcast groups the partitions ask for: missing ones are created, those of partitions that went
  // are deleted with their members, and a group whose parameters changed is made anew.
  struct BroadcastGroup {
    uint16_t pkey;
    fabric::IpoibGroup params;
  };
  void setBroadcastGroups(const std::vector<BroadcastGroup>& groups);
  // The group's record (PortGID and JoinState unused), null when there is no such group.
  const mad::McMemberRecord* find(const mad::Gid& mgid) const;
  // SubnAdmSet(MCMemberRecord). The record answered, or why not.
  // `proxy`: the request came from another port than the member's (a proxy join).
  std::variant<mad::McMemberRecord, McastError> join(const mad::McMemberRecord& req, uint64_t mask,
                                                     const McastPortLimits& port, bool proxy = false);
  // Whether port's membership in the group was made by a proxy join (another port may then remove it).
  bool joinedByProxy(const mad::Gid& mgid, const mad::Gid& port) const;
  // SubnAdmDelete(MCMemberRecord).
  std::variant<mad::McMemberRecord, McastError> leave(const mad::McMemberRecord& req, uint64_t mask);
  // SubnAdmGet/GetTable: one record per member when the mask selects PortGID, else one per group (PortGID 0,
  // JoinState 0); only records whose masked fields equal the request's.
  std::vector<mad::McMemberRecord> query(const mad::McMemberRecord& req, uint64_t mask) const;
  // Members whose port is no longer in the topology leave every group; returns how many memberships went.
  size_t dropMissingPorts(const fabric::Topology& topo);
  // Each group's MLID and members resolved to topology ports (members not in the topology are left out).
  std::vector<routing::McastGroupRoute> routes(const fabric::Topology& topo) const;

  size_t size() const { return groups_.size(); }
  // Bumped on every change of groups or members; the SM re-programs the MFTs when it moves.
  uint64_t version() const { return version_; }

 private:
  struct Group {
    mad::McMemberRecord rec;              // group fields; PortGID and JoinState unused
    std::map<mad::Gid, uint8_t> members;  // port GID -> JoinState bits
    std::set<mad::Gid> proxied;           // members joined by another port
    bool permanent = false;
  };
  std::optional<uint16_t> freeMlid() const;
  mad::McMemberRecord memberRecord(const Group& g, const mad::Gid& port, uint8_t joinState) const;

  uint64_t gidPrefix_;
  std::map<mad::Gid, Group> groups_;  // by MGID
  uint64_t version_ = 0;
  uint64_t nextMgid_ = 1;
};

}  // namespace ibsm::daemon
