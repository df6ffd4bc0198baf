// FakeFabric: an in-memory emulation of the subnet management agents (SMAs) of a whole fabric, built from a
// fabric::Topology, so Discoverer, Programmer, ArProgrammer and trap handling can be tested without ibsim.
// Install it as a FakeMadPort's responder (attach()); every SMP the SM sends is answered, lost or dropped the
// way ibsim 0.10 does it (docs: /work/shared/reference/ibsim.md):
//  - directed route walks InitialPath from the SM's port; a hop through a CA, an unlinked port or a port
//  whose
//    link is not LinkUp loses the SMP (no answer: the SM sees a timeout);
//  - LID-routed SMPs follow the LFTs the SM programmed (LinearFDBTop, 0xFF entries, ports past NumPorts and
//    non-ACTIVE ports on the way lose them; at most 16 hops); the answer must find its way back by LID too;
//  - NodeInfo, NodeDescription, PortInfo, SwitchInfo, LinearForwardingTable are implemented with ibsim's
//  rules
//    (PortInfo Set: LID/LMC/MasterSMLID kept and written even when the state change is refused; a state is
//    refused with status 0x1C when it is the current one, INIT->ACTIVE, ACTIVE before both ends are ARMED,
//    above Down on switch port 0 or on a port without link; a PortInfo Set reaching a CA through another port
//    than the target one is refused with 0x1C). Other attributes come back at once with transport status 110
//    (umad2sim's answer for MADs no SMA handles);
//  - P_KeyTable (Get/Set) per port with ibsim's sizes (CA 64 entries, switch port 0 8, switch ports 64,
//  unless
//    the topology gives PartitionCap / PartitionEnforcementCap) and its boot content: 0xFFFF in entry 0;
//  - MulticastForwardingTable blocks are stored (Get/Set; a block past MulticastFDBCap or a position past
//    NumPorts is refused with 0x1C); multicast packets themselves are never forwarded, as in ibsim;
//  - the vendor adaptive-routing attributes (AdaptiveRoutingInfo, ARGroupTable, ARLinearForwardingTable) are
//    dropped with status 110 unless a switch is given AR (setArMode); then they are stored per switch, a
//    plain LFT Set turns AR off (no_fallback = 0), and single blocks can be made to fail with 0x1C.
// Link changes (linkDown/linkUp) set SwitchInfo.PortStateChange and queue Trap 128 from port 0 of each switch
// end that has a LID and an SM LID; the trap is LID-routed to that SM LID (lost if it cannot get there) and
// delivered as an unsolicited SubnTrap MAD into the attached port.
//
// M_Key (IBA 14.2.4) only with FakeFabricOptions::enforceMkey: then a PortInfo Set of a management port (CA
// port, switch port 0) keeps M_Key, MKeyProtectBits and MKeyLeasePeriod, and every SMP is checked against the
// M_Key of the port it enters (a switch's: port 0's): a wrong key fails Sets at any protect level and Gets at
// levels 2 and 3 (level 1 passes Gets with the M_Key read as 0); a failed SMP is discarded without an answer,
// counted in MKeyViolations, and Trap 256 (Bad M_Key) goes to the port's SM LID. The lease timer is not
// emulated (there is no clock): protect bits never fall back. Without enforceMkey the fields are dropped on a
// Set and never checked, as in ibsim 0.10.
//
// Not emulated: P_Key enforcement, SL2VL/VLArb, multicast forwarding, LMC-based LID ranges of switch port 0
// beyond base LID + 2^LMC, routers. Deterministic: the drop rate uses its own seeded generator.
#pragma once

#include <array>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "fabric/topology.h"
#include "mad/ar.h"
#include "mad/fake_mad_port.h"
#include "mad/mad_packet.h"
#include "mad/smp.h"

