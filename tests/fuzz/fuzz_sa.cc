// libFuzzer target: the SA request path. The input is a sequence of chunks of one op byte plus a 256-byte
// MAD. Each MAD goes through the SA decoders of mad/sa.h and mad/mcmember.h (SA header, RMPP header, every
// record decoder on its payload, MultiPathRecord with a fuzzed length) and then to one SaServer (with the
// MCMemberRecord handler of daemon/sa/mcast_sa.h) over a small routed subnet, so state carries from one MAD
// to the next: ServiceRecord and InformInfo registrations, multicast joins, RMPP sessions and their ACKs. The
// op byte also advances the clock (RMPP resends, leases) and turns the MAD into a received trap for
// reportsFor(). Every MAD the server sends must be a class-0x03 MAD (whole, or a last RMPP segment of at
// least the SA header) with a header that parses, and the answer to a request must carry its TID.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "daemon/sa/mcast_groups.h"
#include "daemon/sa/mcast_sa.h"
#include "daemon/sa/sa_server.h"
#include "mad/mcmember.h"
#include "mad/sa.h"
#include "tests/fuzz/fuzz_snapshot.h"

using namespace ibsm;

namespace {

// 2 switches, 4 hosts (one with 2 ports), links of different rates: the ibnetdiscover seed of fuzz_topology.
constexpr const char* kNet = R"(vendid=0x0
devid=0x0
sysimgguid=0x200001
switchguid=0x200001(200001)
Switch	4 "S-0000000000200001"		# "spine desc" base port 0 lid 7 lmc 0
[1]	"H-0000000000100004"[1](100005) 		# "H3" lid 0 4xSDR
[2]	"H-0000000000100007"[2](100009) 		# "H4 desc" lid 0 4xSDR
[3]	"S-0000000000200000"[3]		# "S1" lid 0 4xQDR

vendid=0x0
devid=0x0
sysimgguid=0x200000
switchguid=0x200000(200000)
Switch	4 "S-0000000000200000"		# "S1" base port 0 lid 0 lmc 0
[1]	"H-0000000000100000"[1](100001) 		# "H1" lid 0 4xSDR
[2]	"H-0000000000100002"[1](100003) 		# "H2" lid 0 4xSDR
[3]	"S-0000000000200001"[3]		# "spine desc" lid 7 4xQDR

vendid=0x0
devid=0x0
sysimgguid=0x100007
caguid=0x100007
Ca	2 "H-0000000000100007"		# "H4 desc"
[2](100009) 	"S-0000000000200001"[2]		# lid 0 lmc 0 "spine desc" lid 7 4xSDR

vendid=0x0
devid=0x0
sysimgguid=0x100004
caguid=0x100004
Ca	2 "H-0000000000100004"		# "H3"
[1](100005) 	"S-0000000000200001"[1]		# lid 0 lmc 0 "spine desc" lid 7 4xSDR

vendid=0x0
devid=0x0
sysimgguid=0x100002
caguid=0x100002
Ca	1 "H-0000000000100002"		# "H2"
[1](100003) 	"S-0000000000200000"[2]		# lid 0 lmc 0 "S1" lid 0 4xSDR

vendid=0x0
devid=0x0
sysimgguid=0x100000
caguid=0x100000
Ca	1 "H-0000000000100000"		# "H1"
[1](100001) 	"S-0000000000200000"[1]		# lid 0 lmc 0 "S1" lid 0 4xSDR
)";

// Op byte of a chunk.
constexpr uint8_t kOpRaw = 0x80;     // keep the MAD's class and base version as fuzzed (else forced to SA, 1)
constexpr uint8_t kOpTrap = 0x40;    // also hand the MAD to reportsFor() as a received trap
constexpr uint8_t kOpNoSnap = 0x20;  // the server sees no snapshot (before the first sweep)
constexpr uint8_t kOpAdvance =
    0x18;                         // (op & 0x18) >> 3: advance the clock by 0, 150 ms, 1 s or 1 h, then poll
constexpr uint8_t kOpLid = 0x07;  // requester LID 1..8

void checkSent(const std::vector<mad::MadPacket>& out, const uint64_t* tid) {
  for (const auto& m : out) {
    auto h = mad::parseHeader(m);
    // Whole MADs, except that the last RMPP segment may end after what it carries (at least the SA header).
    if (!h.ok() || m.size < mad::kSaHeaderSize || m.size > mad::kMadSize ||
        h->mgmtClass != mad::kClassSubnAdm)
      __builtin_trap();
    if (tid && (*h).tid != *tid) __builtin_trap();
  }
}

