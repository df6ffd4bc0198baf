// Transactions over a MadPort: assigns TIDs, keeps at most `window` requests in flight (the rest queue in
// FIFO order, retries and urgent requests first), matches responses by the low 32 bits of the TID (the kernel
// and umad2sim own the upper half), times out and retries with its own timers (umad2sim ignores umad's), and
// hands requests/traps that nobody asked for to an unsolicited handler. With an M_Key set, every SMP request
// it sends (class 0x01/0x81, not a response) whose header M_Key is 0 carries that key (IBA 14.2.4), so no
// caller has to remember it. Single-threaded: call poll() from the event loop; completions run inside poll().
//
// Timeouts adapt to the fabric: per path length (the hop count of a directed-route SMP; LID-routed SMPs and
// GMPs share one bucket) the engine keeps a smoothed round-trip time and its variation (Jacobson/Karels as
// in TCP, RFC 6298) from the MADs answered at their first attempt (Karn's rule: an answer to a resent MAD
// may belong to either attempt), and waits srtt + 4 * rttvar, never less than minTimeout nor more than the
// configured timeout, which is also the wait until a bucket has its first sample. Each resend of a request
// waits twice as long as the attempt before (up to twice the configured timeout), so a burst of loss is
// outlasted rather than met by every retry at once: with the defaults the attempts of a MAD span at least
// as long as 8 attempts of the configured 100 ms did. A first attempt that times out also doubles its
// bucket's wait (RFC 6298 5.5) until the next sample, up to the configured timeout: when the fabric (or a
// starved simulator, or the SM's own loaded host) answers slower than it did, later MADs wait for their
// answer instead of each being resent two or three times (an answer to an earlier attempt is dropped), which
// would only add load where it is short.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <queue>
#include <vector>

#include "mad/mad_port.h"
#include "mad/smp.h"

namespace ibsm::mad {

struct MadEngineOptions {
  unsigned window = 32;
  Duration timeout =
      std::chrono::milliseconds(100);  // config mad.timeout_ms: the first wait; resends up to 2x
  unsigned retries = 7;                // config mad.retries
  Duration minTimeout = std::chrono::milliseconds(10);  // the shortest adaptive wait
};

// Per-request overrides of the engine's timeout and retries, e.g. one short attempt for a capability probe
// that an SMA may silently drop. Unset fields take the engine's options; a timeout given here is used for
// every attempt as it is (no adaptation, no backoff).
struct RequestOptions {
  std::optional<Duration> timeout;
  std::optional<unsigned> retries;
  // Sent before the requests queued without it, in the order submitted (a standby's poll of its master in a
  // sweep; the probes that gate a sweep's discovery).
  bool urgent = false;
  const void* owner = nullptr;  // for cancelQueued
};

struct MadCounters {
  uint64_t sent = 0;         // MADs handed to the port, retries included
  uint64_t received = 0;     // MADs received, of any kind
  uint64_t responses = 0;    // responses matched to a request
  uint64_t timeouts = 0;     // attempts that timed out (or the transport gave up on)
  uint64_t retries = 0;      // attempts resent after a timeout
  uint64_t failed = 0;       // requests that ran out of retries
  uint64_t dropped = 0;      // malformed MADs (short, bad version, response that does not fit its request)
  uint64_t unexpected = 0;   // responses with no request waiting (late or unknown TID)
  uint64_t unsolicited = 0;  // requests and traps passed to the unsolicited handler
  uint64_t sendErrors = 0;
};

enum class MadStatus { kOk, kTimeout, kSendError, kCancelled };

struct MadResult {
  MadStatus status = MadStatus::kTimeout;
  MadPacket response;  // valid when status == kOk
  MadHeader header;    // of the response
  unsigned attempts = 0;
  bool ok() const { return status == MadStatus::kOk; }
};

using MadCompletion = std::function<void(const MadResult&)>;
using UnsolicitedHandler = std::function<void(const MadPacket&, const MadHeader&)>;

class MadEngine {
 public:
  MadEngine(MadPort& port, const Clock& clock, MadEngineOptions options);
  MadEngine(const MadEngine&) = delete;
  MadEngine& operator=(const MadEngine&) = delete;

