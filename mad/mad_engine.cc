#include "mad/mad_engine.h"

#include <algorithm>

namespace ibsm::mad {

namespace {
constexpr int kTransportTimeoutStatus = 110;  // ETIMEDOUT, as umad reports a send it gave up on
constexpr size_t kMaxDrainPerPoll = 4096;     // bound the work of one poll so timers stay responsive
constexpr size_t kKeptSlots = 4096;           // request slots kept when the engine goes idle
}  // namespace

MadEngine::MadEngine(MadPort& port, const Clock& clock, MadEngineOptions options)
    : port_(port), clock_(clock), options_(options) {
  options_.window = std::max(1u, options_.window);
  options_.minTimeout = std::min(options_.minTimeout, options_.timeout);
}

void MadEngine::Rtt::sample(Duration rtt) {
  backoff = 0;
  if (!sampled) {
    sampled = true;
    srtt = rtt;
    rttvar = rtt / 2;
    return;
  }
  Duration error = srtt > rtt ? srtt - rtt : rtt - srtt;
  rttvar = (3 * rttvar + error) / 4;
  srtt = (7 * srtt + rtt) / 8;
}

unsigned MadEngine::bucketOf(const MadPacket& mad) {
  return mad.bytes[1] == kClassSmiDirected ? mad.bytes[7] & 0x3F : kLidRouted;
}

Duration MadEngine::adaptiveTimeout(unsigned bucket) const {
  return firstWait(bucket, rtt_[std::min(bucket, kLidRouted)].backoff);
}

Duration MadEngine::firstWait(unsigned bucket, unsigned backoff) const {
  const Rtt& r = rtt_[std::min(bucket, kLidRouted)];
  if (!r.sampled) return options_.timeout;
  Duration t = std::clamp(r.srtt + 4 * r.rttvar, options_.minTimeout, options_.timeout);
  for (unsigned i = 0; i < backoff && t < options_.timeout; ++i) t *= 2;
  return std::min(t, options_.timeout);
}

// The adaptive wait doubles with every resend, up to twice the configured timeout: a burst of loss is
// waited out at least as long as with the configured timeout on every attempt, while the first attempts of
// a MAD that was merely lost are resent after a few round-trip times.
Duration MadEngine::attemptTimeout(const Request& r) const {
  if (r.timeout) return *r.timeout;
  const Duration cap = 2 * options_.timeout;
  Duration t = firstWait(r.bucket, r.backoffAtSend);
  for (unsigned i = 1; i < r.attempts && t < cap; ++i) t *= 2;
  return std::min(t, cap);
}

void MadEngine::stampMkey(MadPacket& mad) const {
  const uint8_t* b = mad.bytes.data();
  bool smp = b[1] == kClassSmiLid || b[1] == kClassSmiDirected;
  if (mkey_ != 0 && smp && !(b[3] & kResponseBit) && getMadMkey(mad) == 0) setMadMkey(mad, mkey_);
}

void MadEngine::submit(MadPacket request, MadCompletion done, RequestOptions options) {
  Request r;
  r.packet = std::move(request);
  stampMkey(r.packet);
  r.done = std::move(done);
  r.timeout = options.timeout;
  r.retries = options.retries.value_or(options_.retries);
  r.owner = options.owner;
  r.bucket = static_cast<uint8_t>(bucketOf(r.packet));
  const uint8_t* b = r.packet.bytes.data();
  r.mgmtClass = b[1];
  r.attrId = static_cast<uint16_t>(b[16] << 8 | b[17]);
  (options.urgent ? urgent_ : queue_).push_back(store(std::move(r)));
  fillWindow();
}

uint32_t MadEngine::store(Request request) {
  if (freeSlots_.empty()) {
    requests_.push_back(std::move(request));
    return static_cast<uint32_t>(requests_.size() - 1);
  }
  const uint32_t slot = freeSlots_.back();
  freeSlots_.pop_back();
  requests_[slot] = std::move(request);
  return slot;
}

size_t MadEngine::cancelQueued(const void* owner) {
  std::deque<uint32_t> cancelled;
  for (std::deque<uint32_t>* q : {&urgent_, &queue_}) {
    std::deque<uint32_t> kept;
    for (uint32_t slot : *q) (requests_[slot].owner == owner ? cancelled : kept).push_back(slot);
    *q = std::move(kept);
  }
  for (uint32_t slot : cancelled) {
    MadResult res;
    res.status = MadStatus::kCancelled;
    complete(slot, std::move(res));
  }
  return cancelled.size();
}

fabric::Result<void> MadEngine::sendUnmatched(const MadPacket& mad) {
  MadPacket stamped = mad;
  stampMkey(stamped);
  auto sent = port_.send(stamped, options_.timeout);
  if (sent)
    ++counters_.sent;
  else
    ++counters_.sendErrors;
  return sent;
}

void MadEngine::fillWindow() {
  while ((!urgent_.empty() || !queue_.empty()) && inFlight_.size() < options_.window) {
    std::deque<uint32_t>& q = urgent_.empty() ? queue_ : urgent_;
    const uint32_t slot = q.front();
    q.pop_front();
    transmit(slot);
  }
}

void MadEngine::transmit(uint32_t slot) {
  Request& r = requests_[slot];
  // A fresh TID per attempt, so a late answer to an earlier attempt cannot be mistaken for this one.
  uint32_t tid = nextTid_++;
  if (nextTid_ == 0) nextTid_ = 1;
  setTid(r.packet, tid);
  ++r.attempts;
  if (r.attempts == 1) r.backoffAtSend = rtt_[r.bucket].backoff;
  const Duration timeout = attemptTimeout(r);
  auto sent = port_.send(r.packet, timeout);
  if (!sent) {
    ++counters_.sendErrors;
    MadResult res;
    res.status = MadStatus::kSendError;
    res.attempts = r.attempts;
    complete(slot, std::move(res));
    return;
  }
  ++counters_.sent;
  r.sentAt = clock_.now();
  timers_.push(Timer{r.sentAt + timeout, tid});
  inFlight_.emplace_back(tid, slot);
  maxInFlight_ = std::max(maxInFlight_, inFlight_.size());
}

void MadEngine::complete(uint32_t slot, MadResult result) {
  // The slot is free before the completion runs: a completion may submit again (and reuse it).
  MadCompletion done = std::move(requests_[slot].done);
  requests_[slot].done = nullptr;
  freeSlots_.push_back(slot);
  // A burst (a sweep queues a level of the fabric at once) does not keep its slots once all are free.
  if (freeSlots_.size() == requests_.size() && requests_.size() > kKeptSlots) {
    requests_ = {};
    freeSlots_ = {};
  }
  if (done) done(result);
}

std::vector<std::pair<uint32_t, uint32_t>>::iterator MadEngine::flying(uint32_t tid) {
  return std::find_if(inFlight_.begin(), inFlight_.end(), [tid](const auto& f) { return f.first == tid; });
}

void MadEngine::attemptFailed(uint32_t tid, bool expired) {
  auto it = flying(tid);
  if (it == inFlight_.end()) return;
  const uint32_t slot = it->second;
  *it = inFlight_.back();
  inFlight_.pop_back();
  Request& r = requests_[slot];
  ++counters_.timeouts;
  // A first attempt at the bucket's current wait timed out: back the bucket off (once per wait, not once per
  // MAD of the window that timed out with it).
  Rtt& rtt = rtt_[r.bucket];
  if (expired && r.attempts == 1 && !r.timeout && rtt.sampled && r.backoffAtSend == rtt.backoff &&
      adaptiveTimeout(r.bucket) < options_.timeout)
    ++rtt.backoff;
  if (r.attempts <= r.retries) {
    ++counters_.retries;
    // Retries go ahead of queued requests, urgent ones included: they are older and may gate further
    // discovery.
    urgent_.push_front(slot);
    return;
  }
  ++counters_.failed;
  MadResult res;
  res.status = MadStatus::kTimeout;
  res.attempts = r.attempts;
  complete(slot, std::move(res));
}

void MadEngine::handle(const MadPacket& mad) {
  ++counters_.received;
  auto header = parseHeader(mad);
  if (!header) {
    ++counters_.dropped;
    return;
  }
  uint32_t tid = static_cast<uint32_t>(header->tid);
  if (mad.status == kTransportTimeoutStatus) {
    // The transport handed back a send it gave up on (umad2sim does so at once for a dropped MAD).
    if (flying(tid) != inFlight_.end())
      attemptFailed(tid, false);
    else
      ++counters_.unexpected;
    return;
  }
  if (!header->isResponse()) {
    ++counters_.unsolicited;
    if (unsolicited_) unsolicited_(mad, *header);
    return;
  }
  auto it = flying(tid);
  if (it == inFlight_.end()) {
    ++counters_.unexpected;
    return;
  }
  const uint32_t slot = it->second;
  const Request& r = requests_[slot];
  if (header->mgmtClass != r.mgmtClass || header->attrId != r.attrId || mad.size < kMadSize) {
    ++counters_.dropped;  // right TID, wrong answer: keep waiting for the real one (or the timeout)
    return;
  }
  *it = inFlight_.back();
  inFlight_.pop_back();
  ++counters_.responses;
  if (r.attempts == 1) rtt_[r.bucket].sample(clock_.now() - r.sentAt);  // Karn: first attempts only
  MadResult res;
  res.status = MadStatus::kOk;
  res.response = mad;
  res.header = *header;
  res.attempts = r.attempts;
  complete(slot, std::move(res));
}

void MadEngine::expireTimers() {
  TimePoint now = clock_.now();
  while (!timers_.empty() && timers_.top().deadline <= now) {
    uint32_t tid = timers_.top().tid;
    timers_.pop();
    attemptFailed(tid, true);  // no-op when the request was already answered
  }
  // Drop timers of answered requests from the top so the next deadline is a live one.
  while (!timers_.empty() && flying(timers_.top().tid) == inFlight_.end()) timers_.pop();
}

void MadEngine::poll(Duration maxWait) {
  fillWindow();
  Duration wait = maxWait;
  if (!timers_.empty()) wait = std::clamp(timers_.top().deadline - clock_.now(), Duration::zero(), maxWait);
  if (auto mad = port_.receive(wait)) {
    handle(*mad);
    for (size_t n = 0; n < kMaxDrainPerPoll; ++n) {
      auto more = port_.receive(Duration::zero());
      if (!more) break;
      handle(*more);
    }
  }
  expireTimers();
  fillWindow();
}

void MadEngine::runUntilIdle() {
  while (!idle()) poll(options_.timeout);
}

}  // namespace ibsm::mad
