#include "daemon/program/phase_runner.h"

#include <cassert>
#include <utility>

#include "mad/smp.h"

namespace ibsm::daemon {

std::string SmpAnswer::failure() const {
  return result.ok() ? ": MAD status " + std::to_string(result.header.status) : ": no answer";
}

PhaseRunner::PhaseRunner(mad::MadEngine& engine, const mad::Clock& clock, std::string name,
                         PhaseOptions options)
    : engine_(engine), clock_(clock), options_(options), t0_(clock.now()), sent0_(engine.counters().sent) {
  stats_.name = std::move(name);
}

bool PhaseRunner::accepted(const mad::MadResult& r, bool secondPass, uint16_t attrId) {
  if (!r.ok()) return false;
  if (r.header.status == 0) return true;
  const bool appliedEarlier = (r.attempts > 1 || secondPass) && attrId == mad::kAttrPortInfo;
  return appliedEarlier && r.header.status == 0x1C;
}

void PhaseRunner::submit(mad::MadPacket smp, Done done, mad::RequestOptions request, bool failureIsError) {
  assert(!finished_);
  // Back-pressure: an issuer that submits a whole fabric's worth of SMPs at once (337k LFT blocks at 11,664
  // hosts) would hold every packet and completion in the engine's queue (about 240 MB); it waits here while
  // the engine works the queue down. Completions may thus run inside submit; one that submits again does not
  // wait (no nested polling).
  if (!pumping_ && engine_.queued() >= kMaxQueued) {
    pumping_ = true;
    while (engine_.queued() >= kMaxQueued / 2) engine_.poll(engine_.options().timeout);
    pumping_ = false;
  }
  send(Pending{std::move(smp), std::move(done), request, failureIsError});
}

void PhaseRunner::send(Pending pending) {
  if (auto h = mad::parseHeader(pending.smp)) {
    pending.attrId = h->attrId;
    pending.attrMod = h->attrMod;
  }
  // Only an SMP that may go again keeps a copy of itself.
  mad::MadPacket smp = pending.smp;
  const mad::RequestOptions request = pending.request;
  if (!options_.secondPass || pending.round >= kMaxSmpRounds) pending.smp = mad::MadPacket{};
  uint32_t slot;
  if (freeSlots_.empty()) {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.push_back(std::move(pending));
  } else {
    slot = freeSlots_.back();
    freeSlots_.pop_back();
    slots_[slot] = std::move(pending);
  }
  engine_.submit(
      std::move(smp), [this, slot](const mad::MadResult& r) { answered(slot, r); }, request);
}

void PhaseRunner::answered(uint32_t slot, const mad::MadResult& r) {
  Pending pending = std::move(slots_[slot]);
  freeSlots_.push_back(slot);
  const bool later = pending.round > 1;
  const bool mayGoAgain = options_.secondPass && pending.round < kMaxSmpRounds;
  SmpAnswer answer{r, accepted(r, later, pending.attrId), later, pending.attrId, pending.attrMod};
  if (r.ok() && later) ++recovered_;
  if (!answer.ok && !r.ok() && mayGoAgain) {
    again_.emplace_back(std::move(pending), r);
    return;
  }
  done(pending, answer);
}

void PhaseRunner::done(Pending& pending, const SmpAnswer& answer) {
  if (!answer.ok && pending.failureIsError) ++stats_.errors;
  if (pending.done) pending.done(answer);
}

void PhaseRunner::wait() {
  engine_.runUntilIdle();
}

PhaseStats PhaseRunner::finish() {
  assert(!finished_);
  wait();
  // The SMPs with no answer go again in further rounds (anotherRound); the others fail.
  while (!again_.empty()) {
    const bool answering = recovered_ > 0;
    recovered_ = 0;
    for (auto& [p, last] : std::exchange(again_, {})) {
      if (anotherRound(p.round, answering)) {
        ++stats_.secondPass;
        ++p.round;
        send(std::move(p));
      } else {
        done(p, SmpAnswer{last, false, true, p.attrId, p.attrMod});
      }
    }
    wait();
  }
  finished_ = true;
  stats_.smps = engine_.counters().sent - sent0_;
  stats_.elapsed = clock_.now() - t0_;
  return stats_;
}

PhaseStats runPhase(mad::MadEngine& engine, const mad::Clock& clock, std::string name, PhaseOptions options,
                    const std::function<void(PhaseRunner&)>& issue) {
  PhaseRunner runner(engine, clock, std::move(name), options);
  issue(runner);
  return runner.finish();
}

}  // namespace ibsm::daemon
