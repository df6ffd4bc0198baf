#include "mad/umad_port.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <infiniband/umad.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "mad/mad_packet.h"
#include "mad/sa.h"

namespace ibsm::mad {

namespace {
constexpr int kRecvPollMs = 20;  // how often the receive thread looks at the stop flag

std::string umadError(const char* what, int rc) {
  return std::string(what) + ": " + std::strerror(rc < 0 ? -rc : errno);
}

// Finds (ca, port) for a port GUID, or the first port whose physical link is up (then the first port at all).
fabric::Result<std::pair<std::string, int>> choosePort(const std::optional<fabric::Guid>& guid) {
  char cas[UMAD_MAX_DEVICES][UMAD_CA_NAME_LEN];
  int n = umad_get_cas_names(cas, UMAD_MAX_DEVICES);
  if (n <= 0) return fabric::makeError("no InfiniBand device found (umad_get_cas_names)");
  std::optional<std::pair<std::string, int>> firstUp, first;
  for (int i = 0; i < n; ++i) {
    umad_ca_t ca;
    if (umad_get_ca(cas[i], &ca) < 0) continue;
    for (int p = 0; p <= ca.numports; ++p) {
      umad_port_t* port = ca.ports[p];
      if (!port) continue;
      std::pair<std::string, int> id{cas[i], port->portnum};
      if (guid && be64toh(port->port_guid) == guid->value) {
        umad_release_ca(&ca);
        return id;
      }
      if (!first) first = id;
      if (!firstUp && port->phys_state == 5) firstUp = id;
    }
    umad_release_ca(&ca);
  }
  if (guid) return fabric::makeError("no local port has GUID " + fabric::toString(*guid));
  if (firstUp) return *firstUp;
  if (first) return *first;
  return fabric::makeError("no InfiniBand port found");
}
}  // namespace

fabric::Result<std::unique_ptr<UmadPort>> UmadPort::open(const UmadPortOptions& options) {
  if (umad_init() < 0) return fabric::makeError("umad_init failed");
  auto where = choosePort(options.portGuid);
  if (!where) return where.error();
  std::unique_ptr<UmadPort> p(new UmadPort());
  p->caName_ = where->first;
  p->portNum_ = where->second;
  p->fd_ = umad_open_port(p->caName_.c_str(), p->portNum_);
  if (p->fd_ < 0)
    return fabric::makeError(
        umadError(("umad_open_port " + p->caName_ + ":" + std::to_string(p->portNum_)).c_str(), p->fd_));
  // Every method of these classes, so requests (SMInfo, SA queries) and traps are delivered to us. umad2sim
  // crashes on a MAD for an unregistered class, so all three are registered even when SA is not used yet.
  long allMethods[4];
  std::memset(allMethods, 0xff, sizeof allMethods);
  p->agentDirected_ = umad_register(p->fd_, kClassSmiDirected, 1, 0, allMethods);
  p->agentLid_ = umad_register(p->fd_, kClassSmiLid, 1, 0, allMethods);
  if (p->agentDirected_ < 0 || p->agentLid_ < 0)
    return fabric::makeError("umad_register of the SMI classes failed");
  if (options.registerSa) {
    p->agentSa_ = umad_register(p->fd_, kClassSubnAdm, 2, 0, allMethods);
    if (p->agentSa_ < 0) return fabric::makeError("umad_register of the SA class failed");
  }
  if (options.registerPerf) {
    // Counter sweeps: responses to our PerfMgt Gets come back to this agent.
    p->agentPerf_ = umad_register(p->fd_, kClassPerf, 1, 0, nullptr);
    if (p->agentPerf_ < 0) return fabric::makeError("umad_register of the PerfMgt class failed");
  }
  if (options.becomeSm) {
    char path[256];
    if (umad_get_issm_path(p->caName_.c_str(), p->portNum_, path, sizeof path) < 0)
      return fabric::makeError("cannot find the issm device of " + p->caName_);
    p->issmFd_ = ::open(path, O_RDWR);
    if (p->issmFd_ < 0)
      return fabric::makeError(std::string("cannot open ") + path + ": " + std::strerror(errno) +
                               " (another SM running?)");
  }
  p->eventFd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (p->eventFd_ < 0) return fabric::makeError(std::string("eventfd: ") + std::strerror(errno));
  p->thread_ = std::thread([raw = p.get()] { raw->receiveLoop(); });
  return p;
}

UmadPort::~UmadPort() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) umad_close_port(fd_);
  if (issmFd_ >= 0) ::close(issmFd_);
  if (eventFd_ >= 0) ::close(eventFd_);
}

