// The one way the programmers send SMPs: a named phase submits its SMPs with many in flight through the
// MadEngine, waits for them all and counts SMPs (retries included), errors, second-pass re-sends and elapsed
// time into a PhaseStats. Optionally, Sets that got no answer after all of the engine's retries go once more
// after the phase's other SMPs, and again while such rounds still get answers (anotherRound): a Set lost now
// would otherwise wait for the next sweep.
#pragma once

#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "mad/clock.h"
#include "mad/mad_engine.h"

namespace ibsm::daemon {

// The rounds of the engine's retries an SMP with no answer gets, here and in discovery: a second one after
// the others (MAD loss comes in bursts), more while the last round got answers (loss on every port of a
// large fabric: a far switch's SMPs cross many lossy ports), at most kMaxSmpRounds. A switch that is gone
// answers none: two rounds.
inline constexpr unsigned kMaxSmpRounds = 4;
inline bool anotherRound(unsigned roundsHad, bool lastRoundAnswered) {
  return roundsHad == 1 || (lastRoundAnswered && roundsHad < kMaxSmpRounds);
}

struct PhaseStats {
  std::string name;
  size_t smps = 0;
  size_t errors = 0;
  size_t secondPass = 0;  // re-sends of Sets after no answer (later rounds)
  mad::Duration elapsed{};
};

// The final outcome of one SMP of a phase.
struct SmpAnswer {
  const mad::MadResult& result;
  bool ok = false;          // acknowledged, see PhaseRunner::accepted
  bool secondPass = false;  // the answer is to a later round's re-send
  uint16_t attrId = 0;      // of the request (0 when its header does not parse)
  uint32_t attrMod = 0;
  // ": MAD status N" or ": no answer", for error messages.
  std::string failure() const;
};

struct PhaseOptions {
  // Send the SMPs that got no answer once more after the others, and again while such rounds get answers.
  bool secondPass = false;
};

class PhaseRunner {
 public:
  using Done = std::function<void(const SmpAnswer&)>;
  static constexpr size_t kMaxQueued = 4096;  // SMPs waiting in the engine before submit polls it
  PhaseRunner(mad::MadEngine& engine, const mad::Clock& clock, std::string name, PhaseOptions options = {});
  PhaseRunner(const PhaseRunner&) = delete;
  PhaseRunner& operator=(const PhaseRunner&) = delete;

  const std::string& name() const { return stats_.name; }
  // Sends smp; done runs once with its final outcome (after the second pass, if it goes there). A final
  // failure counts as an error of the phase unless failureIsError is false (a probe, whose silence is an
  // answer). While kMaxQueued SMPs wait in the engine, submit first polls it until half of them are sent, so
  // completions of earlier SMPs may run inside submit.
  void submit(mad::MadPacket smp, Done done, mad::RequestOptions request = {}, bool failureIsError = true);
  // Runs the engine until every SMP submitted so far is answered; the phase may go on with more SMPs.
  void wait();
  // Waits, runs the second pass, and returns the phase's counts.
  PhaseStats finish();

  // An SMP is acknowledged when answered with status 0. A PortInfo Set whose first attempt was applied but
  // whose response was lost is refused on the retry (the port already has that state: status 0x1C, invalid
  // attribute value). Only timeouts are retried, so a 0x1C after an earlier attempt means that attempt took
  // effect; the next sweep reads the port and corrects it should that be wrong.
  static bool accepted(const mad::MadResult& r, bool secondPass, uint16_t attrId);

 private:
  struct Pending {
    mad::MadPacket smp;  // kept while it may go again
    Done done;
    mad::RequestOptions request;
    bool failureIsError;
    unsigned round = 1;
    uint16_t attrId = 0;
    uint32_t attrMod = 0;
  };
  void send(Pending pending);
  void answered(uint32_t slot, const mad::MadResult& r);
  void done(Pending& pending, const SmpAnswer& answer);

  mad::MadEngine& engine_;
  const mad::Clock& clock_;
  PhaseOptions options_;
  PhaseStats stats_;
  mad::TimePoint t0_;
  uint64_t sent0_;
  // The SMPs in the engine, by slot: its completion holds only the slot, which fits in the std::function
  // itself (no allocation per SMP).
  std::vector<Pending> slots_;
  std::vector<uint32_t> freeSlots_;
  std::vector<std::pair<Pending, mad::MadResult>> again_;  // no answer in their last round (its result)
  size_t recovered_ = 0;                                   // answered in a round after their first
  bool finished_ = false;
  bool pumping_ = false;
};

// Runs one named phase: issue submits its SMPs through the runner.
PhaseStats runPhase(mad::MadEngine& engine, const mad::Clock& clock, std::string name, PhaseOptions options,
                    const std::function<void(PhaseRunner&)>& issue);

}  // namespace ibsm::daemon
