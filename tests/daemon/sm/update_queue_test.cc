// UpdateQueue: requests within the batch delay of the first one become one batch, with the first cause.
#include "daemon/sm/update_queue.h"

#include <gtest/gtest.h>

namespace ibsm::daemon {
namespace {

using namespace std::chrono_literals;

TEST(UpdateQueue, RequestsWithinTheDelayAreOneBatch) {
  mad::FakeClock clock;
  UpdateQueue q(clock, 20ms);
  EXPECT_FALSE(q.takeDue());
  q.queue({}, "nothing");  // no switches: no batch
  clock.advance(1s);
  EXPECT_FALSE(q.takeDue());
  const mad::TimePoint first = clock.now();
  q.queue({fabric::Guid{2}}, "trap 128 about LID 5");
  clock.advance(10ms);
  q.queue({fabric::Guid{1}, fabric::Guid{2}}, "light sweep");
  EXPECT_FALSE(q.takeDue());  // 10 ms after the first request
  clock.advance(10ms);
  auto b = q.takeDue();
  ASSERT_TRUE(b);
  EXPECT_EQ(b->switches, (std::vector<fabric::Guid>{fabric::Guid{1}, fabric::Guid{2}}));
  EXPECT_EQ(b->cause, "trap 128 about LID 5");
  EXPECT_EQ(b->since, first);
  EXPECT_FALSE(q.takeDue());  // taken
}

TEST(UpdateQueue, ALaterStartDelaysTheBatchAndTheEarliestWins) {
  mad::FakeClock clock;
  UpdateQueue q(clock, 20ms);
  q.queueAt({fabric::Guid{7}}, "hold-down ended", clock.now() + 2s);
  clock.advance(1s);
  EXPECT_FALSE(q.takeDue());
  q.queue({fabric::Guid{8}}, "trap");  // earlier than the hold-down's end: the batch runs sooner
  clock.advance(20ms);
  auto b = q.takeDue();
  ASSERT_TRUE(b);
  EXPECT_EQ(b->switches.size(), 2u);
  EXPECT_EQ(b->cause, "hold-down ended");
}

// take() hands out a batch that has come, before its delay (the light sweep applies a trap's update first);
// a batch queued for later is not waiting yet.
TEST(UpdateQueue, AWaitingBatchCanBeTakenBeforeItsDelay) {
  mad::FakeClock clock;
  UpdateQueue q(clock, 20ms);
  q.queueAt({fabric::Guid{7}}, "hold-down ended", clock.now() + 2s);
  EXPECT_FALSE(q.waiting());
  EXPECT_FALSE(q.take());
  q.queue({fabric::Guid{8}}, "trap");
  EXPECT_TRUE(q.waiting());
  auto b = q.take();
  ASSERT_TRUE(b);
  EXPECT_EQ(b->switches.size(), 2u);
  EXPECT_FALSE(q.waiting());
}

}  // namespace
}  // namespace ibsm::daemon