namespace ibsm::mad {

struct FakeFabricOptions {
  // Start as ibsim does at boot: linked ports INIT/LinkUp, unlinked ports Down/Polling, no LIDs, no SM LID,
  // LinearFDBTop 0, every LFT entry 0xFF. false: port states and LIDs come from the topology's PortAttrs.
  bool boot = true;
  uint16_t linearFdbCap = 0xC000;  // for switches whose SwitchAttrs do not say
  // Where the SM's port is; default: the topology's smNode()/smPort(), else the first linked port of the
  // first CA, else port 0 of the first switch.
  std::optional<std::pair<fabric::NodeIndex, fabric::PortNum>> smPort;
  bool enforceMkey = false;  // M_Key as IBA specifies it (see above); false: as ibsim, which ignores it
  // A PortInfo Set of a switch external port keeps PartitionEnforcementInbound/Outbound, as real switches do
  // (ibsim drops them). The enforcement itself is not emulated.
  bool keepPartitionEnforcement = false;
  // Switches report SwitchInfo OptimizedSLtoVLMappingProgramming and take the SLtoVLMappingTable modifier
  // bits "all input ports" (17) and "all output ports" (16), as IBA 1.2.1 switches may (ibsim 0.10 does not).
  bool optimizedSlToVl = false;
  // Every port reports PortInfo CapabilityMask.IsPKeyNVRAM: its P_Key table may hold keys from before its
  // reset (ibsim's ports do not set it).
  bool pkeyNvram = false;
};

// How a switch treats the vendor AR attributes.
enum class FakeArMode : uint8_t {
  kDrop,         // no AR support: answered at once with transport status 110 (ibsim's behaviour; default)
  kSilent,       // never answered (a firmware that ignores unknown vendor attributes): the SM times out
  kImplemented,  // AR attributes work
};

// AdaptiveRoutingInfo of an AR switch at boot (only the capability part matters).
struct FakeArCaps {
  uint16_t groupCap = 2048;
  bool arnSupported = false, frnSupported = false;
  bool noFallback = false;  // 1: a plain LFT Set is refused while AR is on instead of turning AR off
};

class FakeFabric {
 public:
  using NodeIndex = fabric::NodeIndex;
  using PortNum = fabric::PortNum;

  explicit FakeFabric(fabric::TopologyPtr topology, FakeFabricOptions options = {});
  FakeFabric(const FakeFabric&) = delete;
  FakeFabric& operator=(const FakeFabric&) = delete;

  // The SMA side of one SMP sent by the SM: no packet when it is lost, the request with status 110 when it is
  // dropped, else the response.
  std::vector<MadPacket> handle(const MadPacket& request);
  // Makes handle() port's responder, gives port the SM port's LocalPortInfo (kept up to date), and delivers
  // traps into it from now on (queued traps first).
  void attach(FakeMadPort& port);
  LocalPortInfo localPort() const;
  const fabric::Topology& topology() const { return *topo_; }
  NodeIndex smNode() const { return smNode_; }
  PortNum smPort() const { return PortNum{smPort_}; }

  // --- Controls for tests.
  // Takes a topology link down / brings it back (both ends); fails when the port has no link in the topology
  // or the link is already in that state.
  fabric::Result<void> linkDown(NodeIndex node, PortNum port);
  fabric::Result<void> linkUp(NodeIndex node, PortNum port);
  // Loses this fraction (0..1) of the SMPs the SM sends, chosen by a generator seeded with seed.
  void setDropRate(double rate, uint64_t seed = 1);
  // The node answers NodeInfo with an undecodable block (node type 0, NumPorts 0).
  void setGarbageNodeInfo(NodeIndex node, bool garbage = true);
  // SMPs of attribute attrId that reach the node through port `in` are lost (no answer), every time.
  void loseEntering(NodeIndex node, PortNum in, uint16_t attrId, bool lose = true);
  void setArMode(NodeIndex sw, FakeArMode mode, FakeArCaps caps = {});
  // Sets of this block of ARGroupTable or ARLinearForwardingTable (attrId) on sw fail with status 0x1C.
  void rejectArBlock(NodeIndex sw, uint16_t attrId, uint32_t block, bool reject = true);
  // Gives the management port of (node, port) an M_Key, as another SM would have (enforceMkey).
  void setPortMkey(NodeIndex node, PortNum port, const MkeyInfo& mkey);
  // Replaces a port's P_Key table (entries past the given ones become 0, unused).
  void setPkeys(NodeIndex node, PortNum port, const std::vector<uint16_t>& entries);
  // Traps produced while no port was attached (each a SubnTrap(Notice) MAD), oldest first.
  std::vector<MadPacket> takeTraps();