void decoders(const mad::MadPacket& m, size_t len) {
  (void)mad::decodeSaHeader(m);
  (void)mad::decodeRmpp(m);
  const uint8_t* rec = mad::saData(m);
  (void)mad::decodeNodeRecord(rec);
  uint16_t lid = 0;
  (void)mad::decodeSmInfoRecord(rec, &lid);
  (void)mad::decodeMultiPathRecord(rec, len);

  uint8_t buf[mad::kSaDataSize];
  mad::LinkRecord link = mad::decodeLinkRecord(rec);
  mad::encodeLinkRecord(link, buf);
  if (!(mad::decodeLinkRecord(buf) == link)) __builtin_trap();

  mad::PathRecord pr = mad::decodePathRecord(rec);
  std::memset(buf, 0, sizeof buf);
  mad::encodePathRecord(pr, buf);
  mad::PathRecord pr2 = mad::decodePathRecord(buf);
  if (pr2.dgid != pr.dgid || pr2.sgid != pr.sgid || pr2.dlid != pr.dlid || pr2.slid != pr.slid ||
      pr2.serviceId != pr.serviceId || pr2.pkey != pr.pkey || pr2.sl != pr.sl || pr2.mtu != pr.mtu ||
      pr2.rate != pr.rate)
    __builtin_trap();

  mad::ServiceRecord sr = mad::decodeServiceRecord(rec);
  std::memset(buf, 0, sizeof buf);
  mad::encodeServiceRecord(sr, buf);
  mad::ServiceRecord sr2 = mad::decodeServiceRecord(buf);
  if (sr2.id != sr.id || sr2.gid != sr.gid || sr2.pkey != sr.pkey || sr2.lease != sr.lease ||
      sr2.key != sr.key || sr2.name != sr.name || sr2.data != sr.data)
    __builtin_trap();

  mad::InformInfo ii = mad::decodeInformInfo(rec);
  std::memset(buf, 0, sizeof buf);
  mad::encodeInformInfo(ii, buf);
  mad::InformInfo ii2 = mad::decodeInformInfo(buf);
  if (ii2.gid != ii.gid || ii2.lidBegin != ii.lidBegin || ii2.lidEnd != ii.lidEnd ||
      ii2.isGeneric != ii.isGeneric || ii2.subscribe != ii.subscribe || ii2.type != ii.type ||
      ii2.trapNumber != ii.trapNumber || ii2.qpn != ii.qpn)
    __builtin_trap();

  mad::McMemberRecord mc = mad::decodeMcMemberRecord(rec);
  std::memset(buf, 0, sizeof buf);
  mad::encodeMcMemberRecord(mc, buf);
  if (!(mad::decodeMcMemberRecord(buf) == mc)) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto snap = fuzzing::makeSnapshot(kNet, "fuzz-sa-net");
  mad::FakeClock clock;
  bool withSnap = true;
  daemon::McastGroups groups;
  daemon::SaServer sa(
      clock, [&] { return withSnap ? snap : nullptr; },
      [] {
        mad::SmInfo i;
        i.priority = 1;
        i.state = 3;
        return i;
      },
      daemon::SaOptions{.maxRecords = 64});
  sa.setHandler(mad::kSaAttrMcMemberRecord, daemon::makeMcMemberHandler(groups));
  checkSent(sa.reportsForSnapshot(), nullptr);  // records the first snapshot

  constexpr size_t kChunk = 1 + mad::kMadSize;
  for (size_t off = 0; off < size; off += kChunk) {
    const uint8_t op = data[off];
    const size_t n = std::min(size - off - 1, mad::kMadSize);
    mad::MadPacket m;
    std::memcpy(m.bytes.data(), data + off + 1, n);
    m.size = mad::kMadSize;  // short chunks are zero padded (a short MAD is dropped before any decoder)
    if (!(op & kOpRaw)) {
      m.bytes[0] = 1;
      m.bytes[1] = mad::kClassSubnAdm;
    }
    m.addr = mad::MadAddress{static_cast<uint16_t>(1 + (op & kOpLid)), 1, 0x80010000, 0, 0};
    withSnap = !(op & kOpNoSnap);
    decoders(m, n > mad::kSaHeaderSize ? n - mad::kSaHeaderSize : 0);

    uint64_t tid = 0;
    if (auto h = mad::parseHeader(m); h.ok()) tid = h->tid;
    checkSent(sa.handle(m), &tid);
    if (op & kOpTrap)
      if (auto notice = mad::decodeNotice(m); notice.ok()) checkSent(sa.reportsFor(*notice), nullptr);
    static constexpr mad::Duration kAdvance[] = {std::chrono::milliseconds(0), std::chrono::milliseconds(150),
                                                 std::chrono::seconds(1), std::chrono::hours(1)};
    if (unsigned a = (op & kOpAdvance) >> 3; a) {
      clock.advance(kAdvance[a]);
      checkSent(sa.poll(), nullptr);
      checkSent(sa.reportsForSnapshot(), nullptr);
    }
  }
  return 0;
}
