// ibsm-test-mcast: a minimal SA client for the multicast integration tests (no tool of infiniband-diags can
// join a group). Run under umad2sim at a host:
//   ibsm-test-mcast join|leave MGID JOINSTATE   -> prints "mlid 0xC000 mtu 4 rate 3" or the MAD status
// MGID as 32 hex digits or "ipoib" (the IPoIB broadcast group of the default partition). Uses libibmad's SA
// RPC (one MAD, no RMPP), sending the MCMemberRecord fields an IPoIB client sends: MGID, PortGID, JoinState,
// Q_Key and P_Key (0xFFFF, or IBSM_TEST_PKEY) for a join; MGID, PortGID and JoinState for a leave.
// IBSM_TEST_SA_LID sends the request to that LID instead of the port's SM LID (to ask a standby).
#include <infiniband/mad.h>
#include <infiniband/umad.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

bool parseGid(const std::string& text, uint8_t* gid) {
  std::string hex;
  for (char c : text)
    if (c != ':') hex += c;
  if (hex.size() != 32) return false;
  for (int i = 0; i < 16; ++i) gid[i] = static_cast<uint8_t>(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: ibsm-test-mcast join|leave MGID|ipoib JOINSTATE\n");
    return 2;
  }
  const bool join = std::strcmp(argv[1], "join") == 0;
  uint8_t mgid[16];
  std::string mgidText = std::strcmp(argv[2], "ipoib") == 0 ? "ff12401bffff000000000000ffffffff" : argv[2];
  if (!parseGid(mgidText, mgid)) {
    std::fprintf(stderr, "bad MGID %s\n", argv[2]);
    return 2;
  }
  int classes[] = {IB_SMI_CLASS, IB_SMI_DIRECT_CLASS,
                   IB_SA_CLASS};  // resolving ourselves takes SMPs; umad2sim needs an agent per class
  struct ibmad_port* port = mad_rpc_open_port(nullptr, 0, classes, 3);
  if (!port) {
    std::fprintf(stderr, "cannot open the port\n");
    return 1;
  }
  ib_portid_t self{};
  ibmad_gid_t gid;
  int portNum = 0;
  ib_portid_t sm{};
  if (ib_resolve_self_via(&self, &portNum, &gid, port) < 0 || ib_resolve_smlid_via(&sm, 1000, port) < 0) {
    std::fprintf(stderr, "cannot resolve the local port or the SM LID\n");
    return 1;
  }
  if (const char* lid = std::getenv("IBSM_TEST_SA_LID"))
    sm.lid = static_cast<int>(std::strtol(lid, nullptr, 0));
  uint8_t rec[IB_SA_DATA_SIZE] = {};
  mad_set_array(rec, 0, IB_SA_MCM_MGID_F, mgid);
  mad_set_array(rec, 0, IB_SA_MCM_PORTGID_F, gid);
  mad_set_field(rec, 0, IB_SA_MCM_JOIN_STATE_F, static_cast<uint32_t>(std::strtoul(argv[3], nullptr, 0)));
  uint64_t mask = 1 << 0 | 1 << 1 | 1 << 16;  // MGID, PortGID, JoinState
  if (join) {
    mad_set_field(rec, 0, IB_SA_MCM_QKEY_F, 0x0B);
    const char* pkey = std::getenv("IBSM_TEST_PKEY");  // another partition's group
    mad_set_field(rec, 0, IB_SA_MCM_PKEY_F,
                  pkey ? static_cast<uint32_t>(std::strtoul(pkey, nullptr, 0)) : 0xFFFF);
    mask |= 1 << 2 | 1 << 7;
  }
  ib_sa_call_t call{};
  call.attrid = 0x38;
  call.method = join ? 0x02 /* Set */ : 0x15 /* Delete */;
  call.mask = mask;
  if (!sa_rpc_call(port, rec, &sm, &call, 2000)) {
    std::printf("failed: %s\n", std::strerror(errno));
    return 1;
  }
  std::printf("mlid 0x%04X mtu %u rate %u joinstate %u\n", mad_get_field(rec, 0, IB_SA_MCM_MLID_F),
              mad_get_field(rec, 0, IB_SA_MCM_MTU_F), mad_get_field(rec, 0, IB_SA_MCM_RATE_F),
              mad_get_field(rec, 0, IB_SA_MCM_JOIN_STATE_F));
  mad_rpc_close_port(port);
  return 0;
}
