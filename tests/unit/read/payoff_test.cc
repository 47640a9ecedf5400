// Payoff (core/read/payoff.h): no verdict before kJudgeAfter items; more than a quarter wasted
// pauses
// for kFirstPause chances, after which counting starts afresh and judges after a quarter as many
// items; a pause right after another is twice as long, up to kMaxPause; a verdict that pays resets the pause length; waste reported
// during a pause does not count.
#include "core/read/payoff.h"

#include <gtest/gtest.h>

namespace packfs {
namespace {

// Chances refused before the first one taken.
uint64_t PauseLength(Payoff& p) {
  uint64_t n = 0;
  while (!p.Take()) ++n;
  return n;
}

TEST(PayoffTest, NoVerdictBeforeEnoughItems) {
  Payoff p;
  EXPECT_FALSE(p.Count(Payoff::kJudgeAfter - 1, Payoff::kJudgeAfter - 1));
  EXPECT_TRUE(p.Take());
  EXPECT_TRUE(p.Ahead());  // the 64th item: judged, and nearly all wasted
  EXPECT_FALSE(p.Take());
}

TEST(PayoffTest, AQuarterWastedStillPays) {
  Payoff p;
  EXPECT_FALSE(p.Count(Payoff::kJudgeAfter, Payoff::kJudgeAfter / 4));
  EXPECT_TRUE(p.Take());
  EXPECT_TRUE(p.Wasted());  // one more than a quarter
  EXPECT_FALSE(p.Take());
}

TEST(PayoffTest, PausesGrowWhileTheWasteGoesOnAndResetWhenItPays) {
  Payoff p;
  ASSERT_TRUE(p.Count(Payoff::kJudgeAfter, Payoff::kJudgeAfter));
  EXPECT_FALSE(p.Wasted(1000));  // during a pause: not counted
  EXPECT_EQ(PauseLength(p), Payoff::kFirstPause);
  constexpr uint64_t kSoon = Payoff::kJudgeAfter / 4;  // after a pause
  EXPECT_FALSE(p.Count(kSoon - 1, kSoon - 1));
  ASSERT_TRUE(p.Ahead());
  EXPECT_EQ(PauseLength(p), 2 * Payoff::kFirstPause);
  for (uint64_t want = 4 * Payoff::kFirstPause;; want = std::min(2 * want, Payoff::kMaxPause)) {
    ASSERT_TRUE(p.Count(kSoon, kSoon));
    ASSERT_EQ(PauseLength(p), want);
    if (want == Payoff::kMaxPause) break;
  }
  ASSERT_TRUE(p.Count(kSoon, kSoon));
  EXPECT_EQ(PauseLength(p), Payoff::kMaxPause);
  // Then it pays for a while (16 verdicts' worth with no waste): the next pause is short again.
  EXPECT_FALSE(p.Ahead(16 * Payoff::kJudgeAfter));
  ASSERT_TRUE(p.Count(16 * Payoff::kJudgeAfter, 16 * Payoff::kJudgeAfter));
  EXPECT_EQ(PauseLength(p), Payoff::kFirstPause);
}

}  // namespace
}  // namespace packfs
