// ibsm-bench-saclient: one SA client process that keeps its port open and sends one query per stdin line,
// so bench/sa_flood_bench can measure the SA instead of process start-up (one saquery per query costs more
// than the answer). Run under umad2sim at a host. Lines in:
//   NR <lid>            NodeRecord Get by LID
//   PR <slid> <dlid>    PathRecord Get by SLID and DLID
//   PIR <lid> <port>    PortInfoRecord Get by EndportLID and PortNum
// Out, per query: saquery-style "name....value" lines, then "--end--" (or "failed: <reason>" and "--end--").
#include <arpa/inet.h>
#include <infiniband/mad.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>

namespace {

void put(const char* name, const std::string& value) {
  std::printf("%s....%s\n", name, value.c_str());
}
std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%016llx", static_cast<unsigned long long>(v));
  return b;
}
std::string gid(const uint8_t* g) {
  char b[INET6_ADDRSTRLEN];
  return inet_ntop(AF_INET6, g, b, sizeof b) ? b : "?";
}

// One SA Get; the record is copied to rec. False (and errno) when no answer or a MAD status came back.
bool get(struct ibmad_port* port, ib_portid_t* sa, unsigned attr, uint64_t mask, uint8_t* rec) {
  ib_sa_call_t call{};
  call.attrid = attr;
  call.method = IB_MAD_METHOD_GET;
  call.mask = mask;
  return sa_rpc_call(port, rec, sa, &call, 2000) != nullptr;
}

}  // namespace

int main() {
  int classes[] = {IB_SMI_CLASS, IB_SMI_DIRECT_CLASS, IB_SA_CLASS};  // umad2sim needs an agent per class
  struct ibmad_port* port = mad_rpc_open_port(nullptr, 0, classes, 3);
  ib_portid_t sa{};
  if (!port || ib_resolve_smlid_via(&sa, 1000, port) < 0) {
    std::fprintf(stderr, "cannot open the port or resolve the SM LID\n");
    return 1;
  }
  std::setvbuf(stdout, nullptr, _IOFBF, 1 << 16);
  for (std::string line; std::getline(std::cin, line);) {
    std::istringstream in(line);
    std::string kind;
    unsigned a = 0, b = 0;
    in >> kind >> a >> b;
    uint8_t rec[IB_SA_DATA_SIZE] = {};
    bool ok = false;
    if (kind == "NR") {
      mad_set_field(rec, 0, IB_SA_NR_LID_F, a);
      if ((ok = get(port, &sa, IB_SA_ATTR_NODERECORD, 1 << 0, rec))) {
        put("lid", std::to_string(mad_get_field(rec, 0, IB_SA_NR_LID_F)));
        put("node_guid", hex(mad_get_field64(rec, 0, IB_SA_NR_GUID_F)));
        put("port_guid", hex(mad_get_field64(rec, 0, IB_SA_NR_PORT_GUID_F)));
        unsigned type = mad_get_field(rec, 0, IB_SA_NR_TYPE_F);
        put("node_type", type == 1 ? "Channel Adapter" : type == 2 ? "Switch" : std::to_string(type));
        char desc[IB_SMP_DATA_SIZE + 1] = {};
        mad_get_array(rec, 0, IB_SA_NR_NODEDESC_F, desc);
        put("NodeDescription", desc);
      }
    } else if (kind == "PR") {
      mad_set_field(rec, 0, IB_SA_PR_SLID_F, a);
      mad_set_field(rec, 0, IB_SA_PR_DLID_F, b);
      if ((ok = get(port, &sa, IB_SA_ATTR_PATHRECORD, 1 << 4 | 1 << 5, rec))) {
        uint8_t g[16];
        put("slid", std::to_string(mad_get_field(rec, 0, IB_SA_PR_SLID_F)));
        put("dlid", std::to_string(mad_get_field(rec, 0, IB_SA_PR_DLID_F)));
        mad_get_array(rec, 0, IB_SA_PR_SGID_F, g);
        put("sgid", gid(g));
        mad_get_array(rec, 0, IB_SA_PR_DGID_F, g);
        put("dgid", gid(g));
      }
    } else if (kind == "PIR") {
      // PortInfoRecord: EndportLID (16 bits), PortNum (8), Options (8), then the PortInfo.
      rec[0] = static_cast<uint8_t>(a >> 8);
      rec[1] = static_cast<uint8_t>(a);
      rec[2] = static_cast<uint8_t>(b);
      if ((ok = get(port, &sa, IB_SA_ATTR_PORTINFORECORD, 1 << 0 | 1 << 1, rec))) {
        static const char* states[] = {"NoChange", "Down", "Initialize", "Armed", "Active"};
        unsigned state = mad_get_field(rec + 4, 0, IB_PORT_STATE_F);
        put("EndPortLid", std::to_string(rec[0] << 8 | rec[1]));
        put("PortNum", std::to_string(rec[2]));
        put("Lid:", std::to_string(mad_get_field(rec + 4, 0, IB_PORT_LID_F)));
        put("LinkState:", state < 5 ? states[state] : std::to_string(state));
      }
    } else {
      std::printf("failed: unknown query \"%s\"\n--end--\n", line.c_str());
      std::fflush(stdout);
      continue;
    }
    if (!ok) std::printf("failed: %s\n", errno ? std::strerror(errno) : "MAD status");
    std::printf("--end--\n");
    std::fflush(stdout);
    errno = 0;
  }
  mad_rpc_close_port(port);
  return 0;
}