  // Queues a request; its TID is assigned here. done runs exactly once, from poll().
  void submit(MadPacket request, MadCompletion done, RequestOptions options = {});
  // Completes the queued requests (not sent yet) of `owner` at once as kCancelled; returns how many.
  size_t cancelQueued(const void* owner);
  // Sends a MAD that expects no response (a response we give, a TrapRepress); counted as sent.
  fabric::Result<void> sendUnmatched(const MadPacket& mad);
  void setUnsolicitedHandler(UnsolicitedHandler handler) { unsolicited_ = std::move(handler); }
  // The M_Key put into SMP requests from now on; 0 = none.
  void setSmpMkey(uint64_t mkey) { mkey_ = mkey; }
  uint64_t smpMkey() const { return mkey_; }

  // Waits at most maxWait for MADs (less if a request times out sooner), handles all that arrived, expires
  // timers and refills the window.
  void poll(Duration maxWait);
  // Polls until nothing is queued or in flight.
  void runUntilIdle();
  bool idle() const { return inFlight_.empty() && urgent_.empty() && queue_.empty(); }
  int eventFd() const {
    return port_.eventFd();
  }  // readable while received MADs wait; -1 if the port has none
  size_t inFlight() const { return inFlight_.size(); }
  size_t queued() const { return urgent_.size() + queue_.size(); }
  size_t maxInFlightSeen() const { return maxInFlight_; }
  const MadCounters& counters() const { return counters_; }
  const MadEngineOptions& options() const { return options_; }

  // Round-trip buckets: 0..63 the hop count of a directed-route SMP, kLidRouted everything else.
  static constexpr unsigned kLidRouted = 64;
  static unsigned bucketOf(const MadPacket& mad);
  // The wait of a first attempt in `bucket` now.
  Duration adaptiveTimeout(unsigned bucket) const;

 private:
  // Smoothed round-trip time of one bucket (RFC 6298, 2.2 and 2.3).
  struct Rtt {
    bool sampled = false;
    Duration srtt{}, rttvar{};
    unsigned backoff = 0;  // doublings of the wait since the last sample
    void sample(Duration rtt);
  };
  struct Request {
    MadPacket packet;
    MadCompletion done;
    unsigned attempts = 0;
    std::optional<Duration> timeout;  // the caller's, else adaptive
    unsigned retries = 0;
    uint8_t mgmtClass = 0;
    uint16_t attrId = 0;
    uint8_t bucket = kLidRouted;
    const void* owner = nullptr;
    unsigned backoffAtSend = 0;  // the bucket's backoff when the first attempt was sent
    TimePoint sentAt{};          // of the latest attempt
  };
  struct Timer {
    TimePoint deadline;
    uint32_t tid;
    bool operator>(const Timer& o) const { return deadline > o.deadline; }
  };

  void stampMkey(MadPacket& mad) const;
  void fillWindow();
  uint32_t store(Request request);
  // Frees the slot and runs its completion.
  void complete(uint32_t slot, MadResult result);
  // The in-flight entry of tid; inFlight_.end() if none.
  std::vector<std::pair<uint32_t, uint32_t>>::iterator flying(uint32_t tid);
  void transmit(uint32_t slot);
  void handle(const MadPacket& mad);
  void expireTimers();
  // expired: the attempt's own wait ran out (not the transport giving up on a send).
  void attemptFailed(uint32_t tid, bool expired);
  Duration attemptTimeout(const Request& request) const;
  // The wait of a first attempt in `bucket` with `backoff` doublings.
  Duration firstWait(unsigned bucket, unsigned backoff) const;

  MadPort& port_;
  const Clock& clock_;
  MadEngineOptions options_;
  uint32_t nextTid_ = 1;
  // Requests queued or in flight, by slot; the queues and the in-flight table hold slots, so a request is
  // neither moved nor allocated for on its way (one SMP after another reuses the same few slots). A deque:
  // a burst of queued requests grows it without moving (or holding twice) the ones it has.
  std::deque<Request> requests_;
  std::vector<uint32_t> freeSlots_;
  std::deque<uint32_t> urgent_;  // retries (at the front), then urgent requests: sent before queue_
  std::deque<uint32_t> queue_;
  std::vector<std::pair<uint32_t, uint32_t>> inFlight_;  // (TID, slot); at most the window, searched in turn
  std::priority_queue<Timer, std::vector<Timer>, std::greater<Timer>> timers_;
  UnsolicitedHandler unsolicited_;
  MadCounters counters_;
  size_t maxInFlight_ = 0;
  uint64_t mkey_ = 0;
  std::array<Rtt, kLidRouted + 1> rtt_{};
};

}  // namespace ibsm::mad