void UmadPort::receiveLoop() {
  std::vector<uint8_t> buf(umad_size() + kMadSize);
  while (!stop_) {
    int len = kMadSize;
    int rc = umad_recv(fd_, buf.data(), &len, kRecvPollMs);
    if (rc < 0) continue;  // timeout, or a MAD too large for the buffer (dropped)
    MadPacket m;
    m.size = static_cast<size_t>(std::clamp(len, 0, static_cast<int>(kMadSize)));
    std::memcpy(m.bytes.data(), umad_get_mad(buf.data()), m.size);
    m.status = umad_status(buf.data());
    const ib_mad_addr_t* a = umad_get_mad_addr(buf.data());
    m.addr = MadAddress{ntohs(a->lid), ntohl(a->qpn), ntohl(a->qkey), a->sl, a->pkey_index};
    {
      // The eventfd is raised under the lock that receive() clears it under: raised after the main thread
      // took the last MAD and cleared it, it would stay readable with nothing queued, and the event loop
      // would spin.
      std::lock_guard lock(mutex_);
      rx_.push_back(m);
      uint64_t one = 1;
      [[maybe_unused]] auto w = ::write(eventFd_, &one, sizeof one);
    }
    cv_.notify_one();
  }
}

fabric::Result<void> UmadPort::send(const MadPacket& mad, Duration timeout) {
  int agent = -1;
  uint8_t mgmtClass = mad.bytes[1];
  if (mgmtClass == kClassSmiDirected)
    agent = agentDirected_;
  else if (mgmtClass == kClassSmiLid)
    agent = agentLid_;
  else if (mgmtClass == kClassSubnAdm)
    agent = agentSa_;
  else if (mgmtClass == kClassPerf)
    agent = agentPerf_;
  if (agent < 0)
    return fabric::makeError("no agent registered for management class " + std::to_string(mgmtClass));
  std::lock_guard lock(sendMutex_);
  std::vector<uint8_t>& buf = sendBuf_;
  buf.assign(umad_size() + kMadSize, 0);
  // SA answers may be shorter than a MAD (the last RMPP segment: header + records); everything else is sent
  // whole.
  const size_t length =
      mgmtClass == kClassSubnAdm && mad.size >= kSaHeaderSize && mad.size < kMadSize ? mad.size : kMadSize;
  std::memcpy(umad_get_mad(buf.data()), mad.bytes.data(), length);
  bool smi = mgmtClass == kClassSmiDirected || mgmtClass == kClassSmiLid;
  umad_set_addr(buf.data(), mad.addr.lid, smi ? 0 : static_cast<int>(mad.addr.qpn), mad.addr.sl,
                smi ? 0 : static_cast<int>(mad.addr.qkey ? mad.addr.qkey : kGsiQkey));
  umad_set_pkey(buf.data(), mad.addr.pkeyIndex);
  int ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count());
  // A response we send expects no answer: timeout 0 so the kernel does not wait for one.
  if (mad.bytes[3] & kResponseBit) ms = 0;
  int rc = umad_send(fd_, agent, buf.data(), static_cast<int>(length), ms, 0);
  if (rc < 0) return fabric::makeError(umadError("umad_send", rc));
  return {};
}

std::optional<MadPacket> UmadPort::receive(Duration timeout) {
  // The MADs are taken from the shared queue all at once and handed out from taken_ without the lock; both
  // vectors keep their capacity, so a MAD costs no allocation.
  if (takenHead_ == taken_.size()) {
    taken_.clear();
    takenHead_ = 0;
    std::unique_lock lock(mutex_);
    if (rx_.empty() && timeout > Duration::zero()) cv_.wait_for(lock, timeout, [&] { return !rx_.empty(); });
    if (rx_.empty()) {
      // Nothing queued or taken: the eventfd goes quiet until the thread queues the next MAD.
      uint64_t v;
      [[maybe_unused]] auto r = ::read(eventFd_, &v, sizeof v);
      return std::nullopt;
    }
    std::swap(rx_, taken_);
  }
  return std::move(taken_[takenHead_++]);
}

LocalPortInfo UmadPort::localPort() {
  LocalPortInfo info;
  info.caName = caName_;
  info.portNum = portNum_;
  umad_port_t p;
  if (umad_get_port(caName_.c_str(), portNum_, &p) == 0) {
    info.portGuid = fabric::Guid{be64toh(p.port_guid)};
    info.lid = static_cast<uint16_t>(p.base_lid);
    info.smLid = static_cast<uint16_t>(p.sm_lid);
    info.lmc = static_cast<uint8_t>(p.lmc);
    info.state = static_cast<uint8_t>(p.state);
    umad_release_port(&p);
  }
  return info;
}

}  // namespace ibsm::mad
