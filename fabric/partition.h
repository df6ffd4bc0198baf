// Partitions (IBA 10.9): which endports are members of which P_Key, full or limited. A Partition is what the
// config says (OpenSM's partitions.conf rules or the YAML `partitions` list, or a run-time change); a
// PartitionMap is those rules resolved against one Topology: per endport, the P_Keys its table must hold.
// Pure: no I/O. The P_Key programmer writes the map into the ports, the SA answers PathRecords and
// MCMemberRecord joins by it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fabric/ids.h"
#include "fabric/result.h"
#include "fabric/topology.h"

namespace ibsm::fabric {

inline constexpr uint16_t kDefaultPartitionKey = 0x7FFF;  // P_Key without the membership bit
inline constexpr uint16_t kFullMemberBit = 0x8000;

// "both" is taken as full, as OpenSM does unless allow_both_pkeys is set.
enum class Membership : uint8_t { kLimited, kFull, kBoth };
std::string_view toString(Membership m);  // "limited", "full", "both"
std::optional<Membership> parseMembership(std::string_view s);

struct PartitionMember {
  enum class Kind : uint8_t {
    kPortGuid,     // one endport (a CA port GUID or a switch's port GUID)
    kAll,          // every endport: CA ports and switch port 0
    kAllCas,       // every CA port
    kAllSwitches,  // every switch's port 0
    kAllRouters,   // every router port
    kSelf,         // the SM's own port
    kNodeDesc,     // the ports of the nodes whose NodeDescription matches `pattern` ('*' and '?' wildcards)
  };
  Kind kind = Kind::kPortGuid;
  Guid guid;            // kPortGuid
  std::string pattern;  // kNodeDesc
  Membership membership = Membership::kLimited;
  bool operator==(const PartitionMember&) const = default;
};
// "ALL", "0x0002c903000b2241", "node:host-1*" (without the membership).
std::string toString(const PartitionMember& m);
// "ALL=full", "node:host-*=limited": the member spec of partitions.conf and of the YAML config. The
// membership is `defaultMembership` when not given.
Result<PartitionMember> parsePartitionMember(std::string_view text, Membership defaultMembership);

// The IPoIB broadcast group of a partition (RFC 4391), with OpenSM's defaults.
struct IpoibGroup {
  uint8_t mtu = 4;            // 2048
  uint8_t rate = 3;           // 10 Gb/s
  std::optional<uint8_t> sl;  // none: the SM's default SL
  uint8_t scope = 2;          // link local
  uint32_t qkey = 0x0B;
  bool operator==(const IpoibGroup&) const = default;
};

struct Partition {
  std::string name;
  uint16_t pkey = 0;  // 15 bits, never 0
  std::optional<IpoibGroup> ipoib;
  std::vector<PartitionMember> members;
  std::string origin;  // where it was defined: "partitions.conf:12", "ibsm.yaml:30:5", "ibsmctl"
  bool operator==(const Partition&) const = default;
};

// The default partition when nothing names P_Key 0x7FFF: every endport a full member, with IPoIB.
Partition defaultPartition();

// One endport's P_Keys: each with the full-member bit as its table must hold it, in partition order (the
// default partition first).
class PartitionMap {
 public:
  // Resolves `partitions` against `topo`. The default partition (0x7FFF) is added first when no entry names
  // it, and the SM's own port is always a full member of it. Several entries of one P_Key are merged (a port
  // listed twice gets the stronger membership). Ports that match nothing have no keys.
  static PartitionMap resolve(const Topology& topo, std::span<const Partition> partitions);

  // The keys an endport must hold: a CA port (node, port) or a switch's port 0.
  std::span<const uint16_t> keys(NodeIndex node, PortNum port) const;
  bool empty() const { return offsets_.empty(); }
  // The P_Key a path from `src` to `dst` uses: the first of src's keys that dst also holds with either end a
  // full member (as src holds it), nullopt when they share no partition. With `wanted`, only that P_Key.
  std::optional<uint16_t> commonKey(NodeIndex srcNode, PortNum srcPort, NodeIndex dstNode, PortNum dstPort,
                                    std::optional<uint16_t> wanted = std::nullopt) const;
  // The endport's key of partition `pkey` (with its membership bit), nullopt when not a member.
  std::optional<uint16_t> keyOf(NodeIndex node, PortNum port, uint16_t pkey) const;
  // Every P_Key used, in partition order, with its IPoIB group (if any).
  struct Entry {
    uint16_t pkey;
    std::string name;
    std::optional<IpoibGroup> ipoib;
  };
  const std::vector<Entry>& partitions() const { return entries_; }

 private:
  // keys_[offsets_[node] + port]: per node (numPorts + 1) slots.
  std::vector<size_t> offsets_;
  std::vector<std::vector<uint16_t>> keys_;
  std::vector<Entry> entries_;
};

// Checks a set of partitions before it is used: P_Keys in range and unique per name (one P_Key named twice
// with different names is refused), port GUIDs present in `topo` (when given), and no endport given more
// keys than its table holds (NodeInfo.PartitionCap) or than the switch port facing it can enforce
// (SwitchInfo.PartitionEnforcementCap). The first problem found, as a sentence naming the partition and where
// it was defined.
std::optional<std::string> checkPartitions(std::span<const Partition> partitions, const Topology* topo);

// Wildcard match of a NodeDescription: '*' any run, '?' any one character.
bool matchPattern(std::string_view pattern, std::string_view text);

}  // namespace ibsm::fabric