  // --- What happened.
  // SMPs the SM sent, by attribute (lost ones included) and Sets among them.
  uint64_t received(uint16_t attrId) const;
  uint64_t receivedSets(uint16_t attrId) const;
  uint64_t receivedTotal() const { return receivedTotal_; }
  uint64_t lost() const { return lost_; }  // no answer at all (drop rate, broken path, silent)
  uint64_t droppedByRate() const { return droppedByRate_; }
  uint64_t trapsSent() const { return trapsSent_; }
  uint64_t trapsLost() const { return trapsLost_; }
  uint64_t mkeyViolations() const { return mkeyViolations_; }  // SMPs discarded for a wrong M_Key
  uint64_t clientReregistrations() const {
    return reregistrations_;
  }  // CA PortInfo Sets with ClientReregister
  // Every SMP that reached an SMA, in order, with the status it was answered with.
  struct SmpRecord {
    NodeIndex node;
    uint16_t attrId;
    uint8_t method;
    uint32_t attrMod;
    uint16_t status;
  };
  const std::vector<SmpRecord>& log() const { return log_; }
  void clearLog() { log_.clear(); }

  // --- State the SMAs hold.
  fabric::PortAttrs portAttrs(NodeIndex node, PortNum port) const;
  MkeyInfo portMkey(NodeIndex node, PortNum port) const;  // of the management port (switch: port 0)
  fabric::SwitchAttrs switchAttrs(NodeIndex sw) const;
  uint8_t lftPort(NodeIndex sw, uint16_t lid) const;  // 0xFF past what was written
  std::vector<uint8_t> lft(NodeIndex sw) const;       // LIDs 0..LinearFDBTop
  ArInfo arInfo(NodeIndex sw) const;
  ArPortMask arGroup(NodeIndex sw, uint16_t group) const;
  ArLftEntry arLft(NodeIndex sw, uint16_t lid) const;
  std::vector<uint16_t> pkeys(NodeIndex node, PortNum port) const;  // the whole table
  bool partitionEnforced(NodeIndex sw, PortNum port) const;         // both enforcement bits set
  // SLtoVLMappingTable of (input, output) port of a switch, or of a CA port (in 0): raw 8 bytes, identity
  // (SL i -> VL i for i < 15) where nothing was written. VLArbitrationTable block (1..4) of a port.
  std::array<uint8_t, 8> slToVl(NodeIndex node, unsigned in, unsigned out) const;
  std::array<uint8_t, 64> vlArb(NodeIndex node, unsigned port, unsigned block) const;
  // Ports in the switch's MFT entry for mlid (nothing where no block was written).
  std::vector<unsigned> mftPorts(NodeIndex sw, uint16_t mlid) const;

