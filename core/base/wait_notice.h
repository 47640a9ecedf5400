// WaitNotice: tells the thread that serves a request, before a shard read of it waits for the
// disk, that it is about to wait, so that a FUSE worker can hand its turn on the CPUs to another
// worker first (fuse/worker_loop.h). Reads of a thread with no notice set never look.
//
// The notice is per thread and set by a scope (ScopedWaitNotice) rather than passed down: every
// read path of a request (ServeRead, ReadThrough, a member's first read with its header) ends in
// FileShardSource::ReadAt, and none of the layers between would use it.
#pragma once

namespace packfs {

class WaitNotice {
 public:
  virtual ~WaitNotice() = default;
  // Called on the reading thread before a read that will wait (some of its bytes are not in the
  // page cache), possibly more than once a request. Must not throw.
  virtual void BeforeWait() noexcept = 0;
};

// The calling thread's notice, or null.
WaitNotice* CurrentWaitNotice();

// Sets the calling thread's notice for the scope's lifetime (restoring the one before).
class ScopedWaitNotice {
 public:
  explicit ScopedWaitNotice(WaitNotice* notice);
  ~ScopedWaitNotice();
  ScopedWaitNotice(const ScopedWaitNotice&) = delete;
  ScopedWaitNotice& operator=(const ScopedWaitNotice&) = delete;

 private:
  WaitNotice* previous_;
};

}  // namespace packfs
