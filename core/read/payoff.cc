// Payoff: judging reads ahead by what became of them (see payoff.h).
#include "core/read/payoff.h"

#include <algorithm>

namespace packfs {

bool Payoff::Count(uint64_t ahead, uint64_t wasted) {
  std::lock_guard<std::mutex> lock(mu_);
  // Waste that shows during a pause (items brought long ago, read only now) says what the pause
  // already says.
  if (pause_left_ > 0) return false;
  ahead_ += ahead;
  wasted_ += wasted;
  return JudgeLocked();
}

bool Payoff::Take() {
  std::lock_guard<std::mutex> lock(mu_);
  if (pause_left_ == 0) return true;
  if (--pause_left_ == 0) ahead_ = wasted_ = 0;  // over: judge afresh from here on
  return false;
}

bool Payoff::JudgeLocked() {
  // Right after a pause the verdict comes sooner: the waste that caused it is likely to go on,
  // and each item brought ahead until the verdict is likely wasted.
  if (ahead_ < (paused_last_ ? kJudgeAfter / 4 : kJudgeAfter)) return false;
  if (wasted_ * 4 > ahead_) {
    next_pause_ = paused_last_ ? std::min(2 * next_pause_, kMaxPause) : kFirstPause;
    pause_left_ = next_pause_;
    paused_last_ = true;
    ahead_ = wasted_ = 0;
    return true;
  }
  if (ahead_ >= 16 * kJudgeAfter) {
    paused_last_ = false;
    ahead_ /= 2;
    wasted_ /= 2;
  }
  return false;
}

}  // namespace packfs