 private:
  using Raw = std::array<uint8_t, kSmpDataSize>;
  struct NodeState {
    std::vector<Raw> portInfo;  // [port]
    Raw switchInfo{};
    std::vector<uint8_t> lft;  // grows as blocks are written
    bool garbageNodeInfo = false;
    FakeArMode arMode = FakeArMode::kDrop;
    ArInfo ar;
    std::vector<ArPortMask> arGroups;  // grows as blocks are written
    std::vector<ArLftEntry> arLft;     // grows as blocks are written
    std::set<std::pair<uint16_t, uint32_t>> rejected;
    std::map<uint32_t, MftBlock> mft;          // by attribute modifier (position << 28 | block)
    std::vector<std::vector<uint16_t>> pkeys;  // [port]: the P_Key table
    std::map<std::pair<unsigned, unsigned>, std::array<uint8_t, 8>> slToVl;  // (in, out) port
    std::map<std::pair<unsigned, unsigned>, std::array<uint8_t, 64>> vlArb;  // (port, block)
  };
  struct Endpoint {
    NodeIndex node;
    uint8_t port;  // where the SMP entered (0: a switch's own SMA reached from itself)
  };
  struct Answer {
    enum Kind { kLost, kDrop, kReply } kind = kLost;
    uint16_t status = 0;
    Raw data{};
  };

  std::optional<Endpoint> walkDirected(const uint8_t* path, unsigned hops) const;
  std::optional<Endpoint> routeByLid(Endpoint from, uint16_t dlid) const;
  bool linkUpAt(NodeIndex node, unsigned port) const;
  bool activeAt(NodeIndex node, unsigned port) const;
  bool ownsLid(NodeIndex node, unsigned port, uint16_t lid) const;
  uint16_t portLid(NodeIndex node, unsigned port) const;
  Answer dispatch(Endpoint at, uint8_t method, uint16_t attrId, uint32_t attrMod, const uint8_t* data);
  Answer portInfo(Endpoint at, uint8_t method, uint32_t attrMod, const uint8_t* data);
  Answer switchInfo(NodeIndex sw, uint8_t method, const uint8_t* data);
  Answer linearFdb(NodeIndex sw, uint8_t method, uint32_t block, const uint8_t* data);
  Answer multicastFdb(NodeIndex sw, uint8_t method, uint32_t attrMod, const uint8_t* data);
  Answer pkeyTable(Endpoint at, uint8_t method, uint32_t attrMod, const uint8_t* data);
  Answer vlTable(Endpoint at, uint8_t method, uint16_t attrId, uint32_t attrMod, const uint8_t* data);
  uint16_t pkeyTableSize(NodeIndex node, unsigned port) const;
  Answer adaptiveRouting(NodeIndex sw, uint8_t method, uint16_t attrId, uint32_t attrMod,
                         const uint8_t* data);
  bool setPortState(NodeIndex node, unsigned port, uint8_t state);
  void setLinkState(NodeIndex node, unsigned port, uint8_t state, uint8_t physState);
  void portStateChanged(NodeIndex node);
  void sendTrap128(NodeIndex sw);
  unsigned mgmtPort(Endpoint at) const { return topo_->node(at.node).isSwitch() ? 0 : at.port; }
  // The M_Key check of an SMP entering at `at`: false = discard it; hideKey: answer with the M_Key as 0.
  bool mkeyCheck(Endpoint at, const MadHeader& h, uint64_t smpKey, bool& hideKey);
  void sendTrap256(Endpoint at, const MadHeader& h, uint64_t smpKey);
  void deliver(MadPacket trap);
  void refreshLocalPort();
  size_t switchLftCap(NodeIndex sw) const;

  fabric::TopologyPtr topo_;
  FakeFabricOptions options_;
  NodeIndex smNode_ = fabric::kNoNode;
  uint8_t smPort_ = 0;
  std::vector<NodeState> nodes_;
  // (node, entry port, attribute): see loseEntering.
  std::set<std::tuple<NodeIndex, uint8_t, uint16_t>> losing_;
  FakeMadPort* port_ = nullptr;
  std::vector<MadPacket> pendingTraps_;
  double dropRate_ = 0;
  std::mt19937_64 rng_{1};
  std::map<uint16_t, uint64_t> received_, receivedSets_;
  uint64_t receivedTotal_ = 0, reregistrations_ = 0, lost_ = 0, droppedByRate_ = 0, trapsSent_ = 0,
           trapsLost_ = 0;
  uint64_t mkeyViolations_ = 0;
  std::vector<SmpRecord> log_;
};

}  // namespace ibsm::mad
