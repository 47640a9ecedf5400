// Payoff: whether bringing bytes into the page cache ahead of their read pays, judged from what
// became of them. packfs reads ahead of requests in two places: pushing a read's followers into
// the kernel's cache (fuse/push.h) and widening a lookup's prefetch hint past the file
// (Filesystem::Prefetch). Both pay when the neighbours are read while still cached, and cost a
// read and memory for nothing when memory is too short to hold them until their turn (a set
// larger than the memory left for the page cache): then they are evicted first and read again.
//
// Each use reports what it brought ahead (Ahead) and what it later found evicted before its read
// (Wasted). Once kJudgeAfter were brought and more than a quarter of them were wasted, bringing
// ahead pauses for kFirstPause chances (calls of Take), then starts over from fresh counts,
// judged after a quarter as many items; a pause that follows another directly is twice as long,
// up to kMaxPause. A verdict that pays keeps half of its counts, so the judgement follows the
// recent past.
//
// Thread-safety: safe for concurrent use (one mutex; every caller is about to make a system call
// or answer a FUSE request, which costs far more).
#pragma once

#include <cstdint>
#include <mutex>

namespace packfs {

class Payoff {
 public:
  static constexpr uint64_t kJudgeAfter = 64;       // brought ahead before judging the waste
  static constexpr uint64_t kFirstPause = 1024;     // chances not taken, first pause
  static constexpr uint64_t kMaxPause = 64 * 1024;  // ... and the longest

  // `ahead` items were brought ahead, and `wasted` items brought ahead were found evicted before
  // their read. Returns whether this started a pause.
  bool Count(uint64_t ahead, uint64_t wasted);
  bool Ahead(uint64_t n = 1) { return Count(n, 0); }
  bool Wasted(uint64_t n = 1) { return Count(0, n); }
  // A chance to bring ahead: true unless paused (a paused call counts one chance of the pause).
  bool Take();

 private:
  bool JudgeLocked();

  std::mutex mu_;
  uint64_t ahead_ = 0;   // brought ahead since the last verdict
  uint64_t wasted_ = 0;  // ... and found wasted since then
  uint64_t pause_left_ = 0;
  uint64_t next_pause_ = kFirstPause;
  bool paused_last_ = false;  // the last verdict was a pause
};

}  // namespace packfs
